"""Where CI really runs: inside a default container, where namespaces are refused, and as a user without them.

``container.py`` reproduces a default ``docker run``'s confinement on this machine (Docker's seccomp rules for a
container without CAP_SYS_ADMIN, and its 14 capabilities), no Docker needed. There the sandbox cannot make
namespaces, and confines each candidate with Landlock instead. Before it (6e0b5ca), the plugin fell back to
the basic sandbox there, and a completion with no solution that found the package with ``find_spec`` and read
its bundled data passed 158 of 164 problems.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import nobody
import pytest
from container import available, in_container
from hunter import TECHNIQUES, completion
from programs import sample
from sessions import NO_CACHE

from pytest_humaneval.data.dataset import bundled_path, load_problems
from pytest_humaneval.sandbox import Program, _confine

pytestmark = [pytest.mark.needs_root("to drop to a default container's capabilities"), pytest.mark.needs_landlock]
PROBLEMS = 3
MODES = {"serial": ("-p", "no:xdist"), "pool": ("-p", "no:xdist"), "xdist": ("-n", "2")}
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def landlock() -> int:
    why = available()
    if why:
        pytest.skip(f"needs_root: a default container's confinement cannot be made here: {why}")
    abi = _confine.landlock_abi()
    if abi < 1:
        pytest.skip("needs_landlock: the kernel has no Landlock (Linux 5.13+, with landlock among its LSMs)")
    return abi


@pytest.mark.parametrize("mode", MODES)
def test_in_a_default_container_hunters_score_0_and_canonical_solutions_pass(pytester, landlock, mode):
    folder = Path(tempfile.mkdtemp(dir=HERE.parent, prefix=".humaneval-attack-"))  # outside /tmp, as a workspace
    try:
        folder.chmod(0o755)
        dataset = folder / "HumanEval.jsonl.gz"
        shutil.copy(bundled_path(), dataset)
        rows = []
        for problem in load_problems()[1][:PROBLEMS]:  # a neighbour's passing answer first, then every hunter
            rows.append({"task_id": problem.task_id, "completion": problem.canonical_solution})
            rows += [{"task_id": problem.task_id, "completion": completion(technique)} for technique in TECHNIQUES]
        samples = folder / "samples.jsonl"
        samples.write_text("".join(json.dumps(row) + "\n" for row in rows))
        workers = "1" if mode == "serial" else "null"
        (pytester.path / "run.yaml").write_text(
            f"target: {{mode: samples, samples: {samples}}}\ndataset: {dataset}\n"
            f"params: {{allow_code_execution: true, timeout_s: 10, workers: {workers}}}\n")
        results, report = folder / "results.jsonl", folder / "report.json"
        result = in_container(pytester, "--humaneval-config", "run.yaml", "--humaneval-results", str(results),
                               "--humaneval-report", str(report), *MODES[mode], *NO_CACHE)
        assert report.exists(), result.stdout.str()[-3000:]
        assert json.loads(report.read_text())["run"]["isolation"] == "landlock"
        found: dict = {}
        for row in map(json.loads, results.read_text().splitlines()):
            technique = "canonical" if row["sample"] == 0 else TECHNIQUES[row["sample"] - 1]
            found.setdefault(technique, []).append(row["status"])
        assert found.pop("canonical") == ["passed"] * PROBLEMS
        assert {technique: statuses.count("passed") for technique, statuses in found.items()} == \
            dict.fromkeys(TECHNIQUES, 0), found
    finally:
        shutil.rmtree(folder)


def test_in_a_default_container_the_reference_run_passes_under_strict(pytester, landlock):
    # The shipped CI starters ask for strict: in a container, Landlock meets it.
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\nparams: {execute: true, isolation: strict}\n")
    result = in_container(pytester, "--humaneval-config", "run.yaml", "--humaneval-report", "report.json",
                           "-p", "no:xdist", *NO_CACHE)
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["counts"]["passed"] == 164, result.stdout.str()[-3000:]
    assert report["run"]["isolation"] == "landlock"
    assert "landlock ABI" in report["run"]["confinement"]
    result.stdout.fnmatch_lines(["*isolation landlock*"])


@pytest.fixture
def contained_nobody(landlock):
    if nobody.unavailable():
        pytest.skip(f"needs_root and needs_system_python: {nobody.unavailable()}")
    with nobody.supervisor(contained=True) as (ready, run):
        assert ready.get("isolation") == "landlock", ready
        yield run


@pytest.mark.needs_system_python
def test_without_root_or_user_namespaces_hunters_score_0_and_canonical_solutions_pass(contained_nobody):
    problems = load_problems()[1][:PROBLEMS]
    passed = dict.fromkeys(TECHNIQUES, 0)
    for problem in problems:
        honest = contained_nobody(Program(problem.prompt, problem.canonical_solution, problem.test,
                                          problem.entry_point))
        assert honest["status"] == "passed", honest
        for technique in TECHNIQUES:
            reply = contained_nobody(Program(problem.prompt, completion(technique), problem.test,
                                             problem.entry_point), timeout_s=10.0)
            passed[technique] += reply["status"] == "passed"
    assert passed == dict.fromkeys(TECHNIQUES, 0)


@pytest.mark.needs_system_python
def test_without_root_or_user_namespaces_a_candidate_writes_only_its_own_folder(contained_nobody):
    outside = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-test-"))
    try:
        outside.chmod(0o777)  # writable by the harness's user, as a project tree or /tmp is
        program = f"""
import errno, os, socket
problems = []
for place in ({str(outside / 'planted')!r}, '/tmp/humaneval-planted', '/dev/shm/humaneval-planted'):
    try:
        open(place, 'w').close()
        problems.append('wrote ' + place)
    except OSError:
        pass
try:
    socket.create_connection(('127.0.0.1', 9), timeout=1)
    problems.append('connected')
except OSError:
    pass
try:
    os.listdir('/proc')
    problems.append('listed /proc')
except OSError:
    pass
open('mine.txt', 'w').write('its own working dir is writable')
assert not problems, problems
"""
        reply = contained_nobody(sample(program + "\ndef f():\n    return 1\n",
                                        "def check(candidate):\n    assert candidate() == 1\n"))
        assert reply["status"] == "passed", reply
        assert list(outside.iterdir()) == []
    finally:
        shutil.rmtree(outside)
