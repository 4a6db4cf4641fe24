"""The verdict is the judge's: hostile completions against the real plugin, and the reference's semantics kept.

Every attack below is a *wrong* solution of HumanEval/2 (truncate_number) that tries to make its sample pass
without the nonce: each one came out `passed` when the test ran in the candidate's own process (the sandbox
before the judge), and each must fail now, serially and under xdist.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from programs import sample, script
from sessions import NO_CACHE

from pytest_humaneval import sandbox
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.sandbox import Limits, Sandbox, Status

FAST = Limits(timeout_s=2.0)
ANY = '''
class _Any:
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __sub__(self, other):
        return 0.0
'''
WRONG_BODY = "    return 0.0 if number != 3.5 else 0.5\n"  # right on the test's first assert only
RIGHT_ON_FIRST = "    return 0.5 if number == 3.5 else 99.0\n"
ATTACKS = {
    # The entry point deleted at module level made the old sandbox execute the whole program again, unguarded.
    "rerun_after_deleting_the_entry_point": WRONG_BODY + ANY + '''
import sys as _s
if getattr(_s, "_humaneval_second_run", False):
    def truncate_number(number):
        return _Any()
else:
    _s._humaneval_second_run = True
    del truncate_number
''',
    "json_dumps_poisoned": WRONG_BODY + '''
import json as _j
_real = _j.dumps
def _fake(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj.get("status") in ("assertion_failed", "runtime_error"):
        obj = {"status": "passed"}
    return _real(obj, *args, **kwargs)
_j.dumps = _fake
''',
    "stdout_flush_edits_the_verdict": WRONG_BODY + '''
import sys as _s
class _Out:
    def __init__(self, real):
        self.real = real
    def write(self, text):
        return self.real.write(text)
    def flush(self):
        frame = _s._getframe(1)
        while frame is not None:
            for value in list(frame.f_locals.values()):
                if isinstance(value, dict) and value.get("status") in ("assertion_failed", "runtime_error"):
                    value.clear()
                    value["status"] = "passed"
            frame = frame.f_back
        return self.real.flush()
_s.stdout = _Out(_s.stdout)
''',
    "system_exit_code_repr_edits_the_verdict": '''    class _Code:
        def __repr__(self):
            import sys
            frame = sys._getframe(1)
            while frame is not None:
                for value in list(frame.f_locals.values()):
                    if isinstance(value, dict) and value.get("status") == "runtime_error":
                        value["status"] = "passed"
                frame = frame.f_back
            return "0"
    raise SystemExit(_Code())
''',
    "harness_helper_replaced_in_main": ANY.replace("\n", "\n    ") + '''
    import sys
    for module in list(sys.modules.values()):
        if hasattr(module, "_plain"):
            module._plain = lambda value, depth=0: value
    return _Any()
''',
    "operator_is_patched": '''    import builtins, operator
    operator.is_ = lambda a, b: True
    builtins.abs = lambda x: 0
''' + RIGHT_ON_FIRST,
    "builtins_patched_at_module_level": RIGHT_ON_FIRST + "\n\nimport builtins as _b\n_b.abs = lambda x: 0\n",
    "test_helper_shadowed_by_a_global": RIGHT_ON_FIRST + "\n\nabs = lambda x: 0\n",
    "settrace_swaps_the_candidate": WRONG_BODY + ANY + '''
import sys as _s
def _tracer(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "check":
        frame.f_locals["candidate"] = lambda *args, **kwargs: _Any()
    return None
_s.settrace(_tracer)
''',
    "ctypes_rewrites_the_callers_locals": ANY.replace("\n", "\n    ") + '''
    import ctypes, sys
    frame = sys._getframe(1)
    while frame is not None and "candidate" not in frame.f_locals:
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["candidate"] = lambda *args, **kwargs: _Any()
        ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(frame), ctypes.c_int(0))
    return 0.5
''',
    # New with the judge: the candidate's own copy of the harness code is the candidate's to rewrite.
    "own_copy_of_the_harness_rewritten": WRONG_BODY + '''
import sys as _s
for _name, _module in list(_s.modules.items()):
    if "humaneval" in _name:
        for _attr in ("describe", "encode"):
            if hasattr(_module, _attr):
                setattr(_module, _attr, lambda *args, **kwargs: {"status": "passed", "where": ("test", "5")})
''',
    "racing_thread_forges_replies": '''    import os, struct, threading, time
    def forge():
        end = time.monotonic() + 1.0
        while time.monotonic() < end:
            for fd in range(3, 16):
                try:
                    os.write(fd, struct.pack(">I", 2) + b"VT")
                except OSError:
                    pass
    threading.Thread(target=forge, daemon=True).start()
''' + WRONG_BODY,
    "huge_frame_header": '''    import os, struct
    for fd in range(3, 16):
        try:
            os.write(fd, struct.pack(">I", 0xFFFFFFF0))
        except OSError:
            pass
''' + WRONG_BODY,
}


def _problem(task_id: str):
    return {p.task_id: p for p in load_problems()[1]}[task_id]


@pytest.mark.slow
@pytest.mark.parametrize("workers", [None, "2"], ids=["serial", "xdist"])
def test_no_hostile_completion_passes(pytester, workers):
    """No hostile completion turns a wrong answer into passed."""
    rows = [{"task_id": "HumanEval/2", "completion": text} for text in ATTACKS.values()]
    rows.append({"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"})  # the honest control
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (pytester.path / "humaneval.yaml").write_text(
        "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true, timeout_s: 3}\n")
    args = ["--humaneval-config", "humaneval.yaml", "--humaneval-results", "results.jsonl", *NO_CACHE]
    result = pytester.runpytest(*args, *(["-n", workers] if workers else ["-p", "no:xdist"]))
    results = sorted((json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()),
                     key=lambda row: row["sample"])
    verdicts = {name: row["status"] for name, row in zip(ATTACKS, results[:-1], strict=True)}
    assert [name for name, status in verdicts.items() if status == "passed"] == []
    assert set(verdicts.values()) <= {"assertion_failed", "runtime_error"}, verdicts
    assert results[-1]["status"] == "passed", results[-1]
    result.assert_outcomes(passed=1, failed=len(ATTACKS))


@pytest.fixture(scope="module")
def box():
    box = Sandbox().start()
    yield box
    box.close()


def judged(box: Sandbox, completion: str, test: str, entry_point: str = "f", limits: Limits = FAST):
    return box.run(sample(completion, test, entry_point), limits)


# -- the reference's semantics, decided one by one ------------------------------------------------------------

def test_exceptions_keep_type_and_message(box):
    """Exceptions reach the test as the same builtin type, with the same message."""
    raising = "class Invalid(ValueError):\n    pass\n\ndef f(x):\n    if x < 0:\n        raise Invalid('negative')\n" \
              "    return x\n"
    caught = ("def check(candidate):\n    try:\n        candidate(-1)\n    except ValueError as exc:\n"
              "        assert str(exc) == 'negative'\n    else:\n        assert False\n    assert candidate(2) == 2\n")
    assert judged(box, raising, caught).status is Status.PASSED
    wrong_type = judged(box, "def f(x):\n    raise TypeError('no')\n", caught)
    assert wrong_type.status is Status.RUNTIME_ERROR
    assert wrong_type.detail == "TypeError: no (at completion line 2: raise TypeError('no'))"
    key = judged(box, "def f(x):\n    return {}[x]\n", "def check(candidate):\n    candidate('k')\n")
    assert key.detail == "KeyError: 'k' (at completion line 2: return {}[x])"
    own_assert = judged(box, "def f(x):\n    assert x > 0, 'positive only'\n", "def check(candidate):\n"
                             "    candidate(-1)\n")
    assert own_assert.status is Status.ASSERTION_FAILED and "positive only" in own_assert.detail


def test_returned_generator_is_consumable(box):
    """A returned generator is not a list, but can be consumed."""
    gen = "def f(n):\n    return (i * i for i in range(n))\n"
    assert judged(box, gen, "def check(candidate):\n    assert candidate(3) == [0, 1, 4]\n").status \
        is Status.ASSERTION_FAILED
    assert judged(box, gen, "def check(candidate):\n    assert list(candidate(3)) == [0, 1, 4]\n"
                            "    it = candidate(2)\n    assert next(it) == 0 and next(it) == 1\n").status \
        is Status.PASSED
    raising = "def f(n):\n    yield 1\n    raise ValueError('in the middle')\n"
    broken = judged(box, raising, "def check(candidate):\n    assert list(candidate(1)) == [1]\n")
    assert broken.status is Status.RUNTIME_ERROR and "in the middle" in broken.detail
    assert judged(box, "def f(n):\n    return map(str, range(n))\n",
                  "def check(candidate):\n    assert list(candidate(2)) == ['0', '1']\n").status is Status.PASSED


def test_identity_checks_as_reference(box):
    """Identity checks on None, True and False behave as in the reference."""
    test = "def check(candidate):\n    assert candidate(0) is None\n    assert candidate(1) is True\n" \
           "    assert candidate(2) is False\n"
    assert judged(box, "def f(x):\n    return [None, True, False][x]\n", test).status is Status.PASSED
    assert judged(box, "def f(x):\n    return [None, 1, 0][x]\n", test).status is Status.ASSERTION_FAILED


def test_in_place_changes_reach_the_test(box):
    """Arguments the candidate changes in place are changed for the test."""
    test = ("def check(candidate):\n    values = [3, 1, 2]\n    table = {'a': 1}\n    seen = {1}\n"
            "    assert candidate(values, table, seen) is None\n    assert values == [1, 2, 3]\n"
            "    assert table == {'a': 1, 'b': 2} and seen == {1, 2}\n")
    mutating = "def f(values, table, seen):\n    values.sort()\n    table['b'] = 2\n    seen.add(2)\n"
    assert judged(box, mutating, test).status is Status.PASSED
    assert judged(box, "def f(values, table, seen):\n    return None\n", test).status is Status.ASSERTION_FAILED


def test_special_values_cross_exactly(box):
    completion = "def f(x):\n    return [float('nan'), -0.0, 10 ** 100, '\\ud800', b'\\x00', 1j, (1,), {2}][x]\n"
    test = ("import math\ndef check(candidate):\n    assert math.isnan(candidate(0))\n"
            "    assert math.copysign(1, candidate(1)) == -1\n    assert candidate(2) == 10 ** 100\n"
            "    assert candidate(3) == '\\ud800' and candidate(4) == b'\\x00' and candidate(5) == 1j\n"
            "    assert candidate(6) == (1,) and candidate(7) == {2}\n")
    result = judged(box, completion, test)
    assert result.status is Status.PASSED, result.detail


def test_keyword_arguments_cross(box):
    """Keyword arguments reach the candidate."""
    assert judged(box, "def f(a, b=1, *, c=0):\n    return a + b + c\n",
                  "def check(candidate):\n    assert candidate(1, b=2, c=3) == 6\n").status is Status.PASSED


def test_recursion_limit(box):
    """Recursion deep enough for honest code, and a runaway one fails."""
    recursive = "def f(n):\n    return 0 if n == 0 else 1 + f(n - 1)\n"
    assert judged(box, recursive, "def check(candidate):\n    assert candidate(900) == 900\n").status \
        is Status.PASSED
    runaway = judged(box, recursive, "def check(candidate):\n    candidate(10 ** 6)\n")
    assert runaway.status is Status.RUNTIME_ERROR and "RecursionError" in runaway.detail


def test_silent_candidate_times_out(box):
    """A candidate that never answers times out within the budget."""
    import time

    started = time.monotonic()
    result = judged(box, "def f(x):\n    while True:\n        pass\n", "def check(candidate):\n    candidate(1)\n",
                    limits=Limits(timeout_s=1.0))
    # (on a busy machine a starved busy loop is judged once more, and says so: two attempts at most)
    assert result.status is Status.TIMEOUT and result.detail.split("; judged twice")[0] == "timed out after 1 s"
    assert time.monotonic() - started < 2 * 1.0 + 3.0
    assert judged(box, "def f(x):\n    return x\n", "def check(candidate):\n    assert candidate(1) == 1\n").status \
        is Status.PASSED


def test_print_fork_exit_between_calls(box):
    """Printing, forking and exiting between calls."""
    chatty = judged(box, "def f(x):\n    print('called with', x)\n    return x\n",
                    "def check(candidate):\n    assert candidate(1) == 1\n    assert candidate(2) == 2\n")
    assert chatty.status is Status.PASSED and chatty.stdout == "called with 1\ncalled with 2\n"
    forking = judged(box, "import os\ndef f(x):\n    if os.fork() == 0:\n        os._exit(0)\n    os.wait()\n"
                          "    return x\n", "def check(candidate):\n    assert candidate(1) == 1\n"
                                           "    assert candidate(2) == 2\n")
    assert forking.status is Status.PASSED, forking.detail
    exiting = judged(box, "import os\ncalls = []\ndef f(x):\n    calls.append(x)\n    if len(calls) > 1:\n"
                          "        os._exit(0)\n    return x\n",
                     "def check(candidate):\n    assert candidate(1) == 1\n    assert candidate(2) == 2\n")
    assert exiting.status is Status.RUNTIME_ERROR
    assert exiting.detail == "the program ended with exit code 0 before check() finished"


@pytest.mark.slow
def test_swallowed_failure_is_no_pass(box):
    """A test that swallows the candidate's failure cannot turn it into a pass."""
    swallowing = "def check(candidate):\n    try:\n        candidate(1)\n    except:\n        pass\n"
    rigged = judged(box, "def f(x):\n    class R:\n        pass\n    return R()\n", swallowing)
    assert rigged.status is Status.RUNTIME_ERROR and "plain values only" in rigged.detail
    gone = judged(box, "import os\ndef f(x):\n    os._exit(0)\n", swallowing)
    assert gone.status is Status.RUNTIME_ERROR and "exit code 0" in gone.detail
    looping = judged(box, "def f(x):\n    while True:\n        pass\n", swallowing, limits=Limits(timeout_s=1.0))
    assert looping.status is Status.TIMEOUT


