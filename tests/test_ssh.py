"""Over real ssh: two hosts made on this machine (tests/ssh_hosts.py: network namespaces, an sshd and a mount
namespace each, none of the controller's files but the config's copy at its own path), the real entry point with
--tx ssh= to both and --dist load, pytest-rerunfailures installed on both sides, every verdict compared with a
local run; one host's worker killed mid-run, a host that never starts, a host lost for good."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sessions import read_report
from ssh_hosts import Hosts

from pytest_humaneval.data.dataset import load_problems

pytestmark = [pytest.mark.needs_ssh_hosts, pytest.mark.slow]  # hosts over real ssh: the slow tier

PROBLEMS = 12
SLOW = "\nimport time as _t\n_t.sleep(0.3)\n"  # once per sample, as its program loads: a worker is killed mid-run
WRONG = {3: "    return None\n", 7: "    raise ValueError('no')\n"}


@pytest.fixture
def hosts():  # made afresh for each test (a quarter of a second): a test may lose one for good
    with Hosts(2) as made:
        yield made


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The config and its samples."""
    _, problems = load_problems()
    rows = [{"task_id": problem.task_id,
             "completion": WRONG.get(index) or (problem.canonical_solution or "") + SLOW}
            for index, problem in enumerate(problems[:PROBLEMS])]
    folder = tmp_path_factory.mktemp("ssh-project")
    (folder / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (folder / "humaneval.yaml").write_text(
        "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
        "params: {allow_code_execution: true}\ngate: {min_pass_at_1: 0.5, min_coverage: 0.8}\n")
    return folder


@pytest.fixture(scope="module")
def expected(folder: Path) -> dict[tuple[str, int], str]:
    """The verdicts of a local run (no xdist), once for the module."""
    done = pytest_process(folder, "-p", "no:xdist", "--humaneval-results", "local.jsonl")
    output, _ = done.communicate(timeout=120)
    assert done.returncode == 0, output[-3000:]
    found = verdicts(folder / "local.jsonl")
    assert sorted(found.values()).count("passed") == PROBLEMS - len(WRONG)
    return found


@pytest.fixture
def project(folder: Path, hosts: Hosts) -> Path:
    """Each host gets its own copy of the config at the same path, and nothing else: the plan and the
    completions reach workers through xdist."""
    cfg = folder / "humaneval.yaml"
    for host in hosts.hosts:
        copy = host.own(cfg)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(cfg.read_text())
    for name in ("r.jsonl", "r.json"):
        (folder / name).unlink(missing_ok=True)
    return folder


def tx(hosts: Hosts, name: str) -> list[str]:
    return ["--tx", f"ssh={name}//ssh_config={hosts.ssh_config}//python={sys.executable}"]


def pytest_process(folder: Path, *args: str) -> subprocess.Popen:
    # The real entry point, with pytest-rerunfailures loaded (the suite's pytester leaves it out).
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"}
    return subprocess.Popen([sys.executable, "-m", "pytest", "--humaneval-config", "humaneval.yaml",
                             "-p", "no:cacheprovider", *args], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def verdicts(path: Path) -> dict[tuple[str, int], str]:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {(row["task_id"], row["sample"]): row["status"] for row in rows}


def rows_in(path: Path) -> int:
    try:
        return len(path.read_text().splitlines())
    except OSError:
        return 0


def finish(process: subprocess.Popen) -> str:
    output, _ = process.communicate(timeout=180)
    assert "INTERNALERROR" not in output, output[-4000:]
    return output


def test_ssh_verdicts_equal_local(hosts, project, expected):
    """Over ssh, every verdict is a local run's, with a worker killed and a host that never starts."""
    # An existing results file, given as option and value: xdist refused it (make_reltoroot) before.
    (project / "r.jsonl").write_text("left by an earlier run\n")
    never = ["--tx", f"ssh=-p 2 {hosts[0].name}//ssh_config={hosts.ssh_config}//python={sys.executable}"]
    process = pytest_process(project, "-d", *tx(hosts, hosts[0].name), *tx(hosts, hosts[1].name), *never,
                             "--humaneval-results", "r.jsonl", "--humaneval-report", "r.json")
    deadline = time.monotonic() + 120
    while rows_in(project / "r.jsonl") < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = hosts[0].workers()
    assert len(workers) == 1, workers
    os.kill(workers[0], 9)  # by its pid, as an OOM killer would
    output = finish(process)
    assert process.returncode == 0, output[-4000:]  # the gate's
    assert "humaneval: xdist host ssh=-p 2 " in output and "could not start (HostNotFound" in output
    assert "replacing crashed worker" in output
    found = verdicts(project / "r.jsonl")
    crashed = [key for key, status in found.items() if status == "harness_error"]
    assert len(crashed) == 1, found
    assert {key: status for key, status in found.items() if key not in crashed} == \
        {key: status for key, status in expected.items() if key not in crashed}
    report = read_report(project / "r.json")
    assert report["planned"] == PROBLEMS and report["interrupted"] is None and report["gate"]["passed"] is True


def test_ssh_lost_host_hands_over(hosts, project, expected):
    """Over ssh, a host lost for good mid-run leaves its samples to the other."""
    process = pytest_process(project, "-d", *tx(hosts, hosts[0].name), *tx(hosts, hosts[1].name),
                             "--humaneval-results=r.jsonl", "--humaneval-report", "r.json")
    deadline = time.monotonic() + 120
    while rows_in(project / "r.jsonl") < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    hosts[1].stop_all()  # its sshd and its worker: xdist's replacement cannot reach it
    output = finish(process)
    assert process.returncode == 0, output[-4000:]
    assert f"humaneval: xdist host ssh={hosts[1].name}" in output and "dropped" in output
    found = verdicts(project / "r.jsonl")
    crashed = [key for key, status in found.items() if status == "harness_error"]
    assert len(crashed) <= 1, found
    assert {key: status for key, status in found.items() if key not in crashed} == \
        {key: status for key, status in expected.items() if key not in crashed}
    assert read_report(project / "r.json")["interrupted"] is None
