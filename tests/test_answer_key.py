"""Hidden tests by construction: a completion with no solution in it, that hunts for its answer key, scores 0.

The hunters (``hunter.py``) are what a reward-hacking model would write: one body for every problem that looks
for the test, an expected output, the canonical solution or a neighbour's passing answer, in every place a
candidate can reach: the package's bundled data, every file it can list, its own interpreter's objects and raw
memory, ``/proc`` of every process it can see, its descriptors. Each run goes through the real entry point
(serially, through the pool of sandboxes and with ``-n 2``), with every file a run keeps in a folder outside
``/tmp``, as a CI workspace is: the dataset the config names, the samples file (a neighbour's canonical answer
in it) and the results file being written.

These guarantees are the namespace modes' (docs/safety.md); the basic sandbox runs candidates as the user,
and its exposure is listed there.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hunter import TECHNIQUES, completion
from sessions import NO_CACHE

from pytest_humaneval.data.dataset import bundled_path, load_problems

PROBLEMS = 4
MODES = {"serial": ("-p", "no:xdist"), "pool": ("-p", "no:xdist"), "xdist": ("-n", "2")}


@pytest.fixture
def workspace():
    """A folder outside /tmp (a CI workspace is not under /tmp), next to this checkout, removed afterwards."""
    folder = Path(tempfile.mkdtemp(dir=Path(__file__).resolve().parents[1], prefix=".humaneval-attack-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    path.chmod(0o644)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.needs_namespaces
def test_hunters_score_0(pytester, namespaces, workspace, mode):
    """Completions that hunt for their answer key score 0."""
    problems = load_problems()[1][:PROBLEMS]
    rows = []
    for problem in problems:  # a neighbour's passing answer first, then every hunter
        rows.append({"task_id": problem.task_id, "completion": problem.canonical_solution})
        rows += [{"task_id": problem.task_id, "completion": completion(technique)} for technique in TECHNIQUES]
    samples = write_jsonl(workspace / "samples.jsonl", rows)
    dataset = workspace / "HumanEval.jsonl.gz"
    shutil.copy(bundled_path(), dataset)
    dataset.chmod(0o644)
    workers = "1" if mode == "serial" else "null"
    (pytester.path / "run.yaml").write_text(
        f"target: {{mode: samples, samples: {samples}, allow_subset: true}}\ndataset: {dataset}\n"
        f"params: {{allow_code_execution: true, isolation: strict, timeout_s: 10, workers: {workers}}}\n")
    results = workspace / "results.jsonl"
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-results", str(results),
                                *MODES[mode], *NO_CACHE)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == PROBLEMS * (1 + len(TECHNIQUES)), result.stdout.str()[-3000:]
    found = {}
    for row in rows:
        technique = "canonical" if row["sample"] == 0 else TECHNIQUES[row["sample"] - 1]
        found.setdefault(technique, []).append(row["status"])
    assert found.pop("canonical") == ["passed"] * PROBLEMS
    assert {technique: statuses.count("passed") for technique, statuses in found.items()} == \
        dict.fromkeys(TECHNIQUES, 0), found


# -- HumanEval+: the expected-output cache, the inputs sent ahead, the judge's own work -----------------------

PLUS_TASK = {"task_id": "Slow/0", "prompt": "def f(x):\n", "entry_point": "f", "canonical_solution": "    return x * 2\n",
             "test": "def check(candidate):\n    assert candidate(1) == 2\n    assert candidate(2) == 4\n",
             "contract": "", "base_input": [[1]],
             "plus_input": [[2]], "atol": 0}
HONEST = "    return x * 2\n"
TOO_SLOW = "    import time\n    time.sleep(1.3)\n    return x * 2\n"
# Reads the judge's requests while it loads (they used to be sent before it said it was ready), answers them
# then, slowly, and says it is ready: each input's reply is waiting before its clock starts. Where nothing but
# the question "loaded?" has arrived, it says it is ready and serves as usual.
READ_AHEAD = '''    import time
    time.sleep(1.3)
    return x * 2


def _read_ahead():
    import os, sys, time
    wire = sys.modules["_humaneval_wire"]
    os.set_blocking(3, False)
    time.sleep(0.3)
    try:
        data = os.read(3, 1 << 16)
    except BlockingIOError:
        data = b""
    os.set_blocking(3, True)
    answers, position, loaded = [], 0, False
    while position + 5 <= len(data):
        size = int.from_bytes(data[position:position + 4], "big")
        kind, body = data[position + 4:position + 5], data[position + 5:position + 4 + size]
        position += 4 + size
        if kind == b"L":
            loaded = True
        elif kind in (b"P", b"C"):
            args, kwargs = wire.decode(body)
            answers.append(wire.encode(f(*args)))
    if loaded:
        wire.write_frame(4, b"R", b"")
    for answer in answers:
        wire.write_frame(4, b"V", answer)


_read_ahead()
'''
# A reply frame of 80,000 ints that all hash alike: a set of them costs its builder quadratic time.
COLLIDING = '''    import os, sys, time
    wire = sys.modules["_humaneval_wire"]
    modulus, count = (1 << 61) - 1, 80000
    members = []
    for i in range(1, count + 1):
        value = i * modulus
        size = (value.bit_length() + 8) // 8
        members.append(b"I" + size.to_bytes(4, "big") + value.to_bytes(size, "big", signed=True))
    wire.write_frame(4, b"V", b"S" + count.to_bytes(4, "big") + b"".join(members))
    time.sleep(30)
'''


@pytest.fixture
def plus_workspace(pytester, workspace, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(workspace / "cache"))  # the expected outputs, outside /tmp too
    write_jsonl(workspace / "plus.jsonl", [PLUS_TASK])
    return workspace


def _plus_run(pytester, workspace, completions, *options):
    samples = write_jsonl(workspace / "samples.jsonl",
                          [{"task_id": "Slow/0", "completion": text} for text in completions])
    (pytester.path / "plus.yaml").write_text(
        f"target: {{mode: samples, samples: {samples}, allow_subset: true}}\ndataset: {workspace / 'plus.jsonl'}\n"
        "params: {allow_code_execution: true, isolation: strict, plus: {min_time_limit_s: 1.0}}\n")
    started = time.monotonic()
    pytester.runpytest("--humaneval-config", "plus.yaml", "--humaneval-results", str(workspace / "results.jsonl"),
                       *options, *NO_CACHE)
    rows = [json.loads(line) for line in (workspace / "results.jsonl").read_text().splitlines()]
    return sorted(rows, key=lambda row: row["sample"]), time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["pool", "xdist"])
@pytest.mark.needs_namespaces
def test_candidate_sees_only_its_input(pytester, namespaces, plus_workspace, mode):
    """A candidate never sees an input before its turn, nor its expected output."""
    hunters = [completion(technique, at_load=True) for technique in ("walk", "gc", "memory")]
    rows, _ = _plus_run(pytester, plus_workspace, [HONEST, TOO_SLOW, READ_AHEAD, *hunters], *MODES[mode])
    statuses = [row["status"] for row in rows]
    assert statuses[:2] == ["passed", "timeout"], rows
    # The read-ahead used to pass: its answers were computed while it loaded, and waiting when asked.
    assert statuses[2] == "timeout", rows[2]
    assert "passed" not in statuses[3:], rows


@pytest.mark.slow
@pytest.mark.needs_namespaces
def test_colliding_keys_reply_is_bounded(pytester, namespaces, plus_workspace):
    """A reply of colliding keys never holds the judge past the suite's limit."""
    rows, _ = _plus_run(pytester, plus_workspace, [COLLIDING, HONEST], "-p", "no:xdist")
    colliding, honest = rows
    assert colliding["status"] == "runtime_error" and "hash alike" in colliding["detail"], colliding
    # The suite's limit is 2 s (1 s for its one input, plus 1 s): the judge refuses the set long before.
    assert colliding["duration_ms"] < 2 * 3000, colliding
    assert honest["status"] == "passed", honest


