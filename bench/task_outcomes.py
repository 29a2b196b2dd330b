"""The outcome vocabulary of bench/tasks.jsonl and the checkers that read the real state.

A task's ``expect`` is a dict; every key names one outcome and all must hold:

``file``        ``{"path", "exists"=true, "content"?, "contains"?, "folder"?, "app"="files"}``:
                the file (a folder with ``folder``) in the app's workspace on disk
                (``<apps_dir>/<app>/workspace/<path>``); ``content`` is compared with
                surrounding whitespace stripped.
``note``        ``{"text", "tag"?, "done"?, "exists"=true}``: a row of the Notes app's SQLite file
                (``notes.db`` in its workspace, opened read-only) whose title or body
                contains ``text``, with that tag / done state.
``code_output`` ``{"contains"}``: a view of the Code app shows a run whose stdout contains it.
``player``      ``{"title"?, "playing"?, "volume"?}``: the Music app's last player view — the
                song it holds (title contains, case-insensitive), playing or paused — and
                the volume in its last state.
``reply_only``  ``true``: a plain answer in words (in the user's language), no app was
                called and nothing was asked.
``asked``       ``{"kind"?, "options"?: [...]}``: the user was asked (a choice, confirm or
                input card, not an approval), with a card of that kind; each option
                named (value or label) was offered.
``view``        ``{"app", "contains"?: [...], "view_type"?, "answered"?}``: that app
                answered without an error, and its view shows every text
                (case-insensitive); with ``answered``, a notice that a model must be set
                up first (a button to Settings at its model fields) is no answer.
``ui_op``       ``{"op", "id"?, ...}``: the desktop was sent a change with these fields
                during the task (the system's ``ui_op`` events).
``memory``      ``{"text", "state"?, "scope"?, "exists"?, "in_reply"?}``: a memory holding
                the text, in that state (default active) and scope (default user);
                ``exists: false``, only deleted ones; ``in_reply``, the reply names it.

A task may start from ``setup`` (``files`` in the Files workspace, apps' ``actions``,
``memories`` the user keeps) and go on with ``then``: what the user says next in the
same conversation ("确认忘掉" after "忘掉 …"); the outcome is checked after the last.

A task with ``"seen": true`` had its words shown to someone changing the apps (a brief
quoted a failure from an early run, or its failure was read while fixing the apps and the
router); the bench reports the share of the others apart, as the held-out figure.

Checkers return the problems found (an empty list: the outcome holds), each saying what
was there instead, so a failure listing tells what the user would have seen.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CJK = re.compile(r"[\u3400-\u9fff]")
JSONISH = ("{", "[", "```", "<tool_call>")
ASK_KINDS = ("choice", "confirm", "input")
SHOW = 160
"""Characters of a found value shown in a failure."""


@dataclass
class Found:
    """What one task left behind: the reply, the views the user saw, the cards, the disk."""

    apps_dir: Path
    reply: dict[str, Any] = field(default_factory=dict)
    views: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(app, response) in the order the user saw them: the reply's results, then final views."""
    cards: list[dict[str, Any]] = field(default_factory=list)
    """Every card shown (approvals included)."""
    ui_ops: list[dict[str, Any]] = field(default_factory=list)
    """Desktop changes the system sent the desktop during the task."""
    error: str = ""
    """The task could not be sent (an HTTP error, a timeout)."""
    memories: list[dict[str, Any]] = field(default_factory=list)
    """Every memory the system keeps after the task, deleted ones too (DESIGN §15)."""

    def app_views(self, app: str) -> list[dict[str, Any]]:
        return [v for a, v in self.views if a == app]

    def asked(self) -> list[dict[str, Any]]:
        return [c for c in self.cards if c.get("kind") in ASK_KINDS]

    def message(self) -> str:
        return str(self.reply.get("message") or "")


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= SHOW else text[: SHOW - 1] + "…"


QUOTED = re.compile(r"“[^”\n]*”|「[^」\n]*」|\"[^\"\n]*\"")
"""The user's own words quoted back (a memory, a file name): data, in whatever language."""


def in_lang(text: str, lang: str) -> bool:
    """Written in ``lang`` as a reader sees it: Chinese has Han characters, English none
    (what is quoted aside)."""
    has_cjk = bool(
        CJK.search(QUOTED.sub(" ", text)) if not lang.startswith("zh") else CJK.search(text)
    )
    return has_cjk if lang.startswith("zh") else not has_cjk


def workspace(apps_dir: Path, app: str) -> Path:
    return apps_dir / app / "workspace"


# ------------------------------------------------------------------ checkers


