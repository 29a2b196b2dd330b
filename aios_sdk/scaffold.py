"""``python -m aios_sdk new|check``: create an app folder, or check one before shipping it.

``new NAME`` writes the folder of spec §13.1 (``manifest.json`` per §13.2,
``main.py`` answering at once with a text view and a button, ``role.md``,
``workspace/``, ``requirements.txt``). It is built in a hidden folder beside
the target and renamed into place, so a running desktop's hot load (which
skips hidden folders) never sees half an app, and an existing folder is
never touched.

``check PATH`` applies the launcher's rules and a few more a developer
wants to hear about (entry compiles, keywords and lists are sane, a field
name that looks like a typo) and prints every problem, one per line.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import py_compile
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aios.errors import ProtocolError
from aios.names import APP_ID_PATTERN
from aios.protocol import Manifest, parse_manifest

__all__ = ["APP_ID_RE", "check_app", "main", "new_app"]

APP_ID_RE = re.compile(APP_ID_PATTERN)
"""The launcher's rule for an app id (one pattern, in ``aios.names``)."""
MANIFEST = "manifest.json"
ROLE_FILE = "role.md"
MAX_KEYWORDS = 50
EXTRA_FIELDS = frozenset({"max_tool_rounds"})
"""Manifest fields read by parts of the SDK beyond the Manifest model."""
_HOST = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9-]+)*\.?$")


# ---------------------------------------------------------------------- new


def _class_name(app_id: str) -> str:
    parts = [p for p in re.split(r"[_-]+", app_id) if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts) or "My"
    return ("App" + name if name[0].isdigit() else name) + "Agent"


def _files(app_id: str, display: str, icon: str, description: str, author: str) -> dict[str, str]:
    role = f"你是{display}小AI，负责……（在这里写清楚你的职责、能力边界和说话方式）"
    manifest = {
        "name": display,
        "icon": icon,
        "description": description,
        "entry": "main.py",
        "role_prompt": role,
        "workdir": "workspace",
        "author": author,
        "version": "1.0.0",
    }
    cls = _class_name(app_id)
    main = f'''"""{display}: a Triton AIOS app (a small AI in its own process).

Develop it alone:  python main.py   (serves /handle on APP_PORT, default 5001;
call_tool runs the tools in-process against ./workspace)
In the desktop:    put this folder in apps/; a running desktop picks it up.
"""

from __future__ import annotations

from aios_sdk import AIOSAgent, locale_of, text_view, tr


class {cls}(AIOSAgent):
    name = {json.dumps(display, ensure_ascii=False)}
    description = {json.dumps(description, ensure_ascii=False)}
    icon = {json.dumps(icon, ensure_ascii=False)}
    role_prompt = {json.dumps(role, ensure_ascii=False)}

    def handle(self, instruction, context, action_request=None):
        lang = locale_of(context)  # "zh" or "en"
        if action_request and action_request.get("action_id") == "hello":
            content = tr(lang, "又见面了！", "Hello again!")
        elif instruction:
            content = tr(lang, f"你说：{{instruction}}", f"You said: {{instruction}}")
        else:
            content = tr(lang, f"你好，我是{{self.name}}。", f"Hello, I am {{self.name}}.")
        return text_view(content, actions=[
            {{"type": "button", "label": tr(lang, "打个招呼", "Say hello"),
              "action_id": "hello", "params": {{}}}},
        ])


if __name__ == "__main__":
    {cls}().run()
'''
    return {
        MANIFEST: json.dumps(manifest, ensure_ascii=False, indent=4) + "\n",
        "main.py": main,
        ROLE_FILE: role + "\n",
        "requirements.txt": "# Extra packages this app needs, one per line (pip format).\n",
        "workspace/.gitkeep": "",
    }


def new_app(
    app_id: str,
    parent: Path,
    *,
    display: str | None = None,
    icon: str = "📦",
    description: str = "",
    author: str = "",
) -> Path:
    """Create ``parent/app_id``; raises ValueError naming the problem (nothing is written)."""
    if not APP_ID_RE.match(app_id):
        raise ValueError(
            f"{app_id!r} is not a valid app id: it must match [a-z0-9_][a-z0-9_-]* "
            "(lowercase letters, digits, '_' and '-'; it is the folder name)"
        )
    target = parent / app_id
    if target.exists() or target.is_symlink():
        raise ValueError(f"refusing to overwrite {target}: it already exists")
    if parent.exists() and not parent.is_dir():
        raise ValueError(f"{parent} is not a folder")
    parent.mkdir(parents=True, exist_ok=True)
    display = display or app_id
    files = _files(app_id, display, icon, description or f"{display}（Triton AIOS 应用）", author)
    staging = Path(tempfile.mkdtemp(prefix=f".{app_id}.", dir=parent))
    try:
        for rel, text in files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        os.chmod(staging, 0o755)  # mkdtemp makes it owner-only
        if target.exists():
            raise ValueError(f"refusing to overwrite {target}: it appeared while writing")
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