def test_malformed_reply_is_candidates(box):
    """Malformed replies are the candidate's runtime error."""
    writes = {
        "garbage": "os.write(4, b'\\x00\\x00\\x00\\x05Vzzzz')",
        "deep": "os.write(4, struct.pack('>I', 1 + 5 * 150 + 1) + b'V' + b'l\\x00\\x00\\x00\\x01' * 150 + b'N')",
        "huge": "os.write(4, struct.pack('>I', 0xFFFFFFFF))",
        "closed": "os.close(4)",
    }
    for name, write in writes.items():
        completion = f"import os, struct\ndef f(x):\n    {write}\n    import time\n    time.sleep(5)\n"
        result = judged(box, completion, "def check(candidate):\n    candidate(1)\n")
        assert result.status is Status.RUNTIME_ERROR, (name, result)
        assert "protocol" in result.detail or "closed its channel" in result.detail, (name, result.detail)


def test_annotations_need_imports(box):
    """Annotations need their imports, as in the reference."""
    # The harness's own `from __future__ import annotations` must not reach a completion's compile.
    completion = "def f(values) -> List[int]:\n    return values\n"
    result = judged(box, completion, "def check(candidate):\n    assert candidate([1]) == [1]\n")
    assert result.status is Status.RUNTIME_ERROR and "NameError: name 'List' is not defined" in result.detail


