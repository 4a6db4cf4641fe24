"""HumanEval+ suites: EvalPlus rows, expected outputs made by the canonical solutions (in subprocesses, cached per
dataset, Python and machine), the suites blobs the judge receives, and EvalPlus's time limits."""

from __future__ import annotations

import copy
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from plus_data import WARM_XDG, evalplus_row, release_file, write_jsonl

from pytest_humaneval.data import plus
from pytest_humaneval.data.dataset import DatasetError, Problem, load_dataset
from pytest_humaneval.sandbox import _wire

FULL = release_file("humanevalplus")


@pytest.fixture(scope="module")
def full() -> dict[str, Problem]:
    return {problem.task_id: problem for problem in load_dataset(FULL).problems}


def problems_of(tmp_path: Path, rows: list[dict]) -> tuple[list[Problem], str]:
    loaded = load_dataset(write_jsonl(tmp_path / "plus.jsonl", rows))
    assert loaded.evalplus
    return loaded.problems, loaded.sha256


def canonical_outputs(problem: Problem, inputs) -> list:
    """What the canonical solution returns, computed here (in the test) as an independent check."""
    namespace: dict = {}
    exec(problem.prompt + problem.canonical_solution, namespace)
    return [namespace[problem.entry_point](*copy.deepcopy(args)) for args in inputs]


# ------------------------------------------------------------------------------------------ dataset rows


def test_evalplus_rows_load(full):
    """EvalPlus rows load with their inputs, and HumanEval rows are unchanged."""
    problem = full["HumanEval/2"]
    assert problem.evalplus and problem.atol == 1e-6 and type(problem.atol) is float
    assert type(problem.base_input) is tuple and problem.base_input[0] == [3.5]
    assert len(problem.plus_input) > 900 and "def check(candidate)" in problem.test
    assert "$_CONTRACT_$" not in problem.prompt + problem.canonical_solution
    assert full["HumanEval/32"].atol == 1e-4 and full["HumanEval/0"].atol == 0.0
    bundled = load_dataset()
    assert not bundled.evalplus and all(not p.evalplus and p.base_input is None and p.plus_input is None
                                        and p.atol == 0.0 for p in bundled.problems)


@pytest.mark.slow
def test_three_releases_load():
    """The three releases load, and mini has no test."""
    counts = {}
    for name in ("humanevalplus", "humanevalplus-mini", "humanevalplus-noextreme"):
        loaded = load_dataset(release_file(name))
        assert loaded.evalplus and len(loaded.problems) == 164
        counts[name] = (sum(len(p.base_input) for p in loaded.problems),
                        sum(len(p.plus_input) for p in loaded.problems))
        if name == "humanevalplus-mini":
            assert all(p.test == "" for p in loaded.problems)
    assert counts == {"humanevalplus": (1570, 122683), "humanevalplus-mini": (1570, 1107),
                      "humanevalplus-noextreme": (1570, 122504)}


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([evalplus_row(base_input=[1, 2])], ":1: base_input: expected a list of argument lists, found [1, 2]"),
        ([evalplus_row(plus_input="[[1]]")], ':1: plus_input: expected a list of argument lists, found "[[1]]"'),
        ([{k: v for k, v in evalplus_row().items() if k != "plus_input"}],
         ":1: plus_input: expected an EvalPlus row like the file's first (base_input and plus_input), found nothing"),
        ([evalplus_row(atol=-1)], ":1: atol: expected a number >= 0, found -1"),
        ([evalplus_row(atol="1e-6")], ':1: atol: expected a number >= 0, found "1e-6"'),
        ([evalplus_row(canonical_solution=None)], ":1: canonical_solution: expected a non-empty string, found None"),
        ([evalplus_row(test=3)], ":1: test: expected a string (or no test), found int"),
        ([evalplus_row(), {"task_id": "T/1", "prompt": "def f(x):\n", "entry_point": "f",
                           "test": "def check(candidate):\n    pass\n"}],
         ":2: base_input: expected an EvalPlus row like the file's first (base_input and plus_input), found nothing"),
        ([{"task_id": "T/1", "prompt": "def f(x):\n", "entry_point": "f", "test": "def check(c):\n    pass\n"},
          evalplus_row()],
         ":2: expected a HumanEval row like the file's first (no base_input/plus_input), found an EvalPlus row"),
    ],
)
def test_rows_validated_with_file_and_line(tmp_path, rows, expected):
    """EvalPlus rows are validated, with the file and line."""
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value).startswith(str(path)) and expected in str(info.value)


