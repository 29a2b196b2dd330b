"""The one-folder bundle's program acts as Python for the command lines the system
starts its children with (aios/entry/frozen.py), and is the desktop otherwise."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aios.entry import frozen

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["main.py"], ("path", "main.py", [])),
        (["/x/aios_sdk/boot.py", "main.py"], ("path", "/x/aios_sdk/boot.py", ["main.py"])),
        (["-I", "-S", "-c", "print(1)", "a"], ("c", "print(1)", ["a"])),
        (["-m", "aios_sdk", "check", "."], ("m", "aios_sdk", ["check", "."])),
        (["--headless", "--port", "0"], None),
        ([], None),
        (["-c"], None),
    ],
)
def test_python_command_lines_are_told_from_the_desktops(
    argv: list[str], want: tuple[str, str, list[str]] | None
) -> None:
    assert frozen.python_command(argv) == want


def _as_bundle(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run aios.entry.frozen.main as the bundle does (sys.frozen set), in a child process."""
    code = (
        "import sys; sys.frozen = True; from aios.entry.frozen import main; "
        f"raise SystemExit(main({args!r}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_the_bundle_runs_a_script_as_main_with_its_folder_on_the_path(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("WORD = 'from the app folder'\n")
    (tmp_path / "main.py").write_text(
        textwrap.dedent(
            """
            import sys
            from helper import WORD
            if __name__ == "__main__":
                print(WORD, sys.argv[1:])
                raise SystemExit(3)
            """
        )
    )
    r = _as_bundle(["-I", str(tmp_path / "main.py"), "x"], tmp_path)
    assert (r.returncode, r.stdout.strip()) == (3, "from the app folder ['x']"), r.stderr


def test_the_bundle_runs_code_given_with_c(tmp_path: Path) -> None:
    r = _as_bundle(["-I", "-S", "-c", "import sys; print(sys.argv)", "a", "b"], tmp_path)
    assert (r.returncode, r.stdout.strip()) == (0, "['-c', 'a', 'b']"), r.stderr


def test_without_the_bundle_the_arguments_go_to_the_desktop(tmp_path: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-m", "aios.entry.frozen", "--port", "70000"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 2 and "--port 70000 is not a port number" in r.stderr
