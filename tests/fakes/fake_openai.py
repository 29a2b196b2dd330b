"""A fake OpenAI-compatible chat server on 127.0.0.1, scripted by the test.

It speaks real HTTP so the real ``openai`` client (and therefore our
``LLMClient``) is exercised end to end. Each request to
``POST /v1/chat/completions`` (or ``/chat/completions``) takes the next
reply from a script; when the script is empty, ``default`` answers.

    with FakeOpenAI(api_key="sk-test") as fake:
        fake.script([text("你好"), tool_call("dispatch_tasks", {"tasks": []}),
                     http_error(429, retry_after=0), delay(5), http_error(500)])
        ...
        fake.requests[0]["messages"]        # what the client sent

A script item is a ``Reply``, a plain string (text content) or a dict spec
(the same keys the standalone control endpoint takes):

    {"content": "hi"}
    {"tool_calls": [{"name": "f", "arguments": {...} | "raw text"}]}
    {"status": 429, "message": "slow down", "retry_after": 1}
    {"delay": 3, "then": {...}}                  # answer late (client timeouts)
    {"raw": {...}}                               # this JSON body verbatim
    {"body": "not json"}                         # HTTP 200 with this non-JSON text
    {"content": "...", "finish_reason": "length"} # cut at max_tokens (a runaway)
    {"content": "...", "constrained": "{...}"}   # the answer when the request had a schema
    {"content": "...", "chunks": [...], "chunk_delay": 0.1, "fail_after": 2}  # when streamed

Transcript replay (issue 15: real small models): a script is a transcript, one
canned response per request, in order; ``delay`` holds back the first byte;
``finish_reason`` is sent as given; ``requests`` records every body so a test
can assert ``max_tokens``, ``temperature`` and ``response_format``.
``FakeOpenAI(json_schema=False)`` answers a request carrying
``response_format: {"type": "json_schema"}`` with HTTP 400, like a server
without constrained decoding; with ``json_schema=True`` (the default) a reply's
``constrained`` text is sent instead of its content, and it must validate
against the request's schema (else HTTP 500 names the violation: a fake
that honours the schema cannot answer outside it).

Embeddings (issue 23): ``POST /v1/embeddings`` answers deterministic vectors
(:func:`fake_embedding`: a hashed bag of words, CJK characters one by one, so texts
sharing words are near); ``embedding_aliases`` maps a word to another before hashing
(``{"espresso": "coffee"}`` makes them the same direction) and ``embedding_status``
other than 200 answers that HTTP error instead. ``embedding_inputs`` records the texts.

Streaming (issue 26): a request with ``"stream": true`` gets the scripted reply as
server-sent ``chat.completion.chunk`` events, as the real API sends them, so the real
``openai`` client streams over HTTP (a one-token streamed request is a client's
time-to-first-token probe instead: answered, counted in ``probes``, not scripted).
A reply's ``chunks`` says how its content is cut (default: :data:`CHUNK_CHARS`
characters a chunk), ``chunk_delay`` the seconds between two chunks, ``hold`` an
event the server waits on before the last chunk (a test lets it go once it has seen
the earlier text), ``fail_after`` a number of chunks after which an SSE error event
ends the stream. With ``stream_options: {"include_usage": true}`` a last chunk carries
the usage. ``chunk_times`` holds the ``time.time()`` each chunk was written at,
``request_times`` when each chat request came in. A reply with a ``chunk_delay`` asked
for whole (no ``stream``) takes as long as its chunks would have.

    fake.script([streamed("Hello there, how are you?", chunk_delay=0.05, hold=gate)])

Standalone, for benchmarks and manual runs::

    python -m tests.fakes.fake_openai --port 8900 [--key sk-test] [--reply TEXT]

prints ``fake OpenAI server: http://127.0.0.1:8900/v1`` and serves until
Ctrl+C. Another process can script it: ``POST /_fake/script`` with a JSON list
of specs, ``GET /_fake/requests``, ``POST /_fake/reset``.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
EMBEDDING_PATHS = ("/v1/embeddings", "/embeddings")
EMBEDDING_DIM = 64
CHUNK_CHARS = 8
"""Characters of content in one streamed chunk when a reply does not say how to cut it."""
HOLD_MAX_SECONDS = 60.0
"""The longest a held last chunk waits for its test to let it go (then it is sent)."""


@dataclass
class Reply:
    """One scripted answer."""

    content: str | None = None
    tool_calls: list[tuple[str, str]] = field(default_factory=list)
    """(function name, arguments text) — the text need not be valid JSON."""
    status: int = 200
    message: str = ""
    """Error message for a non-200 status."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    raw: Any = None
    """When set, sent verbatim as the JSON body (to break the schema on purpose)."""
    body: str | None = None
    """When set, sent verbatim as a 200 body labelled JSON that is not (a broken proxy)."""
    finish_reason: str | None = None
    """Sent as is; default ``tool_calls`` or ``stop``."""
    constrained: str | None = None
    """The content sent instead when the request carries a JSON schema (response_format)."""
    chunks: list[str] | None = None
    """Streamed: the content cut in these pieces (else :data:`CHUNK_CHARS` a piece)."""
    chunk_delay: float = 0.0
    """Streamed: seconds between two chunks."""
    hold: threading.Event | None = None
    """Streamed: the last chunk waits until this is set (at most :data:`HOLD_MAX_SECONDS`)."""
    fail_after: int | None = None
    """Streamed: after this many chunks an SSE error event ends the stream (a provider
    failing mid-answer)."""

    @classmethod
    def from_spec(cls, spec: Reply | str | dict[str, Any]) -> Reply:
        if isinstance(spec, Reply):
            return spec
        if isinstance(spec, str):
            return text(spec)
        if not isinstance(spec, dict):
            raise TypeError(f"a script item must be a Reply, str or dict, not {type(spec)}")
        if "delay" in spec:
            later = cls.from_spec(spec.get("then", "late reply"))
            later.delay = float(spec["delay"])
            return later
        if "raw" in spec:
            return cls(raw=spec["raw"])
        if "body" in spec:
            return not_json(str(spec["body"]))
        if "status" in spec and int(spec["status"]) != 200:
            return http_error(
                int(spec["status"]), spec.get("message", ""), retry_after=spec.get("retry_after")
            )
        calls = [(c["name"], c.get("arguments", {})) for c in spec.get("tool_calls", [])]
        reply = (
            tool_calls(*calls, content=spec.get("content"))
            if calls
            else text(spec.get("content", ""))
        )
        reply.finish_reason = spec.get("finish_reason")
        reply.constrained = spec.get("constrained")
        if isinstance(spec.get("chunks"), list):
            reply.chunks = [str(c) for c in spec["chunks"]]
        reply.chunk_delay = float(spec.get("chunk_delay", 0.0))
        if spec.get("fail_after") is not None:
            reply.fail_after = int(spec["fail_after"])
        return reply


