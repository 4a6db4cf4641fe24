"""OpenAI-compatible client over httpx: URL guard, bounded retries, usage accounting, answer parsing.

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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..config import RetryPolicy
from ..protocols import sent_prompt, sent_stop
from . import lcb
from .extract import Extraction, extract, unwrap_completion
from .lcb import Question
from .store import normalise_endpoint

Extractor = Callable[[str, str, str], Extraction]  # (answer, entry point, prompt) -> what runs

__all__ = ["CHAT_SYSTEM", "CHAT_SYSTEM_WHOLE", "CHAT_USER_WHOLE", "DEFAULT_STOP", "USAGE_SHORT", "WHOLE_STOP",
           "asks_for_whole_function", "EndpointError", "Extractor", "Generation", "Client", "check_url",
           "stored_generation", "unwrap_completion"]

# The customary HumanEval stop sequences (Chen et al., 2021), trimmed to the 4 that OpenAI's API accepts.
DEFAULT_STOP = ("\ndef ", "\nclass ", "\nif __name__", "\nprint(")
CHAT_SYSTEM = ("You are an expert Python programmer. Complete the user's function. Reply with the complete "
               "function, including its imports, in one ```python code block.")
CHAT_USER = "Complete this Python function:\n```python\n{prompt}\n```"
# A prompt that gives no signature (MBPP+'s: a docstring with the task and one example assert) asks for the whole
# function. Over chat it is sent as EvalPlus's codegen sends every prompt (evalplus/codegen.py and
# provider/utility.py, 0.3.1: its instruction, then the prompt stripped in a bare fence), after a system prompt
# of the same kind as HumanEval's. On the completions API the prompt is sent as given (or as the preset sends
# it) with EvalPlus's stop sequences for a direct MBPP completion, its '\n"""' and '\nassert' and two of its
# EOS strings (OpenAI's API accepts four): the first model line is a def, and later helpers must not be cut.
# (bigcode's harness sends '"""\n{text}\n{first test}\n"""\n', which the release's prompt already is.)
CHAT_SYSTEM_WHOLE = ("You are an expert Python programmer. Write the function the user asks for. Reply with the "
                     "complete function, including its imports, in one ```python code block.")
CHAT_USER_WHOLE = ("Please provide a self-contained Python script that solves the following problem in a markdown "
                   "code block:\n```\n{prompt}\n```\n")
