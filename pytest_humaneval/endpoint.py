"""OpenAI-compatible client over httpx: URL guard, bounded retries, usage accounting, fence unwrapping.

No pytest import. Generation runs once, on the controller, as an asyncio loop with bounded concurrency.
The API key is read from the environment when the client is made, sent only in the Authorization header,
and never put into an error message, a result or a repr.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import random
import re
import socket
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

import httpx

from .config import RetryPolicy

__all__ = ["CHAT_SYSTEM", "DEFAULT_STOP", "EndpointError", "Generation", "Client", "check_url",
           "unwrap_completion"]

# The customary HumanEval stop sequences (Chen et al., 2021), trimmed to the 4 that OpenAI's API accepts.
DEFAULT_STOP = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(")
CHAT_SYSTEM = ("You are an expert Python programmer. Complete the user's function. Reply with the complete "
               "function, including its imports, in one ```python code block.")
CHAT_USER = "Complete this Python function:\n```python\n{prompt}\n```"
BLOCKED_NETWORKS = tuple(ipaddress.ip_network(n) for n in (
    "169.254.0.0/16",  # link-local, including the 169.254.169.254 cloud metadata service
    "fe80::/10",  # IPv6 link-local
    "fd00:ec2::254/128",  # AWS metadata over IPv6
    "100.100.100.200/32",  # Alibaba Cloud metadata
))
BLOCKED_HOSTS = ("metadata.google.internal", "metadata.goog", "metadata")
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))
CONNECT_TIMEOUT_S = 10.0
MAX_ERROR_BODY = 300


class EndpointError(Exception):
    """A request failed for good: the message names the endpoint URL and the status or the cause."""

    def __init__(self, message: str, *, retryable: bool = False, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.attempts = 1


@dataclass(frozen=True)
class Generation:
    """What one sample's generation produced (completion is None when it failed)."""

    completion: str | None
    raw: str | None
    error: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    generation_ms: float
    attempts: int
    retry_overhead_ms: float = 0.0


# -- the URL guard -------------------------------------------------------------------------------------------