def _args_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def text(content: str) -> Reply:
    """A plain assistant message."""
    return Reply(content=content)


def tool_call(name: str, arguments: Any = None) -> Reply:
    """One function call; ``arguments`` is JSON-encoded unless it is already a string."""
    return Reply(tool_calls=[(name, _args_text({} if arguments is None else arguments))])


def tool_calls(*calls: tuple[str, Any], content: str | None = None) -> Reply:
    return Reply(content=content, tool_calls=[(n, _args_text(a)) for n, a in calls])


def streamed(
    content: str,
    *,
    chunks: list[str] | None = None,
    chunk_delay: float = 0.0,
    hold: threading.Event | None = None,
    fail_after: int | None = None,
) -> Reply:
    """A text reply for a streamed request: cut in ``chunks``, ``chunk_delay`` s apart,
    the last one held until ``hold`` is set, or broken after ``fail_after`` chunks."""
    return Reply(
        content=content, chunks=chunks, chunk_delay=chunk_delay, hold=hold, fail_after=fail_after
    )


def http_error(status: int, message: str = "", *, retry_after: float | None = None) -> Reply:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
    return Reply(
        status=status, message=message or _DEFAULT_ERRORS.get(status, "error"), headers=headers
    )


def not_json(body: str = "not json") -> Reply:
    """HTTP 200, ``Content-Type: application/json``, and a body that does not parse."""
    return Reply(body=body)


