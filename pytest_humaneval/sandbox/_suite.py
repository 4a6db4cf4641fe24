"""HumanEval+ and MBPP+ judging (EvalPlus's rules): one suite of inputs against a candidate, in the trusted judge.

EvalPlus judges a sample by calling its entry point on every input of a suite (``base_input``, then separately
``plus_input``) and comparing each result with the dataset's canonical solution's output on that input
(`JUDGING.md` of the shared data describes its rules; this is an independent implementation of them):

- each input has a wall-clock limit L_i = max(T_min, k * t_i), t_i the canonical solution's time on it; the
  whole suite min(60 s, sum L_i) + 1 s;
- ``out == exp`` first, with the output's own number types: numpy's scalars and 0-d arrays, Decimal and Fraction
  cross as themselves and compare as they do in EvalPlus (numpy's float32(0.1) equals 0.1 in float32); if that
  fails and the expected output is float-like (a float, or a non-empty list or tuple of floats) or the task has an
  ``atol``, the types must match (the candidate's own type: a float subclass, numpy's float64 or a Decimal is not
  a float there), sequences the same length, and |out - exp| <= atol + 1e-7 |exp| elementwise, as numpy.allclose
  takes the items (numpy's numbers, Fractions and complex numbers as numbers, a Decimal not) (atol: the task's,
  else 1e-6, which then holds for the rest of the suite, as in EvalPlus); a task whose dataset names the
  ``polynomial_root`` oracle (EvalPlus's rule for HumanEval/32, whose roots are not unique) passes when
  |sum xs[i] * x**i| <= atol instead; MBPP+'s special oracles (``data/mbpp.py`` names them by entry point) decide
  the exact match of their tasks instead of ``==``;
- any exception, a timeout or a wrong output fails the input, and the suite stops at its first failing input.

The difference from EvalPlus: the comparison happens here, on values rebuilt by ``_wire`` (plain values, and
numbers of the types above built from their digits), never with the candidate's objects, so an always-equal
object, or a float or Decimal subclass whose ``__eq__`` says yes (which pass EvalPlus), is a failure.

Standard library only, no package import: the sandbox supervisor loads this file by path.
"""

import math
import signal
import sys
import time
import warnings
from _signal import signal as _set_handler  # type: ignore[import-not-found]  # no type stub

try:
    from . import _judge
    from . import _wire as wire
except ImportError:  # loaded by path in the supervisor, next to its siblings
    _judge, wire = sys.modules["_humaneval_load"].siblings("judge", "wire")  # by the one loader (_load.py)

CAP_S, CAP_SLACK_S = 60.0, 1.0
DEFAULT_ATOL, RTOL = 1e-6, 1e-7
SHOWN = 120  # characters of an input, expected or actual value shown in a failure


def limits(seconds, min_time_limit_s, time_limit_factor):
    """(the per-input limits, the suite's cap) for the canonical solution's times ``seconds``."""
    per_input = [max(min_time_limit_s, time_limit_factor * t) for t in seconds]
    return per_input, min(CAP_S, sum(per_input)) + CAP_SLACK_S


class _InputTimeout(BaseException):
    pass


# Batches: consecutive inputs sent in one write while they stay small (below half a pipe's 64 KiB, so the write
# never waits on a candidate that reads its inputs) and quick (their canonical solution's times sum to a few ms).
BATCH_BYTES, BATCH_INPUTS, BATCH_CANONICAL_S = 32 << 10, 64, 0.002
SLOW_BATCH_S = 0.05  # a batch that took longer: the rest of the suite goes one input at a time


