"""Pure helpers of the files app: path rules, file kinds, sizes, instruction parsing.

No I/O here; everything that touches the disk goes through the system's
atomic tools in ``main.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import quote

from aios_sdk import slots

MAX_NAME_BYTES = 255
TEXT_EXT = {".txt", ".md", ".log", ".csv", ".tsv", ".ini", ".cfg", ".conf", ".rst", ""}
CODE_LANG = {
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".ts": "typescript",
    ".json": "json",
    ".sh": "bash",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".java": "java",
    ".go": "go",
    ".rs": "rust",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "ini",
    ".sql": "sql",
    ".xml": "xml",
    ".rb": "ruby",
    ".php": "php",
}
IMAGE_EXT = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".bmp", ".ico"}
AUDIO_EXT = {".wav", ".mp3", ".ogg", ".oga", ".flac", ".m4a", ".aac", ".opus"}
VIDEO_EXT = {".mp4", ".webm", ".ogv", ".mov", ".m4v"}


class BadPath(ValueError):
    """A path or name from the user that this app will not use; the message says why."""

    def __init__(self, zh: str, en: str):
        super().__init__(zh)
        self.zh = zh
        self.en = en

    def text(self, en: bool) -> str:
        return self.en if en else self.zh


def clean_rel(
    raw: object, *, allow_root: bool = False, what: str = "path", zh: str = "路径"
) -> str:
    """A normalised path relative to the workspace, or BadPath naming the rule.

    Hidden names (a leading dot) are refused: the workspace keeps the
    sandbox's own ``.aios`` folder there, and this app only manages visible files.
    """
    if raw is None:
        raw = ""
    if not isinstance(raw, str):
        raise BadPath(
            f"{zh}必须是文字（收到 {type(raw).__name__}）",
            f"{what} must be text (got {type(raw).__name__})",
        )
    text = raw.strip()
    if "\x00" in text:
        raise BadPath(f"{zh}含有 NUL 字符", f"{what} contains a NUL byte")
    if text.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", text):
        raise BadPath(
            f"{zh} {raw!r} 必须是工作区里的相对路径",
            f"{what} {raw!r} must be relative to the workspace",
        )
    parts = [p for p in PurePosixPath(text).parts if p not in ("", ".")]
    for p in parts:
        if p == "..":
            raise BadPath(f"{zh} {raw!r} 不能包含 '..'", f"{what} {raw!r} must not contain '..'")
        if p.startswith("."):
            raise BadPath(
                f"{zh} {raw!r}：不管理以 '.' 开头的隐藏文件",
                f"{what} {raw!r}: hidden names (starting with '.') are not managed",
            )
        if len(p.encode("utf-8")) > MAX_NAME_BYTES:
            raise BadPath(
                f"{zh} {raw!r}：名字超过 {MAX_NAME_BYTES} 字节",
                f"{what} {raw!r}: a name is longer than {MAX_NAME_BYTES} bytes",
            )
    if not parts and not allow_root:
        raise BadPath(f"{zh}不能为空", f"{what} is empty")
    return "/".join(parts)


def clean_name(raw: object) -> str:
    """One file name (no folder part) for a rename."""
    name = clean_rel(raw, what="new name", zh="新名称")
    if "/" in name:
        raise BadPath(
            f"新名称 {raw!r} 不能含 '/'（重命名不移动文件夹）",
            f"new name {raw!r} must be a name without '/' (rename keeps the folder)",
        )
    return name


def parent_of(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


def base_of(rel: str) -> str:
    return rel.rsplit("/", 1)[-1]


def join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def ext_of(rel: str) -> str:
    return PurePosixPath(rel).suffix.lower()


def file_url(app: str, rel: str) -> str:
    """Where the system serves this file of the app's workdir (never outside it)."""
    return f"/apps/{quote(app)}/files/{quote(rel)}"


@dataclass(frozen=True)
class Kind:
    key: str
    zh: str
    en: str


KINDS = {
    "dir": Kind("dir", "文件夹", "folder"),
    "text": Kind("text", "文本", "text"),
    "code": Kind("code", "代码", "code"),
    "image": Kind("image", "图片", "image"),
    "audio": Kind("audio", "音频", "audio"),
    "video": Kind("video", "视频", "video"),
    "file": Kind("file", "文件", "file"),
    "link": Kind("link", "链接", "link"),
}


