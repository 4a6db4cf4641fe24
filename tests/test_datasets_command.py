"""`python -m pytest_humaneval datasets`: the datasets a config can name, with what each costs and where it lives."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from plus_data import release_file

from pytest_humaneval.__main__ import main as cli
from pytest_humaneval.data import plus, releases
from pytest_humaneval.data.dataset import bundled_path, load_dataset


@pytest.fixture
def xdg(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "pytest-humaneval"


def test_lists_every_dataset(xdg):
    """The command lists every dataset name with its problems, inputs, size and place."""
    run = subprocess.run([sys.executable, "-m", "pytest_humaneval", "datasets"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "XDG_CACHE_HOME": str(xdg.parent)})
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    mini = load_dataset(release_file("humanevalplus-mini"))
    assert lines[:3] == [
        "humaneval: OpenAI's HumanEval (the default): 164 problems, 1,181 asserts in the problems' check() tests",
        f"  file      43.8 KB, bundled: {bundled_path()}",
        "humanevalplus: EvalPlus's HumanEval+ v0.1.10: 164 problems, 1,570 base + 122,683 plus inputs"]
    assert f"  file      904.2 KB, bundled: {release_file('humanevalplus')}" in lines
    assert ("humanevalplus-mini: EvalPlus's HumanEval+ v0.1.10, Mini (fewer plus inputs): 164 problems, 1,570 base "
            "+ 1,107 plus inputs") in lines
    assert ("humanevalplus-noextreme: EvalPlus's HumanEval+ v0.1.10, NoExtreme (large inputs of 7 tasks dropped): "
            "164 problems, 1,570 base + 122,504 plus inputs") in lines
    assert ("mbppplus: EvalPlus's MBPP+ v0.2.0 (the model writes the whole function): 378 problems, 1,174 base + "
            "39,841 plus inputs") in lines
    assert ("mbppplus-noextreme: EvalPlus's MBPP+ v0.2.0, NoExtreme (large inputs dropped): 378 problems, 1,174 "
            "base + 39,636 plus inputs") in lines
    assert ("  expected  not computed on this machine yet: the first run computes them once, before its first sample "
            "(the canonical solution on each of its 2,677 inputs), and keeps them in "
            f"{plus.table_folder(mini.sha256, xdg)}") in lines
    # What the first run pays, where it was measured: MBPP+'s is minutes and over a GB.
    costs = [line for line in lines if "measured: " in line]
    assert len(costs) == 2
    assert "each of its 124,253 inputs; measured: 271 MB in the cache, 13 s on 2 cores)" in costs[0]
    assert "each of its 41,015 inputs; measured: 1.4 GB in the cache, about 4 minutes on 2 cores)" in costs[1]


@pytest.mark.slow
def test_local_expected_outputs_counted(xdg, capsys):
    """Expected outputs computed on this machine are counted."""
    mini = load_dataset(release_file("humanevalplus-mini"))
    plus.Suites(mini.sha256, mini.problems[:2]).ensure()
    assert cli(["datasets"]) == 0
    folder = plus.table_folder(mini.sha256, xdg)
    line = next(line for line in capsys.readouterr().out.splitlines() if str(folder) in line)
    assert line.startswith("  expected  2/164 tasks computed, ") and line.endswith(
        f", in {folder}; the next run computes the other 162 first (the canonical solution on each of its 2,677 "
        "inputs)")


def test_unbundled_release_says_its_source(xdg, capsys, monkeypatch):
    """A release the package does not carry says where it comes from."""
    monkeypatch.setattr(releases, "bundled_copy", lambda release: None)
    monkeypatch.delenv(releases.BASE_URL_ENV, raising=False)
    assert cli(["datasets", "--json"]) == 0
    found = {entry["name"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert list(found) == ["humaneval", "humanevalplus", "humanevalplus-mini", "humanevalplus-noextreme", "mbppplus",
                           "mbppplus-noextreme", "humaneval-impossible", "humaneval-impossible-oneoff",
                           "humaneval-impossible-conflicting", "livecodebench"]
    assert found["mbppplus"]["where"] == (
        "not on this machine: the first run downloads https://github.com/evalplus/mbppplus_release/releases/"
        f"download/v0.2.0/MbppPlus.jsonl.gz into {releases.cache_dir()}")
    assert found["humanevalplus"]["problems"] is None and found["humanevalplus"]["file_bytes"] == 925_932
    assert found["humanevalplus"]["where"] == (
        "not on this machine: the first run downloads https://github.com/evalplus/humanevalplus_release/releases/"
        f"download/v0.1.10/HumanEvalPlus.jsonl.gz into {xdg}")
    assert found["humaneval"]["problems"] == 164 and found["humaneval"]["where"] == f"bundled: {bundled_path()}"