def test_helpers_are_datasets_copies(box):
    """The test's helpers are the dataset's own copies."""
    # HumanEval/38: the test encodes with the prompt's encode_cyclic. A completion that redefines both
    # helpers as the identity would pass the reference; here the test keeps the dataset's encoder.
    problem = _problem("HumanEval/38")
    cheat = "    return s\n\n\ndef encode_cyclic(s: str):\n    return s\n"
    result = box.run(sandbox.Program(problem.prompt, cheat, problem.test, problem.entry_point), FAST)
    assert result.status is Status.ASSERTION_FAILED
    honest = box.run(sandbox.Program(problem.prompt, problem.canonical_solution, problem.test,
                                     problem.entry_point), FAST)
    assert honest.status is Status.PASSED


def test_entry_point_calls_candidate(box):
    """A test naming the entry point calls the candidate."""
    problem = _problem("HumanEval/33")  # compares candidate(x) with sort_third(x), the entry point by name
    assert box.run(sandbox.Program(problem.prompt, problem.canonical_solution, problem.test,
                                   problem.entry_point), FAST).status is Status.PASSED


# -- the judge process is the harness's: a misbehaving test does not take it down -------------------------------

@pytest.mark.slow
def test_test_leaves_next_sample_alone(box):
    """A test that loops, prints or rebinds builtins leaves the next sample alone."""
    honest = ("def f(x):\n    return x\n", "def check(candidate):\n    assert candidate(len([1, 2])) == 2\n")
    looping = judged(box, "def f(x):\n    return x\n", "def check(candidate):\n    candidate(1)\n"
                     "    while True:\n        pass\n", limits=Limits(timeout_s=1.0))
    assert looping.status is Status.TIMEOUT
    swallowing = judged(box, "def f(x):\n    return x\n", "def check(candidate):\n    while True:\n"
                        "        try:\n            while True:\n                pass\n        except BaseException:\n"
                        "            pass\n", limits=Limits(timeout_s=0.5))
    assert swallowing.status is Status.TIMEOUT
    assert judged(box, *honest).status is Status.PASSED
    noisy = judged(box, "def f(x):\n    return x\n", "import builtins, sys\ndef check(candidate):\n"
                   "    print('to the harness?')\n    sys.stdout.write('x' * 100000)\n    assert sys.stdin.read() == ''\n"
                   "    builtins.len = lambda value: 0\n")
    assert noisy.status is Status.PASSED, noisy.detail
    assert judged(box, *honest).status is Status.PASSED


