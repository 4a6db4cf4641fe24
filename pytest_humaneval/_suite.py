"""HumanEval+ judging (EvalPlus's rules): one suite of inputs against a candidate, in the trusted judge.

EvalPlus judges a sample by calling its entry point on every input of a suite (``base_input``, then separately
``plus_input``) and comparing each result with the dataset's canonical solution's output on that input
(`JUDGING.md` of the shared data describes its rules; this is an independent implementation of them):

- each input has a wall-clock limit L_i = max(T_min, k * t_i), t_i the canonical solution's time on it; the
  whole suite min(60 s, sum L_i) + 1 s;
- ``out == exp`` first; if that fails and the expected output is float-like (a float, or a non-empty list or
  tuple of floats) or the task has an ``atol``, the types must match, sequences the same length, and
  |out - exp| <= atol + 1e-7 |exp| elementwise (atol: the task's, else 1e-6, which then holds for the rest of
  the suite, as in EvalPlus); a task whose dataset names the ``polynomial_root`` oracle (EvalPlus's rule for
  HumanEval/32, whose roots are not unique) passes when |sum xs[i] * x**i| <= atol instead;
- any exception, a timeout or a wrong output fails the input, and the suite stops at its first failing input.

The difference from EvalPlus: the comparison happens here, on plain values rebuilt by ``_wire``, never with
the candidate's objects, so an always-equal object (which passes EvalPlus) is a failure.

Standard library only, no package import: the sandbox supervisor loads this file by path.
"""

import collections
import math
import signal
import time
from _signal import signal as _set_handler

try:
    from . import _judge, _wire as wire
except ImportError:  # loaded by path in the supervisor, next to its siblings
    import _humaneval_judge as _judge
    import _humaneval_wire as wire

CAP_S, CAP_SLACK_S = 60.0, 1.0
DEFAULT_ATOL, RTOL = 1e-6, 1e-7
SHOWN = 120  # characters of an input, expected or actual value shown in a failure
PIPELINE_DEPTH = 64  # requests written ahead of the reply the judge waits for
PIPELINE_BYTES = 48 * 1024  # and their bytes: below a pipe's 64 KiB, so writing them never blocks the judge


def limits(seconds, min_time_limit_s, time_limit_factor):
    """(the per-input limits, the suite's cap) for the canonical solution's times ``seconds``."""
    per_input = [max(min_time_limit_s, time_limit_factor * t) for t in seconds]
    return per_input, min(CAP_S, sum(per_input)) + CAP_SLACK_S


class _InputTimeout(BaseException):
    pass


