"""The judge's own time is capped: whatever a candidate sends, judging one suite ends within its limit + a margin.

A reply is plain data, but plain data can be made expensive for its receiver: keys that all hash alike make
building a dict or set quadratic, and when each comparison of two keys is itself long (big integers that differ
only in their last digits, frozensets that differ in one member), a dict of a thousand keys is built by one C
call that runs for seconds, which no signal interrupts. These candidates write such replies on the wire
themselves (their own process is theirs to change), as an attacker would. A set or dict whose members hash alike
past ``_wire.ALIKE_PAIRS`` is refused before it is built, so such replies end at once, in every container and at
any depth; what else the judge does is stopped at the suite's limit (3 s for its one input + 1 s), or by the
supervisor at that limit plus its margin, and the sandbox goes on to judge an honest sample as before.
"""

from __future__ import annotations

import time

import pytest
from test_plus_judge import judged, suite

from pytest_humaneval.sandbox import Sandbox, Status
from pytest_humaneval.sandbox._supervisor import JUDGE_MARGIN_S

# The suites below: one input with a 3 s limit, + 1 s (EvalPlus's min(60, sum) + 1). The candidates make their
# replies in that input's time, which a busy machine stretches.
CAP_S, LIMIT_S = 4.0, 3.0
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
    the_suite = suite(([[1]], [2]), min_time_limit_s=LIMIT_S)
    started = time.monotonic()
    result = judged(box, payload, the_suite)
    elapsed = time.monotonic() - started
    assert result.status is Status.RUNTIME_ERROR, result
    assert "hash alike" in result.suites["base"]["detail"], result.suites
    # the base suite is the one that pays; the plus suite (no inputs) only loads the program
    assert result.duration_ms < (CAP_S + JUDGE_MARGIN_S + OVERHEAD_S) * 1000, result
    assert elapsed < CAP_S + JUDGE_MARGIN_S + 2 * OVERHEAD_S, elapsed
    honest = judged(box, "    return args[0] * 2\n", the_suite)
    assert honest.status is Status.PASSED, honest


# A set_equal task (MBPP+'s rule: set(out) == set(exp)) answered with a *list* of 200,000 ints that hash alike: the
# list decodes in linear time, and set(out) was one quadratic C call, which the supervisor had to kill at the cap.
SET_EQUAL_LIST = _SEND.format('''    modulus = (1 << 61) - 1
    return wire.encode([i * modulus for i in range(1, 200001)])''')


@pytest.mark.timeout(120)
def test_a_list_made_to_be_slow_to_make_a_set_of_fails_at_once(box):
    the_suite = suite(([[[1, 2]]], [(2,)]), oracle="set_equal", min_time_limit_s=LIMIT_S)
    result = judged(box, SET_EQUAL_LIST, the_suite)
    assert result.status is Status.ASSERTION_FAILED, result
    assert result.duration_ms < CAP_S * 1000, result  # on 2b2788d: a timeout, the judge killed at 4.5 s


# HumanEval+'s unique() (HumanEval/34) answered through the real entry point with values built of keys that hash
# alike, in every container, deep and wide. On 2b2788d a list of 4,000 sets of 1,024 such ints held its sample 66 s
# (each suite to its cap: base 5 s, plus 61 s); each shape below timed out after about 17 s with
# `min_time_limit_s: 1` (a 2 s base suite).
_M = "(1 << 61) - 1"
SHAPES = {
    "list-of-sets": "    one = b'S' + wire.encode([i * M for i in range(1, 1025)])[1:]\n"
                    "    return b'l' + (1000).to_bytes(4, 'big') + one * 1000",
    "list-of-frozensets": "    one = b'Z' + wire.encode([i * M for i in range(1, 1025)])[1:]\n"
                          "    return b'l' + (1000).to_bytes(4, 'big') + one * 1000",
    "list-of-dicts": "    one = b'd' + (1024).to_bytes(4, 'big') + b''.join(wire.encode(i * M) + b'N' "
                     "for i in range(1, 1025))\n"
                     "    return b'l' + (1000).to_bytes(4, 'big') + one * 1000",
    "dict-of-tuple-keys": "    keys = [wire.encode((i * M, j * M)) for i in range(1, 1001) for j in range(1, 51)]\n"
                          "    return b'd' + len(keys).to_bytes(4, 'big') + b''.join(key + b'N' for key in keys)",
    "deep": "    one = b'S' + wire.encode([i * M for i in range(1, 1025)])[1:]\n"
            "    return (b'l' + (1).to_bytes(4, 'big')) * 90 + b'l' + (1000).to_bytes(4, 'big') + one * 1000",
}


@pytest.mark.timeout(600)
def test_values_made_of_keys_that_hash_alike_end_within_the_suites_cap(pytester, monkeypatch):
    """On HumanEval+'s unique(), answers built of keys that hash alike end within the suite's cap + a margin."""
    import gzip
    import json

    from plus_data import WARM_XDG, release_file, write_jsonl
    from sessions import NO_CACHE

    monkeypatch.setenv("XDG_CACHE_HOME", str(WARM_XDG))
    rows = [json.loads(line) for line in gzip.decompress(release_file("humanevalplus").read_bytes()).splitlines()]
    write_jsonl(pytester.path / "plus.jsonl", [row for row in rows if row["task_id"] == "HumanEval/34"])
    completions = [_SEND.format(f"    M = {_M}\n{body}") for body in SHAPES.values()]
    write_jsonl(pytester.path / "samples.jsonl", [{"task_id": "HumanEval/34", "completion": text}
                                                  for text in completions])
    # the base suite (one input) is capped at 4 s: 3 s for its input, + 1 s
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl}\ndataset: plus.jsonl\n"
                                            "params: {allow_code_execution: true, workers: 1, "
                                            f"plus: {{min_time_limit_s: {LIMIT_S}}}}}\n")
    pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-results", "results.jsonl", "-p", "no:xdist",
                       *NO_CACHE)
    found = {row["sample"]: row for row in map(json.loads, (pytester.path / "results.jsonl").read_text().splitlines())}
    for sample, shape in enumerate(SHAPES):
        row = found[sample]
        assert row["status"] == "runtime_error" and "hash alike" in row["detail"], (shape, row)
        # both suites refuse the answer to their first input: the whole sample within the base suite's cap
        assert row["duration_ms"] < (CAP_S + JUDGE_MARGIN_S + OVERHEAD_S) * 1000, (shape, row)
