"""Expected outputs of EvalPlus tasks (HumanEval+, MBPP+), computed as EvalPlus does: run the canonical solution.

Started by ``plus.py`` as ``python -I _expected.py``, with the sandbox's stripped environment, in a temporary
working folder: the canonical solutions are trusted dataset code, but they never run in the pytest process.
Standard library only, no package import: ``_wire.py`` is loaded by path, the way the sandbox supervisor loads it.

Protocol (``_wire`` frames on the original stdin and stdout; the solutions' own prints go to /dev/null):

- request ``Q``: ``(code, entry_point, base_inputs, plus_inputs, atol, call_limit_s, path, not_none)``;
  ``not_none``: keep only whether each output is None (``output is not None``), EvalPlus's expected outputs for
  the MBPP+ tasks whose canonical solutions return ``re.Match`` objects;
- for each suite, base then plus, each argument list is deep-copied and the entry point called once, timed with
  ``time.perf_counter`` (the copy is not timed), in one namespace per task (EvalPlus's ``trusted_exec``);
- the task's suites, ``encode((base_inputs, base_expected, base_seconds, plus_inputs, plus_expected,
  plus_seconds, atol))`` with inputs as tuples of argument tuples, go to ``path`` behind a header
  (``MAGIC``, the blob's length and sha256, and the sum of the timed calls: what a sample that passes both
  suites is expected to cost, which the pool uses to start such samples early), and the reply is ``R`` with
  ``(bytes, seconds)``;
- a solution that does not load, raises, outlives ``call_limit_s`` on one input, or returns something the
  plain-value format refuses: reply ``E`` with ``(suite, index, message)`` (suite "load" for the first).
"""

import copy
import hashlib
import importlib.util
import os
import signal
import struct
import sys
import time

MAGIC = b"HE+EXP2\n"
HEADER = struct.Struct(">Q32sd")  # the blob's length and sha256, the canonical calls' seconds, after MAGIC


def _sibling(name):
    """Load ``_NAME.py`` from this folder by path, as the supervisor does: through the one loader of the
    supervisor's scripts (``_load.py``), itself loaded by path the first time."""
    if "_humaneval_load" not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            "_humaneval_load", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_load.py"))
        sys.modules["_humaneval_load"] = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(sys.modules["_humaneval_load"])  # type: ignore[union-attr]
    return sys.modules["_humaneval_load"].sibling(name)


class _Failed(Exception):
    """(suite, index, message): where the canonical solution could not give an expected output."""


class _OutOfTime(BaseException):
    pass


def _alarm(signum, frame):
    raise _OutOfTime()


def _describe(exc):
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def compute(wire, code, entry_point, base, plus, atol, call_limit, not_none=False):
    """(the encoded suites of one task, the seconds of its timed calls) (see the module docstring), or _Failed."""
    namespace: dict = {}
    try:
        exec(compile(code, "<canonical solution>", "exec", dont_inherit=True), namespace)
        function = namespace[entry_point]
    except BaseException as exc:
        raise _Failed("load", -1, _describe(exc)) from None
    parts = []
    for suite, inputs in (("base", base), ("plus", plus)):
        outputs, seconds = [], []
        for index, args in enumerate(inputs):
            args = copy.deepcopy(args)
            signal.setitimer(signal.ITIMER_REAL, call_limit)
            try:
                started = time.perf_counter()
                value = function(*args)
                elapsed = time.perf_counter() - started
            except _OutOfTime:
                raise _Failed(suite, index, f"did not return within {call_limit:g} s") from None
            except BaseException as exc:
                raise _Failed(suite, index, f"raised {_describe(exc)}") from None
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            outputs.append(value is not None if not_none else value)
            seconds.append(elapsed)
        parts.append((tuple(tuple(args) for args in inputs), tuple(outputs), tuple(seconds)))
    (base_in, base_out, base_s), (plus_in, plus_out, plus_s) = parts
    try:
        return wire.encode((base_in, base_out, base_s, plus_in, plus_out, plus_s, float(atol))), \
            sum(base_s) + sum(plus_s)
    except wire.NotPlain:
        for suite, returned in (("base", base_out), ("plus", plus_out)):
            for index, value in enumerate(returned):
                try:
                    wire.encode(value)
                except wire.NotPlain as exc:
                    raise _Failed(suite, index, f"returned {exc}, which the plain-value format refuses") \
                        from None
        raise


def write(path, blob, seconds):
    with open(path, "wb") as handle:
        handle.write(MAGIC + HEADER.pack(len(blob), hashlib.sha256(blob).digest(), seconds))
        handle.write(blob)


def main():
    wire = _sibling("wire")
    requests, replies = os.dup(0), os.dup(1)
    quiet = os.open(os.devnull, os.O_RDWR)
    os.dup2(quiet, 0)  # a solution that reads stdin reads nothing, and never the protocol
    os.dup2(quiet, 1)  # nor does what it prints reach the protocol
    signal.signal(signal.SIGALRM, _alarm)
    pending = bytearray()
    while True:
        frame = wire.read_frame(requests, pending)
        if frame is None:
            return
        code, entry_point, base, plus, atol, call_limit, path, not_none = wire.decode(frame[1])
        started = time.perf_counter()
        try:
            blob, seconds = compute(wire, code, entry_point, base, plus, atol, call_limit, not_none)
        except _Failed as failure:
            wire.write_frame(replies, b"E", wire.encode(tuple(failure.args)))
            continue
        write(path, blob, seconds)
        wire.write_frame(replies, b"R", wire.encode((len(blob), time.perf_counter() - started)))


if __name__ == "__main__":
    main()
