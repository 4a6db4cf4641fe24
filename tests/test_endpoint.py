"""The endpoint client against a real loopback HTTP server with injected faults, and the URL guard."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from fake_openai import MODEL, FakeOpenAI, Reply, chat, completion, models

from pytest_humaneval.completions.batching import generate as generate_plan
from pytest_humaneval.completions.endpoint import (
    CHAT_SYSTEM,
    DEFAULT_STOP,
    Client,
    EndpointError,
    check_url,
    unwrap_completion,
)
from pytest_humaneval.config import RetryPolicy
from pytest_humaneval.data.dataset import load_problems, select
from pytest_humaneval.plan import Plan, Sample

PROMPT = 'def add(a, b):\n    """Add two numbers."""\n'
FAST_RETRY = RetryPolicy(max_attempts=3, backoff_base_s=0.01, backoff_max_s=0.05)


def generate(server: FakeOpenAI, **kwargs):
    async def go():
        async with Client(server.url, MODEL, api_key=kwargs.pop("api_key", "sk-test"), **kwargs) as client:
            return await client.generate(PROMPT, "add")

    return asyncio.run(go())


def scripted(*replies: Reply, preflight: Reply | None = None):
    def script(request, index):
        if request.method == "GET":
            return preflight or models()
        return replies[min(index, len(replies) - 1)]

    return script


# -- the URL guard -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("url", [
    "http://169.254.169.254/v1",
    "http://169.254.0.1:8080/v1",
    "http://[fe80::1]/v1",
    "http://[fd00:ec2::254]/v1",
    "http://100.100.100.200/v1",
    "http://metadata.google.internal/v1",
    "http://[::ffff:169.254.169.254]/v1",
])
def test_guard_refuses_metadata(url):
    """The guard refuses metadata and link-local destinations."""
    with pytest.raises(EndpointError, match="refused"):
        check_url(url, resolve=lambda host: [])


def test_guard_refuses_metadata_hostname():
    """The guard refuses a hostname that resolves to metadata."""
    with pytest.raises(EndpointError, match="resolves to 169.254.169.254"):
        check_url("https://innocent.example/v1", resolve=lambda host: ["10.0.0.1", "169.254.169.254"])


@pytest.mark.parametrize("url", ["ftp://host/v1", "file:///etc/passwd", "localhost:8000/v1", "http:///v1"])
def test_guard_accepts_only_http_and_https(url):
    with pytest.raises(EndpointError, match="expected an http"):
        check_url(url, resolve=lambda host: [])


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000/v1", "http://localhost:11434/v1",
                                 "http://10.1.2.3/v1", "https://192.168.1.5:8443/v1", "https://api.example/v1"])
def test_guard_allows_other_hosts(url):
    """The guard allows loopback, private and public hosts."""
    check_url(url, resolve=lambda host: ["127.0.0.1"])


def test_no_redirect_to_metadata():
    """A redirect to metadata is never followed."""
    # The redirect target resolves to the metadata address only through the injected resolver; were the
    # guard to fail, the real resolver would find nothing for .invalid, so no packet could leave anyway.
    def resolve(host):
        return ["169.254.169.254"] if host.endswith(".invalid") else ["127.0.0.1"]

    redirect = Reply(status=302, body="", headers={"Location": "http://metadata.test.invalid/latest"})
    with FakeOpenAI(scripted(redirect)) as server:
        result = generate(server, resolve=resolve)
    assert result.completion is None
    assert "refused" in result.error and "169.254.169.254" in result.error
    assert len(server.posts()) == 1


# -- requests and answers ------------------------------------------------------------------------------------

def test_chat_request_body():
    """A chat request carries the key, the model, the prompt and the settings."""
    with FakeOpenAI(scripted(chat("```python\n    return a + b\n```"))) as server:
        result = generate(server, api_key="sk-live-123", temperature=0.2, max_tokens=64, top_p=0.9)
    request = server.posts()[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["Authorization"] == "Bearer sk-live-123"
    assert request.body["model"] == MODEL and request.body["temperature"] == 0.2
    assert request.body["max_tokens"] == 64 and request.body["top_p"] == 0.9
    assert PROMPT.strip() in request.prompt_text
    assert result.completion == "    return a + b\n" and result.attempts == 1


def test_completions_request_body():
    """The completions API sends the raw prompt with the customary stops."""
    with FakeOpenAI(scripted(completion("    return a + b\n"))) as server:
        result = generate(server, api="completions")
        custom = generate(server, api="completions", stop=("\n\n\n",))
    first, second = server.posts()
    assert first.path == "/v1/completions" and first.body["prompt"] == PROMPT
    assert first.body["stop"] == list(DEFAULT_STOP)
    assert second.body["stop"] == ["\n\n\n"]
    assert result.completion == "    return a + b\n" and custom.completion == result.completion


def test_usage_is_optional():
    """Usage is recorded when present, and None when absent."""
    with FakeOpenAI(scripted(chat("    return a + b\n", usage={"prompt_tokens": 40, "completion_tokens": 7}))) as s:
        with_usage = generate(s)
    with FakeOpenAI(scripted(chat("    return a + b\n"))) as s:
        without = generate(s)
    assert (with_usage.prompt_tokens, with_usage.completion_tokens) == (40, 7)
    assert (without.prompt_tokens, without.completion_tokens) == (None, None)


def test_no_key_no_authorization():
    """A key-less local server gets no Authorization header."""
    with FakeOpenAI(scripted(chat("    return a + b\n"))) as server:
        generate(server, api_key=None)
    assert "Authorization" not in server.posts()[0].headers


@pytest.mark.parametrize(("text", "expected"), [
    ("Here you go:\n```python\n    return a + b\n```\nHope it helps.", "    return a + b\n"),
    ("```py\n    return a + b\n```", "    return a + b\n"),
    ("```\n    return a + b\n```", "    return a + b\n"),
    ("Sure!\n```python\nimport math\n\ndef add(a, b):\n    return math.fsum([a, b])\n```",
     "\nimport math\n\ndef add(a, b):\n    return math.fsum([a, b])\n"),
    ("    return a + b\n", "    return a + b\n"),
    ("def add(a, b):\n    return a + b\n", "\ndef add(a, b):\n    return a + b\n"),
    ("", ""),
])
def test_answers_are_unwrapped(text, expected):
    """Fenced, prose, whole-function and body answers are unwrapped."""
    assert unwrap_completion(text, "add") == expected


# -- reasoning models and provider options ------------------------------------------------------------------

RIGHT = "def add(a, b):\n    return a + b\n"
DRAFT = "def add(a, b):\n    return a - b\n"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_field_is_kept_apart(field):
    """A separate reasoning field is never code, and is kept."""
    thinking = f"Draft:\n```python\n{DRAFT}```\nNo: it must add."
    usage = {"prompt_tokens": 40, "completion_tokens": 300, "completion_tokens_details": {"reasoning_tokens": 260}}
    with FakeOpenAI(scripted(chat(f"```python\n{RIGHT}```", usage=usage, **{field: thinking}))) as server:
        result = generate(server)
    assert result.completion == "\n" + RIGHT
    assert result.reasoning == thinking and result.raw == f"```python\n{RIGHT}```"
    assert (result.completion_tokens, result.reasoning_tokens) == (300, 260)


def test_thinking_is_kept_apart():
    """Thinking in the content is set apart, and kept."""
    text = f"<think>\nLet me draft:\n```python\n{DRAFT}```\nWrong sign.\n</think>\n\n```python\n{RIGHT}```"
    with FakeOpenAI(scripted(chat(text))) as server:
        result = generate(server)
    assert result.completion == "\n" + RIGHT and result.raw == text
    assert result.reasoning.startswith("Let me draft:") and result.notes == ()


def test_cut_answer_is_flagged():
    """An answer cut at max_tokens is kept and flagged."""
    with FakeOpenAI(scripted(chat("```python\ndef add(a, b):\n    return a", finish_reason="length"))) as server:
        result = generate(server, max_tokens=16)
    assert result.finish_reason == "length" and result.completion == "\ndef add(a, b):\n    return a"
    assert result.notes == ("truncated at max_tokens (finish_reason: length)",)


def test_chosen_block_is_noted():
    """The block taken is noted when there was a choice."""
    text = f"```python\n{DRAFT}```\nOn second thought, the final version:\n```python\n{RIGHT}```"
    with FakeOpenAI(scripted(chat(text))) as server:
        result = generate(server)
    assert result.completion == "\n" + RIGHT
    assert result.notes == ("took code block 2 of 2 (the last that defines add)",)


def test_extra_body_is_merged():
    """``extra_body`` is merged into every request, and null removes a key."""
    extra = {"chat_template_kwargs": {"enable_thinking": False}, "seed": 7, "max_tokens": None,
             "max_completion_tokens": 4096, "reasoning_effort": "low"}
    with FakeOpenAI(scripted(chat("    return a + b\n"))) as server:
        generate(server, extra_body=extra, max_tokens=64)
        generate(server, api="completions", extra_body={"seed": 7})
    chat_body, completions_body = (r.body for r in server.posts())
    assert chat_body["chat_template_kwargs"] == {"enable_thinking": False} and chat_body["seed"] == 7
    assert "max_tokens" not in chat_body and chat_body["max_completion_tokens"] == 4096
    assert chat_body["reasoning_effort"] == "low" and chat_body["model"] == MODEL
    assert completions_body["seed"] == 7 and completions_body["prompt"] == PROMPT


def test_system_prompt_is_configurable():
    """The system prompt is configurable and defaults to the built-in one."""
    with FakeOpenAI(scripted(chat("    return a + b\n"))) as server:
        generate(server)
        generate(server, system_prompt="Answer with code only.")
        generate(server, system_prompt="")  # DeepSeek advises none for R1
    default, custom, none = (r.body["messages"] for r in server.posts())
    assert default[0] == {"role": "system", "content": CHAT_SYSTEM}
    assert custom[0] == {"role": "system", "content": "Answer with code only."}
    assert [m["role"] for m in none] == ["user"] and none[0]["content"] == default[1]["content"]


# -- retries: exact request counts per policy ----------------------------------------------------------------

def test_503_is_retried():
    """503 twice then 200 is three requests, with retries."""
    with FakeOpenAI(scripted(Reply(503, {"error": "busy"}), Reply(503, {"error": "busy"}),
                             chat("    return a + b\n"))) as server:
        result = generate(server, retry=FAST_RETRY)
    assert len(server.posts()) == 3
    assert result.completion == "    return a + b\n" and result.attempts == 3
    assert result.retry_overhead_ms > 0


def test_no_retry_policy_tries_once():
    """Without a retry policy, a 503 is tried once."""
    with FakeOpenAI(scripted(Reply(503, {"error": {"message": "overloaded"}}))) as server:
        result = generate(server)
    assert len(server.posts()) == 1
    assert result.completion is None and result.attempts == 1
    assert result.error == f"HTTP 503 from {server.url}/chat/completions: overloaded"


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_other_4xx_are_never_retried(status):
    with FakeOpenAI(scripted(Reply(status, {"error": {"message": "bad parameter: temperature"}}))) as server:
        result = generate(server, retry=FAST_RETRY)
    assert len(server.posts()) == 1
    assert result.error.startswith(f"HTTP {status} from {server.url}/chat/completions")


def test_429_honours_retry_after():
    """429 honours Retry-After, up to the cap."""
    limited = Reply(429, {"error": "slow down"}, headers={"Retry-After": "0.3"})
    with FakeOpenAI(scripted(limited, chat("    return a + b\n"))) as server:
        started = time.monotonic()
        result = generate(server, retry=RetryPolicy(max_attempts=2, backoff_base_s=0.01, backoff_max_s=1.0))
        waited = time.monotonic() - started
    assert result.attempts == 2 and len(server.posts()) == 2
    assert waited >= 0.3
    capped = Reply(429, {"error": "slow down"}, headers={"Retry-After": "3600"})
    with FakeOpenAI(scripted(capped, chat("    return a + b\n"))) as server:
        result = generate(server, retry=RetryPolicy(max_attempts=2, backoff_base_s=0.01, backoff_max_s=0.05))
    assert result.attempts == 2 and result.completion is not None


def test_timeouts_and_resets_are_retried():
    """Read timeouts and connection resets are retried, then reported."""
    slow = Reply(body={"choices": []}, delay_s=1.0)
    with FakeOpenAI(scripted(slow, chat("    return a + b\n"))) as server:
        result = generate(server, retry=FAST_RETRY, request_timeout_s=0.3)
    assert result.attempts == 2 and result.completion == "    return a + b\n"
    with FakeOpenAI(scripted(Reply(reset=True))) as server:
        result = generate(server, retry=FAST_RETRY)
    assert len(server.posts()) == 3
    assert result.completion is None and f"cannot reach {server.url}/chat/completions" in result.error


def test_malformed_reply_is_not_retried():
    """A body that is not JSON at all (a wrong URL's page) and a reply without choices are clear errors, and not
    retried."""
    with FakeOpenAI(scripted(Reply(200, "<html><body>Welcome to nginx!</body></html>"))) as server:
        result = generate(server, retry=FAST_RETRY)
    assert len(server.posts()) == 1 and result.error.startswith(f"malformed JSON from {server.url}")
    with FakeOpenAI(scripted(Reply(200, {"id": "x", "choices": []}))) as server:
        result = generate(server, retry=FAST_RETRY)
    assert result.error.startswith(f"reply from {server.url}/chat/completions has no choices")


@pytest.mark.parametrize("torn", [json.dumps(chat("    return a + b\n").body)[:57], ""])
def test_torn_json_body_is_retried(torn):
    """A 200 whose JSON body a proxy cut short (or sent empty) is retried, and the next attempt's answer kept;
    without retries it is one clear error that says the body was cut short."""
    with FakeOpenAI(scripted(Reply(200, torn), chat("    return a + b\n"))) as server:
        result = generate(server, retry=FAST_RETRY)
    assert result.attempts == 2 and len(server.posts()) == 2 and result.completion == "    return a + b\n"
    with FakeOpenAI(scripted(Reply(200, torn))) as server:
        result = generate(server)
    assert len(server.posts()) == 1 and result.error.startswith(f"malformed JSON from {server.url}/chat/completions")
    assert result.error.endswith("(cut short)")


def test_server_down_names_the_endpoint():
    with FakeOpenAI(scripted(chat("x"))) as server:
        url = server.url
    async def go():
        async with Client(url, MODEL, api_key=None) as client:
            return await client.generate(PROMPT, "add")
    result = asyncio.run(go())
    assert result.completion is None and f"cannot reach {url}/chat/completions" in result.error


def test_null_content_is_an_empty_answer():
    with FakeOpenAI(scripted(chat(None))) as server:
        result = generate(server)
    assert result.completion == "" and result.raw == ""


# -- preflight -----------------------------------------------------------------------------------------------

def preflight(server: FakeOpenAI, model: str = MODEL, policy: RetryPolicy | None = None):
    async def go():
        async with Client(server.url, model, api_key="sk-test") as client:
            return await client.preflight(policy)
    return asyncio.run(go())


def test_preflight_checks_key_and_model():
    """The preflight fails fast on a wrong key or model, and warns on a missing /models route."""
    with FakeOpenAI(scripted(preflight=Reply(401, {"error": {"message": "invalid api key"}}))) as server:
        with pytest.raises(EndpointError, match=r"HTTP 401 from .*/v1/models: invalid api key"):
            preflight(server)
    with FakeOpenAI(scripted(preflight=models("qwen-max", "qwen-plus"))) as server:
        with pytest.raises(EndpointError, match="model 'qwen-mx' is not served .* qwen-max, qwen-plus"):
            preflight(server, model="qwen-mx")
        assert preflight(server, model="qwen-plus") is None
    with FakeOpenAI(scripted(preflight=Reply(404, {"error": "not found"}))) as server:
        assert "404" in preflight(server)


def test_retries_bound_only_preflight():
    """``target.retries`` bounds only the preflight."""
    flaky = iter([Reply(503, {}), models()])
    with FakeOpenAI(lambda request, index: next(flaky)) as server:
        assert preflight(server, policy=FAST_RETRY) is None
    assert len(server.requests) == 2


# -- concurrency ---------------------------------------------------------------------------------------------

def test_concurrency_stays_within_limit():
    """The generation's concurrency never exceeds the limit, and fills every sample."""
    problems = load_problems()[1][:12]
    plan = Plan(select("t", problems, 164, {}), tuple(Sample(p.task_id, 0, None, "not generated") for p in problems))
    with FakeOpenAI(scripted(Reply(body=chat("    return 1\n").body, delay_s=0.2))) as server:
        done = generate_plan(plan, Client(server.url, MODEL, api_key=None, concurrency=3), 3)
    assert len(server.posts()) == 12
    assert server.max_active == 3
    assert all(s.completion == "    return 1\n" and s.not_run is None and s.generation["attempts"] == 1
               for s in done.samples)


def test_client_repr_never_shows_the_key():
    client = Client("http://127.0.0.1:1/v1", MODEL, api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(client) and "sk-very-secret" not in str(vars(client).get("endpoint"))


def test_tls_failure_names_the_endpoint():
    # https:// to a plain-HTTP server: the TLS handshake fails; the sample is lost, the message says where.
    with FakeOpenAI(scripted(chat("    return a + b\n"))) as server:
        url = server.url.replace("http://", "https://")

        async def go():
            async with Client(url, MODEL, api_key="sk-test") as client:
                return await client.generate(PROMPT, "add")

        result = asyncio.run(go())
    assert result.completion is None
    assert result.error.startswith(f"cannot reach {url}/chat/completions")
    assert "sk-test" not in result.error
