"""The language-model client: any OpenAI-compatible endpoint, bounded retries, a fallback.

``LLMClient`` wraps the real ``openai.OpenAI`` client (DeepSeek by default,
DESIGN §9). The openai client's own retries are switched off so this module
decides: the primary provider gets ``llm.max_retries`` more attempts for
errors that may pass (429, 5xx, timeouts, connection errors; never 400/401),
waiting a short backoff or the server's ``Retry-After`` (capped). When the
primary gives up and ``llm.fallback`` names a base_url and model, the
fallback provider is tried the same way (Metona's ``fallbackProvider``).

Every attempt, failed ones included, is recorded in the store's
``llm_usage`` table. ``openai`` exceptions — and anything else a provider call raises, such as
the ``JSONDecodeError`` the client lets escape on a 200 whose body is not
JSON — are mapped to ``LLMError`` here with a message naming the provider and
the cause, so callers fall back (offline router) as for an HTTP 500.

Local models (a llama.cpp / Ollama / vLLM server on a loopback address): a timeout
there means the server is still reading the prompt, so it is not retried (a retry
only queues the same prompt behind the first). A call made for an app
(``deadline``) is bounded by the app's remaining time and closed when it passes
(recorded as cancelled: no late answer nobody receives). At start, one tiny
streamed request measures the server's time to first token in the background
(``llm.measure_local``) and the timeouts for LLM calls are raised to what that
server needs, or one log line says what to set; the server's context size
(``llm.context_tokens``, llama.cpp ``/props``, Ollama ``/api/show``) is read
too, and a prompt that may not fit is warned about once.

Streaming (issue 26): with a ``stream`` sink, the provider is asked with ``stream=True``
and the text goes to the sink as it is generated (llm/streaming.py); the caller still gets
the whole message. Once any text has reached the user there is no retry and no fallback
(the user would read two answers); ``cancel`` (a run the user stopped) closes the stream
between two chunks (LLMCancelled, recorded).

``structured`` asks for an answer in a JSON schema where the endpoint takes one, else
with function calling. What differs between vendors and servers (local or not, error
messages, context size, schema support, Ollama's ``format``) is in llm/providers.py.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aios.config import Config
from aios.errors import LLMError, LLMUnavailable, StoreError
from aios.llm.providers import (
    PROBE_TIMEOUT,
    ProviderProfile,
    classify,
    normalize_base_url,
    probe_context,
    rejected,
    remember_schema_support,
    schema_body,
    schema_supported,
)
from aios.llm.streaming import Stopped, StreamSink, read
from aios.store import Store
from aios.traces.tracer import NO_TRACER, Tracer, current

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)


def _openai() -> Any:
    """The ``openai`` package, imported on first use: it takes ~0.35 s to import, and
    a desktop without an LLM key never needs it."""
    import openai

    return openai


RETRY_AFTER_CAP = 2.0
"""Seconds: the longest we wait on a Retry-After before the next attempt (a user is waiting)."""
BACKOFF_BASE = 0.25
"""Seconds before the first retry without Retry-After; doubles each time, capped as above."""
PROBE_PROMPT = "Reply with one word: ok. " * 25
"""The probe's prompt: long enough (~200 tokens) that reading it says something about speed."""
TYPICAL_PROMPT_TOKENS = 3300
"""Tokens of the largest prompt we send (the generic assistant: role, tool schemas, state)."""
TIMEOUT_FACTOR = 2.0
"""The derived timeout is this many times the estimated time to read a typical prompt."""
MIN_DERIVED_TIMEOUT = 30.0
"""Seconds (the default ``llm.timeout``): a derived timeout below this leaves the configured
ones as they are; the probe's noise on a busy machine never slows down a fast server's
failures."""
CHARS_PER_TOKEN = 3.0
"""For estimating a prompt's tokens before sending it (JSON and Chinese run below 4)."""
APP_REPLY_MARGIN = 1.5
"""Seconds an app keeps, once its LLM call is closed at its deadline, to say it ran out of time."""
CONTEXT_HEADROOM = 0.9
"""A prompt estimated above this share of the server's context is warned about."""