# -------------------------------------------------------------------- check


def check_app(folder: Path) -> tuple[str, list[str]]:
    """(display name or folder name, every problem found); no problems = ready to run."""
    if not folder.is_dir():
        return folder.name, [f"{folder} is not a folder"]
    app_id = folder.resolve().name  # "check ." names the current folder
    problems: list[str] = []
    if not APP_ID_RE.match(app_id):
        problems.append(
            f"folder name {app_id!r} is not a valid app id: it must match "
            "[a-z0-9_][a-z0-9_-]* (lowercase letters, digits, '_' and '-')"
        )
    raw = _read_manifest(folder / MANIFEST, problems)
    if raw is None:
        return app_id, problems
    manifest = _parse(raw, problems)
    name = manifest.name if manifest else str(raw.get("name") or app_id)
    _check_unknown_fields(raw, problems)
    _check_entry(folder, raw.get("entry"), problems)
    _check_workdir(folder, raw.get("workdir", "workspace"), problems)
    _check_role(folder, raw.get("role_prompt"), problems)
    _check_words(raw, problems)
    return name, problems


def _read_manifest(path: Path, problems: list[str]) -> dict[str, Any] | None:
    if not path.is_file():
        problems.append(f"no {MANIFEST} in the folder")
        return None
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        problems.append(f"{MANIFEST} is not valid JSON: line {e.lineno} column {e.colno}: {e.msg}")
        return None
    except (OSError, UnicodeDecodeError) as e:
        problems.append(f"{MANIFEST} cannot be read: {e}")
        return None
    if not isinstance(raw, dict):
        problems.append(f"{MANIFEST} must hold a JSON object, not {type(raw).__name__}")
        return None
    return raw


def _parse(raw: dict[str, Any], problems: list[str]) -> Manifest | None:
    try:
        return parse_manifest(raw)
    except ProtocolError as e:
        cause = e.__cause__
        if not isinstance(cause, ValidationError):
            problems.append(str(e))
            return None
        for err in cause.errors():
            loc = ".".join(str(p) for p in err["loc"]) or "(manifest)"
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(f"{MANIFEST} field {loc}: {msg}")
        return None


def _check_unknown_fields(raw: dict[str, Any], problems: list[str]) -> None:
    known = set(Manifest.model_fields) | EXTRA_FIELDS
    for key in raw:
        if key in known:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
        if close:  # other extra fields are allowed (forward compatible)
            problems.append(f"{MANIFEST}: unknown field {key!r}; did you mean {close[0]!r}?")


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def _check_entry(folder: Path, entry: Any, problems: list[str]) -> None:
    if (
        not isinstance(entry, str)
        or not entry
        or Path(entry).is_absolute()
        or ".." in Path(entry).parts
    ):
        return  # the manifest model already named the problem
    path = folder / entry
    if not _inside(path.resolve(), folder.resolve()):
        problems.append(f"entry {entry!r} resolves outside the app folder")
        return
    if not path.is_file():
        problems.append(f"entry file {entry!r} not found in the app folder")
        return
    with tempfile.TemporaryDirectory(prefix="aios-check-") as tmp:
        try:
            # The byte code goes to a throwaway place: checking writes nothing in the app.
            py_compile.compile(str(path), cfile=str(Path(tmp) / "entry.pyc"), doraise=True)
        except py_compile.PyCompileError as e:
            detail = e.exc_value
            where = (
                f" (line {detail.lineno})"
                if isinstance(detail, SyntaxError) and detail.lineno
                else ""
            )
            what = detail.msg if isinstance(detail, SyntaxError) else str(detail)
            problems.append(f"entry {entry!r} does not compile{where}: {what}")


