"""``python -m aios_sdk new|check``: create an app folder, or check one before shipping it.

``new NAME`` writes the folder of DESIGN §3 (``manifest.json``, ``main.py``
answering at once with a text view and a button, ``role.md``, ``workspace/``,
``requirements.txt``). Every piece of metadata is written once: the manifest
holds the name, icon, description, ``keywords`` and ``examples``, ``role.md``
the role (no ``role_prompt``), and the generated class sets none of them
(:class:`aios_sdk.AIOSAgent` reads them from the manifest). What only the
developer can write is a placeholder marked ``【待填写】`` / ``[to fill in]``.
The folder is built in a hidden folder beside the target and renamed into
place, so a running desktop's hot load (which skips hidden folders) never
sees half an app, and an existing folder is never touched.

``check PATH`` applies the launcher's rules (errors: the app would not load)
and a few more a developer wants to hear about (warnings: it loads, but
routing or the sandbox will not do what the manifest seems to ask): the
scaffold's placeholders still there, no keywords or examples, whitelist
entries the global config refuses, and a name, id or keyword shared with an
installed app. One line per problem; exit status 0 with only warnings, 1
with an error (or with a warning under ``--strict``).
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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aios.apphost.manifests import validate
from aios.config import Config, load_config
from aios.errors import ConfigError, ProtocolError
from aios.names import APP_ID_PATTERN
from aios.protocol import LOCALES, Manifest, parse_manifest
from aios.tools.sandbox import domain_allowed as _domain_allowed

__all__ = ["APP_ID_RE", "PLACEHOLDERS", "CheckReport", "check_app", "main", "new_app"]

APP_ID_RE = re.compile(APP_ID_PATTERN)
"""The launcher's rule for an app id (one pattern, in ``aios.names``)."""
MANIFEST = "manifest.json"
ROLE_FILE = "role.md"
MAX_KEYWORDS = 50
EXTRA_FIELDS = frozenset({"max_tool_rounds", "name_en", "description_en", "examples_en"})
"""Manifest fields read beyond the Manifest model's own names (the SDK; flat locale forms)."""
PLACEHOLDER_ZH = "【待填写】"
PLACEHOLDER_EN = "[to fill in]"
PLACEHOLDERS = (PLACEHOLDER_ZH, PLACEHOLDER_EN)
"""What marks the scaffold's text that only the developer can write; ``check`` warns on it."""
PLACEHOLDER_FIELDS = ("name", "description", "keywords", "examples")
"""The manifest fields (beside the role) the scaffold may leave a placeholder in."""
_HOST = re.compile(r"^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9-]+)*\.?$")


# ---------------------------------------------------------------------- new


def _class_name(app_id: str) -> str:
    parts = [p for p in re.split(r"[_-]+", app_id) if p]
    name = "".join(p[:1].upper() + p[1:] for p in parts) or "My"
    return ("App" + name if name[0].isdigit() else name) + "Agent"