@dataclass
class ChatResult:
    """One successful chat completion."""

    message: dict[str, Any]
    """``{role, content, tool_calls?: [{id, type, function: {name, arguments}}]}``"""
    provider: str
    """``primary`` or ``fallback``."""
    model: str
    usage: dict[str, int] = field(default_factory=dict)
    latency_ms: float = 0.0
    finish_reason: str | None = None
    """``stop``, ``tool_calls``, ``length`` (cut at max_tokens: the answer is incomplete)…"""

    @property
    def content(self) -> str:
        return self.message.get("content") or ""

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        return list(self.message.get("tool_calls") or [])


OUT_OF_TIME = "out of time"
"""In the message of a call closed at its caller's deadline (apps tell it apart by this)."""


class LLMCancelled(LLMError):
    """The call was closed because the app it was made for ran out of time, or the user
    stopped the instruction it was made for."""


STOPPED_BY_USER = "stopped: the user cancelled the instruction it was made for"
"""The message (and recorded error) of a streamed call closed by its run's cancel."""


def _message_dict(msg: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant", "content": msg.content}
    calls = getattr(msg, "tool_calls", None) or []
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments or ""},
            }
            for c in calls
            if getattr(c, "function", None) is not None
        ]
    return out


NO_KEY = "no-key"
"""Sent by a provider configured without a key (a local server): the openai client needs one."""