def test_broken_test_is_harness_error(box):
    """A broken dataset test is a harness error, not the model's failure."""
    with pytest.raises(sandbox.SandboxError, match="did not load"):
        judged(box, "def f(x):\n    return x\n", "import no_such_module_xyz\ndef check(candidate):\n    pass\n")
    # A candidate that breaks, in its own process, what the test imports changes nothing: the test never runs
    # there (the reference would fail it: there the test's imports run in the candidate's namespace).
    sabotage = "import sys\nsys.modules['fractions'] = None\ndef f(x):\n    return x\n"
    result = judged(box, sabotage, "import fractions\ndef check(candidate):\n    assert candidate(1) == 1\n")
    assert result.status is Status.PASSED, result.detail
    assert judged(box, "def f(x):\n    return x\n", "def check(candidate):\n    assert candidate(1) == 1\n").status \
        is Status.PASSED


def test_failed_load_never_reaches_test(box):
    """A script that fails while loading never reaches the test."""
    result = box.run(script("raise ValueError('at load')"), FAST)
    assert result.status is Status.RUNTIME_ERROR and result.detail.startswith("ValueError: at load")


# -- replies from the supervisor are validated ------------------------------------------------------------------

PROGRAM = sample("    return x\n", "def check(c):\n    assert c(1) == 2\n", prompt="def f(x):\n")


