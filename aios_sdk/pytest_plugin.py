"""pytest fixtures for app tests: ``aios_app`` and ``aios_system`` (docs/testing.md).

Registered through the ``pytest11`` entry point of ``triton-aios``, so any test
sees them once the package is installed (``pip install triton-aios``), without a
conftest and without the project's ``tests/``:

* ``aios_app``: an :class:`~aios_sdk.testing.AppHarness` for the app folder at or
  above the test file (or ``@pytest.mark.aios_app("path/to/app")``, relative to
  the test file), with a temporary workdir; closed after the test.
* ``aios_system``: the real system (:func:`~aios_sdk.testing.start_system`) with
  that app, or the folders of ``@pytest.mark.aios_apps("../notes", "../files")``;
  stopped after the test. It starts real app processes: a few seconds a test.

This module imports nothing heavy at collection time: every pytest run loads it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from aios_sdk.testing import AppHarness, RunningSystem

APP_MARK = "aios_app"
APPS_MARK = "aios_apps"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{APP_MARK}(path, agent=None, locale=None): the app folder aios_app tests"
    )
    config.addinivalue_line(
        "markers", f"{APPS_MARK}(*paths, **config): the app folders aios_system starts"
    )


def _here(request: pytest.FixtureRequest) -> Path:
    return Path(str(request.node.path)).resolve().parent


def _resolve(request: pytest.FixtureRequest, given: str | Path) -> Path:
    path = Path(given)
    return path if path.is_absolute() else (_here(request) / path).resolve()


@pytest.fixture
def aios_app(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AppHarness]:
    """The app next to this test, in-process, against a temporary workdir."""
    from aios_sdk.testing import AppHarness, find_app_dir

    mark = request.node.get_closest_marker(APP_MARK)
    kwargs = dict(mark.kwargs) if mark else {}
    if mark and mark.args:
        folder = _resolve(request, mark.args[0])
    else:
        folder = find_app_dir(_here(request))
    with AppHarness(folder, tmp_dir=tmp_path, **kwargs) as harness:
        yield harness


@pytest.fixture
def aios_system(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunningSystem]:
    """The real system with this test's app (or ``@pytest.mark.aios_apps(...)``)."""
    from aios_sdk.testing import find_app_dir, start_system

    mark = request.node.get_closest_marker(APPS_MARK)
    if mark and mark.args:
        folders = [_resolve(request, p) for p in mark.args]
    else:
        folders = [find_app_dir(_here(request))]
    running = start_system(folders, tmp_path / "aios", **(mark.kwargs if mark else {}))
    try:
        yield running
    finally:
        running.stop()