class LLMClient:
    """Chat completions with function calling against the configured provider(s)."""

    def __init__(self, config: Config, store: Store | None = None, *, tracer: Tracer = NO_TRACER):
        self.config = config
        self.store = store
        self.tracer = tracer
        llm = config.llm
        key = config.llm_api_key
        self._providers: list[ProviderProfile] = []
        if config.llm_enabled:
            self._providers.append(
                ProviderProfile(
                    "primary",
                    normalize_base_url(llm.base_url),
                    llm.model,
                    key,
                    llm.timeout,
                    llm.max_retries,
                )
            )
            fb = llm.fallback
            if fb.base_url and fb.model:
                # The primary's key goes only to the primary's own endpoint (DESIGN §11).
                fb_url = normalize_base_url(fb.base_url)
                same = fb_url == normalize_base_url(llm.base_url)
                self._providers.append(
                    ProviderProfile(
                        "fallback",
                        fb_url,
                        fb.model,
                        fb.api_key or (key if same else NO_KEY),
                        fb.timeout,
                        llm.max_retries,
                    )
                )
        self._clients: dict[str, openai.OpenAI] = {}
        self._lock = threading.Lock()
        self._last_error: str | None = None
        self._last_ok_ts: float | None = None
        self._last_provider: ProviderProfile | None = None
        self._derived_timeout: float | None = None
        self._context_tokens: int | None = llm.context_tokens or None
        self._context_warned = False
        self.ttft: float | None = None
        """Seconds to the first token of the start-up probe (a local primary only)."""
        self.probed = threading.Event()
        if self._providers and self._providers[0].local and llm.measure_local:
            threading.Thread(target=self._probe, name="aios-llm-probe", daemon=True).start()
        else:
            self.probed.set()

    @property
    def enabled(self) -> bool:
        return bool(self._providers)

    def timeout_for(self, provider: ProviderProfile) -> float:
        """The configured timeout, raised to what the probe found a local server needs."""
        derived = self._derived_timeout if provider.local else None
        return max(provider.timeout, derived or 0.0)

    def handle_timeout(self, configured: float) -> float:
        """``handle_timeout`` for a call to an app that may use the LLM (raised the same way)."""
        return max(configured, self._derived_timeout or 0.0)

    # ------------------------------------------------------------- public

    def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        tool_choice: str | dict[str, Any] | None = None,
        purpose: str | None = None,
        temperature: float = 0.2,
        max_tokens: int | None = None,
        deadline: float | None = None,
        extra_body: dict[str, Any] | None = None,
        stream: StreamSink | None = None,
        cancel: threading.Event | None = None,
    ) -> ChatResult:
        """One chat completion; retries and falls back as configured.

        ``deadline`` (``time.monotonic()`` seconds): the call is closed when it passes,
        whatever the timeouts say (LLMCancelled; no retry, no fallback). ``extra_body``
        goes into the request as is (``response_format``, Ollama's ``format``…).
        ``stream``: the answer is streamed and its text handed to the sink as it comes;
        no retry and no fallback once the sink has shown some of it. ``cancel``: a
        streamed call is closed when it is set (LLMCancelled).

        Raises LLMUnavailable when no LLM is configured, LLMError naming each
        provider's failure when none could answer.
        """
        if not self.enabled:
            raise LLMUnavailable(
                "no language model is configured: set deepseek_api_key in "
                "config.json or the DEEPSEEK_API_KEY environment variable"
            )
        if (
            not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) and m.get("role") for m in messages)
        ):
            raise LLMError("messages must be a non-empty list of {role, content} objects")
        kwargs: dict[str, Any] = {"messages": messages, "temperature": temperature}
        if tools:
            kwargs["tools"] = tools
            if tool_choice is not None:
                kwargs["tool_choice"] = tool_choice
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if extra_body:
            kwargs["extra_body"] = extra_body
        self._check_context(messages, tools)
        if stream is None:
            return self._ask(kwargs, purpose, deadline, None)
        streamed = {**kwargs, "stream": True, "stream_options": {"include_usage": True}}
        try:
            return self._ask(streamed, purpose, deadline, _Streaming(stream, cancel, deadline))
        except LLMCancelled:
            raise
        except LLMError as e:
            if stream.shown or not rejected(e):
                raise
            # A server that refuses a streamed request (or its stream_options) answers
            # whole, as before: the user gets the answer, only later.
            logger.info("the LLM refused a streamed request (%s); asking for a whole answer", e)
            return self._ask(kwargs, purpose, deadline, None)

    def _ask(
        self,
        kwargs: dict[str, Any],
        purpose: str | None,
        deadline: float | None,
        streaming: _Streaming | None,
    ) -> ChatResult:
        """The providers in turn, as :meth:`chat` says."""
        failures: list[str] = []
        for i, provider in enumerate(self._providers):
            if i:
                logger.warning(
                    "LLM %s failed (%s); trying %s",
                    self._providers[i - 1].name,
                    failures[-1],
                    provider.describe(),
                )
            try:
                result = self._call_provider(provider, kwargs, purpose, deadline, streaming)
            except _ProviderFailed as e:
                failures.append(str(e))
                if streaming is not None and streaming.sink.shown:
                    break  # the user has read part of this answer: no other one now
                continue
            with self._lock:
                self._last_error = None
                self._last_ok_ts = time.time()
                self._last_provider = provider
            return result
        message = "the language model could not answer: " + "; ".join(failures)
        with self._lock:
            self._last_error = message
        raise LLMError(message)

    def structured(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        fallback_tools: list[dict[str, Any]],
        *,
        name: str,
        hint: str = "",
        purpose: str | None = None,
        temperature: float = 0.2,
        max_tokens: int | None = None,
    ) -> ChatResult:
        """An answer constrained by ``schema`` where the endpoint takes a JSON schema (found
        out once per base_url, llm/providers.py), else one offering ``fallback_tools``.

        ``hint`` is appended to the first message when the schema is sent (how to answer
        in its form); ``name`` names the schema in the request. Raises as ``chat``.
        """
        url = str(self.status().get("base_url") or "")
        if schema is not None and schema_supported(url) is not False:
            first = dict(messages[0])
            first["content"] = str(first.get("content") or "") + hint
            try:
                result = self.chat(
                    [first, *messages[1:]],
                    purpose=purpose,
                    temperature=temperature,
                    max_tokens=max_tokens,
                    extra_body=schema_body(url, name, schema),
                )
            except LLMError as e:
                if not rejected(e):
                    raise
                remember_schema_support(url, False)
                logger.info("%s takes no response_format json_schema: answering with tools", url)
            else:
                remember_schema_support(url, True)
                return result
        return self.chat(
            messages,
            tools=fallback_tools,
            tool_choice="auto",
            purpose=purpose,
            temperature=temperature,
            max_tokens=max_tokens,
        )

    def status(self) -> dict[str, Any]:
        """For the tray: is an LLM configured, which one answered last, the last problem."""
        with self._lock:
            current = self._last_provider or (self._providers[0] if self._providers else None)
            return {
                "enabled": self.enabled,
                "provider": current.name if current else None,
                "model": current.model if current else None,
                "base_url": current.base_url if current else None,
                "last_error": self._last_error,
                "last_ok_ts": self._last_ok_ts,
            }

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            c.close()

    # ----------------------------------------------------------- attempts

    def _client(self, provider: ProviderProfile) -> openai.OpenAI:
        with self._lock:
            client = self._clients.get(provider.name)
            if client is None:
                openai = _openai()
                # max_retries=0: retries are ours, so they are bounded, logged and recorded.
                client = openai.OpenAI(
                    api_key=provider.api_key,
                    base_url=provider.base_url,
                    timeout=provider.timeout,
                    max_retries=0,
                )
                self._clients[provider.name] = client
            return client

    def _call_provider(
        self,
        provider: ProviderProfile,
        kwargs: dict[str, Any],
        purpose: str | None,
        deadline: float | None = None,
        streaming: _Streaming | None = None,
    ) -> ChatResult:
        client = self._client(provider)
        attempts = provider.retries + 1
        for attempt in range(attempts):
            if streaming is not None:
                streaming.sink.restart()
            timeout = self.timeout_for(provider)
            bounded = False
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise self._cancelled(provider, purpose, 0.0, None)
                if left < timeout:
                    timeout, bounded = left, True
            self.tracer.emit(
                "llm_request",
                provider=provider.name,
                model=provider.model,
                purpose=purpose,
                messages=kwargs.get("messages"),
                tools=kwargs.get("tools"),
                schema=kwargs.get("extra_body"),
                attempt=attempt + 1,
                **({"stream": True} if streaming is not None else {}),
            )
            start = time.monotonic()
            try:
                if streaming is not None:
                    answer = self._streamed(client, provider, kwargs, timeout, start, streaming)
                else:
                    answer = self._whole(client, provider, kwargs, timeout)
                message, usage_d, model, finish = answer
            except Stopped as e:
                latency = (time.monotonic() - start) * 1000
                if e.by_user:
                    raise self._stopped(provider, purpose, latency) from e
                raise self._cancelled(provider, purpose, latency, e) from e
            except Exception as e:  # noqa: BLE001 - every provider failure is an LLM failure
                latency = (time.monotonic() - start) * 1000
                failure = classify(e, provider, timeout)
                if failure.timeout and bounded:
                    raise self._cancelled(provider, purpose, latency, e) from e
                self._record(provider, purpose, latency, ok=False, error=failure.message)
                self.tracer.emit(
                    "llm_response",
                    provider=provider.name,
                    model=provider.model,
                    ok=False,
                    error=failure.message,
                    latency_ms=round(latency, 1),
                )
                last = attempt == attempts - 1
                shown = streaming is not None and streaming.sink.shown
                if not failure.retryable or last or shown:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise _ProviderFailed(f"{provider.describe()}: {failure.message}{tries}") from e
                wait = (
                    failure.retry_after
                    if failure.retry_after is not None
                    else BACKOFF_BASE * 2**attempt
                )
                wait = min(wait, RETRY_AFTER_CAP)
                if deadline is not None and time.monotonic() + wait >= deadline:
                    raise self._cancelled(provider, purpose, latency, e) from e
                logger.info(
                    "LLM %s attempt %d failed (%s); retrying in %.2f s",
                    provider.name,
                    attempt + 1,
                    failure.message,
                    wait,
                )
                time.sleep(wait)
                continue
            latency = (time.monotonic() - start) * 1000
            cost = self._record(provider, purpose, latency, ok=True, usage=usage_d)
            self.tracer.emit(
                "llm_response",
                provider=provider.name,
                model=model,
                ok=True,
                content=message.get("content"),
                tool_calls=message.get("tool_calls"),
                finish_reason=finish,
                usage=usage_d,
                latency_ms=round(latency, 1),
                cost=cost,
                **(
                    {"stream": True, "first_delta_ms": streaming.first_delta_ms}
                    if streaming is not None
                    else {}
                ),
            )
            return ChatResult(
                message=message,
                provider=provider.name,
                model=model,
                usage=usage_d,
                latency_ms=round(latency, 1),
                finish_reason=str(finish) if finish else None,
            )
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _whole(
        self,
        client: openai.OpenAI,
        provider: ProviderProfile,
        kwargs: dict[str, Any],
        timeout: float,
    ) -> tuple[dict[str, Any], dict[str, int], str, Any]:
        """One completion in one piece: (message, usage, model, finish reason)."""
        resp = client.chat.completions.create(model=provider.model, timeout=timeout, **kwargs)
        choices = getattr(resp, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise LLMError("invalid response: no message in the reply")
        usage = resp.usage
        usage_d = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "total_tokens": int(getattr(usage, "total_tokens", 0) or 0),
            "cached_tokens": _cached_tokens(usage),
        }
        model = str(resp.model or provider.model)
        finish = getattr(choices[0], "finish_reason", None)
        return _message_dict(choices[0].message), usage_d, model, finish

    def _streamed(
        self,
        client: openai.OpenAI,
        provider: ProviderProfile,
        kwargs: dict[str, Any],
        timeout: float,
        start: float,
        streaming: _Streaming,
    ) -> tuple[dict[str, Any], dict[str, int], str, Any]:
        """One completion streamed, its text to the sink as it comes; as :meth:`_whole`."""
        stream = client.chat.completions.create(model=provider.model, timeout=timeout, **kwargs)
        got = read(
            stream,
            streaming.sink,
            start=start,
            cancel=streaming.cancel,
            deadline=streaming.deadline,
        )
        if not got.content and not got.calls:
            raise LLMError("invalid response: the stream ended without an answer")
        streaming.first_delta_ms = (
            round(got.first_delta_ms, 1) if got.first_delta_ms is not None else None
        )
        cached = _cached_tokens(got.usage) if got.usage is not None else 0
        usage_d = got.usage_dict(kwargs.get("messages"), cached)
        return got.message(), usage_d, str(got.model or provider.model), got.finish_reason

    def _stopped(
        self, provider: ProviderProfile, purpose: str | None, latency_ms: float
    ) -> LLMCancelled:
        """Record and return the error of a streamed call its run's cancel closed."""
        self._record(provider, purpose, latency_ms, ok=False, error=STOPPED_BY_USER)
        logger.info("LLM call%s %s", f" for {purpose}" if purpose else "", STOPPED_BY_USER)
        return LLMCancelled(f"{provider.describe()}: {STOPPED_BY_USER}")

    def _cancelled(
        self, provider: ProviderProfile, purpose: str | None, latency_ms: float, cause: Any
    ) -> LLMCancelled:
        """Record and return the error of a call closed at its caller's deadline."""
        message = (
            f"cancelled after {latency_ms / 1000:.1f} s: {OUT_OF_TIME} (the request it was "
            "made for had to be answered by then)"
        )
        self._record(provider, purpose, latency_ms, ok=False, error=message)
        logger.warning("LLM call%s %s", f" for {purpose}" if purpose else "", message)
        return LLMCancelled(f"{provider.describe()}: {message}")

    # ------------------------------------------------------- local servers

    def _probe(self) -> None:
        """Time to first token and context size of a local primary; never raises."""
        try:
            self._measure(self._providers[0])
        finally:
            self.probed.set()

    def _measure(self, provider: ProviderProfile) -> None:
        try:
            self._probe_context(provider)
            client = self._client(provider)
            start = time.monotonic()
            stream = client.chat.completions.create(
                model=provider.model,
                messages=[{"role": "user", "content": PROBE_PROMPT}],
                max_tokens=1,
                temperature=0,
                stream=True,
                timeout=PROBE_TIMEOUT,
            )
            try:
                for _chunk in stream:
                    break
            finally:
                stream.close()
            self.ttft = time.monotonic() - start
        except Exception as e:  # noqa: BLE001 - a probe that fails changes nothing
            logger.info("could not time the local LLM at %s: %s", provider.base_url, e)
            return
        probe_tokens = max(1, len(PROBE_PROMPT) // 4)
        estimate = self.ttft / probe_tokens * TYPICAL_PROMPT_TOKENS
        needed = round(TIMEOUT_FACTOR * estimate)
        if needed >= MIN_DERIVED_TIMEOUT and needed > min(
            provider.timeout, self.config.handle_timeout
        ):
            self._derived_timeout = float(needed)
            logger.warning(
                "local LLM %s: first token after %.1f s for a %d-token prompt, so a "
                "%d-token prompt needs about %.0f s; LLM calls use a %d s timeout "
                '(set "llm": {"timeout": %d} and "handle_timeout": %d to keep it)',
                provider.model,
                self.ttft,
                probe_tokens,
                TYPICAL_PROMPT_TOKENS,
                estimate,
                needed,
                needed,
                needed,
            )
        else:
            logger.info(
                "local LLM %s: first token after %.2f s; llm.timeout %g s is enough",
                provider.model,
                self.ttft,
                provider.timeout,
            )

    def _probe_context(self, provider: ProviderProfile) -> None:
        if not self._context_tokens:
            self._context_tokens = probe_context(provider)

    def _check_context(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> None:
        """Warn once when a prompt may not fit in the server's context."""
        limit = self._context_tokens
        if not limit or self._context_warned:
            return
        size = len(json.dumps([messages, tools or []], ensure_ascii=False))
        tokens = int(size / CHARS_PER_TOKEN)
        if tokens > CONTEXT_HEADROOM * limit:
            self._context_warned = True
            logger.warning(
                "an LLM prompt of about %d tokens may not fit the server's context of %d "
                "tokens: raise the server's context size (llama.cpp -c, Ollama num_ctx) "
                "or set llm.context_tokens",
                tokens,
                limit,
            )

    def _record(
        self,
        provider: ProviderProfile,
        purpose: str | None,
        latency_ms: float,
        *,
        ok: bool,
        error: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> float | None:
        """Write the call's usage row (session and app from the trace context); its cost."""
        u = usage or {}
        cost = (
            self.config.llm.cost(
                provider.model,
                u.get("prompt_tokens", 0),
                u.get("completion_tokens", 0),
                u.get("cached_tokens", 0),
            )
            if ok
            else None
        )
        if self.store is None:
            return cost
        ctx = current()
        try:
            self.store.record_llm_usage(
                session_id=ctx.session_id,
                run_id=ctx.run_id,
                app=ctx.app,
                cached_tokens=u.get("cached_tokens"),
                cost=cost,
                provider=provider.name,
                model=provider.model,
                latency_ms=round(latency_ms, 1),
                ok=ok,
                purpose=purpose,
                error=error,
                prompt_tokens=(usage or {}).get("prompt_tokens"),
                completion_tokens=(usage or {}).get("completion_tokens"),
            )
        except StoreError as e:
            # Bookkeeping must not cost the user an answer they already have.
            logger.warning("could not record LLM usage: %s", e)
        return cost


def _cached_tokens(usage: Any) -> int:
    """Prompt tokens the provider served from its cache (OpenAI ``prompt_tokens_details``,
    DeepSeek ``prompt_cache_hit_tokens``); 0 when it does not say."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    if cached is None:
        cached = getattr(usage, "prompt_cache_hit_tokens", None)
    try:
        return int(cached or 0)
    except (TypeError, ValueError):
        return 0


@dataclass
class _Streaming:
    """Internal: one streamed call's sink, cancel event and deadline, and what it measured."""

    sink: StreamSink
    cancel: threading.Event | None
    deadline: float | None = None
    first_delta_ms: float | None = None


class _ProviderFailed(Exception):
    """Internal: one provider gave up (message names it and the cause)."""