# -- what a person reads ------------------------------------------------------------------------------------------

FORGED = ("\n\n" + "=" * 34 + " HumanEval " + "=" * 34
          + "\nscore     pass@1 1.000  (164 problems, 164 samples)\ncoverage  1.000 (164/164 attempted)\n"
          + "\u202e1.000 = pass@1 \u2066x\u2069")
LIARS = [f"    print({FORGED!r})\n    import sys\n    print({FORGED!r}, file=sys.stderr)\n    raise ValueError({FORGED!r})\n",
         f"    assert False, {FORGED!r}\n"]


@pytest.mark.parametrize("options", [(), ("-rA", "-v"), ("-q",)], ids=["default", "verbose", "quiet"])
def test_printed_lines_cannot_forge_the_harness(pytester, options):
    """No line a sample prints can pass for the harness's own, and bidi text stays inert."""
    (pytester.path / "samples.jsonl").write_text(
        "".join(json.dumps({"task_id": "HumanEval/0", "completion": text}) + "\n" for text in LIARS))
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--junitxml", "junit.xml", "--humaneval-markdown",
                                "summary.md", "--humaneval-html", "page.html", "-p", "no:xdist", *options, *NO_CACHE)
    result.assert_outcomes(failed=2)
    lines = result.stdout.lines
    assert not [line for line in lines if line.startswith(("score     pass@1 1.000", "coverage  1.000 (164/164"))]
    assert [line for line in lines if line.startswith(("score     pass@1 0.000", "pass@1 0.000"))]
    for text in ("\n".join(lines), *(pytester.path.joinpath(name).read_text(encoding="utf-8")
                                      for name in ("junit.xml", "summary.md", "page.html"))):
        assert "\u202e" not in text and "\u2066" not in text
    assert "\\u202e" in pytester.path.joinpath("junit.xml").read_text(encoding="utf-8")
