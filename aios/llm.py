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
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aios.config import Config
from aios.errors import LLMError, LLMUnavailable, StoreError
from aios.store import Store

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


@dataclass
class _Provider:
    name: str
    base_url: str
    model: str
    api_key: str
    timeout: float
    retries: int

    def describe(self) -> str:
        return f"{self.name} LLM ({self.model} at {self.base_url})"


@dataclass
class _Failure:
    message: str
    retryable: bool
    retry_after: float | None = None


def normalize_base_url(url: str) -> str:
    """Accept ``https://host``, ``https://host/v1`` or a pasted ``…/chat/completions``.

    The openai client appends ``/chat/completions`` itself; DeepSeek and most
    compatible servers answer both with and without ``/v1``, so the form the
    user typed is kept apart from trailing slashes and a pasted endpoint path.
    """
    url = (url or "").strip().rstrip("/")
    for suffix in ("/chat/completions", "/completions"):
        if url.endswith(suffix):
            url = url[: -len(suffix)].rstrip("/")
    return url


def _retry_after(headers: Any) -> float | None:
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            return None  # an HTTP date: not worth parsing for a ≤2 s wait
    return None


def _api_message(e: openai.APIStatusError) -> str:
    body = e.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:200]
    return ""


def _classify(e: Exception, provider: _Provider) -> _Failure:
    """Map an ``openai`` exception to a message for a person and whether to retry."""
    openai = _openai()
    if isinstance(e, openai.APITimeoutError):
        return _Failure(f"timed out after {provider.timeout:g} s", True)
    if isinstance(e, openai.APIConnectionError):
        cause = e.__cause__ or e.__context__
        detail = f": {cause}" if cause else ""
        return _Failure(f"cannot connect to {provider.base_url}{detail}", True)
    if isinstance(e, openai.APIStatusError):
        status = e.status_code
        detail = _api_message(e)
        suffix = f" — {detail}" if detail else ""
        if status == 401:
            return _Failure(
                f"API key rejected (HTTP 401); check llm.api_key / deepseek_api_key{suffix}", False
            )
        if status == 403:
            return _Failure(f"access denied (HTTP 403){suffix}", False)
        if status == 404:
            return _Failure(
                f"not found (HTTP 404): check llm.base_url and model {provider.model!r}{suffix}",
                False,
            )
        if status == 429:
            return _Failure(
                f"rate limited (HTTP 429){suffix}", True, _retry_after(e.response.headers)
            )
        if status >= 500:
            return _Failure(
                f"server error (HTTP {status}){suffix}", True, _retry_after(e.response.headers)
            )
        return _Failure(f"request rejected (HTTP {status}){suffix}", False)
    if isinstance(e, openai.OpenAIError):
        return _Failure(f"invalid response: {e}", False)
    if isinstance(e, LLMError):  # ours: a well-formed reply without a message
        return _Failure(str(e), False)
    # Anything else escaped the client library: a 200 whose body is not JSON
    # (JSONDecodeError), an odd shape (KeyError, TypeError…), a raw httpx error.
    # The provider misbehaved, which may pass like an HTTP 500: retry, then fall back.
    return _Failure(f"invalid response: {type(e).__name__}: {e}", True)


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

    def __init__(self, config: Config, store: Store | None = None):
        self.config = config
        self.store = store
        llm = config.llm
        key = config.llm_api_key
        self._providers: list[_Provider] = []
        if config.llm_enabled:
            self._providers.append(
                _Provider(
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
                    _Provider(
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
        self._last_provider: _Provider | None = None

    @property
    def enabled(self) -> bool:
        return bool(self._providers)

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
        extra_body: dict[str, Any] | None = None,
    ) -> ChatResult:
        """One chat completion; retries and falls back as configured.

        ``extra_body`` goes into the request as is (``response_format``, Ollama's ``format``…).

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
                result = self._call_provider(provider, kwargs, purpose)
            except _ProviderFailed as e:
                failures.append(str(e))
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

    def _client(self, provider: _Provider) -> openai.OpenAI:
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
        self, provider: _Provider, kwargs: dict[str, Any], purpose: str | None
    ) -> ChatResult:
        client = self._client(provider)
        attempts = provider.retries + 1
        for attempt in range(attempts):
            start = time.monotonic()
            try:
                resp = client.chat.completions.create(model=provider.model, **kwargs)
                choices = getattr(resp, "choices", None)
                if not choices or getattr(choices[0], "message", None) is None:
                    raise LLMError("invalid response: no message in the reply")
                message = _message_dict(choices[0].message)
                usage = resp.usage
                usage_d = {
                    "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
                    "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
                    "total_tokens": int(getattr(usage, "total_tokens", 0) or 0),
                }
                model = str(resp.model or provider.model)
                finish = getattr(choices[0], "finish_reason", None)
            except Exception as e:  # noqa: BLE001 - every provider failure is an LLM failure
                latency = (time.monotonic() - start) * 1000
                failure = _classify(e, provider)
                self._record(provider, purpose, latency, ok=False, error=failure.message)
                last = attempt == attempts - 1
                if not failure.retryable or last:
                    tries = f" after {attempt + 1} attempts" if attempt else ""
                    raise _ProviderFailed(f"{provider.describe()}: {failure.message}{tries}") from e
                wait = (
                    failure.retry_after
                    if failure.retry_after is not None
                    else BACKOFF_BASE * 2**attempt
                )
                wait = min(wait, RETRY_AFTER_CAP)
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
            self._record(provider, purpose, latency, ok=True, usage=usage_d)
            return ChatResult(
                message=message,
                provider=provider.name,
                model=model,
                usage=usage_d,
                latency_ms=round(latency, 1),
                finish_reason=str(finish) if finish else None,
            )
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _record(
        self,
        provider: _Provider,
        purpose: str | None,
        latency_ms: float,
        *,
        ok: bool,
        error: str | None = None,
        usage: dict[str, int] | None = None,
    ) -> None:
        if self.store is None:
            return
        try:
            self.store.record_llm_usage(
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


class _ProviderFailed(Exception):
    """Internal: one provider gave up (message names it and the cause)."""
