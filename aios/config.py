"""``config.json``: one validated model with documented defaults.

Secrets may come from the environment instead of the file:
``DEEPSEEK_API_KEY`` / ``AIOS_LLM_API_KEY`` (key), ``AIOS_LLM_BASE_URL``,
``AIOS_LLM_MODEL``. Settings changed in the settings window (a key typed
there included) are stored in ``<data_dir>/settings.json`` (mode 0600), never
in the tracked config.json; they are layered over the file and under the
environment.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from aios.errors import ConfigError
from aios.names import (
    APP_ID_PATTERN,
    ATOMIC_TOOLS,
    ENV_LLM_API_KEY,
    ENV_LLM_BASE_URL,
    ENV_LLM_MODEL,
    MCP_SERVER_PATTERN,
    MCP_TOOL_PATTERN,
    PERMISSIONS,
    ApprovalMode,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG_PATH = PROJECT_ROOT / "config.json"

DEFAULT_TOOL_TIMEOUTS: dict[str, float] = {
    "http_request": 30,
    "file_read": 5,
    "file_write": 10,
    "file_list": 5,
    "shell_exec": 60,
    "process_start": 10,
    "db_query": 10,
    "cache_get": 2,
    "cache_set": 2,
    "notify": 2,
    "memory_store": 2,
    "memory_search": 2,
}
"""Seconds per tool; config.json ``tool_timeout`` overrides single entries."""

SECRET_KEYS = frozenset({"deepseek_api_key", "api_key", "token"})
"""Keys whose values are secrets wherever they are: masked in the settings API, kept when
sent back masked. ``token``: an MCP server's bearer token (``mcp.servers.<name>.token``)."""

DEFAULT_GRANTS: dict[str, list[str]] = {
    "system_agent": ["desktop.control"],
    "monitor": ["system.processes"],
    "assistant": ["conversation.read", "memory.read", "memory.write", "domains"],
    "music": ["domains"],
}
"""Bundled apps' grants, applied the first time an app is seen (the user can revoke them);
nothing gets ``network`` by default. ``"domains"``: the destinations its manifest
declares (DESIGN §14.5)."""