def test_row_needs_no_test_or_check(tmp_path):
    """An EvalPlus row needs no test and no check."""
    problems, _ = problems_of(tmp_path, [evalplus_row()])
    assert problems[0].test == "" and problems[0].base_input == ([1], [2])


# ------------------------------------------------------------------------------------------ expected outputs


def test_suite_blob_contents(tmp_path, full):
    """The suites' blobs hold the inputs, the canonical outputs, the times and atol."""
    # A float task with atol (2), a task returning tuples (8), find_zero (32), a plain one (0).
    chosen = [full[task] for task in ("HumanEval/0", "HumanEval/2", "HumanEval/8", "HumanEval/32")]
    blobs = plus.suite_blobs(chosen, "feed" * 16, root=tmp_path)
    assert list(blobs) == [p.task_id for p in chosen]
    for problem in chosen:
        suites = _wire.decode(blobs[problem.task_id])
        assert type(suites) is tuple and len(suites) == 7
        base_in, base_out, base_s, plus_in, plus_out, plus_s, atol = suites
        assert base_in == tuple(tuple(args) for args in problem.base_input)
        assert plus_in == tuple(tuple(args) for args in problem.plus_input)
        assert all(type(args) is tuple for args in base_in + plus_in)
        assert base_out == tuple(canonical_outputs(problem, problem.base_input))
        assert plus_out == tuple(canonical_outputs(problem, problem.plus_input))
        assert len(base_s) == len(base_in) and len(plus_s) == len(plus_in)
        assert all(type(t) is float and 0 <= t < 5 for t in base_s + plus_s)
        assert atol == problem.atol and type(atol) is float
    eight = _wire.decode(blobs["HumanEval/8"])
    assert all(type(out) is tuple for out in eight[1] + eight[4]), "tuples stay tuples (no JSON round trip)"
    assert eight[1][0] == (0, 1)
    two = _wire.decode(blobs["HumanEval/2"])
    assert all(type(out) is float for out in two[1] + two[4])


def test_arguments_deep_copied(tmp_path):
    """The arguments are deep-copied for every call."""
    # A canonical solution that changes its argument: each call must see the dataset's value, and every
    # output is what that call returned.
    problems, sha = problems_of(tmp_path, [evalplus_row(
        prompt="def f(xs):\n", solution="    xs.append(len(xs))\n    return xs\n",
        base_input=[[[1]], [[1]]], plus_input=[[[]], [[]]])])
    suites = _wire.decode(plus.suite_blobs(problems, sha, root=tmp_path)["T/0"])
    assert suites[1] == ([1, 1], [1, 1]) and suites[4] == ([0], [0])
    assert suites[0] == (([1],), ([1],)), "the inputs themselves are untouched"


def test_outputs_computed_out_of_process(tmp_path, monkeypatch):
    """The outputs are computed outside the pytest process, in a stripped environment."""
    monkeypatch.setenv("HUMANEVAL_TEST_CANARY_KEY", "sk-canary-not-for-children")
    probe = ("    import os, sys, time\n    time.sleep(0.3)\n"
             "    return [os.getpid(), os.getcwd(), sorted(os.environ), sys.flags.isolated]\n")
    rows = [evalplus_row(f"T/{i}", probe, base_input=[[0]], plus_input=[]) for i in range(4)]
    problems, sha = problems_of(tmp_path, rows)
    blobs = plus.suite_blobs(problems, sha, root=tmp_path / "cache", workers=2)
    seen = [_wire.decode(blob)[1][0] for blob in blobs.values()]
    pids = {pid for pid, _, _, _ in seen}
    assert os.getpid() not in pids and len(pids) == 2, "two child processes, neither of them this one"
    for _, cwd, environ, isolated in seen:
        assert cwd != os.getcwd() and Path(cwd).name.startswith("humaneval-expected-")
        assert "HUMANEVAL_TEST_CANARY_KEY" not in environ and "HOME" not in environ
        assert isolated == 1
    assert not any(Path(cwd).exists() for _, cwd, _, _ in seen), "the working folders are removed"