def judge_suite(suite, entry_point, oracle, min_time_limit_s, time_limit_factor, requests, replies, batched=True):
    """The record (a dict for the supervisor) of one suite, ``(inputs, expected, seconds, atol, calls)``
    (``calls``: each input's request, encoded once per problem), against the candidate behind the two pipes.

    As EvalPlus runs a suite: the program loads (timed by the suite's cap only, as EvalPlus's ``exec`` precedes
    the first timed call), then the calls one after another. The judge asks whether the program loaded and
    waits for its answer before it sends any input. Then it sends the inputs in batches (``batched``; else one at
    a time) and holds every input to its own limit twice:

    - from when the judge was free for its answer (the previous answer read and compared; the first of a batch:
      the batch's send) to its answer: an answer later than that is a timeout. For an honest program, which
      starts on an input when it has answered the one before, this is its time on that input alone, as when
      each input is sent after the previous answer;
    - from the batch's send, when the candidate could first read the input, to its answer: an answer later than
      that, however it is timed by the first clock, could come from work done on the input while answering
      earlier ones (a candidate can read its whole batch at once). The suite is then not judged from this
      attempt: its record's status is ``again``, and the supervisor judges it again against a fresh candidate, one
      input at a time, where every input's clock starts at its send. So no input passes having been readable for
      longer than its limit, as with one input at a time; only an honest program that spends more than an
      input's limit on the inputs before it in one batch (about a thousand times the canonical solution's time)
      is run twice.

    An answer present before the inputs it answers were sent is a protocol failure. Decoding, comparing and
    describing an output run under the suite's deadline. A suite stops at its first failing input; the
    candidate is killed when this returns."""
    inputs, expected, seconds, atol, calls = suite
    per_input, cap = limits(seconds, min_time_limit_s, time_limit_factor)
    channel = _judge._Channel(requests, replies)
    deadline = time.monotonic() + cap

    def on_alarm(signum, frame):
        raise _InputTimeout()

    def arm(seconds):
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))

    call_kind = _judge.CALL_PRESENCE if oracle == "not_none" else _judge.CALL_ONLY
    batched = batched and oracle != "set_equal"  # its comparison iterates a lazy result: round trips of its own
    previous = _set_handler(signal.SIGALRM, on_alarm)
    index, args, limit, count = -1, (), 0.0, len(inputs)
    state = {"atol": atol}
    try:
        arm(cap)
        channel.send(_judge.LOADED, b"")
        if channel.receive()[0] != _judge.READY:  # or it raised what stopped the program from loading
            raise channel.fail("the candidate broke the call protocol: it answered a question not asked")
        first = 0
        while first < count:
            end = _batch_end(calls, seconds, first, count) if batched else first + 1
            index, args, limit = first, inputs[first], per_input[first]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _failed("timeout", f"the suite ran past its {cap:g} s limit", entry_point, index, args)
            if channel.unasked():  # an answer written before its input was sent: nobody's answer
                raise channel.fail("the candidate broke the call protocol: it answered an input not sent yet")
            arm(min(limit, remaining))
            sent = time.monotonic()
            channel.send_calls(call_kind, calls[first:end])
            for index in range(first, end):
                args, limit = inputs[index], per_input[index]
                if index > first:
                    now = time.monotonic()
                    arm(min(limit, deadline - now))
                frame = channel.receive()
                arrived = time.monotonic()
                if index > first and arrived - sent > limit:  # (a batch's first input: its alarm is that clock)
                    return {"status": "again"}  # not judged from this attempt: the supervisor judges it again
                arm(deadline - arrived)
                out = channel.value(frame)
                if not _matches(out, expected[index], state, oracle, args, frame[0] == _judge.VALUE_CONVERTED):
                    exp = expected[index]
                    what = f"returned {_shown(out)}, expected {_shown(exp)}" if oracle != "polynomial_root" else \
                        f"returned {_shown(out)}, not a root of the polynomial within {state['atol']:g}"
                    return _failed("assertion_failed", what, entry_point, index, args)
            if batched and time.monotonic() - sent > SLOW_BATCH_S:
                batched = False
            first = end
    except _InputTimeout:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if index < 0:
            return {"status": "timeout", "input": -1,
                    "message": f"the program was still loading when the suite's {cap:g} s limit ran out"}
        if time.monotonic() >= deadline:
            return _failed("timeout", f"the suite ran past its {cap:g} s limit", entry_point, index, args)
        return _failed("timeout", f"took longer than its {limit:g} s limit", entry_point, index, args)
    except BaseException as exc:
        signal.setitimer(signal.ITIMER_REAL, 0)  # an alarm now would escape this handler
        failure = channel.failed or exc
        record = _judge._failure(failure)
        if index >= 0:
            record["call"] = _call(entry_point, index, args)
        record["input"] = index
        return record
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _set_handler(signal.SIGALRM, previous)
    return {"status": "passed"}


