"""``python -m pytest_humaneval evaluate``: a samples file scored without YAML, as EvalPlus users score one.

Real runs of the command, in a subprocess, from a folder of the user's own; options refused before any run, by
``main`` in this process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from test_verifier import PROBLEMS, WRONG

import pytest_humaneval
from pytest_humaneval.__main__ import main

# What a run on `humaneval` says before it starts: EvalPlus's `--dataset humaneval` is another benchmark.
NOTICE = ("evaluate: scoring HumanEval (164 problems, the original tests); EvalPlus's --dataset humaneval scores "
          "HumanEval+: pass --dataset humanevalplus")


def evaluate(folder, *args, env=None):
    return subprocess.run([sys.executable, "-m", "pytest_humaneval", "evaluate", *args], cwd=folder,
                          capture_output=True, text=True, timeout=600, env=env)


def one_error(done):
    """The command's usage error: exit 4 and a single line on stderr, which is returned."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 4 and len(lines) == 1, (done.returncode, done.stderr, done.stdout[-2000:])
    return lines[0]


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
    line = one_error(done)
    assert line.endswith("to score the 2 the file has as a subset") and "pass --allow-subset" in line
    assert "target." not in line and "--humaneval-set" not in line
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
    assert "evaluate: scoring" not in done.stdout  # the notice is HumanEval's alone
    done = evaluate(tmp_path, "--samples", "s.jsonl", "--impossible-instruction", "lenient")
    assert done.returncode == 2 and "invalid choice: 'lenient'" in done.stderr and "pass_all" in done.stderr