def test_prints_and_stdin_are_harmless(tmp_path):
    """Prints and reads of stdin do not disturb the protocol."""
    solution = "    print('noise' * 1000)\n    import sys\n    return sys.stdin.read() + str(x)\n"
    problems, sha = problems_of(tmp_path, [evalplus_row(solution=solution)])
    suites = _wire.decode(plus.suite_blobs(problems, sha, root=tmp_path)["T/0"])
    assert suites[1] == ("1", "2") and suites[4] == ("3", "4", "5")


@pytest.mark.parametrize(
    ("solution", "expected"),
    [
        ("    if x == 4:\n        raise ValueError('no four')\n    return x\n",
         "T/0: canonical_solution: expected it to give an output for every input, found it failing on plus input "
         "1: raised ValueError: no four"),
        ("    return object() if x == 2 else x\n",
         "T/0: canonical_solution: expected it to give an output for every input, found it failing on base input "
         "1: returned a value of type builtins.object, which the plain-value format refuses"),
        ("    return (\n", "T/0: canonical_solution: expected it to give an output for every input, found it failing "
                           "when loading: SyntaxError: "),
        ("    import sys\n    sys.exit(3)\n", "found it failing on base input 0: raised SystemExit: 3"),
        ("    import os\n    os._exit(7)\n", "T/0: the process computing its expected outputs died (exit 7)"),
    ],
)
def test_no_output_names_task_and_input(tmp_path, solution, expected):
    """A canonical solution that gives no output is one error naming the task and the input."""
    problems, sha = problems_of(tmp_path, [evalplus_row(solution=solution)])
    with pytest.raises(DatasetError) as info:
        plus.suite_blobs(problems, sha, root=tmp_path)
    assert expected in str(info.value) and "\n" not in str(info.value)
    assert not any(plus.table_folder(sha, tmp_path).iterdir()), "nothing is cached for a failed task"


def test_hanging_canonical_is_stopped(tmp_path, monkeypatch):
    """A canonical solution that never returns is stopped."""
    monkeypatch.setattr(plus, "CALL_LIMIT_S", 1.0)
    problems, sha = problems_of(tmp_path, [evalplus_row(solution="    while x == 5:\n        pass\n    return x\n")])
    with pytest.raises(DatasetError, match="failing on plus input 2: did not return within 1 s"):
        plus.suite_blobs(problems, sha, root=tmp_path)


# ------------------------------------------------------------------------------------------ the cache


def test_table_is_cached(tmp_path, full, monkeypatch):
    """The table is computed once, then read from the cache."""
    chosen = [full["HumanEval/8"], full["HumanEval/20"]]
    first = plus.suite_blobs(chosen, "ab" * 32, root=tmp_path)
    folder = plus.table_folder("ab" * 32, tmp_path)
    assert sorted(p.name for p in folder.iterdir()) == ["HumanEval%2F20.wire", "HumanEval%2F8.wire"]

    def no_process(*args, **kwargs):
        raise AssertionError("a cached table starts no process")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    assert plus.suite_blobs(chosen, "ab" * 32, root=tmp_path) == first


def test_cache_is_keyed(tmp_path, monkeypatch):
    """The cache is keyed by the dataset, the python and the machine."""
    import platform

    base = plus.table_folder("12" * 32, tmp_path)
    assert base.parent == tmp_path / "expected"
    assert f"{sys.implementation.name}{platform.python_version()}" in base.name
    assert plus.table_folder("34" * 32, tmp_path) != base
    monkeypatch.setattr(platform, "python_version", lambda: "3.99.0")
    assert plus.table_folder("12" * 32, tmp_path) != base
    monkeypatch.undo()
    monkeypatch.setattr(platform, "node", lambda: "another-host")
    assert plus.table_folder("12" * 32, tmp_path) != base
    monkeypatch.undo()
    monkeypatch.setattr(platform, "machine", lambda: "riscv64")
    assert plus.table_folder("12" * 32, tmp_path) != base
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert plus.table_folder("12" * 32).parent == tmp_path / "xdg" / "pytest-humaneval" / "expected"