def delay(seconds: float, then: Reply | str = "late reply") -> Reply:
    """Answer only after ``seconds`` (the client has usually given up by then)."""
    r = Reply.from_spec(then)
    r.delay = seconds
    return r


_DEFAULT_ERRORS = {
    400: "Invalid request",
    401: "Authentication Fails (invalid API key)",
    429: "Rate limit reached for requests",
    500: "The server had an error while processing your request",
    503: "The server is overloaded",
}
_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 429: "rate_limit_error"}


# ------------------------------------------------------------------ server


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out closed the socket before the late answer: expected.
        pass


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def _send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(body, ensure_ascii=False).encode("utf-8"), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client went away (timeout): nothing to tell it

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw.decode("utf-8")) if raw else {}
        except (UnicodeDecodeError, json.JSONDecodeError):
            return {"_unparsed": raw.decode("utf-8", "replace")}

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": owner.model,
                            "object": "model",
                            "created": 0,
                            "owned_by": "fake",
                            **(
                                {"max_model_len": owner.max_model_len}
                                if owner.max_model_len
                                else {}
                            ),
                        }
                    ],
                },
            )
        elif self.path == "/_fake/requests":
            with owner.lock:
                self._send_json(200, list(owner.requests))
        else:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        body = self._body()
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/_fake/script":
            owner.script(body if isinstance(body, list) else [body])
            self._send_json(200, {"queued": len(owner.pending())})
            return
        if path == "/_fake/reset":
            owner.reset()
            self._send_json(200, {"ok": True})
            return
        if path in EMBEDDING_PATHS:
            self._embeddings(owner, body)
            return
        if path not in CHAT_PATHS:
            self._send_json(
                404,
                {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}},
            )
            return
        if isinstance(body, dict) and body.get("stream") and body.get("max_tokens") == 1:
            self._stream(owner)  # part 15-L: the client's start-up probe (not scripted)
            return
        owner._record(body, {k.lower(): v for k, v in self.headers.items()}, path)
        if (
            owner.api_key is not None
            and self.headers.get("Authorization") != f"Bearer {owner.api_key}"
        ):
            self._send_json(401, _error_body(401, _DEFAULT_ERRORS[401]))
            return
        if isinstance(body, dict) and body.get("stream") and not owner.streaming:
            self._send_json(400, _error_body(400, "stream is not supported"))
            return
        fmt = body.get("response_format") if isinstance(body, dict) else None
        if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and not owner.json_schema:
            self._send_json(400, _error_body(400, "response_format json_schema is not supported"))
            return
        reply = owner._next()
        if isinstance(fmt, dict) and reply.constrained is not None:
            problem = _schema_violation(fmt, reply.constrained)
            if problem:
                self._send_json(500, _error_body(500, f"constrained answer invalid: {problem}"))
                return
            reply = Reply(
                content=reply.constrained, finish_reason=reply.finish_reason, delay=reply.delay
            )
        if reply.delay and not self._wait(owner, reply.delay):
            return  # shutting down, or the client closed the request: drop the late answer
        self._answer(owner, body, reply)

    def _answer(self, owner: FakeOpenAI, body: dict[str, Any], reply: Reply) -> None:
        """Send ``reply`` as the script says: streamed, whole, an error or a broken body."""
        if reply.chunk_delay and not body.get("stream"):
            generating = reply.chunk_delay * max(0, len(owner._chunks(body, reply)) - 1)
            if not self._wait(owner, generating):
                return
        if reply.status == 200 and reply.raw is None and reply.body is None and body.get("stream"):
            self._stream_reply(owner, body, reply)
        elif reply.body is not None:
            self._send_bytes(200, reply.body.encode("utf-8"))
        elif reply.raw is not None:
            self._send_json(200, reply.raw)
        elif reply.status != 200:
            self._send_json(reply.status, _error_body(reply.status, reply.message), reply.headers)
        else:
            self._send_json(200, owner._completion(body, reply), reply.headers)

    def _embeddings(self, owner: FakeOpenAI, body: Any) -> None:
        if (
            owner.api_key is not None
            and self.headers.get("Authorization") != f"Bearer {owner.api_key}"
        ):
            self._send_json(401, _error_body(401, _DEFAULT_ERRORS[401]))
            return
        texts = body.get("input") if isinstance(body, dict) else None
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            self._send_json(400, _error_body(400, "input must be a string or a list of strings"))
            return
        with owner.lock:
            owner.embedding_inputs.extend(texts)
            status, aliases = owner.embedding_status, dict(owner.embedding_aliases)
        if status != 200:
            self._send_json(status, _error_body(status, _DEFAULT_ERRORS.get(status, "error")))
            return
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embedding(t, aliases)}
            for i, t in enumerate(texts)
        ]
        self._send_json(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model") or owner.model,
                "usage": {"prompt_tokens": _count_tokens(texts), "total_tokens": 0},
            },
        )

    # part 15-L: a client that hangs up, and the streamed probe of a local server

    def _wait(self, owner: FakeOpenAI, seconds: float) -> bool:
        """Wait ``seconds``; False when the server stops or the client closes the connection
        first (then counted in ``owner.closed``)."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if owner._stop.is_set():
                return False
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable:
                try:
                    gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    with owner.lock:
                        owner.closed += 1
                    return False
        return not owner._stop.is_set()

    def _stream(self, owner: FakeOpenAI) -> None:
        with owner.lock:
            owner.probes += 1
        if owner.first_token_delay and not self._wait(owner, owner.first_token_delay):
            return
        chunk = {
            "id": "chatcmpl-probe",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": owner.model,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}],
        }
        data = f"data: {json.dumps(chunk)}\n\ndata: [DONE]\n\n".encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass

    # issue 26: a scripted reply, streamed

    def _stream_reply(self, owner: FakeOpenAI, body: dict[str, Any], reply: Reply) -> None:
        """``reply`` as server-sent chunks (HTTP/1.0: the body ends when the socket closes)."""
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
        except OSError:
            return
        chunks = owner._chunks(body, reply)
        # the last piece of content is the one held (the finish and usage chunks follow it)
        held = max(
            0, sum(1 for c in chunks if c["choices"] and "content" in c["choices"][0]["delta"]) - 1
        )
        for i, chunk in enumerate(chunks):
            if i and reply.chunk_delay and not self._wait(owner, reply.chunk_delay):
                return
            if i == held and reply.hold is not None and not self._hold(owner, reply):
                return
            if reply.fail_after is not None and i >= reply.fail_after:
                chunk = _error_body(500, "the model server failed mid-answer")
            if not self._send_event(owner, chunk, counted="error" not in chunk):
                return
            if "error" in chunk:
                return
        self._send_event(owner, "[DONE]", counted=False)

    def _hold(self, owner: FakeOpenAI, reply: Reply) -> bool:
        assert reply.hold is not None
        end = time.monotonic() + HOLD_MAX_SECONDS
        while not reply.hold.is_set() and time.monotonic() < end:
            if not self._wait(owner, 0.02):
                return False
        return True

    def _send_event(self, owner: FakeOpenAI, data: Any, *, counted: bool) -> bool:
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        try:
            self.wfile.write(f"data: {text}\n\n".encode())
            self.wfile.flush()
        except OSError:
            with owner.lock:
                owner.closed += 1
            return False
        if counted:
            with owner.lock:
                owner.chunk_times.append(time.time())
        return True


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {
        "error": {
            "message": message,
            "type": _ERROR_TYPES.get(status, "api_error"),
            "param": None,
            "code": None,
        }
    }


def _schema_violation(fmt: dict[str, Any], content: str) -> str:
    """Why ``content`` is outside the request's JSON schema ("" when it is inside)."""
    import jsonschema  # type: ignore[import-untyped]

    schema = (fmt.get("json_schema") or {}).get("schema") or {}
    try:
        jsonschema.validate(json.loads(content), schema)
    except json.JSONDecodeError as e:
        return f"not JSON ({e.msg})"
    except jsonschema.ValidationError as e:
        return str(e.message)
    return ""


