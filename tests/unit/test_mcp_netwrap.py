"""The network wrapper of a stdio MCP server refuses what would leave a sandbox behind."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aios.mcp import netwrap
from tests.util import ROOT


def test_a_sandbox_that_would_outlive_the_wrapper_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="die-with-parent"):
        netwrap.run(tmp_path, ["/usr/bin/bwrap", "--unshare-all", "--", "true"])


def test_bad_usage_is_one_line_and_its_own_status() -> None:
    done = subprocess.run(
        [*netwrap.argv(Path("/nonexistent"), [])[:4], "nothing"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},  # as confine.py starts it
        check=False,
        timeout=30,
    )
    assert done.returncode == netwrap.USAGE
    assert done.stderr.startswith("usage: python -m aios.mcp.netwrap") and done.stdout == ""
    assert netwrap.argv(Path("/r"), ["bwrap"])[:3] == [sys.executable, "-P", "-m"]