@pytest.mark.parametrize("damage", ["torn", "flipped", "garbage", "empty"])
def test_corrupt_cache_is_recomputed(tmp_path, damage):
    """A torn or corrupt cache file is computed again."""
    problems, sha = problems_of(tmp_path, [evalplus_row()])
    good = plus.suite_blobs(problems, sha, root=tmp_path)
    path = plus.table_folder(sha, tmp_path) / "T%2F0.wire"
    data = path.read_bytes()
    path.write_bytes({"torn": data[:-7], "flipped": data[:-3] + bytes([data[-3] ^ 1]) + data[-2:],
                      "garbage": b"not a table at all", "empty": b""}[damage])
    again = _wire.decode(plus.suite_blobs(problems, sha, root=tmp_path)["T/0"])
    before = _wire.decode(good["T/0"])
    assert again[:2] == before[:2] and again[3:5] == before[3:5], "the same table (times are measured anew)"
    assert again[2] != before[2] or again[5] != before[5], "computed again, not read from the damaged file"
    assert path.read_bytes() != data and _wire.decode(path.read_bytes()[plus.BLOB_OFFSET:]) == again


def test_suites_read_blobs_lazily(tmp_path, monkeypatch):
    """The suites read the blobs when asked, and keep only the last few."""
    rows = [evalplus_row(f"T/{i}", f"    return x + {i}\n") for i in range(4)]
    problems, sha = problems_of(tmp_path, rows)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    suites = plus.Suites(sha, problems)
    suites.ensure()
    assert list(suites) == ["T/0", "T/1", "T/2", "T/3"] and len(suites) == 4
    assert _wire.decode(suites["T/3"])[1] == (4, 5)
    path = suites.path("T/2")
    assert path.parent == plus.table_folder(sha) and _wire.decode(path.read_bytes()[plus.BLOB_OFFSET:])[4] == (5, 6, 7)
    assert list(suites._memo) == ["T/3"], "path() verifies the file without keeping its blob in memory"
    suites["T/2"]
    assert len(suites._memo) == plus.MEMO
    path.unlink()  # gone from the cache (but still in memory)
    suites["T/0"], suites["T/1"]  # pushes T/2 out of memory
    assert _wire.decode(suites["T/2"])[1] == (3, 4) and path.exists(), "a missing file is computed again on demand"
    assert suites == plus.Suites(sha, problems) and suites != plus.Suites(sha, problems[:2])
    assert suites.to_json() == {"dataset_sha256": sha}
    with pytest.raises(KeyError):
        suites["T/9"]


def test_cost_is_the_canonical_time(tmp_path, monkeypatch):
    """A task's cost (what the pool schedules by) is the canonical solution's timed calls, from the file's header."""
    rows = [evalplus_row("T/0"), evalplus_row("T/1", "    import time\n    time.sleep(0.04)\n    return x * 2\n")]
    problems, sha = problems_of(tmp_path, rows)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    computed = plus.Suites(sha, problems)
    assert computed.cost("T/1") == 0.0, "unknown before ensure()"
    computed.ensure()
    read = plus.Suites(sha, problems)
    read.ensure()  # from the cache this time: the headers
    for suites in (computed, read):
        _, _, base_s, _, _, plus_s, _ = _wire.decode(suites["T/1"])
        assert suites.cost("T/1") == pytest.approx(sum(base_s) + sum(plus_s)) and suites.cost("T/1") >= 0.2
        assert suites.cost("T/0") < 0.05 and suites.cost("T/9") == 0.0


def test_hunter_knows_the_cache_format():
    """The answer-key hunter (tests/hunter.py) looks for the cache files as they are written now."""
    from hunter import HUNTER

    from pytest_humaneval.sandbox import _expected

    assert 'EXPECTED_MAGIC = b"' + _expected.MAGIC.decode().replace("\n", "\\n") + '"' in HUNTER  # a raw string
    assert f"blob[len(EXPECTED_MAGIC) + {_expected.HEADER.size}:]" in HUNTER