@pytest.mark.parametrize(("reply", "message"), [
    ({"id": 2, "status": "passed", "duration_ms": 1.0}, "other than this sample"),
    ({"id": 1, "status": "won", "duration_ms": 1.0}, "unknown status"),
    ({"id": 1, "status": "passed", "duration_ms": math.nan}, "invalid duration"),
    ({"id": 1, "status": "passed", "duration_ms": "3"}, "invalid duration"),
    ({"id": 1, "status": "passed", "duration_ms": True}, "invalid duration"),
    ({"id": 1, "status": "passed", "duration_ms": 1.0, "stdout": 5}, "not text"),
    ({"id": 1, "status": "harness_error", "duration_ms": 1.0, "detail": "it broke"}, "it broke"),
    ([], "other than this sample"),
])
def test_invalid_reply_is_sandbox_error(reply, message):
    with pytest.raises(sandbox.SandboxError, match=message):
        sandbox.harness._result(reply, 1, PROGRAM)


def test_malformed_location_is_dropped():
    """A reply with a malformed location keeps its verdict, without one."""
    for where in (["test", "2"], ["test", 99], ["nowhere", 1], "test line 2", [None, None, None]):
        result = sandbox.harness._result({"id": 1, "status": "assertion_failed", "duration_ms": 1.0,
                                  "detail": "AssertionError", "where": where}, 1, PROGRAM)
        assert result.status is Status.ASSERTION_FAILED and result.detail == "AssertionError"


def test_candidate_text_safe_and_capped():
    """Text from a candidate is made safe and capped."""
    reply = {"id": 1, "status": "runtime_error", "duration_ms": 1.0,
             "detail": "ValueError: bad \ud800 \x1b[2J\x1b]0;title\x07 \r==== 164 passed ====\x9b" + "x" * 5000,
             "stdout": "\x1b[31mred\x1b[0m\n\ttab", "stderr": "é\u2028 \u202egnp.exe \u2066x\u2069 a\u200bb"}
    result = sandbox.harness._result(reply, 1, PROGRAM)
    assert result.detail.startswith("ValueError: bad \\ud800 \\x1b[2J\\x1b]0;title\\x07 \\x0d==== 164 passed")
    assert len(result.detail) <= sandbox.DETAIL_MAX
    assert result.stdout == "\\x1b[31mred\\x1b[0m\n\ttab"
    # Bidi overrides and isolates, zero-width and line-separator characters reorder or hide what a person reads.
    assert result.stderr == "é\\u2028 \\u202egnp.exe \\u2066x\\u2069 a\\u200bb"
    for text in (result.detail, result.stdout):
        text.encode("utf-8")  # nothing execnet or a terminal would refuse


