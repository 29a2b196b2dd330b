"""The entry point of a one-folder bundle (PyInstaller, ``packaging/triton-aios.spec``).

In a bundle ``sys.executable`` is the bundle's program, not a Python interpreter,
yet the system starts its children as ``sys.executable …``: an app's ``main.py``
(or ``aios_sdk/boot.py`` in a sandbox), ``-I -S -c <code>`` for the orphan guard,
``-c <code>`` for speech. So the bundle's program acts as the interpreter for
those command lines (the subset of Python's own command line the system uses) and
is the desktop otherwise.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

IGNORED_FLAGS = frozenset({"-I", "-S", "-E", "-s", "-u", "-B"})
"""Interpreter flags the system passes that change nothing here (the bundle is isolated)."""


def python_command(argv: list[str]) -> tuple[str, str, list[str]] | None:
    """``(kind, target, args)`` when ``argv`` (without argv[0]) is a Python command line:
    kind ``"c"`` (code), ``"m"`` (module) or ``"path"`` (a script); None for the desktop."""
    rest = list(argv)
    while rest and rest[0] in IGNORED_FLAGS:
        rest.pop(0)
    if not rest:
        return None
    if rest[0] in ("-c", "-m") and len(rest) > 1:
        return rest[0][1], rest[1], rest[2:]
    if rest[0].endswith(".py") and not rest[0].startswith("-"):
        return "path", rest[0], rest[1:]
    return None


def run_python(kind: str, target: str, args: list[str]) -> int:
    """Run a Python command line as the interpreter would (``__main__``, ``sys.argv``)."""
    if kind == "c":
        sys.argv = ["-c", *args]
        sys.path.insert(0, "")
        exec(compile(target, "<string>", "exec"), {"__name__": "__main__"})  # noqa: S102 - the system's own -c code
    elif kind == "m":
        sys.argv = [target, *args]
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        script = Path(target).resolve()
        sys.argv = [str(script), *args]
        sys.path.insert(0, str(script.parent))
        runpy.run_path(str(script), run_name="__main__")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    command = python_command(args) if getattr(sys, "frozen", False) else None
    if command is not None:
        try:
            return run_python(*command)
        except SystemExit as e:
            return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    from aios.entry.main import main as desktop_main

    return desktop_main(args)


if __name__ == "__main__":
    raise SystemExit(main())
