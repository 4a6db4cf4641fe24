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


def test_both_suites_pass_and_the_statuses_are_kept_apart(box):
    the_suite = suite(([[1], [2]], [2, 4]), ([[3]], [6]))
    result = judged(box, "    return args[0] * 2\n", the_suite)
    assert result.status is Status.PASSED
    assert result.suites == {"base": {"status": "passed", "detail": ""}, "plus": {"status": "passed", "detail": ""}}
    wrong_plus = judged(box, "    return args[0] * 2 if args[0] < 3 else 0\n", the_suite)
    assert wrong_plus.status is Status.ASSERTION_FAILED
    assert wrong_plus.suites["base"]["status"] == "passed"
    assert wrong_plus.suites["plus"]["detail"] == "input #0: f(3) returned 0, expected 6"
    assert wrong_plus.detail == "plus: input #0: f(3) returned 0, expected 6"


def test_the_plus_suite_runs_even_when_base_failed_and_in_a_fresh_process(box):
    counting = "    global calls\n    calls = globals().get('calls', 0) + 1\n    print('call', calls)\n" \
               "    return 0 if args[0] == 1 else calls\n"
    result = judged(box, counting, suite(([[1]], [1]), ([[2], [2]], [1, 2])))
    assert result.suites["base"]["status"] == "assertion_failed"
    assert result.suites["plus"]["status"] == "passed"  # a fresh process: its module state starts over
    assert result.status is Status.ASSERTION_FAILED and result.detail.startswith("base: ")


def test_a_suite_stops_at_its_first_failing_input(box):
    body = "    print('input', args[0])\n    return args[0] if args[0] != 2 else -1\n"
    result = judged(box, body, suite(([[1], [2], [3], [4]], [1, 2, 3, 4])))
    assert result.status is Status.ASSERTION_FAILED
    assert result.suites["base"]["detail"] == "input #1: f(2) returned -1, expected 2"
    # The calls are pipelined: the candidate may have started the next inputs before the judge saw the failure.
    assert result.stdout.startswith("input 1\ninput 2\n")


def test_pipelined_inputs_are_each_timed_from_when_the_candidate_was_free_for_them(box):
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


def test_the_program_s_load_is_not_counted_in_its_first_input_s_limit(box):
    # EvalPlus execs the program before its first timed call: a slow import-time setup only counts against the
    # suite's cap, and one that never ends is a timeout of the suite.
    slow_load = "    return args[0]\n\nimport time\ntime.sleep(0.8)\n"
    result = judged(box, slow_load, suite(([[1]], [1]), min_time_limit_s=0.5))
    assert result.status is Status.PASSED, result.detail
    endless = "    return args[0]\n\nwhile True:\n    pass\n"
    result = judged(box, endless, suite(([[1]], [1]), min_time_limit_s=0.5))
    assert result.status is Status.TIMEOUT
    assert result.suites["base"]["detail"] == "the program was still loading when the suite's 1.5 s limit ran out"


def test_floats_within_the_tolerance_pass_and_the_types_must_match(box):
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


def test_a_tolerance_set_by_a_float_output_holds_for_the_rest_of_the_suite(box):
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


def test_the_polynomial_root_oracle_accepts_any_root(box):
    cubic = suite(([[[-6, 11, -6, 1]]], [1.0]), atol=1e-4, oracle="polynomial_root")  # roots 1, 2 and 3
    for root in ("2.0", "3.0000000001", "1"):
        assert judged(box, f"    return {root}\n", cubic).status is Status.PASSED, root
    far = judged(box, "    return 5.0\n", cubic)
    assert far.status is Status.ASSERTION_FAILED and "not a root of the polynomial" in far.detail
    assert judged(box, "    return 'two'\n", cubic).status is Status.ASSERTION_FAILED


def test_an_input_over_its_limit_is_a_timeout_and_ends_the_suite(box):
    slow = "    import time\n    print('input', args[0])\n    if args[0] == 2:\n        time.sleep(10)\n" \
           "    return args[0]\n"
    result = judged(box, slow, suite(([[1], [2], [3]], [1, 2, 3]), min_time_limit_s=0.3))
    assert result.status is Status.TIMEOUT
    assert result.suites["base"]["detail"] == "input #1: f(2) took longer than its 0.3 s limit"
    assert result.stdout == "input 1\ninput 2\n"


def test_an_always_equal_object_fails_where_evalplus_would_pass_it(box):
    rigged = "    class Always:\n        def __eq__(self, other):\n            return True\n    return Always()\n"
    result = judged(box, rigged, suite(([[1]], [1]), ([[2]], [(2, 3)])))
    assert result.status is Status.RUNTIME_ERROR
    assert result.suites["base"]["status"] == result.suites["plus"]["status"] == "runtime_error"
    assert "plain values only" in result.suites["base"]["detail"]


def test_exceptions_exits_and_programs_that_do_not_load_fail_their_suites(box):
    the_suite = suite(([[1]], [1]), ([[2]], [2]))
    raising = judged(box, "    raise ValueError('no')\n", the_suite)
    assert raising.status is Status.RUNTIME_ERROR and raising.detail.startswith("base: input #0: f(1): ValueError")
    exiting = judged(box, "    import os\n    os._exit(0)\n", the_suite)
    assert exiting.status is Status.RUNTIME_ERROR and "exit code 0" in exiting.detail
    broken = judged(box, "    return (\n", the_suite)
    assert broken.status is Status.RUNTIME_ERROR and "SyntaxError" in broken.detail
    assert broken.suites["plus"]["status"] == "runtime_error"


def test_an_empty_suite_still_needs_a_program_that_loads(box):
    empty = suite(([[1]], [1]), ((), ()))
    assert judged(box, "    return args[0]\n", empty).status is Status.PASSED
    assert judged(box, "    return (\n", empty).suites["plus"]["status"] == "runtime_error"