def _batch_end(calls, seconds, first, count):
    """The end (exclusive) of the batch that starts at input ``first``: at least that input; then while the batch
    stays within BATCH_BYTES, BATCH_INPUTS and BATCH_CANONICAL_S of the canonical solution's time."""
    size, spent, end = len(calls[first]), seconds[first], first + 1
    last = min(count, first + BATCH_INPUTS)
    while end < last:
        size += len(calls[end]) + 5
        spent += seconds[end]
        if size > BATCH_BYTES or spent > BATCH_CANONICAL_S:
            break
        end += 1
    return end


def calls(inputs):
    """Each input's request to the candidate, encoded once for every sample of the problem."""
    return [wire.encode((tuple(args), {})) for args in inputs]


def _matches(out, exp, state, oracle, args, converted=False):
    """EvalPlus's comparison of one output (``exp`` a plain value, ``out`` as ``_wire`` rebuilt it; ``converted``:
    the candidate's own output was not of a builtin type, or of another than ``out``'s, a float subclass, which
    EvalPlus's ``type(out) == type(exp)`` refuses before its tolerance)."""
    if oracle == "polynomial_root":
        return _is_root(args[0] if args else None, out, state["atol"])
    try:
        exact = _equal(out, exp) if oracle is None else _exact_by_oracle(out, exp, state["atol"], oracle, args)
    except MemoryError:  # the judge's memory for this sample ran out on what the candidate returned
        raise
    except Exception:  # EvalPlus's oracle raised on this output (a set of unhashable items, a str minus a number)
        return False
    if state["atol"] == 0 and _float_like(exp):
        state["atol"] = DEFAULT_ATOL  # for this input and every later one of the suite, as EvalPlus does
    if exact:
        return True
    if state["atol"] == 0 or converted or type(out) is not type(exp):
        return False
    if isinstance(exp, (list, tuple)):
        atol = state["atol"]
        return len(out) == len(exp) and all(_close(a, b, atol) for a, b in zip(out, exp))  # noqa: B905 (a hot path)
    return _close(out, exp, state["atol"])


def _exact_by_oracle(out, exp, atol, oracle, args):
    """EvalPlus's exact match on MBPP+ tasks it judges by a rule of their own (by entry point; ``data/mbpp.py``
    names them); the tolerance of float-like outputs applies after it, as there. An exception fails the input."""
    if oracle == "any_output":
        return True
    if oracle == "or_zero":
        return _equal(out, exp) or _equal(out, 0)
    if oracle == "surface_area":
        return _equal(out, exp) or abs(out - _pyramid_surface(*args)) <= atol
    if oracle == "digit_distance":
        return _equal(out, exp) or _equal(out, _digit_distance(*args))
    if oracle == "set_equal":  # set(out) of members that hash alike would be quadratic: refused (a failure)
        members = list(out)
        wire.check_alike(members)
        return set(members) == set(exp)
    if oracle == "not_none":  # the candidate answered whether its result is None (a bool result as it is)
        return _equal(out, exp)
    raise ValueError(f"an oracle this judge does not know: {oracle!r}")


def _pyramid_surface(base_edge, height):
    """The area EvalPlus accepts for Mbpp/581: a square pyramid whose height is the apex's above the base,
    rounded (its operations in EvalPlus's order, so that a half is rounded the same way)."""
    slant = math.sqrt((base_edge / 2) ** 2 + height ** 2)
    return round(base_edge ** 2 + 4 * (base_edge * slant) / 2)


def _digit_distance(first, second):
    """The digit distance EvalPlus accepts for Mbpp/558: the numbers zero-padded to the same length."""
    a, b = str(first), str(second)
    width = max(len(a), len(b))
    return sum(abs(int(x) - int(y)) for x, y in zip(a.zfill(width), b.zfill(width)))  # noqa: B905 (same length)


def _equal(out, exp):
    try:
        return bool(out == exp)
    except RecursionError:
        return False


def _float_like(value):
    if type(value) is float:
        return True
    return type(value) in (list, tuple) and len(value) > 0 and all(type(item) is float for item in value)


_PLAIN_NUMBERS = (bool, int, float, complex)


