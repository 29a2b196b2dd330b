"""What differs between model vendors and servers, in one place.

A ``ProviderProfile`` is one configured endpoint (primary or fallback): whether it is a
local server (a loopback address: a timeout there is not retried), its timeout and
retries, how its errors read to a person and whether they may pass (``classify``), its
context size (``probe_context``: vLLM ``/v1/models``, llama.cpp ``/props``, Ollama
``/api/show``), and how a JSON schema is asked of it (``schema_body``: OpenAI's
``response_format``, plus Ollama's native ``format``). Whether an endpoint takes a JSON
schema at all is found out once per base_url and remembered here (``schema_supported``).

Adding a provider quirk: a branch here (+ a ``config`` knob, + the fake in
``tests/fakes/fake_openai.py``); the client and the planner stay as they are.
"""

from __future__ import annotations

import ipaddress
import re
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from aios.errors import LLMError

if TYPE_CHECKING:
    import openai

__all__ = [
    "OLLAMA_PORT",
    "PROBE_TIMEOUT",
    "Failure",
    "ProviderProfile",
    "classify",
    "is_loopback",
    "normalize_base_url",
    "probe_context",
    "rejected",
    "remember_schema_support",
    "schema_body",
    "schema_supported",
]

PROBE_TIMEOUT = 120.0
"""Seconds the start-up probe of a local server may take (a cold model loads first)."""
OLLAMA_PORT = 11434
"""Ollama's port: its native ``format`` field is sent along with ``response_format``."""
_REJECTED = re.compile(r"\(HTTP (?:400|404|415|422|501)\)")
"""An LLMError for a request the server refused as such (an unknown field, not a failure)."""


def _openai() -> Any:
    """The ``openai`` package, imported on first use: it takes ~0.35 s to import, and
    a desktop without an LLM key never needs it."""
    import openai

    return openai


def is_loopback(base_url: str) -> bool:
    """``localhost``, 127.0.0.0/8 or ::1: a server on this machine (a local model)."""
    host = (urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


@dataclass
class ProviderProfile:
    """One configured endpoint: ``primary`` or ``fallback``."""

    name: str
    base_url: str
    model: str
    api_key: str
    timeout: float
    retries: int

    @property
    def local(self) -> bool:
        return is_loopback(self.base_url)

    def describe(self) -> str:
        return f"{self.name} LLM ({self.model} at {self.base_url})"


# ------------------------------------------------------------------ errors


@dataclass
class Failure:
    """One failed attempt, for a person: what went wrong and whether to try again."""

    message: str
    retryable: bool
    retry_after: float | None = None
    timeout: bool = False


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


def _status_failure(e: openai.APIStatusError, provider: ProviderProfile) -> Failure:
    status = e.status_code
    detail = _api_message(e)
    suffix = f" — {detail}" if detail else ""
    if status == 401:
        return Failure(
            f"API key rejected (HTTP 401); check llm.api_key / deepseek_api_key{suffix}", False
        )
    if status == 403:
        return Failure(f"access denied (HTTP 403){suffix}", False)
    if status == 404:
        return Failure(
            f"not found (HTTP 404): check llm.base_url and model {provider.model!r}{suffix}",
            False,
        )
    if status == 429:
        return Failure(f"rate limited (HTTP 429){suffix}", True, _retry_after(e.response.headers))
    if status >= 500:
        return Failure(
            f"server error (HTTP {status}){suffix}", True, _retry_after(e.response.headers)
        )
    return Failure(f"request rejected (HTTP {status}){suffix}", False)


def classify(e: Exception, provider: ProviderProfile, timeout: float | None = None) -> Failure:
    """Map an ``openai`` exception to a message for a person and whether to retry."""
    openai = _openai()
    if isinstance(e, openai.APITimeoutError):
        seconds = provider.timeout if timeout is None else timeout
        if provider.local:
            return Failure(
                f"timed out after {seconds:g} s (a local server: not retried; "
                "raise llm.timeout if it needs longer to read the prompt)",
                False,
                timeout=True,
            )
        return Failure(f"timed out after {seconds:g} s", True, timeout=True)
    if isinstance(e, openai.APIConnectionError):
        cause = e.__cause__ or e.__context__
        detail = f": {cause}" if cause else ""
        return Failure(f"cannot connect to {provider.base_url}{detail}", True)
    if isinstance(e, openai.APIStatusError):
        return _status_failure(e, provider)
    if isinstance(e, openai.OpenAIError):
        return Failure(f"invalid response: {e}", False)
    if isinstance(e, LLMError):  # ours: a well-formed reply without a message
        return Failure(str(e), False)
    # Anything else escaped the client library: a 200 whose body is not JSON
    # (JSONDecodeError), an odd shape (KeyError, TypeError…), a raw httpx error.
    # The provider misbehaved, which may pass like an HTTP 500: retry, then fall back.
    return Failure(f"invalid response: {type(e).__name__}: {e}", True)


def rejected(e: LLMError) -> bool:
    """The server refused the request as such (an unknown field), rather than failing."""
    return bool(_REJECTED.search(str(e)))


# ------------------------------------------------------------ context size


def probe_context(provider: ProviderProfile) -> int | None:
    """The server's context size, when it says: ``/v1/models`` (vLLM max_model_len),
    llama.cpp ``/props`` n_ctx, Ollama ``/api/show`` num_ctx (or the model's length)."""
    import requests

    root = provider.base_url.removesuffix("/v1")
    n: Any = None
    try:
        r = requests.get(f"{provider.base_url}/models", timeout=PROBE_TIMEOUT)
        if r.ok:
            models = r.json().get("data") or []
            for m in models if isinstance(models, list) else []:
                if isinstance(m, dict) and m.get("id") == provider.model:
                    n = m.get("max_model_len") or n
        r = requests.get(f"{root}/props", timeout=PROBE_TIMEOUT)
        if r.ok:
            props = r.json()
            settings = props.get("default_generation_settings") or {}
            n = props.get("n_ctx") or settings.get("n_ctx") or n
        if not n:
            r = requests.post(
                f"{root}/api/show", json={"model": provider.model}, timeout=PROBE_TIMEOUT
            )
            if r.ok:
                show = r.json()
                params = str(show.get("parameters") or "")
                for line in params.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "num_ctx":
                        n = value.strip()
                info = show.get("model_info") or {}
                n = n or next((v for k, v in info.items() if k.endswith(".context_length")), None)
    except (requests.RequestException, ValueError, AttributeError):
        return None
    try:
        return int(n) if n else None
    except (TypeError, ValueError):
        return None


# ------------------------------------------------------------ JSON schemas

_schema_support: dict[str, bool] = {}
_schema_lock = threading.Lock()


def schema_body(base_url: str, name: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The request fields that constrain the answer to ``schema`` at ``base_url``."""
    body: dict[str, Any] = {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": name, "strict": True, "schema": schema},
        }
    }
    if urlsplit(base_url).port == OLLAMA_PORT:
        body["format"] = schema
    return body


def schema_supported(base_url: str) -> bool | None:
    """What this process learnt about ``base_url``: True, False, or None (not tried yet)."""
    with _schema_lock:
        return _schema_support.get(normalize_base_url(base_url))


def remember_schema_support(base_url: str, supported: bool | None) -> None:
    """Record (or, with None, forget) whether ``base_url`` takes a JSON schema."""
    url = normalize_base_url(base_url)
    with _schema_lock:
        if supported is None:
            _schema_support.pop(url, None)
        else:
            _schema_support[url] = supported