def kind_of(rel: str, entry_type: str) -> Kind:
    if entry_type == "dir":
        return KINDS["dir"]
    if entry_type == "link":
        return KINDS["link"]
    ext = ext_of(rel)
    if ext in IMAGE_EXT:
        return KINDS["image"]
    if ext in AUDIO_EXT:
        return KINDS["audio"]
    if ext in VIDEO_EXT:
        return KINDS["video"]
    if ext in CODE_LANG:
        return KINDS["code"]
    if ext in TEXT_EXT:
        return KINDS["text"]
    return KINDS["file"]


def human_size(size: object) -> str:
    if not isinstance(size, int):
        return ""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"


# ------------------------------------------------------------ instructions

_APP_WORDS = re.compile(
    r"^\s*(?:请|帮我)?(?:打开|启动|用|open|launch|start|show|use|in)?\s*(?:the\s+)?"
    r"(?:文件管理器|文件管理|file\s*manager|files)(?:app|应用)?(?![a-z])[\s,，:：]*",
    re.IGNORECASE,
)
_APP_TAIL = re.compile(
    r"\s+(?:in|with|using|via|from)\s+(?:the\s+)?(?:files\s+app|file\s*manager(?:\s+app)?)$"
    r"|\s*(?:在|用)文件管理器?(?:里|中)?$",
    re.IGNORECASE,
)
"""The app named after the request: "list docs in the file manager"."""
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    # "列出我的文件", "我的文件", "list my files": the workspace itself, not a folder "my files"
    (
        "home",
        re.compile(
            r"^(?:列出|浏览|显示|查看|看看|打开|list|show|browse|open|view)?\s*(?:一下|me)?\s*"
            r"(?:我的|所有的?|全部的?|all(?:\s+(?:of\s+)?my)?|my|the)?\s*(?:文件|files?)$",
            re.IGNORECASE,
        ),
    ),
    # "show everything", "全部显示": everything there is, at the top
    (
        "home",
        re.compile(
            r"^(?:列出|显示|查看|看看|看一下|list|show|see|view)?\s*(?:me\s+)?"
            r"(?:everything|all(?:\s+of\s+it)?|全部|所有|所有东西|全部东西|一切)"
            r"(?:\s*(?:显示|列出)(?:出来)?|\s+(?:here|there|in\s+(?:my\s+)?files))?$",
            re.IGNORECASE,
        ),
    ),
    # "新建文件" / "new file" with no name: the new-file form (not a file named "文件")
    ("new", re.compile(r"^(?:新建|创建|create|new)\s*(?:一个)?\s*(?:a\s+)?(?:文件|file)$", re.I)),
    # another app launched us to choose a file (DESIGN §13): "选一个文件" / "pick a file"
    (
        "pick",
        re.compile(
            r"^(?:选(?:一个|择)?文件|选择一个文件|pick(?: a)? file|choose(?: a)? file)", re.I
        ),
    ),
]
_VERBS: list[tuple[str, re.Pattern[str]]] = [
    (
        "rename",
        re.compile(
            r"重命名|改名|改个名|名字改|\b(?:rename|mv)\b|\bchange\s+(?:the\s+|its\s+)?name\b", re.I
        ),
    ),
    # "把 a.txt 改成 b.txt", "change a.txt to b.txt": a rename only when both are names
    ("rename_names", re.compile(r"改成|改为|换成|\bchange\b", re.I)),
    ("delete", re.compile(r"删除|删掉|删了|移除|\b(?:delete|remove|rm|erase|trash)\b", re.I)),
    ("edit", re.compile(r"编辑|修改|改一下|\b(?:edit|modify|change)\b", re.I)),
    # "hello.txt 里写了什么": a question about a file, not a request to write one
    ("preview", re.compile(r"写了(?:些)?什么|写的(?:是)?什么|\bwhat\s+does\b.*\bsay\b", re.I)),
    (
        "create",
        re.compile(
            r"新建|创建|新增|建一个|建个|建立|生成|写一个|写个|写入|写|保存|存一个"
            r"|\b(?:create|make|new|touch|write|save|add|put|mkdir)\b",
            re.I,
        ),
    ),
    (
        "list",
        re.compile(
            r"列出|列一下|浏览|进入|有哪些|有什么|哪些文件|什么文件|目录|文件夹"
            r"|\b(?:list|ls|browse|cd|dir|folder|directory)\b|\bgo\s+(?:in)?to\b"
            r"|\bwhat(?:'s|\s+is|\s+are)?\s+(?:files\s+)?(?:in|inside|there|here)\b"
            r"|\b(?:what|which)\s+files\b",
            re.I,
        ),
    ),
    (
        "preview",
        re.compile(
            r"预览|查看|打开|看看|看一下|显示|读取|读一下|读|"
            r"\b(?:preview|view|open|show|cat|read|display|see)\b",
            re.I,
        ),
    ),
]
_RENAME_TO = re.compile(
    r"(?:重命名为|改名为|改名成|改成|改为|换成|为|成|\bto\b|\bas\b|->)\s*", re.IGNORECASE
)
_GENERIC = re.compile(
    r"\b(?:the|a|an|my|your|our|all|of|files?|in|inside|there|here|this|that|me|us|"
    r"what|which|are|is|me|please|folder|directory|everything|stuff|things|contents?)\b"
    r"|东西|内容|我的|所有的?|全部的?|一下|哪些|什么|这个|那个|"
    r"文件夹|文件|目录|里面|里|中|的|有|都|个|吗|呢|\?|？",
    re.I,
)


