"""Identical samples are executed once per process (``params.dedupe``, on by default), and reported once each.

The completions count their own executions: each appends a line to a file in this test's temporary folder (the
basic sandbox runs candidates as this user, on this filesystem, so they can), and the test counts the lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sessions import NO_CACHE

from pytest_humaneval.data.dataset import load_problems


def counting(ledger: Path, body: str) -> str:
    """A completion, ``body``, that writes one line to ``ledger`` each time its program is executed (loaded)."""
    return f"{body}\n\nopen({str(ledger)!r}, 'a').write('x\\n')\n"


def run(pytester: pytest.Pytester, rows: list[dict], params: str, *options: str) -> list[dict]:
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            f"params: {{allow_code_execution: true, isolation: basic, {params}}}\n")
    pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-results", "results.jsonl", *options,
                       *NO_CACHE)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    return sorted(rows, key=lambda row: (row["task_id"], row["sample"]))


def executions(ledger: Path) -> int:
    return len(ledger.read_text().splitlines()) if ledger.exists() else 0


@pytest.mark.slow
@pytest.mark.parametrize("mode", [("-p", "no:xdist", "workers: 1"), ("-p", "no:xdist", "workers: 2"),
                                  ("-n", "2", "workers: 1")], ids=["serial", "pool", "xdist"])
def test_repeats_executed_once(pytester, tmp_path, mode):
    """Repeats are executed once, and reported each."""
    problems = load_problems()[1][:2]
    ledgers = {problem.task_id: tmp_path / f"{problem.task_id.replace('/', '-')}.log" for problem in problems}
    rows = []
    for problem in problems:
        solved = counting(ledgers[problem.task_id], problem.canonical_solution)
        wrong = counting(ledgers[problem.task_id].with_suffix(".wrong"), "    return None\n")
        rows += [{"task_id": problem.task_id, "completion": text} for text in (solved, wrong, solved, solved, wrong)]
    *options, params = mode
    results = run(pytester, rows, params, *options)
    if options[0] != "-n":  # (with -n 2 each worker executes the first of each program it is sent)
        assert [(row["status"], row.get("repeat_of")) for row in results if row["task_id"] == "HumanEval/0"] == \
            [("passed", None), ("assertion_failed", None), ("passed", 0), ("passed", 0), ("assertion_failed", 1)]
    assert len(results) == 10 and [row["status"] for row in results].count("passed") == 6
    workers = 2 if options[0] == "-n" else 1
    for ledger in ledgers.values():
        assert 1 <= executions(ledger) <= workers and 1 <= executions(ledger.with_suffix(".wrong")) <= workers
    # Every item still reports its own sample, and a repeat's row says whose execution it carries.
    for row in results:
        if row.get("repeat_of") is not None:
            original = next(r for r in results if r["task_id"] == row["task_id"] and r["sample"] == row["repeat_of"])
            assert original["completion"] == row["completion"] and original["status"] == row["status"]
            assert original.get("repeat_of") is None


def test_dedupe_false_executes_all(pytester, tmp_path):
    """``dedupe: false`` executes every sample afresh."""
    problem = load_problems()[1][0]
    ledger = tmp_path / "ledger.log"
    text = counting(ledger, problem.canonical_solution)
    results = run(pytester, [{"task_id": problem.task_id, "completion": text}] * 4, "dedupe: false", "-p", "no:xdist")
    assert [row["status"] for row in results] == ["passed"] * 4
    assert executions(ledger) == 4 and not [row for row in results if "repeat_of" in row]


@pytest.mark.slow
def test_repeated_timeout_costs_one(pytester, tmp_path):
    """A repeat of a sample that times out costs one timeout."""
    problem = load_problems()[1][0]
    ledger = tmp_path / "ledger.log"
    spin = f"    return None\n\n\nopen({str(ledger)!r}, 'a').write('x\\n')\nwhile True:\n    pass\n"  # at load
    results = run(pytester, [{"task_id": problem.task_id, "completion": spin}] * 3, "timeout_s: 1", "-p", "no:xdist")
    assert [(row["status"], row.get("repeat_of")) for row in results] == [("timeout", None), ("timeout", 0),
                                                                          ("timeout", 0)]
    # one execution, or two where the first attempt was starved of CPU by a busy machine and judged once more
    assert executions(ledger) == (2 if "judged twice" in results[0]["detail"] else 1)


def test_live_endpoint_repeats(pytester, tmp_path, monkeypatch):
    """The same text from a live endpoint is a repeat too."""
    from fake_openai import MODEL, FakeOpenAI, chat, models

    problem = load_problems()[1][0]
    ledger = tmp_path / "ledger.log"
    code = problem.prompt + counting(ledger, problem.canonical_solution)

    def script(request, index):  # every request answered with the same function
        return models() if request.method == "GET" else chat(f"```python\n{code}```")

    monkeypatch.setenv("TEST_LLM_KEY", "sk-test")
    with FakeOpenAI(script) as server:
        (pytester.path / "live.yaml").write_text(
            f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, credentials_ref: env:TEST_LLM_KEY}}\n"
            "params: {allow_code_execution: true, isolation: basic, limit: 1, n: 3, temperature: 0.8, "
            "request_n: 1}\n")
        pytester.runpytest("--humaneval-config", "live.yaml", "--humaneval-results", "results.jsonl", "-p",
                           "no:xdist", *NO_CACHE)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    assert [(row["status"], row.get("repeat_of")) for row in rows] == [("passed", None), ("passed", 0), ("passed", 0)]
    assert executions(ledger) == 1