def check_file(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    folder = workspace(found.apps_dir, str(spec.get("app", "files")))
    path = folder / str(spec["path"])
    want = bool(spec.get("exists", True))
    if spec.get("folder"):
        if path.is_dir() != want:
            return [f"folder {spec['path']!r} {'is missing' if want else 'still exists'}"]
        return []
    if not path.is_file():
        if not want:
            return []
        there = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
        there = [p for p in there if p != ".gitkeep"]
        return [f"no file {spec['path']!r}; the workspace has {short(there)}"]
    if not want:
        return [f"file {spec['path']!r} still exists"]
    text = path.read_text(encoding="utf-8", errors="replace")
    problems = []
    if "content" in spec and text.strip() != str(spec["content"]).strip():
        problems.append(f"{spec['path']} holds {short(text)}, not {short(spec['content'])}")
    if "contains" in spec and str(spec["contains"]) not in text:
        problems.append(f"{spec['path']} holds {short(text)}, without {short(spec['contains'])}")
    return problems


def notes_rows(apps_dir: Path) -> list[dict[str, Any]]:
    db = workspace(apps_dir, "notes") / "notes.db"
    if not db.is_file():
        return []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        con.row_factory = sqlite3.Row
        return [dict(r) for r in con.execute("SELECT title, body, tag, done FROM notes")]
    except sqlite3.Error:
        return []
    finally:
        con.close()


def check_note(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    rows = notes_rows(found.apps_dir)
    text = str(spec["text"]).casefold()
    hits = [r for r in rows if text in f"{r['title']}\n{r['body']}".casefold()]
    if not spec.get("exists", True):
        return [f"note {spec['text']!r} is still there"] if hits else []
    if not hits:
        return [f"no note with {spec['text']!r}; notes: {short([r['title'] for r in rows])}"]
    if "tag" in spec:
        tags = [str(r["tag"]) for r in hits]
        if not any(str(spec["tag"]) in t.split(",") or t == spec["tag"] for t in tags):
            return [f"note {spec['text']!r} has tag {short(tags)}, not {spec['tag']!r}"]
    if "done" in spec and not any(bool(r["done"]) == bool(spec["done"]) for r in hits):
        return [f"note {spec['text']!r} is not done={spec['done']}"]
    return []


def mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def code_stdouts(found: Found) -> list[str]:
    outs = []
    for view in found.app_views("code"):
        stdout = mapping(view.get("data")).get("stdout")
        if isinstance(stdout, str):
            outs.append(stdout)
    return outs


def check_code_output(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    outs = code_stdouts(found)
    want = str(spec["contains"])
    if any(want in o for o in outs):
        return []
    if outs:
        return [f"the code printed {short(outs)}, without {want!r}"]
    return [f"no run output; Code showed {short(last_message(found, 'code'))}"]


def last_message(found: Found, app: str) -> str:
    views = found.app_views(app)
    if not views:
        return f"nothing (apps: {sorted({a for a, _ in found.views})}, {found.message()!r})"
    return str(views[-1].get("message") or views[-1].get("data") or "")


def check_player(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    music = found.app_views("music")
    problems = []
    if "volume" in spec:
        states = [mapping(v.get("state")) for v in music if "volume" in mapping(v.get("state"))]
        volume = states[-1]["volume"] if states else None
        if volume != spec["volume"]:
            problems.append(f"the volume is {volume!r}, not {spec['volume']!r}")
    if "title" not in spec and "playing" not in spec:
        return problems
    media = [mapping(v.get("data")) for v in music if v.get("view_type") == "media"]
    if not media:
        return [
            *problems,
            f"the player holds no song; Music showed {short(last_message(found, 'music'))}",
        ]
    data = media[-1]
    title = str(data.get("title") or "")
    if "title" in spec and str(spec["title"]).casefold() not in title.casefold():
        problems.append(f"the player holds {title!r}, not {spec['title']!r}")
    if "playing" in spec and (data.get("autoplay") is not False) != bool(spec["playing"]):
        problems.append(f"the player is {'paused' if spec['playing'] else 'playing'}")
    return problems


def check_reply_only(spec: Any, found: Found, lang: str) -> list[str]:
    problems = []
    called = [a for a, _ in found.views]
    if found.reply.get("plan") or called:
        problems.append(f"an app was called: {short(called or found.reply.get('plan'))}")
    if found.asked():
        problems.append(f"the user was asked {short(found.asked()[0].get('prompt'))}")
    message = found.message().strip()
    if not message or message.startswith(JSONISH) or '"arguments"' in message:
        problems.append(f"the reply is not words: {short(message)}")
    elif not in_lang(message, lang):
        problems.append(f"the reply is not in {lang}: {short(message)}")
    return problems


def check_memory(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    """A memory whose text holds ``text``: in ``state`` (default active), of ``scope``
    (default user); ``exists: false``: none left but deleted ones; ``in_reply``: the
    reply names it."""
    text = str(spec["text"]).casefold()
    hits = [m for m in found.memories if text in str(m.get("text", "")).casefold()]
    live = [m for m in hits if m.get("state") != "deleted"]
    if not spec.get("exists", True):
        return [f"memory {spec['text']!r} is still {live[0]['state']}"] if live else []
    state, scope = spec.get("state", "active"), spec.get("scope", "user")
    if not any(m.get("state") == state and m.get("scope") == scope for m in hits):
        kept = short([(m.get("text"), m.get("state")) for m in found.memories])
        return [f"no {state} memory {spec['text']!r} in {scope}; kept: {kept}"]
    if spec.get("in_reply") and text not in found.message().casefold():
        return [f"the reply does not name {spec['text']!r}: {short(found.message())}"]
    return []


def check_asked(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    cards = found.asked()
    if not cards:
        return [f"nobody asked; the reply was {short(found.message())}"]
    if "kind" in spec:
        cards = [c for c in cards if c.get("kind") == spec["kind"]]
        if not cards:
            return [f"not asked to {spec['kind']}: asked {short(found.asked()[0].get('prompt'))}"]
    offered: set[str] = set()
    for card in cards:
        for option in card.get("options") or []:
            if isinstance(option, dict):
                offered |= {str(option.get("value")), str(option.get("label"))}
            else:
                offered.add(str(option))
    missing = [o for o in spec.get("options", []) if o not in offered]
    if missing:
        return [f"asked without {missing}: offered {short(sorted(offered))}"]
    return []


NEEDS_MODEL = '"settings#llm"'
"""The desktop target of the button a view offers when it needs a model set up first."""


def check_view(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    app = str(spec["app"])
    views = [v for v in found.app_views(app) if v.get("status") != "error"]
    if spec.get("answered"):  # a notice sending the user to set up a model answers nothing
        views = [v for v in views if NEEDS_MODEL not in json.dumps(v.get("actions") or [])]
    if not views:
        return [f"{app} did not answer; the user saw {short(last_any(found))}"]
    if "view_type" in spec and not any(v.get("view_type") == spec["view_type"] for v in views):
        return [f"{app} showed {[v.get('view_type') for v in views]}, not {spec['view_type']}"]
    shown = json.dumps(views, ensure_ascii=False).casefold()
    missing = [t for t in spec.get("contains", []) if str(t).casefold() not in shown]
    if missing:
        return [f"{app}'s view lacks {missing}: {short(views[-1].get('message'))}"]
    return []


def last_any(found: Found) -> str:
    if found.asked():
        return f"a question: {found.asked()[-1].get('prompt')}"
    if found.views:
        app, view = found.views[-1]
        return f"{app}: {view.get('message') or view.get('view_type')}"
    return found.message() or found.error


def check_ui_op(spec: dict[str, Any], found: Found, lang: str) -> list[str]:
    for op in found.ui_ops:
        if all(op.get(k) == v for k, v in spec.items()):
            return []
    return [f"no desktop change {short(spec)}; sent {short(found.ui_ops)}: {found.message()}"]


Checker = Callable[[Any, Found, str], list[str]]
CHECKERS: dict[str, Checker] = {
    "file": check_file,
    "note": check_note,
    "code_output": check_code_output,
    "player": check_player,
    "reply_only": check_reply_only,
    "asked": check_asked,
    "view": check_view,
    "ui_op": check_ui_op,
    "memory": check_memory,
}


def check(expect: dict[str, Any], found: Found, lang: str) -> list[str]:
    """Every problem with the task's outcome (none: success)."""
    if found.error:
        return [found.error]
    problems: list[str] = []
    for key, spec in expect.items():
        specs = spec if isinstance(spec, list) else [spec]
        for one in specs:
            problems += CHECKERS[key](one, found, lang)
    if problems and not any("the user saw" in p for p in problems):
        problems.append(f"the user saw {short(last_any(found))}")
    return problems


def validate_task(task: dict[str, Any]) -> None:
    """Raise ValueError naming what is wrong with one line of tasks.jsonl."""
    for key in ("id", "lang", "kind", "app", "say", "expect"):
        if key not in task:
            raise ValueError(f"task {task.get('id')!r} has no {key!r}")
    if task["lang"] not in ("en", "zh-CN"):
        raise ValueError(f"task {task['id']!r}: lang must be en or zh-CN")
    if not isinstance(task["expect"], dict) or not task["expect"]:
        raise ValueError(f"task {task['id']!r}: expect must be a non-empty object")
    unknown = set(task["expect"]) - set(CHECKERS)
    if unknown:
        raise ValueError(f"task {task['id']!r}: unknown outcomes {sorted(unknown)}")
