"""HumanEval+ in the plan: digest and label, mock modes, the plan's JSON round trip and a real ``-n 2`` run."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from plus_data import evalplus_row, release_file, write_jsonl
from sessions import NO_CACHE

from pytest_humaneval.config import ConfigError, load_config
from pytest_humaneval.data import plus
from pytest_humaneval.engine.planning import build_plan
from pytest_humaneval.plan import Plan
from pytest_humaneval.sandbox import _wire

FULL = release_file("humanevalplus")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "pytest-humaneval"


def plan_of(tmp_path: Path, text: str) -> Plan:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return build_plan(load_config(path))


@pytest.mark.slow
def test_release_by_path_is_labelled(tmp_path):
    """A known release given by path is labelled with its version, and executes the canonical solutions."""
    plan = plan_of(tmp_path, f"target: {{mode: mock}}\ndataset: {FULL}\nparams: {{execute: true, limit: 3}}\n")
    assert plan.selection.name == "humanevalplus"
    assert plan.selection.label == "humanevalplus v0.1.10 sample (3/164 problems)"
    assert [s.completion for s in plan.samples] == [p.canonical_solution for p in plan.selection.problems]
    assert isinstance(plan.suites, plus.Suites) and list(plan.suites) == ["HumanEval/0", "HumanEval/1",
                                                                          "HumanEval/2"]
    assert _wire.decode(plan.suites["HumanEval/2"])[6] == 1e-6


@pytest.mark.slow
def test_plus_digest(tmp_path):
    """The digest separates HumanEval from HumanEval+, and covers the file and the time limits."""
    def digest(dataset: str, extra: str = "") -> tuple[str, str]:
        selection = plan_of(tmp_path, f"target: {{mode: mock}}\ndataset: {dataset}\n"
                                      f"params: {{execute: true, limit: 2{extra}}}\n").selection
        return selection.digest, selection.label

    # The same two problems as HumanEval rows (their `test`) and as EvalPlus rows.
    rows = [json.loads(line) for line in gzip.decompress(FULL.read_bytes()).decode().splitlines()[:2]]
    plain = write_jsonl(tmp_path / "as_humaneval.jsonl", [
        {key: row[key] for key in ("task_id", "prompt", "entry_point", "canonical_solution", "test")} for row in rows])
    evalplus = write_jsonl(tmp_path / "as_evalplus.jsonl", rows)
    humaneval_digest, humaneval_label = digest(str(plain))
    plus_digest, plus_label = digest(str(evalplus))
    assert humaneval_digest != plus_digest
    assert humaneval_label == "as_humaneval full (2/2 problems)" and plus_label == "as_evalplus full (2/2 problems)"

    full, label = digest(str(FULL))
    noextreme, _ = digest(str(release_file("humanevalplus-noextreme")))
    assert full != noextreme, "same prompts and tests, other inputs: another dataset"
    slower, slower_label = digest(str(FULL), ", plus: {min_time_limit_s: 1.0}")
    assert slower != full and slower_label == (
        "humanevalplus v0.1.10 sample (2/164 problems, time limits max(1 s, 4 x canonical))")
    assert digest(str(FULL), ", plus: {min_time_limit_s: 4, time_limit_factor: 4}") == (full, label), \
        "the defaults written out are the defaults"
    assert digest(str(FULL), ", plus: {time_limit_factor: 2}")[0] not in (full, slower)


def test_plus_refused_where_inapplicable(tmp_path):
    """The mock replay and params.plus are refused where they do not apply."""
    with pytest.raises(ConfigError) as info:
        plan_of(tmp_path, f"target: {{mode: mock}}\ndataset: {FULL}\n")
    assert str(info.value) == (f"{tmp_path / 'run.yaml'}: target.mode: mock replays the pre-scored fixture of the "
                               "bundled HumanEval, not humanevalplus (an EvalPlus dataset); set params.execute: true "
                               "(runs its canonical solutions) or use mode: samples")
    humaneval = write_jsonl(tmp_path / "mine.jsonl", [{
        "task_id": "T/0", "prompt": "def f(x):\n", "entry_point": "f", "canonical_solution": "    return x\n",
        "test": "def check(candidate):\n    assert candidate(1) == 1\n"}])
    with pytest.raises(ConfigError) as info:
        plan_of(tmp_path, f"target: {{mode: mock}}\ndataset: {humaneval}\n"
                          "params: {execute: true, plus: {min_time_limit_s: 2}}\n")
    assert str(info.value) == (f"{tmp_path / 'run.yaml'}: params.plus: expected only with an EvalPlus dataset (rows "
                               f"with base_input and plus_input), found it set with {humaneval}, a HumanEval-format "
                               "file")


def test_failing_canonical_is_usage_error(pytester):
    """A session whose canonical solution fails is one usage error naming the file, the task and the input."""
    dataset = write_jsonl(pytester.path / "broken.jsonl", [
        evalplus_row("T/0"), evalplus_row("T/1", "    return 10 // (x - 4)\n")])
    config = pytester.path / "run.yaml"
    config.write_text(f"target: {{mode: mock}}\ndataset: {dataset}\nparams: {{execute: true}}\n")
    result = pytester.runpytest("--humaneval-config", str(config), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {dataset}: T/1: canonical_solution: expected it to give an output for "
                                 "every input, found it failing on plus input 1: raised ZeroDivisionError: integer "
                                 "division or modulo by zero"])


def test_plan_round_trips_through_json(tmp_path):
    """The plan round-trips through JSON, with its EvalPlus problems and suites."""
    rows = [evalplus_row("T/0", "    return (x, -x)\n", base_input=[[1], [2]], plus_input=[[3]], atol=1e-6),
            evalplus_row("T/1", "    return [x / 3]\n", base_input=[[1]], plus_input=[])]
    dataset = write_jsonl(tmp_path / "tiny.jsonl", rows)
    plan = plan_of(tmp_path, f"target: {{mode: mock}}\ndataset: {dataset}\nparams: {{execute: true}}\n")
    text = plan.to_json()
    assert len(text) < 5000, "the plan refers to the suites, it does not carry their bytes"
    again = Plan.from_json(text)
    assert again == plan
    problem = again.problems["T/0"]
    assert problem.base_input == ([1], [2]) and type(problem.base_input) is tuple and problem.atol == 1e-6
    assert isinstance(again.suites, plus.Suites)
    assert {task: again.suites[task] for task in again.suites} == {task: plan.suites[task] for task in plan.suites}
    assert _wire.decode(again.suites["T/0"])[4] == ((3, -3),)
    humaneval = plan_of(tmp_path, "target: {mode: mock}\nparams: {execute: true, limit: 2}\n")
    assert Plan.from_json(humaneval.to_json()) == humaneval and humaneval.suites == {}


def test_missing_table_is_computed(tmp_path, monkeypatch):
    """A process without the table makes its own."""
    dataset = write_jsonl(tmp_path / "tiny.jsonl", [evalplus_row()])
    plan = plan_of(tmp_path, f"target: {{mode: mock}}\ndataset: {dataset}\nparams: {{execute: true}}\n")
    here = _wire.decode(plan.suites["T/0"])
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-machine"))  # as a remote xdist worker
    elsewhere = Plan.from_json(plan.to_json()).suites
    elsewhere.ensure()
    assert (tmp_path / "another-machine" / "pytest-humaneval" / "expected").is_dir()
    theirs = _wire.decode(elsewhere["T/0"])
    assert theirs[:2] == here[:2] and theirs[3:5] == here[3:5] and theirs[2] != here[2], \
        "the same outputs, with that machine's own times"


CONFTEST = '''
import hashlib, json, os
from pathlib import Path

import pytest

@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session):
    from pytest_humaneval.session.items import RUN_KEY
    run = session.config.stash.get(RUN_KEY, None)
    if run is None:
        return
    who = getattr(session.config, "workerinput", {}).get("workerid", "controller")
    suites = run.plan.suites
    digests = {task: hashlib.sha256(suites[task]).hexdigest() for task in suites}
    (Path(os.environ["SUITES_OUT"]) / (who + ".json")).write_text(json.dumps(digests))
'''


@pytest.mark.slow
def test_workers_get_the_same_suites(pytester, tmp_path, monkeypatch):
    """xdist workers get the same suites as the controller."""
    out = tmp_path / "suites"
    out.mkdir()
    monkeypatch.setenv("SUITES_OUT", str(out))
    pytester.makeconftest(CONFTEST)
    config = pytester.path / "plus.yaml"
    config.write_text(f"target: {{mode: mock}}\ndataset: {FULL}\nparams: {{execute: true, limit: 4}}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "-n", "2", *NO_CACHE)
    result.assert_outcomes(passed=4)
    seen = {path.stem: json.loads(path.read_text()) for path in out.iterdir()}
    assert sorted(seen) == ["controller", "gw0", "gw1"]
    assert list(seen["controller"]) == ["HumanEval/0", "HumanEval/1", "HumanEval/2", "HumanEval/3"]
    # Equal bytes, times included: the workers read the controller's table rather than measuring again.
    assert seen["gw0"] == seen["gw1"] == seen["controller"]
    table = plus.table_folder(hashlib.sha256(gzip.decompress(FULL.read_bytes())).hexdigest())
    assert len(list(table.iterdir())) == 4


@pytest.mark.slow
def test_real_suites_give_evalplus_verdicts(tmp_path):
    """The suites of real tasks give EvalPlus's verdicts in the sandbox."""
    # The data side meets the judge: OpenAI's canonical solutions pass HumanEval/0 and /8 (a tuple task) on both
    # suites, and pass /22's base suite but not its plus suite (EvalPlus: bools are not the ints it keeps).
    from pytest_humaneval.data.dataset import load_problems
    from pytest_humaneval.sandbox import Limits, Program, Sandbox, Suite

    plan = plan_of(tmp_path, f"target: {{mode: mock}}\ndataset: {FULL}\nparams: {{execute: true, limit: 23}}\n")
    openai = {p.task_id: p.canonical_solution for p in load_problems()[1]}
    box = Sandbox().start()
    try:
        verdicts = {}
        for task in ("HumanEval/0", "HumanEval/8", "HumanEval/22"):
            problem = plan.problems[task]
            program = Program(problem.prompt, openai[task], problem.test, problem.entry_point,
                              Suite(str(plan.suites.path(task)), plus.BLOB_OFFSET, 4.0, 4.0))
            result = box.run(program, Limits(timeout_s=30.0))
            verdicts[task] = (result.suites["base"]["status"], result.suites["plus"]["status"])
    finally:
        box.close()
    assert verdicts == {"HumanEval/0": ("passed", "passed"), "HumanEval/8": ("passed", "passed"),
                        "HumanEval/22": ("passed", "assertion_failed")}