def fake_embedding(text: str, aliases: dict[str, str] | None = None) -> list[float]:
    """A deterministic vector of ``EMBEDDING_DIM``: one unit per word (a CJK character
    counts as a word) in the bucket its hash names, after ``aliases``."""
    vec = [0.0] * EMBEDDING_DIM
    for word in re.findall(r"[\u4e00-\u9fff]|[^\W_]+", text.lower()):
        word = (aliases or {}).get(word, word)
        bucket = int.from_bytes(hashlib.sha256(word.encode("utf-8")).digest()[:4], "big")
        vec[bucket % EMBEDDING_DIM] += 1.0
    return vec


def _count_tokens(value: Any) -> int:
    """A rough, deterministic token count (≈ 4 characters a token), at least 1."""
    return max(1, len(json.dumps(value, ensure_ascii=False)) // 4)


class FakeOpenAI:
    """The server, its script and what it received. Use as a context manager."""

    def __init__(
        self,
        *,
        api_key: str | None = None,
        model: str = "fake-model",
        port: int = 0,
        default: Reply | str | dict[str, Any] = "ok",
        json_schema: bool = True,
    ):
        self.api_key = api_key
        """When set, requests without ``Authorization: Bearer <api_key>`` get 401."""
        self.model = model
        self.default = Reply.from_spec(default)
        self.json_schema = json_schema
        """Whether ``response_format: {"type": "json_schema"}`` is taken (else HTTP 400)."""
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        """Every chat request body, in order (including refused ones)."""
        self.headers: list[dict[str, str]] = []
        """Headers of each chat request, names lowercased."""
        self.paths: list[str] = []
        self.closed = 0
        """Delayed answers dropped because the client closed the connection first."""
        self.probes = 0
        """Streamed requests (a client's time-to-first-token probe): answered, not scripted."""
        self.streaming = True
        """Whether a scripted request with ``stream: true`` is taken (else HTTP 400, like a
        server that cannot stream)."""
        self.first_token_delay = 0.0
        """Seconds before a streamed request's first token (a slow local server)."""
        self.max_model_len = 0
        """When set, ``/v1/models`` gives it as the context size (as vLLM does)."""
        self.embedding_aliases: dict[str, str] = {}
        """Word -> word hashed instead, for ``/v1/embeddings`` (synonyms share a direction)."""
        self.embedding_status = 200
        """HTTP status of ``/v1/embeddings``; not 200: that error instead of vectors."""
        self.embedding_inputs: list[str] = []
        """Every text ``/v1/embeddings`` was asked for, in order."""
        self.chunk_times: list[float] = []
        """``time.time()`` at which each streamed chunk was written (issue 26), in order."""
        self.request_times: list[float] = []
        """``time.time()`` at which each chat request came in, in order."""
        self.usages: list[dict[str, int]] = []
        """The ``usage`` of every chat completion answered, in order (a quarter of each
        prompt is reported as served from the cache, as OpenAI's ``cached_tokens``)."""
        self._queue: deque[Reply] = deque()
        self._ids = itertools.count(1)
        self._stop = threading.Event()
        self._server = _Server(("127.0.0.1", port), _Handler)
        self._server.owner = self
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-openai",
            daemon=True,
        )

    # ---------------------------------------------------------- lifecycle

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """Base URL in the ``…/v1`` form."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """Base URL without ``/v1`` (the form ``https://api.deepseek.com`` uses)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------- script

    def script(self, replies: Iterable[Reply | str | dict[str, Any]]) -> None:
        """Queue replies; each chat request takes the next one."""
        items = [Reply.from_spec(r) for r in replies]
        with self.lock:
            self._queue.extend(items)

    def pending(self) -> list[Reply]:
        with self.lock:
            return list(self._queue)

    def reset(self) -> None:
        with self.lock:
            self._queue.clear()
            self.requests.clear()
            self.headers.clear()
            self.paths.clear()
            self.embedding_inputs.clear()
            self.chunk_times.clear()
            self.request_times.clear()
            self.closed = self.probes = 0

    def _next(self) -> Reply:
        with self.lock:
            return self._queue.popleft() if self._queue else self.default

    def _record(self, body: Any, headers: dict[str, str], path: str) -> None:
        with self.lock:
            self.requests.append(body)
            self.request_times.append(time.time())
            self.headers.append(headers)
            self.paths.append(path)

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        n = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{n}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": args},
                }
                for i, (name, args) in enumerate(reply.tool_calls)
            ]
        prompt = _count_tokens(body.get("messages", []))
        completion = _count_tokens(message)
        return {
            "id": f"chatcmpl-fake{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.finish_reason
                    or ("tool_calls" if reply.tool_calls else "stop"),
                }
            ],
            "usage": self._usage(prompt, completion),
        }

    def _chunks(self, body: dict[str, Any], reply: Reply) -> list[dict[str, Any]]:
        """The ``chat.completion.chunk`` objects streaming ``reply`` takes, in order."""
        n = next(self._ids)
        model = body.get("model") or self.model
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": f"chatcmpl-fake{n}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        content = reply.content or ""
        pieces = (
            reply.chunks
            if reply.chunks is not None
            else [content[i : i + CHUNK_CHARS] for i in range(0, len(content), CHUNK_CHARS)]
        )
        out = [chunk({"role": "assistant", "content": p}) for p in pieces]
        for i, (name, args) in enumerate(reply.tool_calls):
            head = {"index": i, "id": f"call_{n}_{i}", "type": "function"}
            out.append(
                chunk({"tool_calls": [{**head, "function": {"name": name, "arguments": ""}}]})
            )
            for j in range(0, len(args), CHUNK_CHARS):
                part = {"index": i, "function": {"arguments": args[j : j + CHUNK_CHARS]}}
                out.append(chunk({"tool_calls": [part]}))
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        out.append(chunk({}, finish))
        options = body.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage"):
            message = {"role": "assistant", "content": content, "tool_calls": reply.tool_calls}
            last = chunk({})
            last["choices"] = []
            last["usage"] = self._usage(
                _count_tokens(body.get("messages", [])), _count_tokens(message)
            )
            out.append(last)
        return out

    def _usage(self, prompt: int, completion: int) -> dict[str, Any]:
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "cached": prompt // 4}
        with self.lock:
            self.usages.append(usage)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": usage["cached"]},
        }


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running fake with the key ``sk-test`` (import into a conftest to use)."""
    with FakeOpenAI(api_key="sk-test") as fake:
        yield fake


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI-compatible chat server")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--key", default=None, help="require this API key (401 otherwise)")
    parser.add_argument("--model", default="fake-model")
    parser.add_argument("--reply", default="ok", help="default reply text")
    parser.add_argument("--delay", type=float, default=0.0, help="delay of the default reply")
    args = parser.parse_args(argv)
    default = Reply.from_spec(args.reply)
    default.delay = args.delay
    fake = FakeOpenAI(api_key=args.key, model=args.model, port=args.port, default=default)
    fake.start()
    print(f"fake OpenAI server: {fake.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        fake.stop()


if __name__ == "__main__":
    main()
