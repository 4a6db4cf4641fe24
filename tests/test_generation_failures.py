"""The terminal counts each reason generation failed for, not only the first one (a real session against the
loopback server)."""

from __future__ import annotations

import pytest
from fake_openai import FakeOpenAI, Reply
from sessions import NO_CACHE
from test_runtime import KEY, answering, runtime_config


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)


@pytest.mark.slow
def test_each_reason_is_counted(pytester):
    refused = Reply(400, {"error": {"message": "max_tokens is too large"}})
    page = Reply(200, "<html>Welcome to nginx!</html>")
    overrides = {"HumanEval/0": refused, "HumanEval/1": page, "HumanEval/2": refused, "HumanEval/4": refused}
    with FakeOpenAI(answering(overrides)) as server:
        cfg = runtime_config(pytester, server, extra_params=", limit: 6")
        cfg.write_text(cfg.read_text().replace("limit: 4, ", ""))
        result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=2, skipped=4)
    result.stdout.fnmatch_lines([
        "GENERATION FAILED for 4/6 samples (not_run), for 2 reasons:",
        f"  3 x generation failed: HTTP 400 from {server.url}/chat/completions: max_tokens is too large",
        f"  1 x generation failed: malformed JSON from {server.url}/chat/completions (HTTP 200)*",
    ])


def test_one_reason_is_one_line(pytester):
    refused = Reply(400, {"error": {"message": "max_tokens is too large"}})
    with FakeOpenAI(answering({"HumanEval/0": refused, "HumanEval/3": refused})) as server:
        cfg = runtime_config(pytester, server)
        result = pytester.runpytest("--humaneval-config", str(cfg), "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=2, skipped=2)
    result.stdout.fnmatch_lines([f"GENERATION FAILED for 2/4 samples (not_run): generation failed: HTTP 400 from "
                                 f"{server.url}/chat/completions: max_tokens is too large"])
