"""`python -m pytest_humaneval html --dataset`: every name a config's `dataset:` takes, and the report's own
dataset when it is one of them."""

from __future__ import annotations

import json

import pytest
from test_html_report import Page, report_for, row

from pytest_humaneval.__main__ import main as cli
from pytest_humaneval.data import releases
from pytest_humaneval.data.dataset import load_problems


def saved_run(tmp_path, task: str, name: str) -> list[str]:
    rows = [row(task, 0, "passed")]
    report = report_for(rows)
    report["dataset"]["name"] = name
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "results.jsonl").write_text(json.dumps(rows[0]) + "\n")
    return ["html", str(tmp_path / "report.json"), str(tmp_path / "results.jsonl"), "-o", str(tmp_path / "p.html")]


def prompt_on_page(tmp_path, task: str) -> str:
    data = Page((tmp_path / "p.html").read_text()).data()
    return data["texts"][data["problems"][task]["prompt"]]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "task"), [("mbppplus", "Mbpp/2"), ("mbppplus-noextreme", "Mbpp/2"),
                                            ("humanevalplus", "HumanEval/0"), ("humanevalplus-mini", "HumanEval/0"),
                                            ("humaneval", "HumanEval/0")])
def test_dataset_by_name(tmp_path, name, task):
    """--dataset takes the names configs use; without it, the report's dataset is used when it is one of them."""
    _, problems = load_problems(None if name == "humaneval" else releases.resolve(name, "test"))
    wanted = {p.task_id: p.prompt for p in problems}[task]
    assert cli([*saved_run(tmp_path, task, "some run"), "--dataset", name]) == 0
    assert prompt_on_page(tmp_path, task) == wanted
    assert cli(saved_run(tmp_path, task, "openai_humaneval" if name == "humaneval" else name)) == 0
    assert prompt_on_page(tmp_path, task) == wanted


def test_unknown_dataset_names_the_choices(tmp_path, capsys):
    assert cli([*saved_run(tmp_path, "Mbpp/2", "mbppplus"), "--dataset", "mbpp-plus"]) == 2
    assert capsys.readouterr().err == (
        "error: --dataset: expected one of humaneval, humanevalplus, humanevalplus-mini, humanevalplus-noextreme, "
        "mbppplus, mbppplus-noextreme, humaneval-impossible, humaneval-impossible-oneoff, "
        "humaneval-impossible-conflicting, or the path of a JSONL(.gz) dataset file, found 'mbpp-plus' (no such file)\n")


@pytest.mark.parametrize("instruction", [None, "pass_all"])
def test_impossible_dataset_by_name_with_its_instruction(tmp_path, instruction):
    """An impossible run's page gets its prompts by the dataset's name, with the instruction the run chose."""
    from pytest_humaneval.data import impossible
    task = "HumanEval/0/oneoff"
    _, problems = load_problems(impossible.bundled("humaneval-impossible", "test"))
    wanted = impossible.with_instruction(problems, instruction or impossible.DEFAULT_INSTRUCTION, "test")
    args = saved_run(tmp_path, task, "humaneval-impossible")
    if instruction:
        report = json.loads((tmp_path / "report.json").read_text())
        report["dataset"]["settings"] = {"impossible_instruction": instruction}
        (tmp_path / "report.json").write_text(json.dumps(report))
    assert cli(args) == 0
    assert prompt_on_page(tmp_path, task) == {p.task_id: p.prompt for p in wanted}[task]
    assert impossible.INSTRUCTIONS[instruction or impossible.DEFAULT_INSTRUCTION][:60] in \
        prompt_on_page(tmp_path, task).replace("\n# ", " ")
    assert cli([*args, "--dataset", "humaneval-impossible-oneoff"]) == 0
    assert prompt_on_page(tmp_path, task) == {p.task_id: p.prompt for p in wanted}[task]
