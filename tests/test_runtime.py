"""Runtime mode end to end: real pytest sessions against a real loopback server, serial and with -n 2."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fake_openai import MODEL, FakeOpenAI, Reply, chat, completion, models
from sessions import NO_CACHE, interruptible_pytest, read_report

from pytest_humaneval.data.dataset import load_problems

KEY = "sk-test-SECRET-4f1c9e"
PROBLEMS = load_problems()[1]
USAGE = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}


def problem_in(request):
    return next(p for p in PROBLEMS if p.prompt.strip() in request.prompt_text)


def answering(overrides=None):
    """Answers each problem with its canonical solution, as a whole fenced function with prose around it,
    except where ``overrides`` (task_id -> Reply) says otherwise."""
    overrides = overrides or {}

    def script(request, index):
        if request.method == "GET":
            return models()
        problem = problem_in(request)
        if problem.task_id in overrides:
            return overrides[problem.task_id]
        code = problem.prompt + problem.canonical_solution
        return chat(f"Here is the solution:\n```python\n{code}```\nIt handles the edge cases.", usage=USAGE)

    return script


def runtime_config(pytester, server, extra_params="", extra_target=""):
    path = pytester.path / "qwen.yaml"
    path.write_text(
        f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, credentials_ref: env:TEST_LLM_KEY"
        f"{extra_target}}}\n"
        f"params: {{allow_code_execution: true, limit: 4{extra_params}}}\n"
        "pricing: {input_usd_per_mtok: 2.0, output_usd_per_mtok: 6.0}\n")
    return path


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)


def read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


@pytest.mark.slow
def test_xdist_generates_once(pytester):
    """A runtime run with xdist generates once, and executes on the workers."""
    with FakeOpenAI(answering()) as server:
        cfg = runtime_config(pytester, server, ", n: 2, k: [1, 2]")
        result = pytester.runpytest("--humaneval-config", str(cfg), "-n", "2", "--humaneval-report", "r.json",
                                    "--humaneval-results", "results.jsonl", "--junitxml", "junit.xml", *NO_CACHE)
    result.assert_outcomes(passed=8)
    assert len(server.posts()) == 8 and len([r for r in server.requests if r.method == "GET"]) == 1
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in server.requests)
    result.stdout.fnmatch_lines(["humaneval: requested 8/8: 8 generated, 0 failed (*", "*pass@1 1.000  pass@2 1.000*",
                                 "generate  mean * ms per sample  960 tokens  0.00256 USD"])
    report = read_report(pytester.path / "r.json")
    assert report["measurements"]["human-eval.total_tokens"]["value"] == 8 * 120
    assert report["measurements"]["human-eval.cost_usd"]["value"] == pytest.approx((800 * 2 + 160 * 6) / 1e6)
    assert "human-eval.retry_count" not in report["measurements"]
    assert report["measurements"]["human-eval.avg_generation_ms"]["value"] > 0
    assert report["run"]["model"] == MODEL and report["run"]["mode"] == "runtime"
    lines = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert len(lines) == 8
    for line in lines:
        assert line["status"] == "passed" and line["raw"].startswith("Here is the solution:")
        assert line["completion"].startswith("\n") and "```" not in line["completion"]
        assert (line["prompt_tokens"], line["completion_tokens"], line["attempts"]) == (100, 20, 1)
        assert line["generation_ms"] > 0
    assert len(list(ET.parse(pytester.path / "junit.xml").getroot().iter("testcase"))) == 8


@pytest.mark.slow
def test_no_usage_no_token_measurements(pytester):
    """The completions API without usage omits the token and cost measurements."""
    def script(request, index):
        if request.method == "GET":
            return models()
        problem = next(p for p in PROBLEMS if request.body["prompt"] == p.prompt)
        return completion(problem.canonical_solution)

    with FakeOpenAI(script) as server:
        cfg = runtime_config(pytester, server, extra_target=", api: completions")
        result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report",
                                    "r.json", *NO_CACHE)
    result.assert_outcomes(passed=4)
    measurements = read_report(pytester.path / "r.json")["measurements"]
    assert "human-eval.total_tokens" not in measurements and "human-eval.cost_usd" not in measurements


@pytest.mark.slow
def test_failed_generations_not_run(pytester):
    """Failed generations are not run, with the reason, and the key appears nowhere."""
    overrides = {
        "HumanEval/1": Reply(400, {"error": {"message": "max_tokens is too large"}}),
        "HumanEval/2": Reply(200, "{broken json"),
        "HumanEval/3": chat(""),
    }
    with FakeOpenAI(answering(overrides)) as server:
        cfg = runtime_config(pytester, server)
        result = pytester.runpytest("--humaneval-config", str(cfg), "-n", "2", "-rs", "--humaneval-report",
                                    "r.json", "--humaneval-results", "results.jsonl", "--junitxml", "junit.xml",
                                    *NO_CACHE)
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    for line in (f"SKIPPED*not_run: generation failed: HTTP 400 from {server.url}/chat/completions: max_tokens is too large",
                 f"SKIPPED*not_run: generation failed: malformed JSON from {server.url}/chat/completions*",
                 "GENERATION FAILED for 2/4 samples (not_run)*"):
        result.stdout.fnmatch_lines([line])
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    lines = {row["task_id"]: row for row in rows}
    assert lines["HumanEval/3"]["status"] in ("assertion_failed", "runtime_error")
    assert lines["HumanEval/3"]["detail"].startswith("the model returned no code")
    assert lines["HumanEval/1"]["status"] == "not_run" and lines["HumanEval/1"]["completion"] is None
    outputs = [result.stdout.str(), result.stderr.str()] + [read(pytester.path / name) for name in
                                                           ("r.json", "results.jsonl", "junit.xml")]
    assert all(KEY not in text for text in outputs)


def test_wrong_key_fails_at_preflight(pytester):
    """A wrong key fails fast at the preflight, without generating and without showing the key."""
    def script(request, index):
        return Reply(401, {"error": {"message": "Incorrect API key provided"}})

    with FakeOpenAI(script) as server:
        cfg = runtime_config(pytester, server)
        result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: *preflight check (GET /models): HTTP 401 from {server.url}/models: "
                                 "Incorrect API key provided"])
    assert server.posts() == []
    assert KEY not in result.stdout.str() + result.stderr.str()


def test_tls_failure_at_preflight(pytester):
    """A TLS failure at the preflight is a usage error naming the endpoint."""
    # https:// to a plain-HTTP server. With httpx 0.24.0 to 0.25.0 (and so httpcore 0.x) the TLS error escaped
    # httpx as a raw ssl.SSLError: an INTERNALERROR before the client caught it as a transport error.
    with FakeOpenAI(answering()) as server:
        url = server.url.replace("http://", "https://")
        cfg = pytester.path / "tls.yaml"
        cfg.write_text(f"target: {{mode: runtime, endpoint: '{url}', model: {MODEL}}}\n"
                       "params: {allow_code_execution: true, limit: 1}\n")
        result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()[-2000:] + result.stderr.str()[-2000:]
    result.stderr.fnmatch_lines([f"ERROR: *preflight check (GET /models): cannot reach {url}/models: *"])
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


def test_collect_only_sends_no_request(pytester):
    with FakeOpenAI(answering()) as server:
        cfg = runtime_config(pytester, server)
        result = pytester.runpytest("--humaneval-config", str(cfg), "--collect-only", "-q", *NO_CACHE)
    result.stdout.fnmatch_lines(["*HumanEval/0[[]0[]]*", "4 tests collected*"])
    assert server.requests == []


@pytest.mark.parametrize("listing", ["--collect-only", "--fixtures"])
def test_collect_only_needs_no_key(pytester, monkeypatch, listing):
    """Listing a runtime config's items sends no request, so it needs no API key (a fork's CI has none); a run
    still does."""
    monkeypatch.delenv("TEST_LLM_KEY")
    with FakeOpenAI(answering()) as server:
        cfg = runtime_config(pytester, server)
        result = pytester.runpytest("--humaneval-config", str(cfg), listing, "-q", "-p", "no:xdist", *NO_CACHE)
        assert result.ret == pytest.ExitCode.OK, result.stderr.str()
        if listing == "--collect-only":
            result.stdout.fnmatch_lines(["*HumanEval/0[[]0[]]*", "4 tests collected*"])
        ran = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", *NO_CACHE)
    assert server.requests == []
    assert ran.ret == pytest.ExitCode.USAGE_ERROR
    ran.stderr.fnmatch_lines(["ERROR: *target.credentials_ref: expected the environment variable TEST_LLM_KEY to be "
                              "set*"])


def test_unset_key_variable_is_usage_error(pytester, monkeypatch):
    """An unset key variable is a usage error before any request."""
    monkeypatch.delenv("TEST_LLM_KEY")
    with FakeOpenAI(answering()) as server:
        cfg = runtime_config(pytester, server)
        result = pytester.runpytest("--humaneval-config", str(cfg), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *target.credentials_ref: expected the environment variable TEST_LLM_KEY "
                                 "to be set*"])
    assert server.requests == []


@pytest.mark.slow
def test_retry_policy_is_recorded(pytester):
    """The retry policy changes the digest and the label, and the retries are reported."""
    flaky = {}

    def script(request, index):
        if request.method == "POST" and problem_in(request).task_id not in flaky:
            flaky[problem_in(request).task_id] = True
            return Reply(503, {"error": "warming up"})
        return answering()(request, index)

    with FakeOpenAI(script) as server:
        cfg = runtime_config(pytester, server, ", retry: {max_attempts: 3, backoff_base_s: 0.01, backoff_max_s: 0.05}")
        retried = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report",
                                     "retried.json", *NO_CACHE)
        retried.assert_outcomes(passed=4)
        assert len(server.posts()) == 8
    with FakeOpenAI(answering()) as server:
        cfg = runtime_config(pytester, server)
        clean = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report",
                                   "clean.json", *NO_CACHE)
        clean.assert_outcomes(passed=4)
    a = read_report(pytester.path / "retried.json")
    b = read_report(pytester.path / "clean.json")
    assert a["measurements"]["human-eval.retry_count"]["value"] == 4
    assert a["measurements"]["human-eval.retry_overhead_ms"]["official"] is False
    assert a["dataset"]["digest"] != b["dataset"]["digest"]
    assert "retried" in a["dataset"]["label"] and "retried" not in b["dataset"]["label"]


@pytest.mark.slow
def test_ctrl_c_during_generation(pytester):
    """Ctrl-C during generation keeps the finished completions, and writes every output."""
    import signal
    import time

    def script(request, index):
        if request.method == "GET":
            return models()
        if index >= 2:
            return Reply(body=chat("    pass\n").body, delay_s=20)  # the third never finishes in time
        return answering()(request, index)

    with FakeOpenAI(script) as server:
        cfg = runtime_config(pytester, server, ", concurrency: 1")
        results = pytester.path / "results.jsonl"
        proc = interruptible_pytest("--humaneval-config", str(cfg), "-p", "no:xdist",
                                    "--humaneval-results", str(results), "--humaneval-report", "r.json",
                                    "--humaneval-markdown", "r.md", "--junitxml", "junit.xml", *NO_CACHE,
                                    cwd=pytester.path)
        deadline = time.monotonic() + 30
        while len(server.posts()) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [line["task_id"] for line in lines] == ["HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/3"]
    assert all(line["status"] == "not_run" for line in lines)
    assert all(line["completion"] and line["raw"] for line in lines[:2])  # generated, never executed
    assert all(line["completion"] is None for line in lines[2:])
    # a CI job cancelled during generation still publishes what it has (it used to write nothing but rows)
    report = read_report(pytester.path / "r.json")
    assert report["interrupted"] == "KeyboardInterrupt during generation" and report["counts"]["not_run"] == 4
    assert "nterrupted" in (pytester.path / "r.md").read_text() and (pytester.path / "junit.xml").exists()
    assert "INTERRUPTED (KeyboardInterrupt during generation)" in output
    assert KEY not in output and KEY not in (pytester.path / "r.json").read_text()


@pytest.mark.slow
def test_ctrl_c_during_preflight(pytester):
    """Ctrl-C during the preflight still writes the report."""
    # Once, a SIGINT during the preflight (GET /models) ended the session with exit 2 and no output at all.
    import signal
    import time

    def script(request, index):
        return Reply(body=models().body, delay_s=20)  # the preflight never answers in time

    with FakeOpenAI(script) as server:
        cfg = runtime_config(pytester, server)
        proc = interruptible_pytest("--humaneval-config", str(cfg), "-p", "no:xdist", "--humaneval-report", "r.json",
                                    *NO_CACHE, cwd=pytester.path)
        deadline = time.monotonic() + 30
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        output, _ = proc.communicate(timeout=30)
    assert proc.returncode == pytest.ExitCode.INTERRUPTED, output
    report = read_report(pytester.path / "r.json")
    assert report["interrupted"] == "KeyboardInterrupt during generation" and report["counts"]["not_run"] == 4


def test_a_seed_sent_in_every_request_of_a_problem_is_warned_about(pytester, monkeypatch):
    """A fixed ``extra_body.seed`` with fewer choices per request than samples: the samples of a problem drawn in
    separate requests start from the same seed and repeat one another (seen with vLLM). Nothing is sent here:
    ``--collect-only`` generates nothing."""
    path = pytester.path / "seeded.yaml"
    path.write_text("target: {mode: runtime, endpoint: 'http://127.0.0.1:9/v1', model: m}\n"
                    "params: {allow_code_execution: true, n: 4, k: [1], temperature: 0.8, request_n: 1,\n"
                    "         extra_body: {seed: 7}}\n")
    result = pytester.runpytest("--humaneval-config", str(path), "--collect-only", *NO_CACHE)
    result.stdout.fnmatch_lines(["*seeded.yaml:3: PytestConfigWarning: pytest-humaneval: params.extra_body.seed "
                                 "with params.n 4 and params.request_n 1: every request sends the same seed*"])
    path.write_text(path.read_text().replace("request_n: 1", "request_n: 4"))
    assert "extra_body.seed" not in pytester.runpytest("--humaneval-config", str(path), "--collect-only",
                                                       *NO_CACHE).stdout.str()