WHOLE_STOP = ('\n"""', "\nassert", "\nif __name__", "\nprint(")
_DEFINITION = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(", re.MULTILINE)
TRUNCATED = "truncated at max_tokens (finish_reason: length)"
NO_CODE = "the model returned no code"
# A reply's usage too small for the choices it returned: llama.cpp's server counts one choice of n. The count is
# recorded as the server said it (guessing n times one choice would be wrong on every server that does count),
# and the request's first sample says so.
USAGE_SHORT = "usage cannot cover the choices"
# Where servers put the reasoning of a thinking model when they parse it out of the answer: DeepSeek, vLLM and
# SGLang reasoning parsers, DashScope (reasoning_content); OpenRouter, newer vLLM, Ollama (reasoning).
REASONING_FIELDS = ("reasoning_content", "reasoning")
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
    reasoning: str | None = None  # the model's thinking: a separate field of the reply, or tags in the answer
    finish_reason: str | None = None  # as the server reported it ("length": cut at max_tokens)
    reasoning_tokens: int | None = None  # part of completion_tokens, when the server says how many
    notes: tuple[str, ...] = ()  # said in the sample's detail: no code, truncated, which block was taken
    cached: bool = False  # read from the generation store, not requested by this run
    program: str | None = None  # the whole program the candidate runs, when the answer defines the entry point


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
        return sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
    except socket.gaierror:
        return []  # the request itself will report that the name does not resolve


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
                 system_prompt: str | None = None, extra_body: dict[str, Any] | None = None,
                 resolve: Callable[[str], list[str]] | None = None, protocol: str | None = None,
                 extractor: Extractor = extract) -> None:
        # ``protocol``: a preset, whose source's stop sequences and prompt form the completions API sends (unless
        # the config sets params.stop); over chat it changes nothing (protocol.setup_warnings says so).
        self.endpoint = endpoint.rstrip("/")
        self.model, self.api = model, api
        self.temperature, self.top_p, self.max_tokens = temperature, top_p, max_tokens
        self.protocol = protocol
        self.stop = sent_stop(protocol, api, stop)
        self.retry = retry
        self.system_prompt = CHAT_SYSTEM if system_prompt is None else system_prompt
        self._own_system, self._own_stop = system_prompt is None, stop is None
        self.extra_body = dict(extra_body or {})
        self._resolve = resolve
        self.extractor = extractor  # extract, or the session's pytest_humaneval_extract hook
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(request_timeout_s, connect=min(CONNECT_TIMEOUT_S, request_timeout_s))
        self._limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self._client: httpx.AsyncClient | None = None
        self._guarded: set[tuple[str, str, int | None]] = set()

    def __repr__(self) -> str:  # never the key
        return f"Client(endpoint={self.endpoint!r}, model={self.model!r}, api={self.api!r})"

    async def __aenter__(self) -> Client:
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
    async def _send(self, method: str, path: str, payload: dict[str, Any] | None = None) -> dict[str, Any]:
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
            # A JSON body cut short (or none at all) is a fault on the way (a proxy's, a dropped connection), which
            # another attempt gets past; a body that is not JSON at all (an HTML page) is a wrong URL, which it does
            # not.
            torn = response.text.lstrip()[:1] in ("{", "[", "")
            raise EndpointError(f"malformed JSON from {url} (HTTP {response.status_code}): "
                                f"{response.text[:120]!r}" + (" (cut short)" if torn else ""),
                                retryable=torn) from None
        if not isinstance(data, dict):
            raise EndpointError(f"unexpected reply from {url}: expected a JSON object, found "
                                f"{type(data).__name__}")
        return data

    async def _with_retries(self, policy: RetryPolicy | None,
                            call: Callable[[], Awaitable[dict[str, Any]]]) -> tuple[dict[str, Any], int, float]:
        """(reply, attempts, ms spent on failed attempts and backoff); a final EndpointError carries
        ``attempts``. Only 429, 5xx, timeouts, connection errors and a JSON body cut short are retried, within
        the policy."""
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

    def _payload(self, prompt: str | Question) -> tuple[str, dict[str, Any]]:
        """(path, body) of a request for ``prompt``: HumanEval's prompt, or a standard-input or functional
        problem's question (``lcb.asked``), each in its own form."""
        payload: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens,
                                   "temperature": self.temperature}
        if self.top_p is not None:
            payload["top_p"] = self.top_p
        whole = isinstance(prompt, str) and asks_for_whole_function(prompt)
        if isinstance(prompt, Question):
            path = self._question(payload, prompt)
        elif self.api == "chat":
            system_prompt = CHAT_SYSTEM_WHOLE if whole and self._own_system else self.system_prompt
            system = [{"role": "system", "content": system_prompt}] if system_prompt else []
            user = (CHAT_USER_WHOLE if whole else CHAT_USER).format(prompt=prompt.strip())
            payload["messages"] = [*system, {"role": "user", "content": user}]
            if self.stop:
                payload["stop"] = list(self.stop)
            path = "/chat/completions"
        else:
            payload["prompt"] = sent_prompt(self.protocol, self.api, prompt)
            payload["stop"] = list(WHOLE_STOP if whole and self._own_stop else self.stop or DEFAULT_STOP)
            path = "/completions"
        # Provider options (enable_thinking, reasoning_effort, seed, ...); a null removes what the harness
        # would send (OpenAI's reasoning models refuse max_tokens and want max_completion_tokens instead).
        for name, value in self.extra_body.items():
            if value is None:
                payload.pop(name, None)
            else:
                payload[name] = value
        return path, payload

    def _question(self, payload: dict[str, Any], question: Question) -> str:
        """LiveCodeBench's prompt into ``payload`` (lcb.py), and the path: over chat its system message (or
        params.system_prompt) and its question; over completions its base-model form and its stop sequence (or
        params.stop). A HumanEval preset's stop sequences and prompt form are HumanEval's, never sent here."""
        stop = lcb.sent_stop(self.api, None if self._own_stop else self.stop)
        if stop:
            payload["stop"] = list(stop)
        if self.api != "chat":
            payload["prompt"] = lcb.base_prompt(question)
            return "/completions"
        system = lcb.SYSTEM_MESSAGE if self._own_system else self.system_prompt
        payload["messages"] = [*([{"role": "system", "content": system}] if system else []),
                               {"role": "user", "content": lcb.chat_message(question)}]
        return "/chat/completions"

    def request_body(self, prompt: str | Question) -> tuple[str, dict[str, Any]]:
        """(path, body) of one sample's request: what determines its answer (the store's key)."""
        return self._payload(prompt)

    def store_setting(self) -> dict[str, Any]:
        """What every request of this run shares: the store keeps one file per setting."""
        _, body = self._payload("")
        body.pop("messages", None)
        body.pop("prompt", None)
        return {"endpoint": normalise_endpoint(self.endpoint), "api": self.api, "body": body}

    def _answers(self, path: str, reply: dict[str, Any]) -> list[tuple[str, str | None, str | None]]:
        """(the answer's text, the reasoning field, the finish reason) of each choice, in index order."""
        url = f"{self.endpoint}{path}"
        choices = reply.get("choices")
        if not isinstance(choices, list) or not choices or not all(isinstance(c, dict) for c in choices):
            raise EndpointError(f"reply from {url} has no choices: {json.dumps(reply)[:160]}")
        answers = []
        for choice in sorted(choices, key=lambda c: c.get("index") if isinstance(c.get("index"), int) else 0):
            message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
            text = message.get("content") if self.api == "chat" else choice.get("text")
            if text is None:
                text = ""  # a null content is an empty answer, executed as such
            if not isinstance(text, str):
                raise EndpointError(f"reply from {url} has a non-text answer: {type(text).__name__}")
            reasoning = next((message[f] for f in REASONING_FIELDS
                              if isinstance(message.get(f), str) and message[f]), None)
            finish = choice.get("finish_reason")
            answers.append((text, reasoning, finish if isinstance(finish, str) else None))
        return answers

    async def generate(self, prompt: str | Question, entry_point: str) -> Generation:
        return (await self.generate_choices(prompt, entry_point, 1))[0]

    async def generate_choices(self, prompt: str | Question, entry_point: str, choices: int) -> list[Generation]:
        """One request for ``choices`` answers (the ``n`` of the API; not sent for 1). Returns the answers the
        server gave, at most ``choices`` (a server that ignores ``n`` gives one), or one failed Generation.
        The request's usage, billed once, is carried by the first answer; the others carry 0. A question's code is
        taken out as its problem's (whose prompt, before the program, is empty)."""
        path, payload = self._payload(prompt)
        if choices > 1:
            payload["n"] = choices
        started = time.monotonic()
        attempts = 1
        try:
            reply, attempts, overhead = await self._with_retries(self.retry,
                                                                 lambda: self._send("POST", path, payload))
            answers = self._answers(path, reply)[:choices]
        except EndpointError as exc:
            elapsed = (time.monotonic() - started) * 1000.0
            attempts = max(attempts, exc.attempts)
            return [Generation(None, None, str(exc), None, None, elapsed, attempts, elapsed)]
        except Exception as exc:  # anything unforeseen costs this sample, never the session
            elapsed = (time.monotonic() - started) * 1000.0
            error = f"request to {self.endpoint}{path} failed: {type(exc).__name__}: {exc}"
            return [Generation(None, None, error, None, None, elapsed, attempts, elapsed)]
        elapsed = (time.monotonic() - started) * 1000.0
        usage: dict[str, Any] = reply["usage"] if isinstance(reply.get("usage"), dict) else {}
        details = usage.get("completion_tokens_details")
        billed = (_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")),
                  _count(details.get("reasoning_tokens")) if isinstance(details, dict) else None)
        short = _usage_short(billed[1], [finish for _, _, finish in answers], _token_limit(payload))
        generations = []
        for index, (raw, reasoning, finish) in enumerate(answers):
            found, failed = _extracted(self.extractor, raw, entry_point, prompt if isinstance(prompt, str) else "")
            tokens = billed if index == 0 else tuple(None if t is None else 0 for t in billed)
            generations.append(Generation(
                completion=None if failed else found.completion, program=found.program, raw=raw, error=failed,
                prompt_tokens=tokens[0],
                completion_tokens=tokens[1], generation_ms=elapsed, attempts=attempts,
                retry_overhead_ms=overhead if index == 0 else 0.0,
                reasoning="\n\n".join(r for r in (reasoning, found.reasoning) if r) or None,
                finish_reason=finish, reasoning_tokens=tokens[2],
                notes=_notes(found, finish) + ((short,) if short and index == 0 else ())))
        return generations


