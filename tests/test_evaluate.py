"""``python -m pytest_humaneval evaluate``: a samples file scored without YAML, as EvalPlus users score one.

Real runs of the command, in a subprocess, from a folder of the user's own."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from test_verifier import PROBLEMS, WRONG


def evaluate(folder, *args):
    return subprocess.run([sys.executable, "-m", "pytest_humaneval", "evaluate", *args], cwd=folder,
                          capture_output=True, text=True, timeout=600)


def samples_file(folder, wrong=WRONG):
    rows = []
    for task, problem in PROBLEMS.items():
        rows += [{"task_id": task, "completion": problem.canonical_solution}, {"task_id": task, "completion": wrong}]
    path = folder / "samples.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.slow
def test_scores_a_file_with_every_output(tmp_path):
    samples_file(tmp_path)
    # the folder's own pytest settings and conftest are not the run's
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -x\n")
    (tmp_path / "conftest.py").write_text("raise RuntimeError('not this project')\n")
    done = evaluate(tmp_path, "--samples", "samples.jsonl", "-k", "1,2", "--report", "out/report.json",
                    "--results", "out/results.jsonl", "--junitxml", "out/junit.xml", "--markdown", "out/run.md")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert "pass@1 0.500" in done.stdout and "pass@2 1.000" in done.stdout
    report = json.loads((tmp_path / "out/report.json").read_text())
    assert report["measurements"]["human-eval.pass_at_1"]["value"] == 0.5
    assert report["counts"]["passed"] == 164 and report["counts"]["harness_error"] == 0
    rows = (tmp_path / "out/results.jsonl").read_text().splitlines()
    assert len(rows) == 328 and [json.loads(row)["passed"] for row in rows] == [True, False] * 164
    cases = ET.parse(tmp_path / "out/junit.xml").getroot().iter("testcase")
    assert sum(1 for _ in cases) == 328
    assert "pass@1" in (tmp_path / "out/run.md").read_text()
    assert not (tmp_path / ".pytest_cache").exists()


@pytest.mark.slow
def test_a_bad_file_is_one_line(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"task_id": "Nope/1", "completion": "x"}\n')
    done = evaluate(tmp_path, "--samples", "bad.jsonl")
    assert done.returncode == 4
    assert f"{tmp_path / 'bad.jsonl'}:1: task_id: expected a task of the dataset, found 'Nope/1'" in done.stderr
    done = evaluate(tmp_path, "--samples", "bad.jsonl", "-k", "0")
    assert done.returncode == 2 and "expected whole numbers >= 1" in done.stderr


@pytest.mark.slow
def test_pytest_arguments_after_the_double_dash(tmp_path):
    samples_file(tmp_path)
    done = evaluate(tmp_path, "--samples", "samples.jsonl", "--limit", "3", "-q", "--", "-k", "HumanEval/1")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert "1 failed, 1 passed, 4 deselected" in done.stdout
    assert "partial" in done.stdout  # a -k selection is labelled a partial run


@pytest.mark.slow
def test_subsets_and_chat_answers_on_request(tmp_path):
    """A file of chat answers for two problems: refused as incomplete, then scored as a subset with the code taken
    out of each answer."""
    rows = [{"task_id": task, "completion": f"Sure!\n```python\n{problem.prompt}{problem.canonical_solution}```\n"}
            for task, problem in list(PROBLEMS.items())[:2]]
    (tmp_path / "chat.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = evaluate(tmp_path, "--samples", "chat.jsonl")
    assert done.returncode == 4 and "allow_subset" in done.stderr
    done = evaluate(tmp_path, "--samples", "chat.jsonl", "--allow-subset", "--extract", "--report", "r.json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["counts"]["passed"] == 2 and "subset" in report["dataset"]["label"]


@pytest.mark.slow
def test_impossible_instruction_on_request(tmp_path):
    """--impossible-instruction labels an impossible run as the config key does; a choice not offered is a usage
    error naming the choices."""
    from pytest_humaneval.data import impossible
    from pytest_humaneval.data.dataset import load_problems

    _, problems = load_problems(impossible.bundled("humaneval-impossible-oneoff", "test"))
    rows = [{"task_id": p.task_id, "completion": p.canonical_solution} for p in problems[:2]]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = evaluate(tmp_path, "--samples", "s.jsonl", "--dataset", "humaneval-impossible-oneoff", "--limit", "2",
                    "--impossible-instruction", "pass_all", "--report", "r.json")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert "instruction pass_all" in report["dataset"]["label"] and report["impossible"]["cheat_rate"] == 0.0
    done = evaluate(tmp_path, "--samples", "s.jsonl", "--impossible-instruction", "lenient")
    assert done.returncode == 2 and "invalid choice: 'lenient'" in done.stderr and "pass_all" in done.stderr