@pytest.mark.slow
def test_surrogate_in_exception_under_xdist(pytester):
    """A lone surrogate in an exception does not break an xdist run."""
    (pytester.path / "samples.jsonl").write_text(
        json.dumps({"task_id": "HumanEval/2", "completion": "    raise ValueError('bad \\ud800 \\x1b[2J')\n"}) + "\n"
        + json.dumps({"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}) + "\n")
    (pytester.path / "humaneval.yaml").write_text(
        "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "humaneval.yaml", "-n", "2", "--junitxml", "junit.xml",
                                "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(passed=1, failed=1)
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    failed = next(row for row in rows if row["status"] != "passed")
    assert failed["status"] == "runtime_error" and "bad \\ud800 \\x1b[2J" in failed["detail"]
    assert "\x1b" not in result.stdout.str()


@pytest.mark.slow
def test_unprocessable_result_is_harness_error(pytester):
    """A sample whose result cannot be processed is a harness error, not "not run"."""
    pytester.makeconftest("""
import pytest_humaneval.sandbox as sandbox
real = sandbox.Sandbox.run
def broken(*args, **kwargs):
    raise ValueError("post-processing failed")
def pytest_configure(config):
    sandbox.Sandbox.run = broken
def pytest_unconfigure(config):
    sandbox.Sandbox.run = real  # this session runs inside the test process: leave the class as it was
""")
    (pytester.path / "samples.jsonl").write_text(
        json.dumps({"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"}) + "\n")
    (pytester.path / "humaneval.yaml").write_text(
        "target: {mode: samples, samples: samples.jsonl, allow_subset: true}\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "humaneval.yaml", "-p", "no:xdist",
                                "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(errors=1)
    row = json.loads((pytester.path / "results.jsonl").read_text())
    assert row["status"] == "harness_error" and "post-processing failed" in row["detail"]


@pytest.mark.slow
def test_numpy_results_as_reference(box):
    """NumPy results compare as they do in the reference."""
    pytest.importorskip("numpy")
    scalar = judged(box, "import numpy as np\ndef f(x):\n    return np.int64(x) * 2\n",
                    "def check(candidate):\n    assert candidate(2) == 4\n")
    assert scalar.status is Status.PASSED
    # `array == list` is an array, whose truth value is ambiguous: the reference fails this sample too.
    array = judged(box, "import numpy as np\ndef f(x):\n    return np.array([x, x])\n",
                   "def check(candidate):\n    assert candidate(1) == [1, 1]\n")
    assert array.status is Status.RUNTIME_ERROR and "ambiguous" in array.detail
    listed = judged(box, "import numpy as np\ndef f(x):\n    return np.array([x, x])\n",
                    "def check(candidate):\n    assert list(candidate(1)) == [1, 1]\n")
    assert listed.status is Status.PASSED, listed.detail


@pytest.mark.skipif(sys.platform != "linux", reason="the sandbox is Linux-only")
def test_supervisor_imports_no_package():
    """The supervisor's files import nothing of the package."""
    for name in sandbox.SANDBOX_FILES:
        text = (Path(sandbox.__file__).with_name(name)).read_text()
        assert "import pytest" not in text and "from pytest_humaneval" not in text, name


def test_forged_exception_is_candidates(box):
    """A forged exception record is the candidate's failure, not the judge's."""
    forged = ("import os, sys\ndef f(x):\n    wire = sys.modules['_humaneval_wire']\n"
              "    wire.write_frame(4, b'X', wire.encode({'type': 'ValueError', 'message': 'ValueError: wrong',\n"
              "                                           'traceback': 10 ** 5000, 'where': ('test', 'x'),\n"
              "                                           'args': [1]}))\n    os._exit(0)\n")
    result = judged(box, forged, "def check(candidate):\n    assert candidate(1) == 1\n")
    assert result.status is Status.RUNTIME_ERROR and result.detail == "ValueError: wrong"