def _close(out, exp, atol):
    """numpy.isclose(out, exp, rtol=1e-7, atol=atol) on one pair of numbers, as numpy.allclose takes them: the
    expected one as a float (or complex), the output as numpy's arithmetic takes it (a numpy scalar or 0-d array
    as its value, a Fraction as its float); |out - exp| <= atol + 1e-7 |exp| with exp finite, or out == exp, so
    NaN is never close and an infinity only to itself. numpy's arithmetic fails on anything else (a Decimal, a
    str, None): not close."""
    x, y = _as_number(out), _as_number(exp)
    if x is None or y is None:
        return False
    try:
        x = x if type(x) is complex else float(x)  # numpy's arithmetic, in float64 (or complex128)
        y = y if type(y) is complex else float(y)
        finite = math.isfinite(y.real) and math.isfinite(y.imag)
        return (abs(x - y) <= atol + RTOL * abs(y) and finite) or x == y
    except (OverflowError, ValueError, TypeError):
        return False


def _as_number(value):
    """``value`` as numpy's arithmetic takes an item of a list: a plain number as it is, numpy's number scalar or
    0-d array as its item, a Fraction as itself; None for anything else."""
    kind = type(value)
    if kind in _PLAIN_NUMBERS:
        return value
    if kind.__module__ == "numpy" and getattr(value, "ndim", None) == 0 \
            and getattr(getattr(value, "dtype", None), "kind", "") in ("b", "i", "u", "f", "c"):
        return value.item()
    if kind.__module__ == "fractions" and kind.__name__ == "Fraction":
        return value
    return None


def _is_root(xs, x, atol):
    """|sum xs[i] * x**i| <= atol (EvalPlus's oracle for a polynomial's root, with math.pow as it uses, which takes
    any number with a float value: numpy's, a Decimal, a Fraction)."""
    if type(xs) is not list:
        return False
    try:
        with warnings.catch_warnings():  # numpy's complex scalar gives math.pow its real part, with a warning
            warnings.simplefilter("ignore")
            return abs(sum(coefficient * math.pow(x, power) for power, coefficient in enumerate(xs))) <= atol
    except (OverflowError, ValueError, TypeError):
        return False


def _shown(value):
    """At most SHOWN characters of ``repr(value)``, built piece by piece: a value a candidate returned can be
    tens of MB, and its whole repr would cost the judge far more than the few characters shown."""
    out: list = []
    _bounded_repr(value, out, [SHOWN + 1])
    text = "".join(out)
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


_BRACKETS: dict[type, tuple[str, str]] = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"),
                                          frozenset: ("frozenset({", "})"), dict: ("{", "}")}


def _bounded_repr(value, out, budget):
    kind = type(value)
    if budget[0] <= 0:
        return
    if kind in _BRACKETS and (value or kind in (list, tuple, dict)):
        opening, closing = _BRACKETS[kind]
        out.append(opening)
        budget[0] -= len(opening)
        for position, item in enumerate(dict.items(value) if kind is dict else value):
            if budget[0] <= 0:
                return
            if position:
                out.append(", ")
                budget[0] -= 2
            if kind is dict:
                _bounded_repr(item[0], out, budget)
                out.append(": ")
                budget[0] -= 2
                item = item[1]
            _bounded_repr(item, out, budget)
        if kind is tuple and len(value) == 1:
            out.append(",")
        out.append(closing)
        budget[0] -= len(closing)
        return
    if kind is int and value.bit_length() > 3 * SHOWN:
        text = f"<an int of {value.bit_length()} bits>"
    elif kind in (str, bytes) and len(value) > budget[0]:
        text = repr(value[:budget[0]])
    else:
        try:
            text = repr(value)
        except (RecursionError, ValueError):
            text = f"<a {kind.__name__}>"
    out.append(text)
    budget[0] -= len(text)


def _call(entry_point, index, args):
    inside = ", ".join(_shown(arg) for arg in args)
    if len(inside) > 2 * SHOWN:
        inside = inside[:2 * SHOWN] + "..."
    return f"input #{index}: {entry_point}({inside})"


def _failed(status, what, entry_point, index, args):
    return {"status": status, "message": f"{_call(entry_point, index, args)} {what}"[:_judge.MESSAGE_MAX],
            "input": index}
