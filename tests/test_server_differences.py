"""What real servers do differently with several choices per request, served by the loopback fake.

Seen with real servers (issue 31; bench/vllm_server.py checks vLLM itself): vLLM sums the completion tokens of
the n choices of a request, llama.cpp's server counts one choice only, and refuses an n above its slot count with
a 400. The run records the usage as the server said it and flags a usage that cannot cover the choices returned
(it never multiplies); a fixed ``request_n`` refused with a 400 falls back to one choice per request, as ``auto``
does, instead of losing the samples.
"""

from __future__ import annotations

import json

import pytest
from fake_openai import MODEL, SLOTS_REFUSAL, FakeOpenAI, Reply, server_like
from sessions import NO_CACHE, read_report

from pytest_humaneval.completions.endpoint import USAGE_SHORT, _usage_short
from pytest_humaneval.data.dataset import load_problems

PROBLEMS = load_problems()[1]


def canonical(request) -> str:
    problem = next(p for p in PROBLEMS if p.prompt.strip() in request.prompt_text)
    return f"```python\n{problem.prompt}{problem.canonical_solution}```"


def run(pytester, server, params: str):
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}}}\n"
        f"params: {{allow_code_execution: true, limit: 2, n: 4, k: [1, 4], temperature: 0.8, max_tokens: 32"
        f"{params}}}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "--humaneval-report", "r.json",
                                "--humaneval-results", "results.jsonl", *NO_CACHE)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    return result, sorted(rows, key=lambda row: (row["task_id"], row["sample"]))


def test_one_choice_usage_is_flagged(pytester):
    """A usage that counts one choice of several is recorded as said, and flagged."""
    with FakeOpenAI(server_like("llama-server", canonical)) as server:
        result, rows = run(pytester, server, "")
    result.assert_outcomes(passed=8)
    assert [r.body.get("n") for r in server.posts()] == [4, 4]
    # Recorded as the server said: 32 on each request's first sample, never 4 x 32.
    assert [row["completion_tokens"] for row in rows] == [32, 0, 0, 0] * 2
    flagged = [row for row in rows if USAGE_SHORT in row["detail"]]
    assert [(row["task_id"], row["sample"]) for row in flagged] == [("HumanEval/0", 0), ("HumanEval/1", 0)]
    assert (f"{USAGE_SHORT}: the server counted 32 completion tokens for the 4 choices it returned, 4 of them cut at "
            "max_tokens 32, which take at least 128; recorded as counted, so the token and cost totals are too low "
            "(llama.cpp's server counts one choice)") in flagged[0]["detail"]
    assert read_report(pytester.path / "r.json")["measurements"]["human-eval.total_tokens"]["value"] == 2 * (10 + 32)
    result.stdout.fnmatch_lines(["humaneval: warning: 2 of 2 replies with several choices counted fewer completion "
                                 "tokens than their choices take (first: the server counted 32 completion tokens for "
                                 "the 4 choices it returned, *); each such request's first sample says so in its "
                                 "detail"])


@pytest.mark.slow
def test_summed_usage_is_not_flagged(pytester):
    """A usage summed over the choices is not flagged."""
    with FakeOpenAI(server_like("vllm", canonical)) as server:
        result, rows = run(pytester, server, "")
    result.assert_outcomes(passed=8)
    assert [row["completion_tokens"] for row in rows] == [128, 0, 0, 0] * 2
    assert read_report(pytester.path / "r.json")["measurements"]["human-eval.total_tokens"]["value"] == 2 * (10 + 128)
    assert USAGE_SHORT not in result.stdout.str() + (pytester.path / "results.jsonl").read_text()


@pytest.mark.slow
def test_refused_n_falls_back(pytester):
    """A fixed request_n refused with 400 falls back to one choice per request."""
    # It used to record the 400 for every sample of the request: with request_n 4 on a 2-slot llama-server,
    # every sample of the run was lost.
    with FakeOpenAI(server_like("llama-server", canonical, slots=2)) as server:
        result, rows = run(pytester, server, ", request_n: 4, concurrency: 1")
    result.assert_outcomes(passed=8)
    asked = [r.body.get("n") for r in server.posts()]
    assert asked.count(4) == 2 and asked.count(None) == 8 and len(asked) == 10
    assert all(row["status"] == "passed" for row in rows)
    refusal = SLOTS_REFUSAL.format(slots=2)
    result.stdout.fnmatch_lines([f"humaneval: warning: a request for 4 choices failed (HTTP 400 from "
                                 f"{server.url}/chat/completions: {refusal}); asking one choice per request from now on"])
    assert result.stdout.str().count("asking one choice per request") == 1


def test_other_n_failure_no_fallback(pytester):
    """A fixed request_n that fails for another reason does not fall back."""
    def script(request, index):
        return server_like("vllm", canonical)(request, index) if request.method == "GET" else \
            Reply(503, {"error": {"message": "overloaded"}})

    with FakeOpenAI(script) as server:
        result, rows = run(pytester, server, ", request_n: 4")
    result.assert_outcomes(skipped=8)
    assert [r.body.get("n") for r in server.posts()] == [4, 4]  # a 503 says nothing about n: not asked again
    assert all(row["status"] == "not_run" and "HTTP 503" in row["detail"] for row in rows)


@pytest.mark.parametrize(("counted", "finishes", "limit", "flagged"), [
    (32, ["length"] * 4, 32, True),  # llama-server: one choice's count
    (128, ["length"] * 4, 32, False),  # vLLM: summed
    (2, ["stop", "stop", "stop"], 32, True),  # even a stopped choice took a token
    (3, ["stop", "stop", "stop"], 32, False),
    (3, ["length"] * 3, None, False),  # max_tokens removed (extra_body): only a token per choice is certain
    (5, ["length"], 32, False),  # one choice: nothing to cover (the context may cut it before max_tokens)
    (None, ["length"] * 4, 32, False),  # no usage reported: nothing to flag
])
def test_usage_short_lower_bound(counted, finishes, limit, flagged):
    """``_usage_short`` counts a token per choice, and max_tokens per cut one."""
    assert (_usage_short(counted, finishes, limit) is not None) is flagged
