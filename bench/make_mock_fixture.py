"""Make pytest_humaneval/fixtures/mock_samples.jsonl: the pre-scored fixture that `target.mode: mock` replays.

How it is made (rerun with `python bench/make_mock_fixture.py`; the output is deterministic but for the
recorded durations):
- one sample per bundled HumanEval problem;
- each problem gets one of a few completion kinds, drawn from the sha256 of its task id (no task is chosen by
  hand): the canonical solution (most problems), `return None`, a raised exception, a syntax error, an
  infinite loop, or a recorded generation failure (no completion at all);
- every completion is executed through the real sandbox with the default limits (timeout 3 s), and the
  verdict it got is what is recorded, with its detail and duration. Nothing is written by hand.

tests/test_mock_fixture.py executes the fixture's completions again and checks every recorded status.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems

OUT = Path(__file__).resolve().parent.parent / "pytest_humaneval" / "fixtures" / "mock_samples.jsonl"
KINDS = (  # (share out of 100, kind, completion)
    (70, "canonical", None),
    (10, "wrong", "    return None\n"),
    (8, "raises", "    raise ValueError('mock model gave up')\n"),
    (4, "syntax", "    return (\n"),
    (2, "loops", "    while True:\n        pass\n"),
    (6, "generation_failed", None),
)


def kind_of(task_id: str) -> tuple[str, str | None]:
    draw = int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % 100
    for share, kind, completion in KINDS:
        if draw < share:
            return kind, completion
        draw -= share
    raise AssertionError("KINDS shares add up to 100")


def main() -> int:
    _, problems = load_problems()
    rows = []
    box = sandbox.Sandbox()
    for problem in problems:
        kind, completion = kind_of(problem.task_id)
        if kind == "generation_failed":
            rows.append({"task_id": problem.task_id, "completion": None, "status": "not_run",
                         "detail": "generation failed (recorded): the mock endpoint returned HTTP 503",
                         "duration_ms": None})
            continue
        if kind == "canonical":
            completion = problem.canonical_solution
        program = sandbox.Program(problem.prompt, completion, problem.test, problem.entry_point)
        result = box.run(program, sandbox.Limits())
        rows.append({"task_id": problem.task_id, "completion": completion, "status": result.status.value,
                     "detail": result.detail, "duration_ms": round(result.duration_ms, 3)})
    box.close()
    statuses = Counter(row["status"] for row in rows)
    missing = {"passed", "assertion_failed", "runtime_error", "timeout", "not_run"} - set(statuses)
    if missing:
        print(f"the draw produced no {sorted(missing)}; change KINDS", file=sys.stderr)
        return 1
    OUT.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    print(f"wrote {OUT}: {dict(statuses)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