def asks_for_whole_function(prompt: str) -> bool:
    """Whether a prompt asks for the whole function: it defines no function at all (MBPP+'s docstring prompts)."""
    return bool(prompt.strip()) and _DEFINITION.search(prompt) is None


def stored_generation(record: dict[str, Any], entry_point: str, prompt: str,
                      extractor: Extractor = extract) -> Generation:
    """A stored answer, extracted again (the current rule applies to it); what it cost was paid before."""
    found, failed = _extracted(extractor, record["raw"], entry_point, prompt)
    finish = record.get("finish_reason") if isinstance(record.get("finish_reason"), str) else None
    milliseconds = record.get("generation_ms")
    return Generation(
        completion=None if failed else found.completion, program=found.program, raw=record["raw"], error=failed,
        prompt_tokens=_count(record.get("prompt_tokens")), completion_tokens=_count(record.get("completion_tokens")),
        generation_ms=float(milliseconds) if isinstance(milliseconds, (int, float)) else 0.0,
        attempts=_count(record.get("attempts")) or 1,
        reasoning=record["reasoning"] if isinstance(record.get("reasoning"), str) and record["reasoning"] else None,
        finish_reason=finish, reasoning_tokens=_count(record.get("reasoning_tokens")), notes=_notes(found, finish),
        cached=True)


