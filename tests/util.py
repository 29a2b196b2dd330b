"""Helpers shared by every test layer (unit, integration, e2e)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

WAIT_TIMEOUT = 10.0
"""Seconds :func:`wait_for` polls by default before it fails the test."""
POLL_INTERVAL = 0.02
"""Seconds between two polls: short enough not to slow a test, long enough not to spin."""


def wait_for(pred: Callable[[], T], what: str = "the condition", timeout: float = WAIT_TIMEOUT,
             *, interval: float = POLL_INTERVAL) -> T:
    """Poll ``pred`` until it returns something truthy and return that value.

    ``pred`` runs at least once, also after the deadline has passed, so a slow
    machine never fails a condition that holds by the time it is checked.
    Past ``timeout`` seconds the test fails with an AssertionError naming
    ``what`` was awaited.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)
