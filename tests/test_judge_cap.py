"""The judge's own time is capped: whatever a candidate sends, judging one suite ends within its limit + a margin.

A reply is plain data, but plain data can be made expensive for its receiver: keys that all hash alike make
building a dict or set quadratic, and when each comparison of two keys is itself long (big integers that differ
only in their last digits, frozensets that differ in one member), a dict of a thousand keys is built by one C
call that runs for seconds, which no signal interrupts. These candidates write such replies on the wire
themselves (their own process is theirs to change), as an attacker would; the judge's work on them must end at
the suite's limit (1 s for its one input + 1 s) plus the supervisor's margin, and the sandbox must go on to judge
an honest sample as before.
"""

from __future__ import annotations

import time

import pytest
from test_plus_judge import judged, suite

from pytest_humaneval.sandbox import Sandbox, Status
from pytest_humaneval.sandbox._supervisor import JUDGE_MARGIN_S

CAP_S = 2.0  # the suites below: one input with a 1 s limit, + 1 s (EvalPlus's min(60, sum) + 1)
OVERHEAD_S = 1.0  # a candidate's fork and load, and the supervisor reading the record, on a loaded machine

_SEND = '''    import sys, time
    wire = sys.modules["_humaneval_wire"]
    wire.write_frame(4, b"V", reply(wire))
    time.sleep(30)


def reply(wire):
{}
'''
# 1,000 keys of 60 KB, all hashing alike (multiples of 2**61 - 1 above a shared big base): each comparison reads
# the whole key, and a dict of up to 1,024 keys is built in one call. The base's low 479,939 bits are zero, so each
# key is the base's encoding with its last 9 bytes replaced: made by copying bytes, in milliseconds, where 1,000
# big-int sums and conversions took 0.9 s at load 10 and the call's own 1 s limit fired before the judge had read
# the reply (the decoding, not the candidate's making of it, is what this test is about).
BIG_INT_KEYS = _SEND.format('''    modulus = (1 << 61) - 1
    head = wire.encode(modulus << 479939)[:-9]
    keys = [head + (i * modulus).to_bytes(9, "big") for i in range(1000)]
    return b"d" + len(keys).to_bytes(4, "big") + b"".join(key + wire.encode(0) for key in keys)''')
# 48 frozensets of 1,000 members that all hash alike, equal but for one member: the sets hash alike too, and
# comparing two of them looks up each member among a thousand colliding ones.
FROZENSET_KEYS = _SEND.format('''    modulus = (1 << 61) - 1
    shared = [j * modulus for j in range(1, 1000)]
    keys = [b"Z" + wire.encode(shared + [(1000 + k) * modulus])[1:] for k in range(48)]
    return b"d" + len(keys).to_bytes(4, "big") + b"".join(key + wire.encode(0) for key in keys)''')
# A set of 200,000 colliding members: built member by member (BULK), so the judge's own timer stops it.
SET_MEMBERS = _SEND.format('''    modulus = (1 << 61) - 1
    members = wire.encode([i * modulus for i in range(1, 200001)])
    return b"S" + members[1:]''')


@pytest.fixture(scope="module")
def box():
    box = Sandbox().start()
    yield box
    box.close()


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.parametrize("payload", [BIG_INT_KEYS, FROZENSET_KEYS, SET_MEMBERS],
                         ids=["big-int-keys", "frozenset-keys", "set-members"])
def test_a_reply_made_to_be_slow_to_decode_ends_within_the_suites_limit_plus_a_margin(box, payload):
    the_suite = suite(([[1]], [2]))
    started = time.monotonic()
    result = judged(box, payload, the_suite)
    elapsed = time.monotonic() - started
    assert result.status is Status.TIMEOUT, result
    assert result.suites["base"]["status"] == "timeout", result.suites
    # Which limit stops it (the suite's 2 s, or the call's 1 s when a loaded machine is slow to send the reply)
    # is the machine's business; what is guaranteed is a timeout, named, within the suite's limit + a margin.
    assert "limit" in result.suites["base"]["detail"], result.suites
    # the base suite is the one that pays; the plus suite (no inputs) only loads the program
    assert result.duration_ms < (CAP_S + JUDGE_MARGIN_S + OVERHEAD_S) * 1000, result
    assert elapsed < CAP_S + JUDGE_MARGIN_S + 2 * OVERHEAD_S, elapsed
    honest = judged(box, "    return args[0] * 2\n", the_suite)
    assert honest.status is Status.PASSED, honest