def _extracted(extractor: Extractor, raw: str, entry_point: str, prompt: str) -> tuple[Extraction, str | None]:
    """(what ``extractor`` found in ``raw``, None); an extractor that fails (a team's hook) costs this sample:
    (nothing, why)."""
    try:
        return extractor(raw, entry_point, prompt), None
    except Exception as exc:
        return Extraction("", None, None), f"the code could not be taken out of the answer: {type(exc).__name__}: {exc}"


def _token_limit(payload: dict[str, Any]) -> int | None:
    """The most tokens one choice may have, as sent (``max_completion_tokens`` supersedes ``max_tokens``)."""
    for name in ("max_completion_tokens", "max_tokens"):
        if _count(payload.get(name)):
            return int(payload[name])
    return None


def _usage_short(counted: int | None, finishes: list[str | None], limit: int | None) -> str | None:
    """A note when a reply of several choices counts fewer completion tokens than its choices must have taken:
    at least one each, and the token limit for each choice cut at it (unless the context cut it sooner)."""
    if counted is None or len(finishes) < 2:
        return None
    cut = sum(1 for finish in finishes if finish == "length") if limit is not None else 0
    needed = cut * (limit or 0) + len(finishes) - cut
    if counted >= needed:
        return None
    how = f", {cut} of them cut at max_tokens {limit}" if cut else ""
    return (f"{USAGE_SHORT}: the server counted {counted} completion tokens for the {len(finishes)} choices it "
            f"returned{how}, which take at least {needed}; recorded as counted, so the token and cost totals are "
            "too low (llama.cpp's server counts one choice)")


def _notes(found: Extraction, finish: str | None) -> tuple[str, ...]:
    notes = [NO_CODE] if not found.completion.strip() else []
    notes += [TRUNCATED] if finish == "length" else []
    notes += [found.note] if found.note else []
    return tuple(notes)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