# ------------------------------------------------------------------------------------------ time limits


def test_suite_limits():
    """The suite's limits are EvalPlus's per-input limits, and the suite's cap."""
    assert plus.suite_limits((0.1, 2.0), 4.0, 4.0) == ((4.0, 8.0), 13.0)
    assert plus.suite_limits((0.5, 0.01), 1.0, 4.0) == ((2.0, 1.0), 4.0)
    limits, cap = plus.suite_limits((0.001,) * 1000, 4.0, 4.0)
    assert limits == (4.0,) * 1000 and cap == 61.0, "min(60 s, sum of limits) + 1 s"
    assert plus.suite_limits((), 4.0, 4.0) == ((), 1.0)


# ------------------------------------------------------------------------------------------ the full dataset


@pytest.mark.slow
def test_every_canonical_output(full):
    """Every canonical solution of HumanEval+ gives an output for every input: the whole table, in the warm test cache
    (computed by the first session on a machine, then read)."""
    import time

    started = time.perf_counter()
    blobs = plus.suite_blobs(full.values(), load_dataset(FULL).sha256, root=WARM_XDG / "pytest-humaneval")
    seconds = time.perf_counter() - started
    assert list(blobs) == list(full)
    tuples, outputs = [], 0
    for task, blob in blobs.items():
        assert blob[:5] == b"t\x00\x00\x00\x07"
        if len(blob) > 50 << 20:  # HumanEval/15 and /130 (147 and 90 MB): decoding /130 alone takes seconds
            continue
        suites = _wire.decode(blob)
        assert len(suites[0]) == len(suites[1]) == len(suites[2]) == len(full[task].base_input)
        assert len(suites[3]) == len(suites[4]) == len(suites[5]) == len(full[task].plus_input)
        outputs += len(suites[1]) + len(suites[4])
        if any(type(out) is tuple for out in suites[1] + suites[4]):
            tuples.append(task)
    assert outputs == 1570 + 122683 - sum(len(full[task].base_input) + len(full[task].plus_input)
                                          for task in ("HumanEval/15", "HumanEval/130"))
    assert sorted(tuples, key=lambda t: int(t.split("/")[1])) == [
        "HumanEval/8", "HumanEval/20", "HumanEval/107", "HumanEval/112", "HumanEval/136", "HumanEval/148",
        "HumanEval/155"]
    print(f"the expected outputs of the full HumanEval+ took {seconds:.1f} s (computed or read)")


def test_bad_gzip_is_one_error(tmp_path):
    """A .gz file that is not gzip is one error."""
    bad = tmp_path / "plus.jsonl.gz"
    bad.write_bytes(gzip.compress(b'{"task_id": 1}\n')[:-8])
    with pytest.raises(DatasetError, match=f"{bad}: cannot read: "):
        load_dataset(bad)


def test_suites_path_is_verified_once(tmp_path, monkeypatch):
    """The suites' path verifies the file once, and computes a damaged one again."""
    # The sandbox reads the suites from this file (by descriptor): the first use in a process checks its length
    # and sha256; a file damaged before that is computed again, never handed to the judge as it is.
    rows = [evalplus_row("T/0", "    return x + 1\n")]
    problems, sha = problems_of(tmp_path, rows)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    plus.Suites(sha, problems).ensure()
    path = plus.table_folder(sha) / "T%2F0.wire"
    good = path.read_bytes()
    damaged = bytearray(good)
    damaged[-1] ^= 0xFF  # same length: only the digest can tell
    path.write_bytes(bytes(damaged))
    suites = plus.Suites(sha, problems)
    assert suites.path("T/0") == path
    again = path.read_bytes()
    assert again != bytes(damaged) and plus._whole(path)
    assert _wire.decode(again[plus.BLOB_OFFSET:])[:2] == _wire.decode(good[plus.BLOB_OFFSET:])[:2]
    path.write_bytes(bytes(damaged))
    assert suites.path("T/0") == path and path.read_bytes() == bytes(damaged), "verified once per process"