def _mask(text: str) -> str:
    """``text`` with quoted things and file names blanked: a verb inside a name
    ("preview delete-me.txt") does not choose the intent."""
    spans = [(s, e) for s, e, _ in slots.file_tokens(text)]
    for m in re.finditer(r"「[^」]*」|“[^”]*”|\"[^\"]*\"|『[^』]*』|《[^》]*》", text):
        spans.append(m.span())
    out = list(text)
    for s, e in spans:
        out[s:e] = "_" * (e - s)
    return "".join(out)


def _after_verb(rest: str, pattern: re.Pattern[str]) -> str:
    """What follows the verb, without "file"/"文件" words: the old single-argument form."""
    m = pattern.search(_mask(rest))
    tail = rest[m.end() :] if m else rest
    lead = r"^\s*(?:the\s+)?(?:这个|那个)?(?:文件夹\s*|文件\s*|file\s+)?"
    return re.sub(lead, "", tail, flags=re.IGNORECASE).strip()


def _target(rest: str, pattern: re.Pattern[str]) -> str | None:
    named = slots.find_file_name(rest) or slots.find_quoted(rest) or slots.find_folder(rest)
    return named or _after_verb(rest, pattern) or None


_TAIL_LEAD = re.compile(
    r"^(?:\s*(?:[,，:：]|(?:并且?|然后|and|内容|content|with|写入|写上|写|填上|put|write)(?![a-z])))*\s*",
    re.IGNORECASE,
)
_TAIL_WHERE = re.compile(r"^(?:in|inside|into|under|at|on|在|到|放)\b", re.IGNORECASE)


def _trailing_content(rest: str, name: str) -> str | None:
    """The old terse form "新建 hello.txt 你好世界": what follows the name is the content
    (not "in docs", not "的文件")."""
    tokens = [t for t in slots.file_tokens(rest) if t[2] == name]
    tail = _TAIL_LEAD.sub("", rest[tokens[0][1] :]) if tokens else ""
    if tail and not _TAIL_WHERE.match(tail) and _GENERIC.sub("", tail).strip():
        return tail.strip()
    return None