def _blocked_address(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%")[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip in network for network in BLOCKED_NETWORKS)


def check_url(url: str, resolve: Callable[[str], list[str]] | None = None) -> None:
    """Refuse anything but http(s) and any destination that is (or resolves to) a cloud-metadata or
    link-local address. Loopback and private addresses are allowed: local model servers live there."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EndpointError(f"endpoint {url!r}: expected an http:// or https:// URL with a host")
    host = parts.hostname.rstrip(".").lower()
    if host in BLOCKED_HOSTS or _blocked_address(host):
        raise EndpointError(f"endpoint {url!r}: refused: {host} is a cloud-metadata or link-local destination")
    for address in (resolve or _resolve)(host):
        if _blocked_address(address):
            raise EndpointError(f"endpoint {url!r}: refused: {host} resolves to {address}, a cloud-metadata or "
                                "link-local address")


def _resolve(host: str) -> list[str]:
    try:
        return sorted({info[4][0] for info in socket.getaddrinfo(host, None)})
    except socket.gaierror:
        return []  # the request itself will report that the name does not resolve


# -- completions ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


def unwrap_completion(text: str, entry_point: str) -> str:
    """The code to append to the prompt.

    A single fenced block (```python, ```py or bare ```) is taken out of the prose around it; with several,
    the first Python one. A whole function (it defines the entry point) is appended after a newline, so it
    replaces the prompt's stub and the prompt's imports stay in scope; a body is appended as is.
    """
    blocks = _FENCE.findall(text)
    if blocks:
        python = [code for lang, code in blocks if lang.lower() in ("python", "py", "python3", "")]
        code = (python or [blocks[0][1]])[0]
    else:
        code = text
    if re.search(rf"^\s*(async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE):
        return "\n" + code
    return code


# -- the client ----------------------------------------------------------------------------------------------

def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _describe_response(url: str, response: httpx.Response) -> str:
    body = response.text.strip().replace("\n", " ")
    try:
        error = response.json().get("error")
        if isinstance(error, dict) and error.get("message"):
            body = str(error["message"])
        elif isinstance(error, str):
            body = error
    except (ValueError, AttributeError):
        pass
    body = body[:MAX_ERROR_BODY] + ("..." if len(body) > MAX_ERROR_BODY else "")
    return f"HTTP {response.status_code} from {url}" + (f": {body}" if body else "")


class Client:
    """One connection pool for the whole run; ``generate`` is safe to call concurrently."""

    def __init__(self, endpoint: str, model: str, *, api_key: str | None, api: str = "chat",
                 temperature: float = 0.0, top_p: float | None = None, max_tokens: int = 512,
                 stop: tuple[str, ...] | None = None, request_timeout_s: float = 120.0,
                 retry: RetryPolicy | None = None, concurrency: int = 8,
                 resolve: Callable[[str], list[str]] | None = None) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.model, self.api = model, api
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        self.stop = stop
        self.retry = retry
        self._resolve = resolve
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(request_timeout_s, connect=min(CONNECT_TIMEOUT_S, request_timeout_s))
        self._limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self._client: httpx.AsyncClient | None = None
        self._guarded: set[tuple[str, str, int | None]] = set()

    def __repr__(self) -> str:  # never the key
        return f"Client(endpoint={self.endpoint!r}, model={self.model!r}, api={self.api!r})"

    async def __aenter__(self) -> "Client":
        check_url(self.endpoint, self._resolve)
        self._client = httpx.AsyncClient(headers=self._headers, timeout=self._timeout, limits=self._limits,
                                         follow_redirects=True, event_hooks={"request": [self._guard]})
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._client is not None:
            await self._client.aclose()

    async def _guard(self, request: httpx.Request) -> None:
        # Every request, redirects included, goes through the guard before it leaves; a host is resolved and
        # judged once per run, not once per request.
        origin = (request.url.scheme, request.url.host, request.url.port)
        if origin in self._guarded:
            return
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, check_url, str(request.url), self._resolve)
        self._guarded.add(origin)

    # -- requests
    async def _send(self, method: str, path: str, payload: dict | None = None) -> dict:
        url = f"{self.endpoint}{path}"
        assert self._client is not None, "use the client as an async context manager"
        try:
            response = await self._client.request(method, url, json=payload)
        except httpx.TimeoutException as exc:
            raise EndpointError(f"timed out waiting for {url} ({type(exc).__name__})", retryable=True) from None
        except EndpointError:
            raise
        except (httpx.TransportError, OSError) as exc:  # OSError: an ssl.SSLError an older httpcore let through
            reason = str(exc) or type(exc).__name__
            raise EndpointError(f"cannot reach {url}: {reason}", retryable=True) from None
        if response.status_code >= 400 or response.status_code < 200:
            raise EndpointError(_describe_response(url, response),
                                retryable=response.status_code in RETRYABLE_STATUS,
                                retry_after=_retry_after(response))
        try:
            data = response.json()
        except ValueError:
            raise EndpointError(f"malformed JSON from {url} (HTTP {response.status_code}): "
                                f"{response.text[:120]!r}") from None
        if not isinstance(data, dict):
            raise EndpointError(f"unexpected reply from {url}: expected a JSON object, found "
                                f"{type(data).__name__}")
        return data

    async def _with_retries(self, policy: RetryPolicy | None,
                            call: Callable[[], Awaitable[dict]]) -> tuple[dict, int, float]:
        """(reply, attempts, ms spent on failed attempts and backoff); a final EndpointError carries
        ``attempts``. Only 429, 5xx, timeouts and connection errors are retried, within the policy."""
        attempts, overhead_started = 0, time.monotonic()
        limit = policy.max_attempts if policy else 1
        while True:
            attempts += 1
            started = time.monotonic()
            try:
                return await call(), attempts, (started - overhead_started) * 1000.0
            except EndpointError as exc:
                if not exc.retryable or attempts >= limit:
                    exc.attempts = attempts
                    raise
                assert policy is not None
                delay = min(policy.backoff_max_s, policy.backoff_base_s * 2 ** (attempts - 1))
                delay = random.uniform(delay / 2, delay)  # jitter: concurrent clients do not retry in step
                if exc.retry_after is not None:
                    delay = min(policy.backoff_max_s, max(delay, exc.retry_after))
                await asyncio.sleep(delay)

    async def preflight(self, policy: RetryPolicy | None) -> str | None:
        """GET /models: fails fast on a wrong URL, key or model. Returns a warning, or None."""
        try:
            reply, _, _ = await self._with_retries(policy, lambda: self._send("GET", "/models"))
        except EndpointError as exc:
            if str(exc).startswith("HTTP 404 "):
                return f"{self.endpoint}/models answered 404 (some servers lack it); model name not checked"
            raise
        served = [m.get("id") for m in reply.get("data", []) if isinstance(m, dict)]
        if served and self.model not in served:
            shown = ", ".join(str(s) for s in served[:10]) + (" ..." if len(served) > 10 else "")
            raise EndpointError(f"model {self.model!r} is not served by {self.endpoint} (it serves: {shown})")
        return None

    def _payload(self, prompt: str) -> tuple[str, dict]:
        payload: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                   "temperature": self.temperature}
        if self.top_p is not None:
            payload["top_p"] = self.top_p
        if self.api == "chat":
            payload["messages"] = [{"role": "system", "content": CHAT_SYSTEM},
                                   {"role": "user", "content": CHAT_USER.format(prompt=prompt.strip())}]
            if self.stop:
                payload["stop"] = list(self.stop)
            return "/chat/completions", payload
        payload["prompt"] = prompt
        payload["stop"] = list(self.stop or DEFAULT_STOP)
        return "/completions", payload

    def _text(self, path: str, reply: dict) -> str:
        url = f"{self.endpoint}{path}"
        choices = reply.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise EndpointError(f"reply from {url} has no choices: {json.dumps(reply)[:160]}")
        choice = choices[0]
        text = (choice.get("message") or {}).get("content") if self.api == "chat" else choice.get("text")
        if text is None:
            text = ""  # a null content is an empty answer, executed as such
        if not isinstance(text, str):
            raise EndpointError(f"reply from {url} has a non-text answer: {type(text).__name__}")
        return text

    async def generate(self, prompt: str, entry_point: str) -> Generation:
        path, payload = self._payload(prompt)
        started = time.monotonic()
        attempts = 1
        try:
            reply, attempts, overhead = await self._with_retries(self.retry,
                                                                 lambda: self._send("POST", path, payload))
            raw = self._text(path, reply)
        except EndpointError as exc:
            elapsed = (time.monotonic() - started) * 1000.0
            attempts = max(attempts, exc.attempts)
            return Generation(None, None, str(exc), None, None, elapsed, attempts, elapsed)
        except Exception as exc:  # anything unforeseen costs this sample, never the session
            elapsed = (time.monotonic() - started) * 1000.0
            error = f"request to {self.endpoint}{path} failed: {type(exc).__name__}: {exc}"
            return Generation(None, None, error, None, None, elapsed, attempts, elapsed)
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        return Generation(
            completion=unwrap_completion(raw, entry_point),
            raw=raw,
            error=None,
            prompt_tokens=_count(usage.get("prompt_tokens")),
            completion_tokens=_count(usage.get("completion_tokens")),
            generation_ms=(time.monotonic() - started) * 1000.0,
            attempts=attempts,
            retry_overhead_ms=overhead,
        )


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