def _files(app_id: str, display: str, icon: str, description: str, author: str) -> dict[str, str]:
    zh, en = PLACEHOLDER_ZH, PLACEHOLDER_EN
    role = (
        f"你是「{display}」小AI。{zh}写清楚你的职责、能力边界和说话方式。\n"
        f'You are the app "{display}". {en} Say what you do, what you do not do, '
        "and how you talk.\n"
    )
    manifest: dict[str, Any] = {
        "name": display,
        "icon": icon,
        "description": description
        or {
            "zh-CN": f"{zh}一句话说明{display}做什么（开始菜单里显示）",
            "en": f"{en} One line on what {display} does (shown in the start menu)",
        },
        # The offline router scores keywords and examples: words a user would say.
        "keywords": [f"{zh}关键词", f"{en} keyword"],
        "examples": {
            "zh-CN": [f"{zh}用户会对{display}说的一句话"],
            "en": [f"{en} something a user would say to {display}"],
        },
        "entry": "main.py",
        "workdir": "workspace",
        "author": author,
        "version": "1.0.0",
    }
    cls = _class_name(app_id)
    main = f'''"""{display}: a Triton AIOS app (a small AI in its own process).

Its name, icon, description, keywords and examples are in manifest.json (the one
place: the class reads them from there), its role in role.md.

Develop it alone:  python main.py   (serves /handle on APP_PORT, default 5001;
call_tool runs the tools in-process against ./workspace)
In the desktop:    put this folder in apps/; a running desktop picks it up.
Before shipping:   python -m aios_sdk check .
"""

from __future__ import annotations

from aios_sdk import AIOSAgent, AppFailure, Messages, action, text_view

MAX_CHARS = 500


class {cls}(AIOSAgent):
    # The texts of this app's AppFailure("key", ...) errors, in both languages.
    messages = Messages({{"too_long": ("太长了（{{n}} 个字）", "Too long ({{n}} characters)")}})

    def handle(self, instruction, context, action_request=None):
        # context is an AppContext: the context dict, plus .lang ("zh" or "en"),
        # .tr(zh, en), .cwd_state, .routed, .result(step_id)
        if len(instruction or "") > MAX_CHARS:
            # an error view with messages["too_long"], in the user's language
            raise AppFailure("too_long", n=len(instruction))
        if instruction:
            content = context.tr(f"你说：{{instruction}}", f"You said: {{instruction}}")
        else:
            content = context.tr(f"你好，我是{{self.name}}。", f"Hello, I am {{self.name}}.")
        return self.home(context, content)

    @action("hello")  # the button below; its params arrive as keyword arguments
    def hello(self, ctx):
        return self.home(ctx, ctx.tr("又见面了！", "Hello again!"))

    def home(self, ctx, content):
        return text_view(content, actions=[
            {{"type": "button", "label": ctx.tr("打个招呼", "Say hello"),
              "action_id": "hello", "params": {{}}}},
        ])


if __name__ == "__main__":
    {cls}().run()
'''
    return {
        MANIFEST: json.dumps(manifest, ensure_ascii=False, indent=4) + "\n",
        "main.py": main,
        ROLE_FILE: role,
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
    files = _files(app_id, display, icon, description, author)
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


@dataclass
class CheckReport:
    """What ``check`` found in one app folder."""

    name: str
    """The display name (default locale), else the folder name."""
    errors: list[str] = field(default_factory=list)
    """The launcher would refuse the folder, or the app cannot work as written."""
    warnings: list[str] = field(default_factory=list)
    """It loads, but routing or the sandbox will not do what the manifest seems to ask."""


def check_app(
    folder: Path, *, config: Config | None = None, apps_dirs: list[Path] | None = None
) -> CheckReport:
    """Every error and warning about ``folder``; none of either = ready to ship.

    ``config`` is the global config the whitelists are compared with (default: the
    project's, as the desktop loads it); ``apps_dirs`` where the installed apps are
    (default: the folder's own parent and the config's ``apps_dir``).
    """
    if not folder.is_dir():
        return CheckReport(folder.name, [f"{folder} is not a folder"])
    app_id = folder.resolve().name  # "check ." names the current folder
    report = CheckReport(app_id)
    problems = report.errors
    if not APP_ID_RE.match(app_id):
        problems.append(
            f"folder name {app_id!r} is not a valid app id: it must match "
            "[a-z0-9_][a-z0-9_-]* (lowercase letters, digits, '_' and '-')"
        )
    raw = _read_manifest(folder / MANIFEST, problems)
    if raw is None:
        return report
    manifest = _parse(raw, problems)
    report.name = manifest.name if manifest else str(raw.get("name") or app_id)
    _check_unknown_fields(raw, problems)
    _check_entry(folder, raw.get("entry"), problems)
    _check_workdir(folder, raw.get("workdir", "workspace"), problems)
    role = _check_role(folder, raw.get("role_prompt"), problems)
    _check_words(raw, problems)
    if not problems:
        _check_as_the_launcher(app_id, folder, problems)
    if config is None:
        config = _global_config(report.warnings)
    _warn_placeholders(raw, role, report.warnings)
    _warn_missing(raw, report.warnings)
    _warn_whitelists(raw, config, report.warnings)
    if manifest is not None:
        dirs = apps_dirs if apps_dirs is not None else [folder.resolve().parent, config.apps_path]
        _warn_collisions(folder, app_id, manifest, dirs, report.warnings)
    return report


def _check_as_the_launcher(app_id: str, folder: Path, problems: list[str]) -> None:
    """What the launcher itself would refuse (links, FIFOs, hard links, caps, a workdir
    holding the app's files: DESIGN §14.1), so that a clean check means a valid app."""
    try:
        validate(app_id, folder, create_workdir=False)
    except ValueError as e:
        problems.append(str(e))


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
    known = {f.alias or n for n, f in Manifest.model_fields.items()} | EXTRA_FIELDS
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


def _check_role(folder: Path, role: Any, problems: list[str]) -> str:
    """The role text the launcher will use ("" when there is none, which is an error)."""
    if isinstance(role, str) and role.strip():
        return role.strip()
    role_file = folder / ROLE_FILE
    if role_file.is_file():
        try:
            text = role_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as e:
            problems.append(f"{ROLE_FILE} cannot be read: {e}")
            return ""
        if text:
            return text
    problems.append(
        f'no role prompt: set "role_prompt" in {MANIFEST} or add a non-empty {ROLE_FILE}'
    )
    return ""


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


# ----------------------------------------------------------------- warnings


def _global_config(warnings: list[str]) -> Config:
    try:
        return load_config()
    except ConfigError as e:
        warnings.append(f"config: {e}; compared with the default config instead")
        return Config()


def _texts(value: Any) -> list[str]:
    """Every string in a manifest value: a string, a list, or a per-locale dict of either."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _texts(v)]
    return []


def _is_placeholder(text: str) -> bool:
    return any(mark in text for mark in PLACEHOLDERS)


def _given(raw: dict[str, Any], key: str) -> list[str]:
    """The field's texts, its flat ``_en`` form included."""
    return _texts(raw.get(key)) + _texts(raw.get(f"{key}_en"))


def _warn_placeholders(raw: dict[str, Any], role: str, warnings: list[str]) -> None:
    own_role = isinstance(raw.get("role_prompt"), str) and raw["role_prompt"].strip()
    where: dict[str, tuple[list[str], str]] = {
        "role": ([role], f"role_prompt in {MANIFEST}" if own_role else ROLE_FILE),
        **{k: (_given(raw, k), MANIFEST) for k in PLACEHOLDER_FIELDS},
    }
    for key, (texts, source) in where.items():
        if any(_is_placeholder(t) for t in texts):
            warnings.append(
                f"{key}: still the scaffold's placeholder ({PLACEHOLDER_ZH} / {PLACEHOLDER_EN}) "
                f"in {source}; write the real text"
            )


def _warn_missing(raw: dict[str, Any], warnings: list[str]) -> None:
    if not [k for k in _given(raw, "keywords") if k.strip()]:
        warnings.append(
            "keywords: none; the offline router finds an app by its name, keywords and "
            "examples, so list the words a user says when they mean this app"
        )
    if not [e for e in _given(raw, "examples") if e.strip()]:
        warnings.append(
            "examples: none; list a few sample instructions (the router scores them, "
            "help and the start menu show them)"
        )


def _warn_whitelists(raw: dict[str, Any], config: Config, warnings: list[str]) -> None:
    sandbox = config.tool_sandbox
    shell = raw.get("shell_whitelist")
    if isinstance(shell, list) and sandbox.enable_shell_whitelist:
        allowed = set(sandbox.shell_whitelist)
        for cmd in shell:
            if isinstance(cmd, str) and cmd.strip() and cmd.strip() not in allowed:
                warnings.append(
                    f"shell_whitelist: {cmd!r} is not in the system's shell whitelist "
                    f"({', '.join(sandbox.shell_whitelist) or 'empty'}; "
                    "tool_sandbox.shell_whitelist in config.json), so the app can never run it"
                )
    domains = raw.get("http_domain_whitelist")
    if isinstance(domains, list) and sandbox.http_domain_whitelist:
        for d in domains:
            if (
                isinstance(d, str)
                and _HOST.match(d.strip())
                and not _domain_allowed(d.strip(), sandbox.http_domain_whitelist)
            ):
                warnings.append(
                    f"http_domain_whitelist: {d!r} is not allowed by the system's domain "
                    f"whitelist ({', '.join(sandbox.http_domain_whitelist)}; "
                    "tool_sandbox.http_domain_whitelist in config.json), so the app cannot reach it"
                )


def _installed(folder: Path, dirs: list[Path]) -> list[tuple[Path, Manifest]]:
    """The other app folders in ``dirs`` whose manifest parses (others cannot collide)."""
    me = folder.resolve()
    seen: set[Path] = set()
    out: list[tuple[Path, Manifest]] = []
    for parent in dirs:
        try:
            children = sorted(parent.resolve().iterdir()) if parent.is_dir() else []
        except OSError:
            continue
        for child in children:
            real = child.resolve()
            if child.name.startswith(".") or real == me or real in seen or not child.is_dir():
                continue
            seen.add(real)
            try:
                raw = json.loads((child / MANIFEST).read_text(encoding="utf-8"))
                out.append((child, parse_manifest(raw)))
            except (OSError, ValueError, ProtocolError):
                continue
    return out


def _warn_collisions(
    folder: Path, app_id: str, manifest: Manifest, dirs: list[Path], warnings: list[str]
) -> None:
    mine = {
        k.strip().casefold(): k for k in manifest.keywords if k.strip() and not _is_placeholder(k)
    }
    names = {manifest.name_in(loc).strip().casefold(): manifest.name_in(loc) for loc in LOCALES}
    for path, other in _installed(folder, dirs):
        if path.name == app_id:
            warnings.append(
                f"id: {app_id!r} is already the id of the installed app in {path}; "
                "only one of them can be loaded (rename the folder)"
            )
        theirs = {other.name_in(loc).strip().casefold() for loc in LOCALES}
        for key, name in names.items():
            if key in theirs:
                warnings.append(
                    f"name: {name!r} is also the name of the installed app {path.name!r}; "
                    "instructions naming it cannot tell the two apart"
                )
        shared = [
            mine[k.strip().casefold()] for k in other.keywords if k.strip().casefold() in mine
        ]
        for word in dict.fromkeys(shared):
            warnings.append(
                f"keywords: {word!r} is also a keyword of the installed app {path.name!r}; "
                "routing between the two is ambiguous"
            )


# ---------------------------------------------------------------------- CLI


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m aios_sdk",
        description="Create, check or develop (dev: run, restart on change) a Triton AIOS app.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="create an app folder (DESIGN §3)")
    new.add_argument("name", help="app id = folder name: [a-z0-9_][a-z0-9_-]*")
    new.add_argument("--dir", default="apps", help="where to create it (default: apps)")
    new.add_argument("--title", help="display name (default: the app id)")
    new.add_argument("--icon", default="📦", help="an emoji or a Lucide icon name (default: 📦)")
    new.add_argument("--description", default="", help="one line shown in the start menu")
    new.add_argument("--author", default="", help="your name")
    check = sub.add_parser(
        "check", help="check an app folder; every error and warning, one per line"
    )
    check.add_argument("path", help="the app folder")
    check.add_argument("--strict", action="store_true", help="fail on warnings too")
    check.add_argument(
        "--config", help="the config file to compare the whitelists with (default: config.json)"
    )
    check.add_argument(
        "--apps-dir",
        action="append",
        help="a folder of installed apps to compare names and keywords with (repeatable; "
        "default: the app's parent folder and the config's apps_dir)",
    )
    from aios_sdk import dev  # the dev loop's subcommand (aios_sdk/dev.py)

    dev.add_parser(sub)
    return parser


def _new(args: argparse.Namespace) -> int:
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
        f"next: replace the {PLACEHOLDER_ZH} / {PLACEHOLDER_EN} texts in {target / MANIFEST} "
        f"(description, keywords, examples) and {target / ROLE_FILE}, edit "
        f"{target / 'main.py'} (handle); `python -m aios_sdk check {target}` lists what is left."
    )
    print(
        "a running desktop picks the folder up by itself; try it alone: "
        f"cd {target} && python main.py   (then POST to http://127.0.0.1:5001/handle)"
    )
    return 0


def _check(args: argparse.Namespace) -> int:
    try:
        config = load_config(Path(args.config)) if args.config else None
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    dirs = [Path(d) for d in args.apps_dir] if args.apps_dir else None
    report = check_app(Path(args.path), config=config, apps_dirs=dirs)
    for problem in report.errors:
        print(problem)
    for warning in report.warnings:
        print(f"warning: {warning}")
    if report.errors:
        return 1
    n = len(report.warnings)
    if n and args.strict:
        print(f"not ok: {n} warning{'s' * (n != 1)} (--strict)")
        return 1
    print(f"ok: {report.name}" + (f" ({n} warning{'s' * (n != 1)})" if n else ""))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "dev":
        from aios_sdk.dev import run_from_args

        return run_from_args(args)
    return _new(args) if args.command == "new" else _check(args)