_CONTENT_END = re.compile(
    r"\s*(?:\b(?:in(?:to)?|inside|on)\s+(?:it|there|the\s+file)|\binside|(?:放|写)?进去|到里面|在里面)"
    r"\s*$",
    re.IGNORECASE,
)
_NOT_FOLDER = {"it", "there", "here", "this", "that", "a", "an", "the", "file", "它", "里面"}
_IN_FOLDER = (
    re.compile(
        r"^\s*(?:in|inside|into|under|within|to)\s+(?:the\s+|my\s+)?(?:(?:folder|directory)\s+)?"
        r"([\w\-./]+?)(?:\s+(?:folder|directory))?(?=$|\s|[,，。])",
        re.IGNORECASE,
    ),
    re.compile(
        r"^\s*(?:放到|放在|存到|存在|到|在)\s*([\w\-./]+?)\s*(?:文件夹|目录)?(?:里面|里|下面|下|中|内)"
    ),
)


def _folder_after(rest: str, start: int) -> str | None:
    """The folder named right after the thing created: "create a.txt in docs" → "docs"."""
    for pattern in _IN_FOLDER:
        m = pattern.match(rest[start:])
        name = m.group(1).strip("/") if m else ""
        if name and name.lower() not in _NOT_FOLDER and not slots.file_tokens(name):
            return name
    return None


_CONTENT_BEFORE = (
    re.compile(
        r"\b(?:put|write|add|type|save|store)\s+(.+?)\s+(?:in|into|to|inside)\s+(?:the\s+|a\s+)?"
        r"(?:new\s+)?(?:text\s+)?(?:file\s+)?(?:called\s+|named\s+)?$",
        re.IGNORECASE,
    ),
    re.compile(r"把\s*(.+?)\s*(?:写进|写到|写入|存到|存进|放进|放到|记到|记在)\s*(?:文件)?\s*$"),
)


def _leading_content(rest: str, name: str) -> str | None:
    """Content written before the name: "put hello in notes.txt", "把你好写进 a.txt"."""
    at = rest.find(name)
    for pattern in _CONTENT_BEFORE if at > 0 else ():
        m = pattern.search(rest[:at])
        if m and m.group(1).strip():
            return m.group(1).strip()
    return None


def _tidy_content(content: str, quoted: str | None) -> str:
    """Content without the words around it: "8080 in it" → "8080" (quoted text stays whole)."""
    return content if content == quoted else _CONTENT_END.sub("", content).strip()


def _create(rest: str) -> tuple[str, list[str]]:
    name = slots.find_file_name(rest)
    if not (name and _FILE_LIKE.search(name)):
        made = _mkdir(rest)
        if made is not None:
            return made
    if not name:
        return "new", []
    quoted = slots.find_quoted(rest)
    content = slots.find_content(rest)
    if content is None:
        # 'write "hi" into a.txt': the quoted thing that is not the name is the content
        content = quoted if quoted and quoted != name else _trailing_content(rest, name)
    if content is None:
        content = _leading_content(rest, name)
    folder = slots.find_folder(rest)
    if folder is None:
        at = rest.find(name)
        folder = _folder_after(rest, at + len(name)) if at >= 0 else None
    args = [name, _tidy_content(content, quoted) if content else ""]
    return "create", [*args, folder] if folder else args


_FILE_LIKE = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_FOLDER_WORD = re.compile(r"文件夹|目录|\b(?:folder|directory|dir)\b", re.IGNORECASE)
_BEFORE_FOLDER_WORD = re.compile(r"\b([A-Za-z0-9_\-]+)\s+(?:folder|directory)\b", re.IGNORECASE)
_NOT_A_FOLDER_NAME = {"a", "an", "the", "new", "empty", "my", "this", "that", "one", "in", "it"}
_CREATE_VERB = re.compile(
    r"新建|创建|新增|建一个|建个|建立|建|\b(?:create|make|new|add|mkdir)\b", re.IGNORECASE
)
_PARENT_ZH = re.compile(r"在\s*([\w\-./]+?)\s*(?:文件夹|目录)?(?:里面|里|中|下面|下|内)")


