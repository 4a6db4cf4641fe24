"""HumanEval+ judging in the sandbox: EvalPlus's rules, on plain values, each suite against a fresh candidate.

Suites here are small and made by hand (inputs, the expected outputs, the canonical solution's times), so each
rule is exercised on its own; the whole dataset is judged in test_plus_dataset.py and bench/.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

import pytest

from pytest_humaneval.sandbox import Limits, Program, Sandbox, Status, Suite, _wire

TINY = 1e-6  # the canonical solution's time on an input: the limits come from the minimum


_FILES = tempfile.mkdtemp(prefix="humaneval-test-suites-")
atexit.register(shutil.rmtree, _FILES, True)


def suite(base, plus=((), ()), atol=0.0, seconds=TINY, oracle=None, min_time_limit_s=1.0):
    """A Suite from (inputs, expected) pairs for base and plus, in a file as the plugin's cache holds them (a
    header, then the blob)."""
    (base_in, base_out), (plus_in, plus_out) = base, plus
    blob = _wire.encode((tuple(tuple(a) for a in base_in), list(base_out), [seconds] * len(base_in),
                         tuple(tuple(a) for a in plus_in), list(plus_out), [seconds] * len(plus_in), atol))
    handle, path = tempfile.mkstemp(dir=_FILES)
    with os.fdopen(handle, "wb") as stream:
        stream.write(b"HEADER" + blob)
    return Suite(path, offset=6, min_time_limit_s=min_time_limit_s, time_limit_factor=4.0, oracle=oracle)


@pytest.fixture(scope="module")
def box():
    box = Sandbox().start()
    yield box
    box.close()


def judged(box, body: str, the_suite: Suite, entry_point: str = "f", signature: str = "(*args)"):
    prompt = f"def {entry_point}{signature}:\n"
    return box.run(Program(prompt, body, "", entry_point, the_suite), Limits(timeout_s=3.0))


def test_both_suites_pass(box):
    """Both suites pass, and the statuses are kept apart."""
    the_suite = suite(([[1], [2]], [2, 4]), ([[3]], [6]))
    result = judged(box, "    return args[0] * 2\n", the_suite)
    assert result.status is Status.PASSED
    assert result.suites == {"base": {"status": "passed", "detail": ""}, "plus": {"status": "passed", "detail": ""}}
    wrong_plus = judged(box, "    return args[0] * 2 if args[0] < 3 else 0\n", the_suite)
    assert wrong_plus.status is Status.ASSERTION_FAILED
    assert wrong_plus.suites["base"]["status"] == "passed"
    assert wrong_plus.suites["plus"]["detail"] == "input #0: f(3) returned 0, expected 6"
    assert wrong_plus.detail == "plus: input #0: f(3) returned 0, expected 6"


def test_plus_runs_after_base_fails(box):
    """The plus suite runs even when base failed, and in a fresh process."""
    counting = "    global calls\n    calls = globals().get('calls', 0) + 1\n    print('call', calls)\n" \
               "    return 0 if args[0] == 1 else calls\n"
    result = judged(box, counting, suite(([[1]], [1]), ([[2], [2]], [1, 2])))
    assert result.suites["base"]["status"] == "assertion_failed"
    assert result.suites["plus"]["status"] == "passed"  # a fresh process: its module state starts over
    assert result.status is Status.ASSERTION_FAILED and result.detail.startswith("base: ")


def test_suite_stops_at_first_failure(box):
    """A suite stops at its first failing input."""
    body = "    print('input', args[0])\n    return args[0] if args[0] != 2 else -1\n"
    result = judged(box, body, suite(([[1], [2], [3], [4]], [1, 2, 3, 4])))
    assert result.status is Status.ASSERTION_FAILED
    assert result.suites["base"]["detail"] == "input #1: f(2) returned -1, expected 2"
    # The calls are pipelined: the candidate may have started the next inputs before the judge saw the failure.
    assert result.stdout.startswith("input 1\ninput 2\n")


@pytest.mark.slow
def test_pipelined_inputs_timing(box):
    """Pipelined inputs are each timed from when the candidate was free for them."""
    # Five inputs of 0.3 s each, every request written at once: each input gets its own 0.5 s, not the time
    # since its request was written (which would time out the second).
    steady = "    import time\n    time.sleep(0.3)\n    return args[0]\n"
    result = judged(box, steady, suite(([[i] for i in range(5)], list(range(5))), min_time_limit_s=0.5))
    assert result.status is Status.PASSED, result.detail
    # One slow input among them is still caught, by its own limit.
    uneven = "    import time\n    time.sleep(0.9 if args[0] == 3 else 0.05)\n    return args[0]\n"
    result = judged(box, uneven, suite(([[i] for i in range(5)], list(range(5))), min_time_limit_s=0.5))
    assert result.status is Status.TIMEOUT
    assert result.suites["base"]["detail"] == "input #3: f(3) took longer than its 0.5 s limit"


@pytest.mark.slow
def test_load_time_is_not_counted(box):
    """The program's load is not counted in its first input's limit."""
    # EvalPlus execs the program before its first timed call: a slow import-time setup only counts against the
    # suite's cap, and one that never ends is a timeout of the suite.
    slow_load = "    return args[0]\n\nimport time\ntime.sleep(0.8)\n"
    result = judged(box, slow_load, suite(([[1]], [1]), min_time_limit_s=0.5))
    assert result.status is Status.PASSED, result.detail
    endless = "    return args[0]\n\nwhile True:\n    pass\n"
    result = judged(box, endless, suite(([[1]], [1]), min_time_limit_s=0.5))
    assert result.status is Status.TIMEOUT
    assert result.suites["base"]["detail"] == "the program was still loading when the suite's 1.5 s limit ran out"


def test_float_tolerance_and_types(box):
    """Floats within the tolerance pass, and the types must match."""
    floats = suite(([[1.0], [2.0]], [0.1, 0.2]))  # float-like: atol becomes 1e-6
    assert judged(box, "    return args[0] / 10 + 5e-7\n", floats).status is Status.PASSED
    off = judged(box, "    return args[0] / 10 + 1e-3\n", floats)
    assert off.status is Status.ASSERTION_FAILED and "returned 0.101, expected 0.1" in off.detail
    as_text = judged(box, "    return str(args[0] / 10)\n", floats)
    assert as_text.status is Status.ASSERTION_FAILED
    task_atol = suite(([[3.5]], [0.5]), atol=1e-2)  # the task's own atol
    assert judged(box, "    return 0.505\n", task_atol).status is Status.PASSED
    exact_int = suite(([[1]], [2.0]))  # 2 == 2.0 holds exactly: EvalPlus's cross-type equality
    assert judged(box, "    return 2\n", exact_int).status is Status.PASSED
    not_close_int = judged(box, "    return 3\n", exact_int)
    assert not_close_int.status is Status.ASSERTION_FAILED  # not exact, and an int is not a float


# EvalPlus 0.3.1 (evalplus/eval/__init__.py, unsafe_execute): `out == exp`, else, within the tolerance,
# `assert type(out) == type(exp)` on the candidate's own output before `np.allclose`. So a float subclass that is
# close but not equal fails there; one that is equal passes; a list holding numpy floats is a list. On 2b2788d the
# candidate's float64 crossed as a float and passed within the tolerance.
_CLOSE = "args[0] / 10 + 5e-7"
_FLOAT_SUBCLASS = "    class F(float):\n        pass\n"


@pytest.mark.parametrize(("body", "status"), [
    (f"    import numpy\n    return numpy.float64({_CLOSE})\n", Status.ASSERTION_FAILED),
    (f"    import numpy\n    return numpy.float32({_CLOSE})\n", Status.ASSERTION_FAILED),
    (f"{_FLOAT_SUBCLASS}    return F({_CLOSE})\n", Status.ASSERTION_FAILED),
    ("    import numpy\n    return numpy.float64(args[0] / 10)\n", Status.PASSED),  # equal: `==` decides
    (f"{_FLOAT_SUBCLASS}    return F(args[0] / 10)\n", Status.PASSED),
    (f"    import numpy\n    return float(numpy.float64({_CLOSE}))\n", Status.PASSED),
], ids=["float64-close", "float32-close", "subclass-close", "float64-equal", "subclass-equal", "float-close"])
@pytest.mark.parametrize("oracle", [None, "surface_area"], ids=["humanevalplus", "mbppplus-surface-area"])
def test_float_subclasses_follow_evalplus_s_type_rule(box, body, status, oracle):
    """A float subclass (numpy's float64) passes only when equal: EvalPlus checks the type before its tolerance."""
    # surface_area: an MBPP+ oracle whose exact match is its own rule (here never met: the areas are 3 and 8),
    # after which EvalPlus's tolerance and type rule apply as to any task.
    floats = suite(([[1.0, 1.0], [2.0, 1.0]], [0.1, 0.2]), oracle=oracle)
    assert judged(box, body, floats).status is status


@pytest.mark.parametrize(("body", "status"), [
    ("    import numpy\n    return [numpy.float64(1.0), numpy.float64(2.0 + 1e-7)]\n", Status.PASSED),
    ("    class L(list):\n        pass\n    return L([1.0, 2.0 + 1e-7])\n", Status.ASSERTION_FAILED),
    ("    class L(list):\n        pass\n    return L([1.0, 2.0])\n", Status.PASSED),
    ("    import numpy\n    return numpy.array([1.0, 2.0 + 1e-7])\n", Status.ASSERTION_FAILED),
], ids=["list-of-float64", "list-subclass-close", "list-subclass-equal", "array"])
def test_sequences_follow_evalplus_s_type_rule(box, body, status):
    """Within the tolerance, a list of numpy floats is a list; a list subclass or an array is not."""
    pairs = suite(([[0]], [[1.0, 2.0]]))
    assert judged(box, body, pairs).status is status


def test_tolerance_holds_for_the_suite(box):
    """A tolerance set by a float output holds for the rest of the suite."""
    # EvalPlus's quirk: once an expected output is float-like with atol 0, atol is 1e-6 for the later inputs.
    mixed = suite(([[0], [1]], [0.5, [1.0, 2.0]]))
    assert judged(box, "    return 0.5 if args[0] == 0 else [1.0, 2.0000001]\n", mixed).status is Status.PASSED
    ints_first = suite(([[0], [1]], [[1, 2], 0.5]))
    assert judged(box, "    return [1, 2.0000001] if args[0] == 0 else 0.5\n", ints_first).status \
        is Status.ASSERTION_FAILED


def test_tuples_stay_tuples(box):
    pair = suite(([[7]], [(1, 6)]))
    assert judged(box, "    return (1, 6)\n", pair).status is Status.PASSED
    assert judged(box, "    return [1, 6]\n", pair).status is Status.ASSERTION_FAILED


def test_root_oracle_accepts_any_root(box):
    """The polynomial root oracle accepts any root."""
    cubic = suite(([[[-6, 11, -6, 1]]], [1.0]), atol=1e-4, oracle="polynomial_root")  # roots 1, 2 and 3
    for root in ("2.0", "3.0000000001", "1"):
        assert judged(box, f"    return {root}\n", cubic).status is Status.PASSED, root
    far = judged(box, "    return 5.0\n", cubic)
    assert far.status is Status.ASSERTION_FAILED and "not a root of the polynomial" in far.detail
    assert judged(box, "    return 'two'\n", cubic).status is Status.ASSERTION_FAILED


def test_slow_input_times_out(box):
    """An input over its limit is a timeout, and ends the suite."""
    slow = "    import time\n    print('input', args[0])\n    if args[0] == 2:\n        time.sleep(10)\n" \
           "    return args[0]\n"
    result = judged(box, slow, suite(([[1], [2], [3]], [1, 2, 3]), min_time_limit_s=0.3))
    assert result.status is Status.TIMEOUT
    assert result.suites["base"]["detail"] == "input #1: f(2) took longer than its 0.3 s limit"
    assert result.stdout == "input 1\ninput 2\n"


def test_always_equal_object_fails(box):
    """An always-equal object fails where EvalPlus would pass it."""
    rigged = "    class Always:\n        def __eq__(self, other):\n            return True\n    return Always()\n"
    result = judged(box, rigged, suite(([[1]], [1]), ([[2]], [(2, 3)])))
    assert result.status is Status.RUNTIME_ERROR
    assert result.suites["base"]["status"] == result.suites["plus"]["status"] == "runtime_error"
    assert "plain values only" in result.suites["base"]["detail"]


def test_errors_fail_their_suites(box):
    """Exceptions, exits and programs that do not load fail their suites."""
    the_suite = suite(([[1]], [1]), ([[2]], [2]))
    raising = judged(box, "    raise ValueError('no')\n", the_suite)
    assert raising.status is Status.RUNTIME_ERROR and raising.detail.startswith("base: input #0: f(1): ValueError")
    exiting = judged(box, "    import os\n    os._exit(0)\n", the_suite)
    assert exiting.status is Status.RUNTIME_ERROR and "exit code 0" in exiting.detail
    broken = judged(box, "    return (\n", the_suite)
    assert broken.status is Status.RUNTIME_ERROR and "SyntaxError" in broken.detail
    assert broken.suites["plus"]["status"] == "runtime_error"


def test_empty_suite_needs_a_load(box):
    """An empty suite still needs a program that loads."""
    empty = suite(([[1]], [1]), ((), ()))
    assert judged(box, "    return args[0]\n", empty).status is Status.PASSED
    assert judged(box, "    return (\n", empty).suites["plus"]["status"] == "runtime_error"