def test_version():
    done = subprocess.run([sys.executable, "-m", "pytest_humaneval", "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout == f"pytest-humaneval {pytest_humaneval.__version__}\n"


@pytest.mark.slow
def test_humaneval_says_it_is_not_evalplus_humaneval(tmp_path):
    """`humaneval` is the original HumanEval here, HumanEval+ in EvalPlus: the run says which, and how to get the
    other, before it starts; EvalPlus's positional dataset is taken as --dataset."""
    samples_file(tmp_path)
    for dataset in (("--dataset", "humaneval"), ("humaneval",), ()):
        done = evaluate(tmp_path, *dataset, "--samples", "samples.jsonl", "--limit", "1", "-q")
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr
        assert done.stdout.splitlines()[0] == NOTICE and done.stdout.count("evaluate: scoring") == 1
        assert "1 failed, 1 passed" in done.stdout


@pytest.mark.slow
def test_no_report_path_that_is_gone(tmp_path):
    """Without --report no report file is made, and none is named; the exit status needs none."""
    rows = [{"task_id": task, "completion": problem.canonical_solution} for task, problem in PROBLEMS.items()]
    rows[1]["completion"] = None  # not_run: a sample without a verdict
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    done = evaluate(tmp_path, "--samples", "s.jsonl", "--limit", "2")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    assert "not_run 1" in done.stdout and not re.search(r"^report\b", done.stdout, re.MULTILINE)
    assert ".json" not in done.stdout


@pytest.mark.slow
def test_exit_status_is_the_runs_own_counts(tmp_path):
    """The counts behind the exit status are the run's, as measured: a report hook that amends the report (here,
    a plugin of the user's that hides a sample without a verdict) changes the files, not the status."""
    rows = [{"task_id": task, "completion": problem.canonical_solution} for task, problem in PROBLEMS.items()]
    rows[0]["completion"] = None
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "amend.py").write_text("def pytest_humaneval_report(report, config):\n"
                                       "    report['counts']['not_run'] = 0\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = evaluate(tmp_path, "--samples", "s.jsonl", "--limit", "2", "--report", "r.json", "--", "-p", "amend",
                    env=env)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["counts"]["not_run"] == 0  # the hook did amend the file


@pytest.mark.slow
def test_evalplus_flags_with_their_meaning(tmp_path):
    """--parallel is --workers (the same check, named as given), --mini the Mini release, --i-just-wanna-run what
    every run does."""
    samples_file(tmp_path)
    assert one_error(evaluate(tmp_path, "--samples", "samples.jsonl", "--parallel", "0")) == (
        "ERROR: --parallel: expected an integer >= 1 and <= 1024 (sandboxes per pytest process), found 0")
    done = evaluate(tmp_path, "--dataset", "humanevalplus", "--mini", "--samples", "samples.jsonl", "--limit", "2",
                    "--parallel", "2", "--i-just-wanna-run", "--report", "r.json", "-q")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["dataset"]["name"] == "humanevalplus-mini" and report["counts"]["passed"] == 2
    assert "evaluate: scoring" not in done.stdout


def test_evalplus_variants():
    from pytest_humaneval.session.evaluate import EvaluateError, evalplus_dataset

    assert evalplus_dataset("humanevalplus", mini=True, noextreme=False) == "humanevalplus-mini"
    assert evalplus_dataset("humanevalplus", mini=False, noextreme=True) == "humanevalplus-noextreme"
    assert evalplus_dataset("mbppplus", mini=False, noextreme=True) == "mbppplus-noextreme"
    assert evalplus_dataset("humanevalplus-mini", mini=True, noextreme=False) == "humanevalplus-mini"
    assert evalplus_dataset("humaneval", mini=False, noextreme=False) == "humaneval"
    with pytest.raises(EvaluateError, match=r"^--mini: expected a dataset with a Mini variant \(humanevalplus\), "
                                            r"found mbppplus$"):
        evalplus_dataset("mbppplus", mini=True, noextreme=False)


@pytest.mark.parametrize(("args", "expected"), [
    (["--base-only"], "ERROR: --base-only: expected no --base-only here, found it: a run on an EvalPlus dataset "
                      "(humanevalplus, mbppplus) scores the base tests too, its score line's 'base' pass@1; "
                      "--dataset humaneval scores HumanEval's original tests"),
    (["--base_only"], "ERROR: --base-only: expected no --base-only here, found it:"),
    (["--test-details"], "ERROR: --test-details: expected no --test-details here, found it: each sample's verdict "
                         "and why it failed (its detail) are in the file --results FILE writes"),
    (["--mini"], "ERROR: --mini: expected a dataset with a Mini variant (humanevalplus), found humaneval, the "
                 "original HumanEval: EvalPlus's humaneval --mini is --dataset humanevalplus-mini here"),
    (["--dataset", "humaneval", "--noextreme"], "ERROR: --noextreme: expected a dataset with a NoExtreme variant "
                                                "(humanevalplus, mbppplus), found humaneval, the original HumanEval: "
                                                "EvalPlus's humaneval --noextreme is --dataset humanevalplus-noextreme "
                                                "here"),
    (["--dataset", "humanevalplus", "--mini", "--noextreme"], "ERROR: --mini, --noextreme: expected one of them, "
                                                              "found both"),
    (["mbpp"], "ERROR: --dataset: expected a dataset this command offers (python -m pytest_humaneval datasets), "
               "found mbpp: EvalPlus's --dataset mbpp scores MBPP+: pass --dataset mbppplus"),
    (["humanevalplus", "--dataset", "mbppplus"], "ERROR: --dataset: expected one dataset, found humanevalplus "
                                                 "(positional) and mbppplus (--dataset)"),
    (["--parallel", "2", "--workers", "3"], "ERROR: --parallel: expected it or --workers, found both (2 and 3)"),
])
def test_evalplus_flags_refused_in_one_line(tmp_path, capsys, args, expected):
    """EvalPlus's flags that mean nothing here, or ask for what there is not: refused before any run, naming what
    to use instead."""
    samples_file(tmp_path)
    assert main(["evaluate", "--samples", str(tmp_path / "samples.jsonl"), *args]) == 4
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and err.startswith(expected)


@pytest.mark.parametrize(("args", "expected"), [
    (["--samples", "samples.jsonl", "--timeout-s", "0"],
     "ERROR: --timeout-s: expected a number > 0 and <= 3600, found 0.0"),
    (["--samples", "samples.jsonl", "--limit", "0"], "ERROR: --limit: expected an integer >= 1, found 0"),
    (["--samples", "samples.jsonl", "--workers", "0"],
     "ERROR: --workers: expected an integer >= 1 and <= 1024 (sandboxes per pytest process), found 0"),
    (["--samples", "samples.jsonl", "--report", "r.json", "--results", "r.json"],
     "ERROR: --report: {folder}/r.json is also the file of --results: "),
    (["--samples", "nope.jsonl"], "ERROR: --samples: expected an existing file, found 'nope.jsonl' (resolved to "
                                  "{folder}/nope.jsonl, which does not exist)"),
    (["--samples", "samples.jsonl", "--dataset", "humanevalx"],
     "ERROR: --dataset: expected one of humaneval, humanevalplus, "),
    (["--samples", "bad.jsonl"], "ERROR: {folder}/bad.jsonl:2: expected one JSON object per line (JSONL), found "
                                 "invalid JSON"),
    (["--samples", "samples.jsonl", "--impossible-instruction", "pass_all"],
     "ERROR: --impossible-instruction: expected only with an impossible dataset"),
])
def test_errors_name_the_flags(tmp_path, args, expected):
    """A bad option or file is one line naming the command's flag, or the user's file and line: never the config
    the command makes, nor its keys."""
    samples_file(tmp_path)
    (tmp_path / "bad.jsonl").write_text('{"task_id": "HumanEval/0", "completion": "x"}\nnot json\n')
    line = one_error(evaluate(tmp_path, *args))
    assert line.startswith(expected.format(folder=tmp_path))
    assert "evaluate.yaml" not in line and not re.search(r"\b(params|target)\.", line)
    if "humanevalx" in args:
        assert line.endswith(f"found 'humanevalx' (resolved to {tmp_path}/humanevalx, which does not exist)")