DEFAULT_BLOCK_LIST: dict[str, tuple[str, ...]] = {
    "privilege-escalation": ("sudo", "su", "doas", "pkexec"),
    "power": ("shutdown", "reboot", "halt", "poweroff"),
    "disk-format": ("mkfs*", "fdisk", "parted"),
}
"""The block list's program-name rules (DESIGN §12); ``approvals.block_list`` overrides."""
STRUCTURAL_BLOCK_RULES = ("device-write", "delete-outside", "download-exec")
"""Block-list rules decided from the arguments, not a word list: always on."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SandboxConfig(_Section):
    """``tool_sandbox``: the global rules; a manifest may only narrow them."""

    enable_shell_whitelist: bool = True
    shell_whitelist: list[str] = Field(default_factory=lambda: ["ls", "cat", "echo", "python3"])
    http_domain_whitelist: list[str] = Field(default_factory=list)
    """Empty = any domain (the system's and apps' own ports are always refused)."""
    os_sandbox: Literal["auto", "bwrap", "off"] = "auto"
    """``auto`` uses bubblewrap when it works here and warns once when not."""
    allow_pipes: bool = True
    """Allow a plain ``a | b`` pipeline when every stage passes the whitelist."""
    max_output_bytes: int = Field(default=1_000_000, ge=1024)
    max_file_bytes: int = Field(default=50_000_000, ge=1024)
    """Largest file a tool may write (file_write, http save_to, a command's RLIMIT_FSIZE)."""
    max_read_bytes: int = Field(default=5_000_000, ge=1024)
    max_http_body_bytes: int = Field(default=20_000_000, ge=1024)
    memory_mb: int = Field(default=512, ge=16)
    cpu_seconds: int = Field(default=30, ge=1)
    max_processes: int = Field(default=64, ge=4)
    max_background_processes: int = Field(default=4, ge=0)
    db_allowed_dsns: list[str] = Field(default_factory=list)
    """DSNs outside the workdir an app may open (explicit allow-list)."""


class LLMProvider(_Section):
    base_url: str = ""
    model: str = ""
    api_key: str = ""
    timeout: float = Field(default=30, gt=0)


class LLMConfig(LLMProvider):
    base_url: str = "https://api.deepseek.com"
    model: str = "deepseek-chat"
    max_retries: int = Field(default=2, ge=0, le=10)
    """Retries of errors that may pass; a timeout against a loopback endpoint (a local
    server still reading the prompt) is never retried."""
    fallback: LLMProvider = Field(default_factory=LLMProvider)
    # part 15-L: local models
    context_tokens: int = Field(default=0, ge=0)
    """The server's context size in tokens (0: ask the server, llama.cpp ``/props`` n_ctx or
    Ollama's ``num_ctx``); a prompt that may not fit is warned about once."""
    measure_local: bool = True
    """For a loopback endpoint, time one tiny streamed request at start (in the background)
    and raise ``llm.timeout`` / ``handle_timeout`` for LLM calls to what that server needs."""
    # part 15-P: planning with real models
    planner: Literal["hybrid", "llm", "offline"] = "hybrid"
    """Who plans an instruction: ``hybrid`` (the model, but the offline router wins — or the
    user is asked — when it matched an app's name or keyword and the model disagrees),
    ``llm`` (the model alone; the router only when its plan is unusable), ``offline``."""
    plan_max_tokens: int = Field(default=512, ge=16, le=8192)
    """The longest planning answer (temperature 0); cut there it is an invalid plan."""
    prices: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Dollars per million tokens by model: ``{"deepseek-chat": {"input": 0.27, "output":
    1.1, "cached": 0.07}}``; a model not listed has no cost (a local model costs nothing)."""

    def cost(self, model: str, prompt: int, completion: int, cached: int) -> float | None:
        """The dollars of one call by ``prices`` (cached prompt tokens at the cached price);
        None when the model has no price."""
        price = self.prices.get(model)
        if price is None:
            return None
        fresh = max(0, prompt - cached)
        dollars = (
            fresh * price.get("input", 0.0)
            + cached * price.get("cached", price.get("input", 0.0))
            + completion * price.get("output", 0.0)
        ) / 1_000_000
        return round(dollars, 8)


class VoiceConfig(_Section):
    stt_engine: Literal["auto", "google", "sphinx", "none"] = "auto"
    """``auto``: google (online) for zh-CN when reachable, else pocketsphinx + app grammar."""
    tts_engine: Literal["auto", "browser", "pyttsx3", "none"] = "auto"
    mandarin_voice: str = "sit/cmn-latn-pinyin"
    welcome: bool = True
    speak_replies: Literal["voice", "always", "never"] = "voice"
    """When the desktop reads a reply aloud: ``voice`` only for an instruction spoken into
    the microphone (a typed one is answered silently), ``always``, or ``never``."""
    volume: float = Field(default=1.0, ge=0, le=1)
    """The tray's volume slider: speech and the desktop's audio/video elements (0..1)."""
    # conversation mode (aios/duplex/turns.py): an open microphone, turns ended by pauses
    turn_pause_ms: int = Field(default=700, ge=200, le=5000)
    """A pause this long ends the user's turn when what they said sounds finished."""
    turn_max_pause_ms: int = Field(default=2000, ge=300, le=15000)
    """A pause this long ends the turn whatever was said (an "and…" waits until then)."""
    vad_aggressiveness: int = Field(default=2, ge=0, le=3)
    """WebRTC VAD's mode: 0 hears the most as speech, 3 the least (noisy rooms)."""
    vad_start_ms: int = Field(default=60, ge=10, le=200)
    """Voiced audio (in the last 200 ms) that makes the start of the user's speech."""
    barge_in_ms: int = Field(default=120, ge=10, le=200)
    """The same while the desktop speaks: what stops its voice (its own echo is shorter)."""
    max_turn_s: float = Field(default=30, ge=2, le=300)
    """A turn that has not paused after this many seconds of audio ends anyway."""

    @model_validator(mode="after")
    def _pauses_in_order(self) -> VoiceConfig:
        if self.turn_max_pause_ms <= self.turn_pause_ms:
            raise ValueError(
                f"voice.turn_max_pause_ms ({self.turn_max_pause_ms}) must be longer than "
                f"voice.turn_pause_ms ({self.turn_pause_ms})"
            )
        return self


class DesktopConfig(_Section):
    host: Literal["127.0.0.1"] = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    """0 = pick a free port at start."""
    width: int = Field(default=1280, ge=320)
    height: int = Field(default=800, ge=240)


class AppsConfig(_Section):
    """``apps``: how far one app may go before it is stopped, and how it is watched."""

    max_concurrent_calls: int = Field(default=8, ge=1, le=256)
    """Calls in flight to one app at once; more wait behind that app only."""
    max_waiting_calls: int = Field(default=32, ge=0, le=4096)
    """Calls that may wait for a busy app; beyond that a call fails at once (HTTP 503)."""
    busy_wait: float = Field(default=30, ge=0)
    """Seconds a call waits for one of a busy app's slots before failing (HTTP 503)."""
    liveness_interval: float = Field(default=5, gt=0)
    """Seconds between two liveness probes (``GET /health``) of a running app."""
    liveness_timeout: float = Field(default=5, gt=0)
    """Seconds a probe waits; any HTTP answer, even a 404, counts as alive."""
    liveness_failures: int = Field(default=3, ge=1)
    """Probes in a row without an answer before the app is restarted."""
    handle_timeouts: int = Field(default=3, ge=1)
    """``/handle`` calls in a row that time out before the app is restarted."""
    max_memory_mb: int = Field(default=1024, ge=16)
    """Resident memory of an app's whole process tree; beyond it the app is restarted."""
    log_max_bytes: int = Field(default=5_000_000, ge=1024)
    """An app's log is rotated to ``<id>.log.1`` (one backup) at this size, while it runs."""
    restart_limit: int = Field(default=3, ge=0)
    """Crashes in a row (each run shorter than ``stable_start_time``) before ``failed``."""
    stable_start_time: float = Field(default=10, ge=0)
    backoff_initial: float = Field(default=0.5, ge=0)
    backoff_max: float = Field(default=8, ge=0)
    notify_burst: int = Field(default=10, ge=1)
    """Notifications one app may show within ``notify_window`` seconds; more are refused."""
    notify_window: float = Field(default=10, gt=0)
    confinement: Literal["auto", "off"] = "auto"
    """``auto``: every app process runs inside bubblewrap where it works (DESIGN §11);
    ``off``: apps run unconfined, reachable only with their launch secret."""
    max_processes: int = Field(default=128, ge=8, le=65536)
    """Tasks (processes and threads) in one confined app's sandbox (a pids cgroup)."""
    max_open_files: int = Field(default=1024, ge=64, le=1 << 20)
    """Open files per process of an app (RLIMIT_NOFILE)."""
    tmp_mb: int = Field(default=64, ge=1, le=65536)
    """Size of a confined app's private /tmp (and /dev/shm)."""
    autostart: Literal["recent", "all"] | list[str] = "recent"
    """Which apps start with the system (issue 27): ``recent`` — those opened or asked in
    the last ``autostart_sessions`` sessions, and system control (``system_agent``);
    ``all`` — every app, as the spec has it; or a list of app ids. The others start
    the first time they are needed (an open, a routed instruction, an action, a launch).
    Only ``all`` holds the desktop's ready until the apps settle; the apps chosen otherwise
    are a warm-up that a use waits for, but the first paint does not."""
    autostart_sessions: int = Field(default=3, ge=0, le=100)
    """Sessions looked back on for ``autostart: "recent"``."""
    idle_stop_s: float = Field(default=600, ge=0)
    """Seconds an app goes unused before it is stopped (0: never); never while it has an
    open window, a run, a background process or a card waiting. It starts again on its
    next use."""
    launch_max_depth: int = Field(default=3, ge=1, le=3)
    """Launches in one chain (A launches B: 1; B then launches C: 2); DESIGN §14.4: ≤ 3."""
    launch_max_per_run: int = Field(default=4, ge=1, le=64)
    """``launch`` steps one run may make in all (fan-out); more are refused."""
    default_grants: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_GRANTS.items()}
    )
    """App id -> permissions granted the first time the app is seen, if its manifest
    requests them; a later revocation by the user persists (DESIGN §11.7)."""

    @field_validator("default_grants")
    @classmethod
    def _grants(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for app_id, names in v.items():
            unknown = [n for n in names if n not in PERMISSIONS and n != "domains"]
            if unknown:
                raise ValueError(
                    f"unknown permission {unknown[0]!r} for {app_id!r} "
                    f"(permissions: {', '.join(PERMISSIONS)}, or 'domains': its manifest's)"
                )
        return v


class ApprovalsConfig(_Section):
    """``approvals``: when a plan waits for the user (DESIGN §12)."""

    mode: ApprovalMode = "smart"
    """``auto``: ask nothing (the block list still refuses); ``smart``: ask before
    ``high`` steps (commands); ``manual``: ask before ``medium`` and ``high`` ones."""
    timeout: float = Field(default=600, gt=0, le=86400)
    """Seconds a pending decision waits for the user before it expires."""
    block_list: dict[str, list[str]] = Field(
        default_factory=lambda: {k: list(v) for k, v in DEFAULT_BLOCK_LIST.items()}
    )
    """Programs never run, in any mode, per rule (matched on the basename, ``*`` as in
    a shell pattern). A rule left out keeps its default words; ``[]`` turns it off.
    The structural rules (``device-write``, ``delete-outside``, ``download-exec``)
    take no words and are always on (:func:`aios.tools.sandbox.check_block_list`)."""

    @field_validator("block_list")
    @classmethod
    def _block_list(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for rule, words in v.items():
            if rule not in DEFAULT_BLOCK_LIST:
                raise ValueError(
                    f"unknown block-list rule {rule!r} (rules with words: "
                    f"{', '.join(DEFAULT_BLOCK_LIST)}; {', '.join(STRUCTURAL_BLOCK_RULES)} "
                    "are always on)"
                )
            for word in words:
                if not word.strip() or "/" in word:
                    raise ValueError(
                        f"block-list rule {rule!r}: {word!r} must be a program name without a path"
                    )
        return {**{k: list(d) for k, d in DEFAULT_BLOCK_LIST.items()}, **v}


class EventsConfig(_Section):
    """``events``: what ``/api/events`` can replay to a client that reconnects (DESIGN §12).

    An event is dropped from the replay buffer only when it is beyond both bounds:
    older than ``replay_seconds`` and not among the last ``replay_max``; beyond
    ``replay_ceiling`` events or ``replay_bytes`` it goes regardless (memory). A
    client asking for more than the buffer holds gets ``resync``."""

    replay_max: int = Field(default=1000, ge=1)
    """Newest events always held, however old."""
    replay_seconds: float = Field(default=600, gt=0)
    """Every event younger than this is held too (up to ``replay_ceiling``)."""
    replay_ceiling: int = Field(default=50_000, ge=1)
    """Events held at most, whatever their age: bounds the buffer's memory."""
    replay_bytes: int = Field(default=32_000_000, ge=65536)
    """Bytes (as JSON) the buffer holds at most, whatever the events' count and age; the
    newest event is always held (DESIGN §14.6)."""

    @model_validator(mode="after")
    def _ceiling(self) -> EventsConfig:
        if self.replay_ceiling < self.replay_max:
            raise ValueError(
                f"events.replay_ceiling ({self.replay_ceiling}) must be at least "
                f"events.replay_max ({self.replay_max})"
            )
        return self


class QuotasConfig(_Section):
    """``quotas``: how much of the system one app may take (DESIGN §14.6, aios/quotas.py).

    Each is per app, reported in ``GET /api/apps`` (``quotas``) and refused with a JSON
    error naming it; normal use stays far under every one."""

    push_bytes: int = Field(default=20_000_000, ge=1024)
    """Bytes one app may push (``POST /api/sys/push``) within a minute."""
    pushes_per_minute: int = Field(default=600, ge=1)
    """Pushes one app may make within a minute (ten a second on average)."""
    cache_bytes: int = Field(default=20_000_000, ge=1024)
    """Bytes of values one app keeps in its cache (``cache_set``)."""
    cache_keys: int = Field(default=10_000, ge=1)
    """Keys one app keeps in its cache."""
    memories: int = Field(default=1_000, ge=1)
    """Memories one app keeps (its own, active) plus those it proposed to the user that
    wait for an answer (``memory_store``)."""
    db_value_bytes: int = Field(default=1_000_000, ge=1024)
    """Largest value (string or blob) and table row a ``db_query`` may build: SQLite itself
    refuses a longer one before it is made (``SQLITE_LIMIT_LENGTH``). A result never carries
    more than ``tool_sandbox.max_output_bytes`` anyway."""
    db_columns: int = Field(default=64, ge=8, le=2000)
    """Columns of one ``db_query`` result row or table (``SQLITE_LIMIT_COLUMN``): with
    ``db_value_bytes`` it bounds the row SQLite builds before anyone looks at it."""
    db_memory_bytes: int = Field(default=32_000_000, ge=65536)
    """Bytes a ``db_query`` may hold in SQLite's memory at once (an in-memory database, the
    values of the row being built); beyond it the query is stopped."""
    workspace_bytes: int = Field(default=1_000_000_000, ge=65536)
    """Bytes of files in one app's workdir; over it, every tool that writes there is refused
    until files are deleted (the app's own writes are seen at the next check)."""
    workspace_check_seconds: float = Field(default=5, ge=0)
    """Seconds a measure of a workdir is trusted before it is walked again."""
    pending_cards: int = Field(default=8, ge=1, le=64)
    """Cards and questions of one app waiting for the user at once."""
    waiting_calls: int = Field(default=8, ge=1, le=64)
    """Synchronous tool calls (``call_tool``) of one app waiting for the user at once; the
    next one is refused at once, without keeping a thread."""
    instances: int = Field(default=32, ge=1)
    """Open instances (windows) of one app across sessions."""


class WebConfig(_Section):
    """``web``: what the system's HTTP API accepts in one request."""

    max_json_body: int = Field(default=2_000_000, ge=1024)
    """Bytes of a JSON request body; a larger one is a 400 naming the limit."""
    max_upload_bytes: int = Field(default=50_000_000, ge=1024)
    """Bytes of any request body (audio for transcription included); beyond it a 413."""
    instruction_max_chars: int = Field(default=4000, ge=1)
    """Characters of one instruction (``POST /api/instruction``)."""
    snapshot_max_elements: int = Field(default=5000, ge=1)
    """Elements in one desktop UI snapshot (``POST /api/ui/snapshot``)."""
    ui_ops_max: int = Field(default=200, ge=1)
    """UI changes the system remembers (``GET /api/ui/ops``, re-applied on load, taken back
    by ``undo``/``reset``); beyond it the oldest are forgotten (they stay on screen)."""
    max_json_depth: int = Field(default=64, ge=2, le=500)
    """Nesting levels of a JSON body (and of an app's reply); deeper is a 400 naming it."""
    request_timeout: float = Field(default=30, gt=0)
    """Seconds a client may take to send one request's headers and body (slow clients)."""
    file_url_ttl: float = Field(default=600, gt=0)
    """Seconds a signed URL of an app's files (``?exp=&sig=``) stays valid."""


class StoreConfig(_Section):
    """``store``: the system database (``<data_dir>/aios.db``)."""

    pool_size: int = Field(default=8, ge=1, le=64)
    """Connections kept open; requests borrow one per operation (about 2 fds each)."""
    busy_timeout: float = Field(default=30, gt=0)
    """Seconds to wait for a lock or a free connection before a 503."""
    history_page: int = Field(default=200, ge=1)
    """History entries ``GET /api/sessions/<id>`` returns without ``?limit=``."""
    history_page_max: int = Field(default=1000, ge=1)
    """Largest ``?limit=`` accepted."""


class RetentionConfig(_Section):
    """``retention``: how much the database keeps; a background pruner enforces it."""

    audit_rows: int = Field(default=100_000, ge=100)
    """Newest audit rows (``tool_calls_log``) kept; also the cap for LLM usage rows."""
    audit_days: float = Field(default=30, gt=0)
    """Audit and LLM usage rows older than this are deleted."""
    history_rows_per_session: int = Field(default=2000, ge=10)
    """Newest history entries (and tasks) kept per session."""
    history_days: float = Field(default=90, gt=0)
    """History, finished tasks and idle sessions older than this are deleted."""
    prune_interval: float = Field(default=600, gt=0)
    """Seconds between two pruning passes (the first runs at start)."""
    vacuum_hours: float = Field(default=24, gt=0)
    """Hours between two ``VACUUM``s (run by the pruner after a pass)."""


class MemoryConfig(_Section):
    """``memory``: what the assistant keeps about the user (DESIGN §15)."""

    enabled: bool = True
    """Off: nothing is injected, extracted or proposed (the self files stay editable)."""
    prompt_tokens: int = Field(default=600, ge=0, le=8000)
    """Budget of the self files and memories quoted into the controller's, the planner's
    and the assistant's prompts (CJK character = 1 token, else 4 characters)."""
    context_k: int = Field(default=5, ge=0, le=20)
    """Memories relevant to an instruction given to an app (``context.memory``)."""
    extract_idle_s: float = Field(default=120, gt=0)
    """Seconds a conversation stays quiet before its new turns are read for durable facts."""
    auto_accept: bool = False
    """Extracted facts become active at once instead of waiting for the user's yes."""
    embeddings: bool = False
    """Vector search through the LLM endpoint's ``/v1/embeddings`` (text search always)."""
    embeddings_model: str = ""
    """The model for ``/v1/embeddings`` ("" = the chat model)."""


class TracesConfig(_Section):
    """``traces``: every decision of a session in ``<data_dir>/traces`` (DESIGN §16)."""

    enabled: bool = True
    keep_days: float = Field(default=30, gt=0)
    """Trace files last written longer ago than this are deleted (by the pruner)."""
    max_mb: float = Field(default=500, gt=0)
    """Past this total the oldest trace files are deleted."""
    queue_max: int = Field(default=10_000, ge=10)
    """Events waiting for the writer; past it events are dropped (and the count written)."""
    otlp_endpoint: str = ""
    """An OTLP/HTTP endpoint (``http://host:4318``): spans also go out through
    OpenTelemetry (the ``otel`` extra), GenAI semantic conventions."""


class McpServeConfig(_Section):
    """``mcp_server``: the desktop as an MCP server for other clients (DESIGN §17,
    aios/mcp/server.py); its tokens are made in Settings → MCP server."""

    memory_search: bool = False
    """Offer the ``memory_search`` tool (the user's memories) to tokens scoped for it."""
    progress_interval: float = Field(default=2, gt=0, le=60)
    """Seconds between two progress notifications while a call waits for a card."""
    call_wait: float = Field(default=3600, gt=0)
    """Seconds a call waits for its run to end before the client gets an error (the run
    goes on; its card stays on the desktop)."""
    session_idle_timeout: float = Field(default=1800, gt=0)
    """Seconds an idle ``/mcp`` session is kept; then the client starts a new one."""


McpRisk = Literal["safe", "low", "medium", "high"]


class McpToolConfig(_Section):
    """``mcp.servers.<name>.tools.<tool>``: the user's word on one tool of a server."""

    risk: McpRisk | None = None
    """Overrides the class its annotations give (DESIGN §17)."""
    apps: list[str] | None = None
    """Apps this tool is offered to; None: the server's ``apps``."""
    enabled: bool = True
    """False: no app is offered this tool."""

    @field_validator("apps")
    @classmethod
    def _apps(cls, v: list[str] | None) -> list[str] | None:
        return _app_ids(v) if v is not None else None


class McpServerConfig(_Section):
    """``mcp.servers.<name>``: one MCP server the desktop uses (DESIGN §17).

    Either ``command`` (a stdio server, started confined like an app in
    ``<data_dir>/mcp/<name>``) or ``url`` (a streamable-HTTP server, with optional
    ``headers`` and a bearer ``token`` sent only to that URL)."""

    command: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    url: str = ""
    headers: dict[str, str] = Field(default_factory=dict)
    token: str = ""
    """Sent as ``Authorization: Bearer <token>`` to ``url`` only; cleared when the URL
    changes without a new token (like the LLM key)."""
    enabled: bool = True
    network: bool = False
    """A stdio server's grant of the network: its own namespace with pasta, like an app
    granted ``network`` (never the host's loopback); without it, no network at all."""
    apps: list[str] = Field(default_factory=list)
    """Apps its tools are offered to (``tools.<tool>.apps`` narrows or widens one tool)."""
    tools: dict[str, McpToolConfig] = Field(default_factory=dict)
    timeout: float = Field(default=60, gt=0, le=3600)
    """Seconds one tool call may take before it is cancelled."""

    @field_validator("command")
    @classmethod
    def _command(cls, v: list[str]) -> list[str]:
        if v and (not v[0].strip() or any("\0" in a for a in v)):
            raise ValueError("command must start with a program name (a list of strings)")
        return v

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if v and not v.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https:// (got {v[:80]!r})")
        return v

    @field_validator("headers")
    @classmethod
    def _headers(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not name or any(c in name for c in ":\r\n ") or any(c in value for c in "\r\n"):
                raise ValueError(f"header {name!r}: a name without ':', spaces or line breaks")
        return v

    @field_validator("apps")
    @classmethod
    def _apps(cls, v: list[str]) -> list[str]:
        return _app_ids(v)

    @field_validator("tools")
    @classmethod
    def _tools(cls, v: dict[str, McpToolConfig]) -> dict[str, McpToolConfig]:
        for name in v:
            if not re.match(MCP_TOOL_PATTERN, name):
                raise ValueError(f"tool name {name!r} is not a tool name an MCP server lists")
        return v

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if bool(self.command) == bool(self.url):
            raise ValueError('give either "command": [...] (stdio) or "url": "https://…" (HTTP)')
        return self


class McpConfig(_Section):
    """``mcp``: the MCP servers whose tools apps may use (DESIGN §17)."""

    servers: dict[str, McpServerConfig | None] = Field(default_factory=dict)
    """Name -> server; a null entry (a removal sent by Settings) is dropped."""
    start_timeout: float = Field(default=20, gt=0, le=600)
    """Seconds a server may take from start to its tool list before it is ``failed``."""
    ping_interval: float = Field(default=10, gt=0, le=3600)
    """Seconds between two pings of a connected server (a hung one is ``failed``)."""
    ping_timeout: float = Field(default=5, gt=0, le=600)
    backoff_initial: float = Field(default=1, ge=0)
    backoff_max: float = Field(default=60, ge=0)
    result_max_chars: int = Field(default=20_000, ge=256)
    """Characters of a tool's result a run gets; the rest is saved as a file in the
    app's workdir (``.mcp/``), named in the result."""

    @field_validator("servers")
    @classmethod
    def _servers(cls, v: dict[str, McpServerConfig | None]) -> dict[str, McpServerConfig | None]:
        for name in v:
            if not re.match(MCP_SERVER_PATTERN, name):
                raise ValueError(
                    f"server name {name!r}: lower-case letters, digits, '_' and '-' (at most 32)"
                )
        return {k: s for k, s in v.items() if s is not None}

    def active(self) -> dict[str, McpServerConfig]:
        """The servers configured (removed ones are gone), enabled or not."""
        return {k: s for k, s in self.servers.items() if s is not None}


def _app_ids(v: list[str]) -> list[str]:
    for app_id in v:
        if not re.match(APP_ID_PATTERN, app_id):
            raise ValueError(f"{app_id!r} is not an app id")
    return v


class DuplexConfig(_Section):
    """``duplex``: listening while the user types and speaking first (DESIGN §18,
    aios/duplex/: the listener and the engine, the thinker)."""

    enabled: bool = True
    """Off: drafts get no route preview and no interjection."""
    min_interval_s: float = Field(default=20, ge=0, le=3600)
    """Seconds between two interjections in a session (level 7 and up are not held back)."""
    session_budget: int = Field(default=10, ge=0, le=1000)
    """Interjections a session gets at most (level 7 and up are not counted against it)."""
    pause_s: float = Field(default=1.5, ge=0.2, le=30)
    """Seconds without a keystroke that make a pause mid-draft: what waits for a natural
    break (a missing slot, a question, a memory) is said then."""
    debounce_ms: int = Field(default=150, ge=0, le=2000)
    """The command bar sends its draft this long after the last keystroke."""
    llm: bool = False
    """Also ask the language model about a draft at a pause (debounced, within budget)."""
    stream_replies: bool = True
    """An app's answer the model writes for the user (the SDK's ``stream_to_user``) streams
    into the conversation panel as it is generated (off: it shows when it is complete)."""
    stream_flush_ms: int = Field(default=50, ge=0, le=2000)
    """A streamed reply's text goes to the panel at most this often (what comes between two
    sends goes together; 0: every piece at once)."""
    llm_budget_tokens: int = Field(default=4000, ge=0, le=1_000_000)
    """Tokens (prompt and answer) the model's judgements may use per session."""
    llm_max_tokens: int = Field(default=120, ge=16, le=2000)
    """The longest answer one judgement may take."""
    llm_min_interval_s: float = Field(default=5, ge=0, le=3600)
    """Seconds between two judgements of a session's drafts."""
    idle_s: float = Field(default=0, ge=0, le=86400)
    """After this many seconds of silence in the session the user looks at, the desktop
    brings up something of its topics or memories once (0: never, the default)."""
    long_run_s: float = Field(default=30, gt=0)
    """An instruction that ran longer than this is announced when it ends, even in the
    conversation the user looks at (they have likely turned to something else)."""
    dnd: bool = False
    """Do not disturb: the desktop announces nothing on its own (a due reminder still lands
    in the conversation, unspoken)."""
    topic_archive_s: float = Field(default=1800, ge=0, le=30 * 86400)
    """A topic of the session's tree untouched this many seconds is archived (folded away
    in the panel, no longer resumed by a turn; 0: never)."""
    topic_llm: bool = False
    """Ask the language model for short labels of the session's topics (once each, after a
    quiet moment; the offline rules' labels stay until then, and when it fails)."""
    topic_llm_delay_s: float = Field(default=10, ge=0, le=3600)
    """Seconds of quiet in a session before its topics are labelled (a burst of turns is
    one call)."""
    topic_llm_budget_tokens: int = Field(default=2000, ge=0, le=1_000_000)
    """Tokens (prompt and answer) the labels of a session may use."""
    topics_max: int = Field(default=60, ge=2, le=1000)
    """Topics (sub-topics included) a session keeps at most: past it the oldest archived,
    then the oldest paused, are forgotten."""


class AutomationsConfig(_Section):
    """``automations``: reminders and scheduled runs (DESIGN §18, aios/duplex/automations.py)."""

    enabled: bool = True
    """Off: nothing scheduled runs (each due time is reported missed at the next start)."""
    grace_s: float = Field(default=120, ge=1, le=86400)
    """A due time passed by more than this when the scheduler sees it (the desktop was off or
    asleep) is reported missed, not run late."""
    max_per_session: int = Field(default=100, ge=1, le=10_000)
    """Automations one session may hold (a request past it is refused, naming the limit)."""
    min_interval_s: float = Field(default=60, ge=1)
    """A cron expression that fires more often than this is refused ("* * * * *" is fine at
    the default of one minute)."""


class Config(_Section):
    deepseek_api_key: str = ""
    default_voice: str = "zh-CN"
    voice_rate: float = Field(default=0.9, gt=0, le=4)
    tool_timeout: dict[str, float] = Field(default_factory=dict)
    tool_sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    voice: VoiceConfig = Field(default_factory=VoiceConfig)
    desktop: DesktopConfig = Field(default_factory=DesktopConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    web: WebConfig = Field(default_factory=WebConfig)
    retention: RetentionConfig = Field(default_factory=RetentionConfig)
    apps: AppsConfig = Field(default_factory=AppsConfig)
    approvals: ApprovalsConfig = Field(default_factory=ApprovalsConfig)
    events: EventsConfig = Field(default_factory=EventsConfig)
    quotas: QuotasConfig = Field(default_factory=QuotasConfig)
    memory: MemoryConfig = Field(default_factory=MemoryConfig)
    traces: TracesConfig = Field(default_factory=TracesConfig)
    mcp_server: McpServeConfig = Field(default_factory=McpServeConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    duplex: DuplexConfig = Field(default_factory=DuplexConfig)
    automations: AutomationsConfig = Field(default_factory=AutomationsConfig)
    language: Literal["zh-CN", "en"] = "zh-CN"
    data_dir: str = "data"
    """Relative paths are relative to the project root."""
    apps_dir: str = "apps"
    max_rounds: int = Field(default=5, ge=1, le=50)
    handle_timeout: float = Field(default=30, gt=0)
    app_start_timeout: float = Field(default=20, gt=0)
    startup_ready_wait: float = Field(default=5, gt=0)
    """Seconds start-up waits for the apps before printing "AIOS ready"; an app still
    starting then stays ``starting`` (and health says so) until it listens or fails."""
    max_reply_bytes: int = Field(default=5_000_000, ge=1024)
    history_summary_chars: int = Field(default=800, ge=100)

    @field_validator("tool_timeout")
    @classmethod
    def _timeouts(cls, v: dict[str, float]) -> dict[str, float]:
        for name, seconds in v.items():
            if name not in ATOMIC_TOOLS:
                raise ValueError(f"unknown tool {name!r} (tools: {', '.join(ATOMIC_TOOLS)})")
            if not isinstance(seconds, int | float) or seconds <= 0:
                raise ValueError(f"timeout for {name} must be a positive number of seconds")
        return v

    # ------------------------------------------------------------ derived

    def timeout_for(self, tool: str) -> float:
        return float(self.tool_timeout.get(tool, DEFAULT_TOOL_TIMEOUTS.get(tool, 30)))

    @property
    def llm_api_key(self) -> str:
        return self.llm.api_key or self.deepseek_api_key

    @property
    def llm_enabled(self) -> bool:
        return bool(self.llm_api_key and self.llm.base_url and self.llm.model)

    def resolve_path(self, value: str) -> Path:
        p = Path(value).expanduser()
        return p if p.is_absolute() else PROJECT_ROOT / p

    @property
    def data_path(self) -> Path:
        return self.resolve_path(self.data_dir)

    @property
    def apps_path(self) -> Path:
        return self.resolve_path(self.apps_dir)

    def masked(self) -> dict[str, Any]:
        """The config as JSON with every secret replaced by a hint of its presence."""
        return cast(dict[str, Any], _mask(self.model_dump(mode="json")))


def _mask(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            k: (
                ("••••" + v[-4:] if len(v) > 8 else "••••")
                if k in SECRET_KEYS and isinstance(v, str) and v
                else _mask(v)
            )
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_mask(v) for v in obj]
    return obj


def _describe(err: ValidationError) -> str:
    e = err.errors()[0]
    key = ".".join(str(p) for p in e["loc"]) or "(top level)"
    more = f" (and {len(err.errors()) - 1} more problem(s))" if len(err.errors()) > 1 else ""
    msg = e["msg"].removeprefix("Value error, ")
    if e["type"] == "extra_forbidden":
        msg = "unknown key"
    return f"config key '{key}': {msg}{more}"


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _env_overrides(env: os._Environ[str] | dict[str, str]) -> dict[str, Any]:
    llm: dict[str, Any] = {}
    key = env.get(ENV_LLM_API_KEY) or env.get("DEEPSEEK_API_KEY")
    if key:
        llm["api_key"] = key
    if env.get(ENV_LLM_BASE_URL):
        llm["base_url"] = env[ENV_LLM_BASE_URL]
    if env.get(ENV_LLM_MODEL):
        llm["model"] = env[ENV_LLM_MODEL]
    return {"llm": llm} if llm else {}


def validate_config(raw: dict[str, Any]) -> Config:
    try:
        return Config.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(_describe(e)) from e


def read_json_file(path: Path, what: str) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ConfigError(f"{what} not found: {path}") from e
    except json.JSONDecodeError as e:
        raise ConfigError(
            f"{what} {path} is not valid JSON: line {e.lineno} column {e.colno}: {e.msg}"
        ) from e
    if not isinstance(raw, dict):
        raise ConfigError(f"{what} {path} must hold a JSON object")
    return raw


def settings_path(data_path: Path) -> Path:
    return data_path / "settings.json"


def load_config(
    path: Path | None = None,
    *,
    overrides: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
) -> Config:
    """Load, layer (file < overrides < data-dir settings < environment) and validate.

    Raises ConfigError with one line naming the key and the problem.
    """
    path = path or DEFAULT_CONFIG_PATH
    raw = (
        read_json_file(path, "config file") if path.exists() or path != DEFAULT_CONFIG_PATH else {}
    )
    raw = _merge(raw, overrides or {})
    first = validate_config(raw)
    saved = settings_path(first.data_path)
    if saved.exists():
        raw = _merge(raw, read_json_file(saved, "settings file"))
    raw = _merge(raw, _env_overrides(os.environ if env is None else env))
    return validate_config(raw)


def apply_updates(config: Config, updates: dict[str, Any]) -> Config:
    """The config with ``updates`` merged in, validated (ConfigError otherwise).

    A masked secret sent back unchanged ("••••abcd") or an empty key means
    "keep the current value" — unless the endpoint it is sent to changes
    (:func:`unbind_moved_keys`).
    """
    updates = unbind_moved_keys(config, updates)
    return validate_config(_merge(config.model_dump(mode="json"), _drop_masked(updates)))


def _new_key(section: dict[str, Any], name: str = "api_key") -> bool:
    key = section.get(name)
    return isinstance(key, str) and bool(key) and not key.startswith("••••")


def unbind_moved_keys(config: Config, updates: dict[str, Any]) -> dict[str, Any]:
    """``updates`` where a changed ``base_url`` without a newly entered key clears the key.

    A key is only ever sent to the endpoint it was entered for: otherwise
    whoever can change the settings could point ``base_url`` at a server of
    theirs and receive the stored key with the next request. The cleared key
    is a ``None`` the merge turns into "" (in the config and in settings.json).
    """
    updates = _unbind_mcp_tokens(config, updates)
    llm = updates.get("llm")
    if not isinstance(llm, dict):
        return updates
    llm = dict(llm)
    out = {**updates, "llm": llm}
    url = llm.get("base_url")
    if isinstance(url, str) and url != config.llm.base_url and not _new_key(llm):
        llm["api_key"] = None
        legacy = updates.get("deepseek_api_key")
        if not (isinstance(legacy, str) and legacy and not legacy.startswith("••••")):
            out["deepseek_api_key"] = None  # the legacy key is the primary's too
    fallback = llm.get("fallback")
    if isinstance(fallback, dict):
        fb_url = fallback.get("base_url")
        if (
            isinstance(fb_url, str)
            and fb_url != config.llm.fallback.base_url
            and not _new_key(fallback)
        ):
            llm["fallback"] = {**fallback, "api_key": None}
    return out


def _unbind_mcp_tokens(config: Config, updates: dict[str, Any]) -> dict[str, Any]:
    """The same rule for an MCP server's token: sent only to the URL it was typed for."""
    mcp = updates.get("mcp")
    servers = mcp.get("servers") if isinstance(mcp, dict) else None
    if not isinstance(servers, dict):
        return updates
    current = config.mcp.active()
    moved = {}
    for name, server in servers.items():
        if not isinstance(server, dict) or name not in current:
            continue
        url = server.get("url")
        if isinstance(url, str) and url != current[name].url and not _new_key(server, "token"):
            moved[name] = {**server, "token": None}
    if not moved:
        return updates
    assert isinstance(mcp, dict)
    return {**updates, "mcp": {**mcp, "servers": {**servers, **moved}}}


def _drop_masked(obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in obj.items():
        if isinstance(v, dict):
            out[k] = _drop_masked(v)
        elif k in SECRET_KEYS and v is None:
            out[k] = ""  # cleared on purpose (unbind_moved_keys)
        elif k in SECRET_KEYS and (not v or (isinstance(v, str) and v.startswith("••••"))):
            continue
        else:
            out[k] = v
    return out


def save_settings(data_path: Path, updates: dict[str, Any]) -> None:
    """Store settings changed in the settings window, owner-only, atomically."""
    data_path.mkdir(parents=True, exist_ok=True)
    updates = _drop_masked(updates)
    target = settings_path(data_path)
    current = read_json_file(target, "settings file") if target.exists() else {}
    merged = _merge(current, updates)
    tmp = target.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(merged, f, ensure_ascii=False, indent=2)
    os.replace(tmp, target)