def _mkdir(rest: str) -> tuple[str, list[str]] | None:
    """A new folder ("新建文件夹 照片", "make a folder called photos"): ``("mkdir", [path])``
    (no name: ``[]``); ``None`` when the folder word says where, not what
    ("在 docs 文件夹里新建 x")."""
    masked = _mask(rest)
    md = re.match(r"^(?:mkdir|md)\s+(?:-p\s+)?(\S+)$", rest, re.IGNORECASE)
    if md:
        return "mkdir", [md.group(1)]
    verb, word = _CREATE_VERB.search(masked), _FOLDER_WORD.search(masked)
    if not verb or not word or word.start() < verb.start():
        return None
    said = rest[verb.start() :]
    name = slots.find_name(said) or slots.find_folder(said)
    if not name:
        before = _BEFORE_FOLDER_WORD.search(said)  # "make a photos folder"
        name = before.group(1) if before else None
    if name and name.lower() in _NOT_A_FOLDER_NAME:
        name = None
    if not name:
        return "mkdir", []
    parent = None
    at = rest.find(name, verb.start())
    if at >= 0:
        parent = _folder_after(rest, at + len(name))
    if parent is None:
        zh = _PARENT_ZH.search(rest[: verb.start()])
        parent = zh.group(1).strip("/") if zh else None
    return "mkdir", [join(parent, name) if parent else name]


def _two_names(rest: str) -> list[str] | None:
    """The old and new names when both are written: quoted, or as ``name.ext``."""
    found: list[tuple[int, str]] = []
    blanked = rest
    for q in slots.find_quoted_all(rest):
        at = blanked.find(q)
        found.append((at, q))
        blanked = blanked[: at - 1] + "_" * (len(q) + 2) + blanked[at + len(q) + 1 :]
    found += [(s, name) for s, _, name in slots.file_tokens(blanked)]
    names = [name for _, name in sorted(found)]
    return names[:2] if len(names) >= 2 else None


def _rename(rest: str) -> tuple[str, list[str]] | None:
    both = _two_names(rest)
    if both:
        return "rename", both
    names = slots.find_quoted_all(rest)[:1] or [t[2] for t in slots.file_tokens(rest)]
    to = list(_RENAME_TO.finditer(_mask(rest)))
    if names and to:
        new = rest[to[-1].end() :].strip()
        new = slots.find_quoted(new) or (new.split()[0] if new.split() else "")
        if new and new != names[0]:
            return "rename", [names[0], new]
    m = re.match(
        r"^(?:重命名|改名|rename|mv)\s*(?:文件\s*|file\s+)?(\S+?)\s*"
        r"(?:为|成|到|改为|to|->|as|\s)\s*(\S+)$",
        rest,
        re.I,
    )
    return ("rename", [m.group(1), m.group(2)]) if m else None


def _list(rest: str, pattern: re.Pattern[str]) -> tuple[str, list[str]]:
    folder = slots.find_folder(rest)
    if folder is not None:
        return "list", [folder]
    name = slots.find_file_name(rest)
    if name:
        return "preview", [name]  # "看看 hello.txt 里有什么"
    tail = _GENERIC.sub(" ", _after_verb(rest, pattern)).split()
    return "list", [tail[0]] if len(tail) == 1 else [""]


def parse_instruction(text: str | None) -> tuple[str, list[str]]:
    """``(intent, args)``: home, new, list, preview, edit, create, mkdir, delete, rename,
    pick or unknown. Create's args are ``[name, content]`` and, when one was named, a
    folder; mkdir's are ``[path]`` (``[]`` when no name was given)."""
    rest = slots.strip_filler(text)
    rest = slots.strip_filler(_APP_WORDS.sub("", rest, count=1))
    rest = slots.strip_filler(_APP_TAIL.sub("", rest, count=1)) or rest
    if not rest:
        return "home", []
    for intent, pattern in _PATTERNS:
        if pattern.match(rest):
            return intent, []
    masked = _mask(rest)
    for intent, verb in _VERBS:
        if not verb.search(masked):
            continue
        if intent == "rename":
            found = _rename(rest)
            if found:
                return found
            continue
        if intent == "rename_names":
            names = _two_names(rest)
            if names:
                return "rename", names
            continue
        if intent == "create":
            return _create(rest)
        if intent == "list":
            return _list(rest, verb)
        if intent == "preview" and slots.find_file_name(rest) is None:
            folder = slots.find_folder(rest)
            if folder is not None:
                return "list", [folder]  # "看看工作区", "open the docs folder"
        target = _target(rest, verb)
        if target:
            return intent, [target]
    return "unknown", [rest]
