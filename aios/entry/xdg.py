"""The desktop's launcher icon: a freedesktop ``.desktop`` entry for double-click starts.

    python3 -m aios.entry.xdg install     # applications menu + the desktop folder
    python3 -m aios.entry.xdg uninstall
    python3 -m aios.entry.xdg show        # print the entry that would be written

``scripts/install`` runs ``install``. The entry starts the ``triton-aios`` console
script without a terminal (``Terminal=false``); what it prints goes to
``<data_dir>/logs/desktop.log`` (see :func:`aios.entry.window.no_window_hint` for what a
start without a display or a GUI backend tells the user). Paths follow the XDG base
directory spec: ``$XDG_DATA_HOME`` (default ``~/.local/share``) for the menu entry and
the icon, ``xdg-user-dir DESKTOP`` (or ``~/Desktop``) for the desktop icon, written only
when that folder exists. Windows and macOS: see the README's "Install" section.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from aios.config import PROJECT_ROOT

APP_ID = "triton-aios"
"""The entry's file name (``triton-aios.desktop``) and its icon name."""
ICON_SOURCE = PROJECT_ROOT / "renderer" / "favicon.svg"
XDG_USER_DIR_TIMEOUT = 5.0
"""Seconds ``xdg-user-dir DESKTOP`` may take (it reads one config file)."""


@dataclass(frozen=True)
class Places:
    """Where the entry and its icon go."""

    applications: Path
    icons: Path
    desktop: Path | None

    @classmethod
    def for_user(cls, env: dict[str, str] | None = None) -> Places:
        env = dict(os.environ if env is None else env)
        home = Path(env.get("HOME") or Path.home())
        data_home = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
        return cls(
            applications=data_home / "applications",
            icons=data_home / "icons" / "hicolor" / "scalable" / "apps",
            desktop=_desktop_dir(home, env),
        )


def _desktop_dir(home: Path, env: dict[str, str]) -> Path | None:
    """The user's desktop folder when it exists (XDG user dirs), else None."""
    found: Path | None = None
    if shutil.which("xdg-user-dir"):
        try:
            out = subprocess.run(
                ["xdg-user-dir", "DESKTOP"],
                capture_output=True,
                text=True,
                timeout=XDG_USER_DIR_TIMEOUT,
                env=env,
            ).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        # xdg-user-dir answers $HOME itself when no desktop folder is configured
        if out and Path(out) != home:
            found = Path(out)
    if found is None:
        found = home / "Desktop"
    return found if found.is_dir() else None


def launcher_command() -> str:
    """The absolute path of the ``triton-aios`` console script of this installation."""
    beside = Path(sys.executable).with_name(APP_ID)
    if beside.is_file():
        return str(beside)
    found = shutil.which(APP_ID)
    if found:
        return str(Path(found).resolve())
    raise SystemExit(
        f"{APP_ID}: the console script is not installed; run `pip install -e .` "
        "(scripts/install does) first"
    )


def entry_text(command: str, icon: str = APP_ID) -> str:
    """The ``.desktop`` file for ``command`` (Desktop Entry Specification 1.4)."""
    quoted = _exec_quote(command)
    return "\n".join(
        [
            "[Desktop Entry]",
            "Type=Application",
            "Version=1.4",
            "Name=Triton AIOS",
            "Name[zh_CN]=Triton AIOS 智能桌面",
            "GenericName=AI desktop",
            "GenericName[zh_CN]=AI 桌面",
            "Comment=An AI-native desktop: type or say what you want",
            "Comment[zh_CN]=AI 原生桌面：输入或说出你想做的事",
            f"Exec={quoted}",
            f"TryExec={quoted}",
            f"Icon={icon}",
            "Terminal=false",
            "Categories=Utility;",
            "Keywords=AI;assistant;desktop;agent;",
            "StartupNotify=true",
            "",
        ]
    )


def _exec_quote(arg: str) -> str:
    """One Exec argument, quoted as the spec asks when it has reserved characters."""
    reserved = set(" \t\n\"'\\><~|&;$*?#()`")
    if not any(c in reserved for c in arg):
        return arg
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
    return f'"{escaped}"'


def install(places: Places, command: str) -> list[Path]:
    """Write the icon, the menu entry and (when there is a desktop folder) the desktop icon."""
    places.icons.mkdir(parents=True, exist_ok=True)
    icon = places.icons / f"{APP_ID}.svg"
    shutil.copyfile(ICON_SOURCE, icon)
    text = entry_text(command)
    written = [icon]
    targets = [places.applications / f"{APP_ID}.desktop"]
    if places.desktop is not None:
        targets.append(places.desktop / f"{APP_ID}.desktop")
    for path in targets:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(0o755)  # GNOME and KDE launch a desktop-folder entry only when executable
        tmp.replace(path)
        written.append(path)
    if places.desktop is not None and shutil.which("gio"):
        # GNOME asks "allow launching?" for an untrusted desktop-folder entry
        subprocess.run(
            ["gio", "set", str(targets[-1]), "metadata::trusted", "true"],
            capture_output=True,
            check=False,
        )
    return written


def uninstall(places: Places) -> list[Path]:
    removed = []
    candidates = [places.applications / f"{APP_ID}.desktop", places.icons / f"{APP_ID}.svg"]
    if places.desktop is not None:
        candidates.append(places.desktop / f"{APP_ID}.desktop")
    for path in candidates:
        if path.exists():
            path.unlink()
            removed.append(path)
    return removed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python3 -m aios.entry.xdg", description=__doc__)
    p.add_argument("command", choices=("install", "uninstall", "show"))
    args = p.parse_args(argv)
    places = Places.for_user()
    if args.command == "show":
        print(entry_text(launcher_command()), end="")
        return 0
    paths = install(places, launcher_command()) if args.command == "install" else uninstall(places)
    verb = "wrote" if args.command == "install" else "removed"
    for path in paths:
        print(f"{APP_ID}: {verb} {path}")
    if args.command == "install" and shutil.which("update-desktop-database"):
        subprocess.run(
            ["update-desktop-database", str(places.applications)], capture_output=True, check=False
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
