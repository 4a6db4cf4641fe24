"""A HumanEval+ suite's inputs go to the candidate in batches; every input is still held to its own limit.

The judge writes a batch of inputs at once (``_suite.BATCH_*``), so a candidate can read inputs before it has
answered the ones ahead of them: its own process is its own, and the serve loop's buffer, the pipe and the
wire format are all in reach. These candidates do what a reward-hacking one would: bank work on a slow input
while answering the quick ones before it, answer inputs not yet sent, make the two pipes fill each other, and
stall in the middle of a batch. Each test fails on a naive batch (every answer timed from the previous one's
arrival, answers read as they come, the whole suite in one write) and passes on the judge's design: an input
readable for longer than its limit before its answer sends the suite to be judged again one input at a time.
"""

from __future__ import annotations

import time

import pytest
from test_plus_judge import judged, suite

from pytest_humaneval.sandbox import Sandbox, Status, _suite

LIMIT_S = 0.5  # every input's limit below (the canonical solution's times are tiny: the floor decides)
OVERHEAD_S = 1.5  # forks, loads and the supervisor's bookkeeping of a sample, on a loaded machine

# The serve loop's buffer holds the requests it has read and not served yet: the rest of the batch. This
# candidate looks in it for the slow input (9, which needs 1.2 s of work, over its 0.5 s limit) and, while it
# is waiting there, does that work 0.35 s at a time before answering each quick input (each within its own
# limit), so that input 9 itself is answered at once.
READ_AHEAD = '''    import sys, time
    wire = sys.modules["_humaneval_wire"]
    pending = sys._getframe(1).f_locals.get("pending") or b""
    state = globals().setdefault("state", {"banked": 0.0})
    waiting, position = [], 0
    while position + 4 <= len(pending):
        size = int.from_bytes(pending[position:position + 4], "big")
        body = bytes(pending[position + 5:position + 4 + size])
        if len(body) == size - 1:
            waiting.append(wire.decode(body)[0][0])
        position += 4 + size
    if args[0] == 9:
        time.sleep(max(0.0, 1.2 - state["banked"]))
    elif 9 in waiting and state["banked"] < 1.2:
        time.sleep(0.35)
        state["banked"] += 0.35
    return args[0]
'''

# At its first call it writes the answers to every input of the suite straight to its reply pipe (descriptor 4),
# the ones not sent yet included, in one write (under 4 KiB: the pipe takes it whole, before the judge reads the
# first), then never returns.
ANSWERS_AHEAD = '''    import os, sys, time
    wire = sys.modules["_humaneval_wire"]
    frames = b"".join(len(body).to_bytes(4, "big") + b"V" + body[1:]
                      for body in (b"_" + wire.encode(number) for number in range({count})))
    os.write(4, frames)
    time.sleep(30)
'''


@pytest.fixture(scope="module")
def box():
    box = Sandbox().start()
    yield box
    box.close()


def numbers(count):
    return [[i] for i in range(count)], list(range(count))


@pytest.mark.timeout(60)
def test_work_banked_while_answering_earlier_inputs_of_a_batch_does_not_pass_a_slow_input(box):
    the_suite = suite(numbers(10), min_time_limit_s=LIMIT_S)
    result = judged(box, READ_AHEAD, the_suite)
    # judged again one input at a time, where the slow input is seen only when its turn comes
    assert result.status is Status.TIMEOUT, result
    assert result.suites["base"]["detail"] == f"input #9: f(9) took longer than its {LIMIT_S:g} s limit"
    honest = judged(box, "    return args[0]\n", the_suite)
    assert honest.status is Status.PASSED, honest


@pytest.mark.timeout(60)
def test_answers_written_before_their_inputs_were_sent_break_the_protocol(box):
    count = _suite.BATCH_INPUTS + 36  # two batches: the second one's answers come before it is sent
    result = judged(box, ANSWERS_AHEAD.format(count=count), suite(numbers(count), min_time_limit_s=LIMIT_S))
    assert result.status is Status.RUNTIME_ERROR, result
    detail = result.suites["base"]["detail"]
    assert detail.startswith(f"input #{_suite.BATCH_INPUTS}: f({_suite.BATCH_INPUTS})"), detail
    assert "it answered an input not sent yet" in detail, detail


@pytest.mark.timeout(120)
def test_inputs_and_answers_larger_than_both_pipes_neither_block_the_judge_nor_the_candidate(box):
    # 300 inputs of 1 KB (300 KB: more than a pipe holds) answered with 40 KB each: a judge that wrote the whole
    # suite at once would wait on a full request pipe while the candidate waits on a full reply pipe.
    words = [f"{i:04d}" + "x" * 1000 for i in range(300)]
    the_suite = suite(([[word] for word in words], [word * 40 for word in words]), min_time_limit_s=2.0)
    result = judged(box, "    return args[0] * 40\n", the_suite)
    assert result.status is Status.PASSED, result
    # and one input larger than a pipe, alone in its batch
    big = "y" * (300 << 10)
    result = judged(box, "    return len(args[0])\n", suite(([[big], ["z"]], [len(big), 1]), min_time_limit_s=2.0))
    assert result.status is Status.PASSED, result


@pytest.mark.timeout(60)
def test_a_candidate_that_stalls_in_the_middle_of_a_batch_times_out_on_that_input_by_its_own_limit(box):
    stalling = "    import time\n    if args[0] == 5:\n        time.sleep(30)\n    return args[0]\n"
    started = time.monotonic()
    result = judged(box, stalling, suite(numbers(10), min_time_limit_s=LIMIT_S))
    elapsed = time.monotonic() - started
    assert result.status is Status.TIMEOUT, result
    assert result.suites["base"]["detail"] == f"input #5: f(5) took longer than its {LIMIT_S:g} s limit"
    assert elapsed < 2 * (LIMIT_S + OVERHEAD_S), elapsed  # its own limit, not the batch's sum of limits
    never_reads = "    import time\n    time.sleep(30)\n"
    result = judged(box, never_reads, suite(numbers(10), min_time_limit_s=LIMIT_S))
    assert result.status is Status.TIMEOUT, result
    assert result.suites["base"]["detail"] == f"input #0: f(0) took longer than its {LIMIT_S:g} s limit"


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_an_honest_program_slower_than_a_batch_allows_gets_the_verdict_of_one_input_at_a_time(box):
    # 0.3 s an input, each within its 0.5 s limit, but the second is answered 0.6 s after the batch was sent:
    # judged again one input at a time, it passes, as it does in EvalPlus
    steady = "    import time\n    time.sleep(0.3)\n    return args[0]\n"
    result = judged(box, steady, suite(numbers(4), min_time_limit_s=LIMIT_S))
    assert result.status is Status.PASSED, result
    assert result.duration_ms > 1200 + 500, result  # both attempts count: 1.2 s, after the first's 0.6 s
    # one input over its limit among them is a timeout either way, on that input
    growing = "    import time\n    time.sleep(0.1 * args[0] + (0.3 if args[0] == 3 else 0))\n    return args[0]\n"
    result = judged(box, growing, suite(numbers(5), min_time_limit_s=LIMIT_S))
    assert result.status is Status.TIMEOUT, result
    assert result.suites["base"]["detail"] == f"input #3: f(3) took longer than its {LIMIT_S:g} s limit"
