"""The pre-scored mock fixture is honest: executing its completions reproduces every recorded verdict."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.engine.planning import mock_fixture_path

WORKERS = 4  # the fixture's few timeouts overlap instead of adding up


def test_covers_every_problem_and_status():
    """The fixture covers every problem and every replayable status."""
    rows = [json.loads(line) for line in mock_fixture_path().read_text().splitlines()]
    _, problems = load_problems()
    assert [row["task_id"] for row in rows] == [p.task_id for p in problems]
    assert {row["status"] for row in rows} == {"passed", "assertion_failed", "runtime_error", "timeout", "not_run"}
    for row in rows:
        assert (row["completion"] is None) == (row["status"] == "not_run")


@pytest.mark.slow
def test_execution_reproduces_verdicts():
    """Executing the fixture reproduces every recorded verdict."""
    rows = [json.loads(line) for line in mock_fixture_path().read_text().splitlines()]
    problems = {p.task_id: p for p in load_problems()[1]}
    executable = [row for row in rows if row["completion"] is not None]
    # Slow rows first, dealt round-robin, so the few timeouts overlap instead of adding up. The recorded
    # status only orders the work here; each verdict below comes from execution.
    order = sorted(range(len(executable)), key=lambda i: executable[i]["status"] != "timeout")
    lanes = [order[lane::WORKERS] for lane in range(WORKERS)]

    def execute_lane(positions: list[int]) -> dict[int, tuple[str, str]]:
        box = sandbox.Sandbox()
        try:
            verdicts = {}
            for position in positions:
                row = executable[position]
                problem = problems[row["task_id"]]
                program = sandbox.Program(problem.prompt, row["completion"], problem.test, problem.entry_point)
                result = box.run(program, sandbox.Limits())
                verdicts[position] = (result.status.value, result.detail)
            return verdicts
        finally:
            box.close()

    observed: dict[int, tuple[str, str]] = {}
    with ThreadPoolExecutor(WORKERS) as pool:
        for verdicts in pool.map(execute_lane, lanes):
            observed.update(verdicts)
    mismatches = [(row["task_id"], row["status"], observed[i][0]) for i, row in enumerate(executable)
                  if row["status"] != observed[i][0]]
    assert mismatches == []
    for i, row in enumerate(executable):
        if row["status"] in ("assertion_failed", "runtime_error"):
            assert observed[i][1] == row["detail"]


def test_timeouts_took_the_full_limit():
    """The recorded timeouts took the full limit."""
    rows = [json.loads(line) for line in mock_fixture_path().read_text().splitlines()]
    for row in rows:
        if row["status"] == "timeout":
            assert row["duration_ms"] >= 3000 and row["detail"] == "timed out after 3 s"