def _check_workdir(folder: Path, workdir: Any, problems: list[str]) -> None:
    if (
        not isinstance(workdir, str)
        or not workdir
        or Path(workdir).is_absolute()
        or ".." in Path(workdir).parts
    ):
        return  # the manifest model already named the problem
    path = (folder / workdir).resolve()
    if not _inside(path, folder.resolve()):
        problems.append(f"workdir {workdir!r} resolves to {path}, outside the app folder")
    elif path == folder.resolve():
        problems.append(
            f"workdir {workdir!r} is the app folder itself: the app could then "
            "rewrite its own code and manifest; use a subfolder such as workspace"
        )
    elif path.exists() and not path.is_dir():
        problems.append(f"workdir {workdir!r} exists and is not a folder")


def _check_role(folder: Path, role: Any, problems: list[str]) -> None:
    if isinstance(role, str) and role.strip():
        return
    role_file = folder / ROLE_FILE
    if role_file.is_file():
        try:
            if role_file.read_text(encoding="utf-8").strip():
                return
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f"{ROLE_FILE} cannot be read: {e}")
            return
    problems.append(
        f'no role prompt: set "role_prompt" in {MANIFEST} or add a non-empty {ROLE_FILE}'
    )


def _check_words(raw: dict[str, Any], problems: list[str]) -> None:
    name = raw.get("name")
    if isinstance(name, str) and name and not name.strip():
        problems.append("name is only blanks")
    keywords = raw.get("keywords")
    if isinstance(keywords, list):
        if len(keywords) > MAX_KEYWORDS:
            problems.append(
                f"keywords: {len(keywords)} is too many (at most {MAX_KEYWORDS}); "
                "the router matches on them, so keep the telling ones"
            )
        _strings("keywords", keywords, problems)  # the manifest model caps their length
    permissions = raw.get("permissions")
    if isinstance(permissions, list):
        _duplicates("permissions", [p for p in permissions if isinstance(p, str)], problems)
    shell = raw.get("shell_whitelist")
    if isinstance(shell, list):
        _strings("shell_whitelist", shell, problems)
        for cmd in shell:
            if (
                isinstance(cmd, str)
                and cmd.strip()
                and ("/" in cmd or any(c.isspace() for c in cmd.strip()))
            ):
                problems.append(
                    f"shell_whitelist: {cmd!r} must be a bare program name (no path, no arguments)"
                )
    domains = raw.get("http_domain_whitelist")
    if isinstance(domains, list):
        _strings("http_domain_whitelist", domains, problems)
        for d in domains:
            if isinstance(d, str) and d.strip() and not _HOST.match(d.strip()):
                problems.append(
                    f"http_domain_whitelist: {d!r} must be a host name such as "
                    "api.example.com or *.example.com (no scheme, port or path)"
                )


def _strings(field: str, values: list[Any], problems: list[str]) -> None:
    texts = [v for v in values if isinstance(v, str)]
    if any(not v.strip() for v in texts):
        problems.append(f"{field}: empty entries are not allowed")
    _duplicates(field, texts, problems)


def _duplicates(field: str, values: list[str], problems: list[str]) -> None:
    seen: set[str] = set()
    for v in values:
        folded = v.strip().casefold()
        if folded and folded in seen:
            problems.append(f"{field}: {v!r} is listed twice")
        seen.add(folded)


# ---------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m aios_sdk", description="Create or check a Triton AIOS app folder."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="create an app folder (spec §13.1)")
    new.add_argument("name", help="app id = folder name: [a-z0-9_][a-z0-9_-]*")
    new.add_argument("--dir", default="apps", help="where to create it (default: apps)")
    new.add_argument("--title", help="display name (default: the app id)")
    new.add_argument("--icon", default="📦", help="an emoji (default: 📦)")
    new.add_argument("--description", default="", help="one line shown in the start menu")
    new.add_argument("--author", default="", help="your name")
    check = sub.add_parser("check", help="check an app folder; every problem, one per line")
    check.add_argument("path", help="the app folder")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "new":
        try:
            target = new_app(
                args.name,
                Path(args.dir),
                display=args.title,
                icon=args.icon,
                description=args.description,
                author=args.author,
            )
        except (ValueError, OSError) as e:
            print(f"error: {e}", file=sys.stderr)
            return 1
        print(f"created {target}/: manifest.json, main.py, role.md, requirements.txt, workspace/")
        print(
            f"next: edit {target / 'main.py'} (handle), then run the desktop; a running "
            "desktop picks the folder up by itself."
        )
        print(
            f"try it alone: cd {target} && python main.py   (then POST to "
            "http://127.0.0.1:5001/handle)"
        )
        return 0
    name, problems = check_app(Path(args.path))
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"ok: {name}")
    return 0