def judge_suite(suite, entry_point, oracle, min_time_limit_s, time_limit_factor, requests, replies):
    """The record (a dict for the supervisor) of one suite, ``(inputs, expected, seconds, atol)``, against the
    candidate behind the two pipes.

    The calls are pipelined: up to PIPELINE_DEPTH requests (and PIPELINE_BYTES, less than a pipe holds, so
    writing one never blocks) wait in the candidate's pipe, which runs them one after another as EvalPlus's loop
    does, while this process compares the outputs already back. Input i's time runs from when the candidate was
    free for it (its previous reply was read here, or its request was written, whichever is later) to when its
    reply is read, the same span EvalPlus times around ``fn(*inp)`` plus the pipe. The program's load is timed
    by the suite's cap only, as in EvalPlus, where ``exec`` precedes the first timed call. A suite stops at its
    first failing input; the candidate may have started the next few by then (their output, if any, is in the
    sample's stdout), and it is killed when this returns."""
    inputs, expected, seconds, atol = suite
    per_input, cap = limits(seconds, min_time_limit_s, time_limit_factor)
    channel = _judge._Channel(requests, replies)
    deadline = time.monotonic() + cap

    def on_alarm(signum, frame):
        raise _InputTimeout()

    previous = _set_handler(signal.SIGALRM, on_alarm)
    index, args, limit = -1, (), 0.0
    sent = collections.deque()  # (size, when written) of each request not answered yet, in order
    state = {"atol": atol, "in_flight": 0, "next": 0, "upcoming": None}

    def top_up(first):
        """Write the requests the pipeline has room for; ``first``: the one the judge waits for next (written
        even when it alone is larger than PIPELINE_BYTES, under the alarm already armed for it)."""
        while state["next"] < len(inputs):
            body = state["upcoming"]
            if body is None:
                body = state["upcoming"] = wire.encode((tuple(inputs[state["next"]]), {}))
            size = len(body) + 5
            if state["next"] != first and (len(sent) >= PIPELINE_DEPTH
                                            or state["in_flight"] + size > PIPELINE_BYTES):
                return
            channel.send(_judge.CALL_ONLY, body)
            sent.append((size, time.monotonic()))
            state["in_flight"] += size
            state["next"] += 1
            state["upcoming"] = None

    def arm(seconds):
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-3))

    try:
        arm(deadline - time.monotonic())
        channel.send(_judge.LOADED, b"")
        top_up(0)
        channel.value(channel.receive())  # the program loaded (or this raises what stopped it)
        ready = time.monotonic()
        for index, (args, exp, limit) in enumerate(zip(inputs, expected, per_input)):
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                return _failed("timeout", f"the suite ran past its {cap:g} s limit", entry_point, index, args)
            if not sent:  # its request is not written yet: it is, now, under its own limit
                arm(min(limit, remaining))
                top_up(index)
            else:
                arm(min(limit - (now - max(ready, sent[0][1])), remaining))
                top_up(-1)
            frame = channel.receive()
            signal.setitimer(signal.ITIMER_REAL, 0)
            ready = time.monotonic()
            state["in_flight"] -= sent.popleft()[0]
            out = channel.value(frame)
            if not _matches(out, exp, state, oracle, args):
                what = f"returned {_shown(out)}, expected {_shown(exp)}" if oracle != "polynomial_root" else \
                    f"returned {_shown(out)}, not a root of the polynomial within {state['atol']:g}"
                return _failed("assertion_failed", what, entry_point, index, args)
    except _InputTimeout:
        if index < 0:
            return {"status": "timeout", "input": -1,
                    "message": f"the program was still loading when the suite's {cap:g} s limit ran out"}
        if time.monotonic() >= deadline:
            return _failed("timeout", f"the suite ran past its {cap:g} s limit", entry_point, index, args)
        return _failed("timeout", f"took longer than its {limit:g} s limit", entry_point, index, args)
    except BaseException as exc:
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


def _matches(out, exp, state, oracle, args):
    """EvalPlus's comparison of one output (both plain values)."""
    if oracle == "polynomial_root":
        return _is_root(args[0] if args else None, out, state["atol"])
    exact = _equal(out, exp)
    if state["atol"] == 0 and _float_like(exp):
        state["atol"] = DEFAULT_ATOL  # for this input and every later one of the suite, as EvalPlus does
    if exact:
        return True
    if state["atol"] == 0 or type(out) is not type(exp):
        return False
    if isinstance(exp, (list, tuple)):
        return len(out) == len(exp) and all(_close(a, b, state["atol"]) for a, b in zip(out, exp))
    return _close(out, exp, state["atol"])


def _equal(out, exp):
    try:
        return bool(out == exp)
    except (RecursionError, MemoryError):
        return False


def _float_like(value):
    if type(value) is float:
        return True
    return type(value) in (list, tuple) and len(value) > 0 and all(type(item) is float for item in value)


def _close(out, exp, atol):
    """numpy.isclose(out, exp, rtol=1e-7, atol=atol) for plain numbers: NaN is never close, infinities only to
    themselves."""
    if type(out) not in (bool, int, float) or type(exp) not in (bool, int, float):
        return False
    try:
        if math.isnan(out) or math.isnan(exp):
            return False
        if math.isinf(out) or math.isinf(exp):
            return out == exp
        return abs(out - exp) <= atol + RTOL * abs(exp)
    except (OverflowError, ValueError):
        return False


def _is_root(xs, x, atol):
    """|sum xs[i] * x**i| <= atol (EvalPlus's oracle for a polynomial's root, with math.pow as it uses)."""
    if type(xs) is not list or type(x) not in (bool, int, float):
        return False
    try:
        return abs(sum(coefficient * math.pow(x, power) for power, coefficient in enumerate(xs))) <= atol
    except (OverflowError, ValueError, TypeError):
        return False


def _shown(value):
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= SHOWN else text[:SHOWN] + "..."


def _call(entry_point, index, args):
    inside = ", ".join(_shown(arg) for arg in args)
    if len(inside) > 2 * SHOWN:
        inside = inside[:2 * SHOWN] + "..."
    return f"input #{index}: {entry_point}({inside})"


def _failed(status, what, entry_point, index, args):
    return {"status": status, "message": f"{_call(entry_point, index, args)} {what}"[:_judge.MESSAGE_MAX],
            "input": index}
