"""The two halves of one sample: the candidate serves calls, the judge runs the test and decides the verdict.

- :func:`serve` runs in the candidate's process (forked, isolated, limited by the supervisor). It executes
  ``prompt + completion`` as the reference harness would (empty globals, so ``__name__`` is not
  ``"__main__"``), reports whether that loaded, then answers calls to the entry point: arguments in, the
  return value or the exception out, as plain data (``_wire``). The test is never in its process.
- :func:`judge` runs in the trusted supervisor. It executes the dataset's ``prompt`` and ``test`` (its own
  copies: a helper the completion redefines does not reach the test) in fresh globals, binds the entry point's
  name to a stand-in that forwards every call to the candidate, calls ``check`` under the sample's deadline and
  returns the verdict; it reseeds ``random`` and puts back what a test could have changed in the process
  (builtins, ``sys.stdout``), so nothing of one sample's judge reaches the next.

Nothing the candidate does to its own interpreter reaches the judge: what crosses is plain values, decoded by
code the candidate never runs. The candidate can only choose what it returns, raises or prints.

Standard library only, no package import: the sandbox supervisor loads this file by path.
"""

import builtins
import fcntl
import linecache
import random
import signal
import struct
import sys
import termios
import traceback

# without signal.signal's enum wrapping: this runs every sample (and _signal has no type stub)
from _signal import signal as _set_handler  # type: ignore[import-not-found]

try:
    from . import _wire as wire
except ImportError:  # loaded by path in the supervisor, next to _wire
    wire = sys.modules["_humaneval_load"].sibling("wire")  # this same _wire.py, by the one loader (_load.py)

CANDIDATE_FILE = "<humaneval>"  # prompt + completion, numbered as in the reference's program
PREAMBLE_FILE = "<preamble>"  # what a problem's environment runs before the program (serve, run_main)
PROMPT_FILE, TEST_FILE = "<prompt>", "<test>"  # the judge's own copies
READY, LOAD_ERROR, VALUE, VALUE_AND_ARGS, RAISED, STOP = b"R", b"E", b"V", b"W", b"X", b"S"
CALL, NEXT, LOADED, CALL_ONLY = b"C", b"N", b"L", b"P"  # CALL_ONLY: the caller never looks at its arguments
# CALL_PRESENCE: as CALL_ONLY, answered with whether the result is None (a bool result as it is): EvalPlus judges
# some MBPP+ tasks by that alone, and their results (re.Match objects) cannot cross as plain values. The candidate
# could send True however it answers, as it could return True: this gives it no power it did not have.
CALL_PRESENCE = b"O"
# VALUE_CONVERTED: a value, answering CALL_ONLY, whose own type was not the exact builtin one it crossed as (a float
# subclass, a list subclass) or not a builtin at all (numpy's scalars, Decimal, Fraction: an answer to CALL_ONLY, or
# an item of one, carries them as themselves, ``wire.encode``'s ``numbers``, as EvalPlus compares the candidate's own
# objects). EvalPlus compares a suite's output within its tolerance only when ``type(out) == type(exp)``, so such
# an output passes a suite only when it is equal to the expected one.
VALUE_CONVERTED = b"U"
_EXACT = frozenset((type(None), bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset))
MESSAGE_MAX, TRACEBACK_MAX, REPR_MAX = 2000, 4000, 200
# The judge's memory for a sample is bounded (the supervisor's RLIMIT_AS, the sample's memory limit beyond what
# the judge held): what the candidate returned (a generator's items pulled into a set, a value that decodes large)
# going past it fails the sample, as the same memory in the candidate's own process would have.
OVER_MEMORY = ("MemoryError: what the candidate returned took more memory in the judge than the sample's memory "
               "limit allows")
PASSING_STATUSES = ("passed", "assertion_failed", "runtime_error")
# filled by the supervisor: frames of the harness's own files are left out of tracebacks
_OWN_FILES: tuple[str, ...] = ()


# ------------------------------------------------------------------------------------------ the candidate


def serve(prompt, completion, entry_point, requests, replies, preamble=""):
    """Load the candidate and answer calls until the judge closes ``requests``. Runs in the candidate's process,
    which holds its own program and nothing of the test: the test's definitions run in the judge only.

    The judge does not wait for the load before sending its first request (one round trip less a sample): a
    failed load is answered with LOAD_ERROR at once, whatever was asked, and the rest of the requests are read
    and dropped, so the judge never writes into a closed pipe. A judge whose test never called the candidate
    asks LOADED, answered READY. ``preamble`` (a problem's environment: the modules LiveCodeBench's judge
    imports before every program) runs first in the program's namespace, apart, so its lines are the program's."""
    source = prompt + completion
    prompt_lines = prompt.count("\n")
    for stream in (sys.stdout, sys.stderr):  # what it printed before a timeout or a crash is not lost
        stream.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # io.TextIOWrapper
    linecache.cache[CANDIDATE_FILE] = (len(source), None, source.splitlines(True), CANDIDATE_FILE)
    namespace: dict = {}
    try:
        if preamble:
            exec(compile(preamble, PREAMBLE_FILE, "exec", dont_inherit=True), namespace)
        exec(compile(source, CANDIDATE_FILE, "exec", dont_inherit=True), namespace)
        if entry_point not in namespace:
            raise NameError(f"name {entry_point!r} is not defined")
        function = namespace[entry_point]
    except BaseException as exc:
        _reply(replies, LOAD_ERROR, describe(exc, prompt_lines))
        while wire.read_frame(requests) is not None:
            pass
        return
    iterators: dict
    iterators, pending = {}, bytearray()
    numbers = False  # serving a suite (CALL_ONLY): numbers cross as themselves, the items of lazy results too
    while True:
        frame = wire.read_frame(requests, pending)
        if frame is None:
            return
        kind, body = frame
        if kind == LOADED:
            _reply(replies, READY, b"")
        elif kind == CALL or kind == CALL_ONLY or kind == CALL_PRESENCE:
            args, kwargs = wire.decode(body)
            try:
                result = function(*args, **kwargs)
            except BaseException as exc:
                _reply(replies, RAISED, describe(exc, prompt_lines))
                continue
            if kind == CALL_PRESENCE:
                _reply(replies, VALUE, wire.encode(result if type(result) is bool else result is not None))
            elif kind == CALL:
                _answer(replies, result, iterators, prompt_lines, body, (args, kwargs))
            else:
                numbers = True
                _answer(replies, result, iterators, prompt_lines, kind=VALUE if type(result) in _EXACT else
                        VALUE_CONVERTED, numbers=True)
        elif kind == NEXT:
            handle = wire.decode(body)
            try:
                item = next(iterators[handle])
            except StopIteration:
                _reply(replies, STOP, b"")
                continue
            except BaseException as exc:
                _reply(replies, RAISED, describe(exc, prompt_lines))
                continue
            _answer(replies, item, iterators, prompt_lines, numbers=numbers)
        else:
            return


def _answer(replies, value, iterators, prompt_lines, sent=None, arguments=None, kind=VALUE, numbers=False):
    """Send ``value`` (as a reply of ``kind``; ``numbers``: as ``wire.encode`` takes it); with the arguments as they
    are now when the call changed them (the reference's test shares its argument objects with the candidate, so an
    in-place change is visible to it)."""
    try:
        if sent is not None and _has_mutable(arguments):
            after = _encode_or_none(arguments)
            if after is not None and after != sent:
                _reply(replies, VALUE_AND_ARGS, wire.encode((value, arguments), iterators))
                return
        _reply(replies, kind, wire.encode(value, iterators, numbers))
    except wire.NotPlain as exc:
        _reply(replies, RAISED, _refusal(f"the candidate returned {exc}; the test compares plain values only "
                                         "(exact builtin types), so the verdict would not be trustworthy"))
    except BaseException as exc:  # a hostile or enormous value: its own describe() would not help
        _reply(replies, RAISED, _refusal(f"the candidate's return value could not be sent: "
                                         f"{type(exc).__name__}"))


def _has_mutable(arguments):
    """Whether a call's arguments include a container it could change in place (the decoded arguments are
    exact builtin types)."""
    args, kwargs = arguments
    return any(type(arg) in _MUTABLE for arg in args) or any(type(arg) in _MUTABLE for arg in kwargs.values())


_MUTABLE = (list, dict, set)


def _encode_or_none(value):
    try:
        return wire.encode(value)
    except BaseException:
        return None


def _reply(replies, kind, record):
    for stream in (sys.stdout, sys.stderr):  # what the candidate printed so far, before it can be killed
        try:
            stream.flush()
        except BaseException:
            pass
    body = record if type(record) is bytes else wire.encode(record)
    if len(body) >= wire.MAX_FRAME:
        kind, body = RAISED, wire.encode(_refusal(f"a reply of {len(body)} bytes is over the "
                                                  f"{wire.MAX_FRAME}-byte limit"))
    wire.write_frame(replies, kind, body)


def _refusal(message):
    return {"type": "Refused", "message": message}


def describe(exc, prompt_lines=0):
    """A failure as plain data: the nearest builtin exception type, the message, where in the program it was
    raised (part and line), its arguments when plain, and the traceback text (without the harness's frames)."""
    try:
        text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    except BaseException:  # a hostile __str__
        message = type(exc).__name__
    if isinstance(exc, SystemExit):
        try:
            code = repr(exc.code)[:REPR_MAX]
        except BaseException:
            code = "?"
        message = f"SystemExit({code}): the program exited before check() finished"
    where = None
    if isinstance(exc, SyntaxError) and exc.filename == CANDIDATE_FILE and type(exc.lineno) is int:
        where = _part(CANDIDATE_FILE, exc.lineno, prompt_lines)
    else:
        for frame in traceback.extract_tb(exc.__traceback__):
            where = _part(frame.filename, frame.lineno, prompt_lines) or where
    try:
        lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        text = "".join(line for line in lines if not any(own in line for own in _OWN_FILES))
    except BaseException:
        text = message
    record = {"type": _builtin_name(type(exc)), "message": message[:MESSAGE_MAX], "where": where,
              "traceback": text[-TRACEBACK_MAX:]}
    try:
        args = exc.args
        wire.encode(args)
        record["args"] = tuple(args)
    except BaseException:
        pass
    return record


def _part(filename, lineno, prompt_lines):
    """(part, line within the part) for a frame of the program, or None for any other file."""
    if type(lineno) is not int:
        return None
    if filename == CANDIDATE_FILE:
        return ("prompt", lineno) if lineno <= prompt_lines else ("completion", lineno - prompt_lines)
    if filename == TEST_FILE:
        return ("test", lineno)
    if filename == PROMPT_FILE:
        return ("prompt", lineno)
    return None


def _builtin_name(kind):
    cls: type
    for cls in kind.__mro__:
        if getattr(builtins, cls.__name__, None) is cls and issubclass(cls, BaseException):
            return cls.__name__
    return "Exception"


# ---------------------------------------------------------------------------------------------- the judge


class CandidateFailed(BaseException):
    """The call cannot be answered honestly: the candidate ended, broke the protocol or returned something that
    is not plain. A BaseException, so a test's ``except Exception`` cannot mistake it for an answer."""

    def __init__(self, message, gone=False):
        super().__init__(message)
        self.gone = gone


class ArgumentNotForwardable(BaseException):
    """The test passed the candidate an argument that is not plain data: the harness cannot judge this test."""


class _Channel:
    def __init__(self, requests, replies):
        self.requests, self.replies, self.pending = requests, replies, bytearray()
        self.failed = None  # the first CandidateFailed (or failed load): the verdict, whatever the test does
        self.loaded = False  # the candidate answered once: its program loaded

    def fail(self, message, gone=False):
        exc = CandidateFailed(message, gone)
        if self.failed is None:
            self.failed = exc
        return exc

    def receive(self):
        if self.failed is not None:
            raise self.failed
        try:
            frame = wire.read_frame(self.replies, self.pending)
        except wire.WireError as exc:
            raise self.fail(f"the candidate broke the call protocol: {exc}") from None
        except MemoryError:
            raise self.fail(OVER_MEMORY) from None
        if frame is None:
            raise self.fail("the candidate's process ended", gone=True)
        if frame[0] == LOAD_ERROR:  # the program did not load: that is the verdict, as in the reference
            try:
                self.failed = _rebuilt(wire.decode(frame[1]))
            except wire.WireError as exc:
                raise self.fail(f"the candidate broke the call protocol: {exc}") from None
            raise self.failed
        self.loaded = True
        return frame

    def unasked(self):
        """Whether the candidate has written anything the judge did not ask for yet (bytes waiting in the
        pipe; an end of file is not an answer)."""
        if self.pending:
            return True
        return struct.unpack("i", fcntl.ioctl(self.replies, termios.FIONREAD, b"\0\0\0\0"))[0] > 0

    def send(self, kind, body):
        self.send_calls(kind, (body,))

    def send_calls(self, kind, bodies):
        """Requests of one kind, one per body, in one write."""
        if self.failed is not None:
            raise self.failed
        try:
            wire.write_frames(self.requests, kind, bodies)
        except OSError:
            pass  # it ended, or failed to load and said so: the reply pipe tells which

    def ask(self, kind, body, arguments=None):
        self.send(kind, body)
        return self.value(self.receive(), arguments)

    def value(self, frame, arguments=None):
        """What a reply frame (from ``receive``) says: a value, None for READY, or the exception it raises."""
        kind, body = frame
        try:
            if kind == VALUE or kind == VALUE_CONVERTED:
                return wire.decode(body, self.iterator)
            if kind == VALUE_AND_ARGS:
                value, after = wire.decode(body, self.iterator)
                if arguments is not None:  # a HumanEval+ suite never looks at its inputs again
                    _update_in_place(arguments, after)
                return value
            if kind == STOP:
                raise StopIteration
            if kind == READY:
                return None
            raised = _rebuilt(wire.decode(body)) if kind == RAISED else None
        except wire.WireError as exc:
            raise self.fail(f"the candidate broke the call protocol: {exc}") from None
        except MemoryError:
            raise self.fail(OVER_MEMORY) from None
        if raised is None:
            raise self.fail(f"the candidate broke the call protocol: an unexpected {kind!r} reply")
        if isinstance(raised, CandidateFailed):
            self.failed = self.failed or raised
        # Raised outside the try above: a MemoryError the candidate raised is its own exception, not the judge's
        # memory running out.
        raise raised

    def iterator(self, handle):
        return RemoteIterator(self, handle)


class RemoteIterator:
    """A lazy iterator the candidate returned: each item is asked for when the test wants it, as in the
    reference. Like a generator there, it is equal only to itself."""

    def __init__(self, channel, handle):
        self._channel, self._handle = channel, handle

    def __iter__(self):
        return self

    def __next__(self):
        return self._channel.ask(NEXT, wire.encode(self._handle))

    def __repr__(self):
        return f"<iterator returned by the candidate #{self._handle}>"


def _update_in_place(arguments, after):
    """The reference's test sees in-place changes to the arguments it passed: apply them to its objects."""
    if type(after) is not tuple or len(after) != 2:
        raise wire.WireError("arguments after the call: expected (args, kwargs)")
    (args, kwargs), (new_args, new_kwargs) = arguments, after
    pairs = list(zip(args, new_args if type(new_args) is tuple else ()))  # noqa: B905 (a hot path)
    if type(new_kwargs) is dict:
        pairs += [(kwargs[name], new_kwargs[name]) for name in kwargs if name in new_kwargs]
    for old, new in pairs:
        if type(old) is list and type(new) is list:
            old[:] = new
        elif type(old) is dict and type(new) is dict:
            old.clear()
            old.update(new)
        elif type(old) is set and type(new) is set:
            old.clear()
            old.update(new)


def _rebuilt(record):
    """The candidate's exception as the same builtin type in the judge, so the test's ``except`` clauses
    behave as in the reference; refusals become CandidateFailed."""
    if type(record) is not dict or type(record.get("message")) is not str:
        raise wire.WireError("an exception record that is not a record")
    # Every field the judge reads again, checked here: the candidate chose them all.
    record = {"type": record.get("type") if type(record.get("type")) is str else "Exception",
              "message": record["message"][:MESSAGE_MAX], "where": _valid_where(record.get("where")),
              "traceback": record.get("traceback")[-TRACEBACK_MAX:] if type(record.get("traceback")) is str else "",  # type: ignore[index]  # a str: checked
              "args": record.get("args") if type(record.get("args")) is tuple else None}
    message = record["message"]
    exc: BaseException
    if record.get("type") == "Refused":
        exc = CandidateFailed(message)
    else:
        kind = getattr(builtins, record["type"], None)
        if not (isinstance(kind, type) and issubclass(kind, BaseException)):
            kind = Exception
        args = record.get("args")
        try:
            exc = kind(*args) if type(args) is tuple else kind(message.partition(": ")[2])
        except BaseException:
            exc = kind.__new__(kind)
    exc.humaneval_remote = record  # type: ignore[attr-defined]  # a marker, read back with getattr
    return exc


class JudgeTimeout(BaseException):
    """The sample's wall-clock budget ran out while the judge was running or waiting for the candidate."""


def judge(prompt_code, test_code, entry_point, requests, replies, seconds=None, call_seconds=None):
    """The verdict (a dict for the supervisor) of the test against the candidate behind the two pipes, within
    ``seconds`` of wall-clock time (a timer interrupts the test, or a wait for the candidate, when it runs out),
    and with ``call_seconds``, each call of the candidate within that (a functional problem's tests, each limited
    as LiveCodeBench limits them).

    Two things a test cannot undo by catching exceptions: a deadline that passed is a timeout, and a candidate
    that failed the protocol once (ended, sent bytes that are not a value, returned something not plain) is
    a runtime_error, whatever ``check`` did afterwards."""
    import time

    channel = _Channel(requests, replies)
    expired: list = []
    deadline = time.monotonic() + (seconds or 0.0)  # (read by ``timed`` only, which needs ``seconds``)
    limit: list = [None]  # the call's own limit, while a call with one runs: what a timeout then says

    def on_alarm(signum, frame):
        expired.append(limit[0])
        raise JudgeTimeout()

    def timed(ask):
        """``ask`` (a call of the candidate) within ``call_seconds`` and the sample's deadline."""
        left = deadline - time.monotonic()
        limit[0] = call_seconds if call_seconds < left else None
        signal.setitimer(signal.ITIMER_REAL, max(min(call_seconds, left), 1e-4))
        try:
            return ask()
        finally:
            limit[0] = None
            signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 1e-4))

    names, values = list(builtins.__dict__), list(builtins.__dict__.values())
    random.seed()  # a fresh stream, as each sample's process has in the reference: no test's seed carries over
    streams = sys.stdin, sys.stdout, sys.stderr
    previous = _set_handler(signal.SIGALRM, on_alarm) if seconds is not None else None
    try:
        try:
            if seconds is not None:
                signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-4))
            sys.stdin = sys.stdout = sys.stderr = _SINK  # a test that prints or reads cannot reach the harness
            try:
                verdict = _judge(channel, prompt_code, test_code, entry_point,
                                 timed if call_seconds is not None and seconds is not None else None)
            finally:  # what the test may have changed, put back before any more of the harness's code runs
                sys.stdin, sys.stdout, sys.stderr = streams
                _restore_builtins(names, values)
            if verdict["status"] == "passed" and not channel.loaded and channel.failed is None:
                channel.ask(LOADED, b"")  # check() never called the candidate: did its program load at all?
        finally:
            if seconds is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                _set_handler(signal.SIGALRM, previous)
    except JudgeTimeout:
        verdict = {"status": "timeout"}
    except BaseException:  # the LOADED question failed: channel.failed says how
        if channel.failed is None:
            raise
    if expired and expired[0] is not None:
        return {"status": "timeout", "message": f"a call of the program (one test) took longer than its "
                                                f"{expired[0]:g} s"}
    if expired:
        return {"status": "timeout"}
    if channel.failed is not None:
        return _failure(channel.failed)
    return verdict


def _judge(channel, prompt_code, test_code, entry_point, timed=None):
    def candidate(*args, **kwargs):
        try:
            request = wire.encode((args, kwargs))
        except wire.NotPlain as exc:
            raise ArgumentNotForwardable(str(exc)) from None
        if timed is not None:
            return timed(lambda: channel.ask(CALL, request, (args, kwargs)))
        return channel.ask(CALL, request, (args, kwargs))

    candidate.__name__ = candidate.__qualname__ = entry_point
    namespace: dict = {}
    try:
        exec(prompt_code, namespace)
        namespace[entry_point] = candidate  # a test that names the entry point (HumanEval/33) gets the candidate
        exec(test_code, namespace)
        check = namespace["check"]
    except JudgeTimeout:
        raise
    except BaseException as exc:
        if isinstance(exc, CandidateFailed) or hasattr(exc, "humaneval_remote"):
            return _failure(exc)  # the test called the candidate while it loaded
        return {"status": "harness_error", "message": f"the dataset's prompt or test did not load: "
                                                      f"{_summary(exc)}"[:MESSAGE_MAX]}
    # From here a test that does not load in the candidate's process (it loaded here) is the candidate's doing.
    try:
        check(candidate)
    except ArgumentNotForwardable as exc:
        return {"status": "harness_error", "message": f"the test passed the candidate an argument that cannot "
                                                      f"be forwarded: {exc}"[:MESSAGE_MAX]}
    except JudgeTimeout:
        raise
    except BaseException as exc:
        return _failure(exc)
    return {"status": "passed"}


class _Sink:
    """Where a test's own prints and reads go while it is judged: nowhere."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass

    def read(self, *args):
        return ""

    readline = read


_SINK = _Sink()


def _restore_builtins(names, values):
    """Put back any builtin the test replaced, added or removed. Compared as lists, in C: equal items are
    identical ones here (the harness's own objects, unless the trusted test replaced one)."""
    current = builtins.__dict__
    if list(current) == names and list(current.values()) == values:
        return
    saved = dict(zip(names, values))  # noqa: B905 (a hot path)
    for name in [name for name in current if name not in saved]:
        del current[name]
    current.update(saved)


def _failure(exc):
    if isinstance(exc, JudgeTimeout):
        raise exc
    if isinstance(exc, CandidateFailed):
        return {"status": "runtime_error", "message": str(exc)[:MESSAGE_MAX], "candidate_gone": exc.gone}
    remote = getattr(exc, "humaneval_remote", None)
    if remote is None and isinstance(exc, MemoryError):  # the judge's own memory, on what the candidate returned
        return {"status": "runtime_error", "message": OVER_MEMORY, "where": None, "traceback": ""}
    status = "assertion_failed" if isinstance(exc, AssertionError) else "runtime_error"
    if remote is not None:  # raised by the candidate: its own message, line and traceback
        return {"status": "runtime_error" if remote["type"] == "Refused" else status,
                "message": remote["message"], "where": remote["where"], "traceback": remote["traceback"]}
    record = describe(exc)
    return {"status": status, "message": record["message"], "where": record["where"],
            "traceback": record["traceback"]}


def _valid_where(where):
    if (type(where) is tuple and len(where) == 2 and where[0] in ("prompt", "completion", "test")
            and type(where[1]) is int and where[1] > 0):
        return where
    return None


def _summary(exc):
    try:
        return f"{type(exc).__name__}: {exc}"
    except BaseException:
        return type(exc).__name__


# --------------------------------------------------------------------------- programs that read standard input
# The comparison rules (vocabulary.IO_RULES, which the harness checks first), besides float tolerance, spelled
# float:TOL or float:abs=A,rel=R (io_rule reads it)
IO_RULES = ("lcb", "exact", "tokens", "casefold", "checker")
RULES_SAID = ", ".join(rule for rule in IO_RULES if rule != "checker") + ", float:TOL, float:abs=A,rel=R"
IO_RULES_SAID = RULES_SAID + " or checker"
OUTPUT_CAP = 16 << 20  # bytes of standard output a test's candidate may write (or four times the expected output's)
LINE_MAX = 80  # characters of an expected or produced line quoted in a detail
# How much longer than a standard-input test's deadline the supervisor waits for its record (and the harness's budget
# counts): the judge compares the output after the program's end, up to 16 MB of it (2.4 s measured on a loaded
# 2-core machine for 8 MB of decimals written otherwise)
IO_COMPARE_S = 10.0
# How long a row's checker may take on one test's output: twice at most (its expected output once, then the
# program's), within IO_COMPARE_S
CHECKER_S = 4.0
CHECKER_FILE = "<checker>"
TOKENS_CHUNK = 1 << 20  # characters of an output split into tokens at a time: a flood of tokens is never one list


def io_tests(text):
    """A standard-input problem's tests, from its JSON (trusted: the dataset's): [input, expected output] pairs,
    or ``{"tests": pairs, "checker": source}`` for a problem a checker of its own judges (each test then carries
    the one :class:`Checker`, third)."""
    import json

    tests = json.loads(text)
    checker = None
    if isinstance(tests, dict):
        if sorted(tests) != ["checker", "tests"] or not isinstance(tests["checker"], str):
            found = (f"a checker of {type(tests['checker']).__name__}" if "checker" in tests else
                     f"keys {', '.join(sorted(map(str, tests)))}")
            raise ValueError(f"{_TESTS_SAID}, found {found}")
        checker, tests = Checker(tests["checker"]), tests["tests"]
    if not isinstance(tests, list) or not all(isinstance(test, list) and len(test) == 2 and
                                              all(isinstance(part, str) for part in test) for test in tests):
        raise ValueError(f"{_TESTS_SAID}, found tests that are not all pairs of strings")
    return tests if checker is None else [(given, expected, checker) for given, expected in tests]


_TESTS_SAID = ("a standard-input problem's tests: expected [input, output] pairs of strings, or {\"tests\": pairs, "
               "\"checker\": source}")


def io_rule(rule: object, said: str = IO_RULES_SAID) -> "tuple[str, float, float]":  # (typed: the harness calls it)
    """(name, absolute, relative): a rule (the tolerances of float, else 0.0), or a one-line ValueError naming it,
    which says the rules there are as ``said`` does. ``vocabulary.io_rule`` spells it for the harness."""
    if rule in IO_RULES:
        return rule, 0.0, 0.0
    if type(rule) is not str or not rule.startswith("float:"):
        raise ValueError(f"expected a comparison rule ({said}), found {rule!r}")
    import math

    given = rule[len("float:"):].split(",")
    tolerances = {}
    for part in given:
        name, equals, value = part.partition("=")
        if not equals and len(given) == 1:
            name, value = "", part
        if name not in ("", "abs", "rel") or name in tolerances:
            raise ValueError(f"expected a comparison rule ({said}), found {rule!r}")
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"expected a tolerance that is a finite number >= 0 (float:TOL or float:abs=A,rel=R), "
                             f"found {rule!r}")
        tolerances[name] = number
    return ("float", tolerances.get("abs", tolerances.get("", 0.0)), tolerances.get("rel", tolerances.get("", 0.0)))


def run_main(source, preamble=""):
    """Run ``source`` as a program's ``__main__``, in the candidate's process, on the standard input and output the
    judge's pipes are (descriptors 0 and 1): every idiom of a program that reads its input works (``input()``,
    ``sys.stdin`` read, iterated or its ``buffer``, ``open(0)``, ``os.read(0, ...)``, ``fileinput``), as under
    ``python prog.py``: the same exit code (an exception is 1, after its traceback on stderr; ``exit(n)``),
    threads joined, exit handlers run and output flushed at the end. Returns the exit code."""
    import io

    sys.stdin = _stdio(io, 0, "r")
    sys.stdout = _stdio(io, 1, "w")
    sys.__stdin__, sys.__stdout__ = sys.stdin, sys.stdout  # type: ignore[misc]  # as the interpreter's own
    sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]  # what it printed before a crash
    linecache.cache[CANDIDATE_FILE] = (len(source), None, source.splitlines(True), CANDIDATE_FILE)
    namespace = sys.modules["__main__"].__dict__
    namespace.update(__name__="__main__", __builtins__=builtins)
    original = sys.stdout  # flushed at the end too, should the program put another in its place
    code = 0
    try:
        if preamble:
            exec(compile(preamble, PREAMBLE_FILE, "exec", dont_inherit=True), namespace)
        exec(compile(source, CANDIDATE_FILE, "exec", dont_inherit=True), namespace)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:
        code = _printed(1)
    threading = sys.modules.get("threading")
    if threading is not None:  # the interpreter waits for the program's other threads before it exits
        try:
            threading._shutdown()
        except BaseException:
            pass
    try:
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, original, sys.stderr):
        try:
            if not stream.closed:  # (the interpreter skips a stream the program closed)
                stream.flush()
        except BaseException:  # a standard output broken: Python exits with 120
            code = code or 120
    try:  # then, as the interpreter's finalization: the program's objects go, a file it never flushed writes out
        namespace.clear()  # (no gc.collect: a full collection of the warm interpreter's objects costs milliseconds)
    except BaseException:
        pass
    return code


def _stdio(io, fd, mode):
    """A standard stream as the interpreter makes one (``create_stdio``): named ``<stdin>``, with its ``mode`` (a
    competitive programmer's fast-I/O template reads both)."""
    raw = io.FileIO(fd, mode + "b", closefd=False)
    raw.name = "<stdin>" if fd == 0 else "<stdout>"
    buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
    stream = io.TextIOWrapper(buffered, encoding="utf-8", errors="surrogateescape")
    stream.mode = mode
    return stream


def _exit_code(exc):
    """The exit code ``SystemExit`` means, as the interpreter takes it: None 0, an int (a bool too) its low byte,
    else 1 after printing it."""
    try:
        value = exc.code
        if value is None:
            return 0
        if isinstance(value, int):
            return int(value) & 0xFF if 0 <= value <= 0x7FFFFFFF else 0xFF
        print(value, file=sys.stderr)
    except BaseException:
        pass
    return 1


def _printed(code):
    """The traceback of the exception being handled on stderr, from the program's own frames (as ``python prog.py``
    prints it: nothing of the harness's), and ``code``."""
    try:
        kind, value, trace = sys.exc_info()
        traceback.print_exception(kind, value, trace.tb_next if trace is not None else None)
    except BaseException:
        pass
    return code


def judge_io(test, rule, requests, replies, seconds):
    """One test of a standard-input program, in the judge: its input written to the candidate's standard input
    (``requests``), its standard output read (``replies``) to its end, up to its cap, within ``seconds``, and
    compared to the expected output by ``rule``. The candidate never holds the expected output, nor any other
    test's input."""
    import os
    import select
    import time

    given, expected = test[0], test[1]  # (a third item: the row's checker, for judge_output)
    data = memoryview(given.encode("utf-8", "surrogateescape"))
    cap = max(OUTPUT_CAP, 4 * len(expected))
    out = bytearray()
    deadline = time.monotonic() + seconds
    # Neither end blocks: where the candidate runs as this uid (landlock, basic) it may reopen its own pipes
    # (/proc/self/fd/0 for writing, 1 for reading) and fill or drain them between select and the call.
    os.set_blocking(requests, False)
    os.set_blocking(replies, False)
    writing = True
    if not data:
        os.close(requests)
        writing = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return {"status": "timeout"}
            readable, writable, _ = select.select([replies], [requests] if writing else [], [], left)
            if writable:
                try:
                    data = data[os.write(requests, data[:1 << 16]):]
                except (BlockingIOError, InterruptedError):  # full again (filled by the program itself)
                    pass
                except OSError:  # it stopped reading (a broken pipe): the rest is not its to see
                    data = data[:0]
                if not data:
                    os.close(requests)
                    writing = False
            if readable:
                try:
                    chunk = os.read(replies, 1 << 16)
                except (BlockingIOError, InterruptedError):  # (drained by the program itself)
                    continue
                except OSError as exc:
                    return {"status": "runtime_error", "message": f"the program's standard output failed: {exc}"}
                if not chunk:
                    break
                try:
                    out += chunk
                except MemoryError:  # its output, within the cap, over the sample's memory: as in its own process
                    return {"status": "runtime_error", "message": "MemoryError: the program's output took more "
                                                                  "memory in the judge than the sample's memory "
                                                                  "limit allows"}
                if len(out) > cap:
                    return {"status": "runtime_error",
                            "message": f"the program wrote more than {cap} bytes to its standard output"}
    finally:
        if writing:
            os.close(requests)
    record = judge_output(out, test, rule)
    if record["status"] != "runtime_error":  # (its output over the judge's memory: it is killed at once)
        record["candidate_gone"] = True  # its standard output closed: it has ended, or is ending
    return record


def judge_output(out, test, rule):
    """The record of one test's output (``out``, bytes, read to its end): passed, or assertion_failed with what
    differs first, compared by ``rule``, or by the row's checker (``test``'s third item) when the rule is
    ``checker``."""
    try:
        got = out.decode("utf-8", "replace")
        if rule == "checker":
            return _checked(test[2] if len(test) > 2 else None, test[0], test[1], got)
        differs = _compare(got, test[1], rule)
    except MemoryError:  # the output compared took more than the sample's memory, as it would in its own process
        return {"status": "runtime_error", "message": "MemoryError: the program's output took more memory in the "
                                                      "judge than the sample's memory limit allows"}
    return {"status": "passed"} if differs is None else {"status": "assertion_failed", "message": differs}


def _compare(got, expected, rule):
    """None when ``got`` is ``expected`` by ``rule``, else what differs first (the line or token, expected and
    got)."""
    name, absolute, relative = io_rule(rule)
    if name == "lcb":
        return _lcb(got, expected)
    if name == "exact":
        return _exact(got, expected)
    if name == "tokens":
        return _tokens_differ(got, expected, None)
    if name == "casefold":
        return _tokens_differ(got, expected, _same_casefold)
    close = _Close(absolute, relative)
    with close.arithmetic():
        return _tokens_differ(got, expected, close)


def _lcb(got, expected):
    """LiveCodeBench's rule: each line stripped, the same number of lines, a line that differs equal when its
    tokens are equal decimals."""
    got, expected = got.strip(), expected.strip()
    if got.count("\n") != expected.count("\n"):  # (counted before anything is split: a flood of lines is cheap)
        got_lines, expected_lines = got.split("\n", 1)[:1], expected.split("\n", 1)[:1]
        return (f"wrong answer: expected {expected.count(chr(10)) + 1} lines, got {got.count(chr(10)) + 1} (first "
                f"line: expected {_cut(expected_lines[0].strip())}, got {_cut(got_lines[0].strip())})")
    got_lines = [line.strip() for line in got.split("\n")]
    expected_lines = [line.strip() for line in expected.split("\n")]  # (as many as got's: counted above)
    for number, (line, wanted) in enumerate(zip(got_lines, expected_lines, strict=True), 1):
        if line == wanted or _same_decimals(line, wanted):
            continue
        return f"wrong answer: line {number}: expected {_cut(wanted)}, got {_cut(line)}"
    return None


def _exact(got, expected):
    """The text itself, but for line ends: ``\\r\\n`` is read as ``\\n``, and one final newline may be there or
    not on either side (``print`` and ``sys.stdout.write`` of the same text are equal; a trailing space, a
    leading one, a blank line or a second final newline are not)."""
    got, expected = _plain_ends(got), _plain_ends(expected)
    if got == expected:
        return None
    from itertools import zip_longest

    for number, (line, want) in enumerate(zip_longest(_lines(got), _lines(expected)), 1):
        if line == want:
            continue
        if line is not None and want is not None:
            return f"wrong answer: line {number}: expected {_cut(want)}, got {_cut(line)}"
        return _counts("line", expected.count("\n") + 1, got.count("\n") + 1, number, want, line)
    return None


def _plain_ends(text):
    text = text.replace("\r\n", "\n") if "\r" in text else text
    return text[:-1] if text.endswith("\n") else text


def _lines(text):
    """The lines of ``text`` as ``text.split("\\n")`` has them, one at a time (an output is never one list)."""
    start = 0
    while True:
        end = text.find("\n", start)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _tokens_differ(got, expected, same):
    """Whitespace-separated tokens, wherever the lines break: equal as strings, or by ``same`` (None: as strings
    only). What differs first is the token, by its number."""
    if got.strip() == expected.strip():  # (the usual right answer: no token is made)
        return None
    from itertools import zip_longest

    mine, wanted = _tokens(got), _tokens(expected)
    for number, (token, want) in enumerate(zip_longest(mine, wanted), 1):
        if token == want or (token is not None and want is not None and same is not None and same(token, want)):
            continue
        if token is not None and want is not None:
            return f"wrong answer: token {number}: expected {_cut(want)}, got {_cut(token)}"
        more = sum(1 for _ in (mine if want is None else wanted))  # what the longer one has left, after this one
        got_count, expected_count = (number + more, number - 1) if want is None else (number - 1, number + more)
        return _counts("token", expected_count, got_count, number, want, token)
    return None


def _tokens(text):
    """The whitespace-separated tokens of ``text``, a chunk of it at a time (cut at whitespace)."""
    import re

    space = re.compile(r"\s")
    start, size = 0, len(text)
    while start < size:
        end = start + TOKENS_CHUNK
        if end < size:
            found = space.search(text, end)
            end = found.start() if found else size
        yield from text[start:end].split()
        start = end


def _counts(unit, expected, got, number, want, token):
    """A detail for outputs of different lengths: their counts, and the first item one of them lacks."""
    return (f"wrong answer: expected {_plural(expected, unit)}, got {got} ({unit} {number}: expected "
            f"{'nothing' if want is None else _cut(want)}, got {'nothing' if token is None else _cut(token)})")


def _plural(count, unit):
    return f"{count} {unit}" if count == 1 else f"{count} {unit}s"


def _same_casefold(token, wanted):
    return token.casefold() == wanted.casefold()


class _Close:
    """Float tolerance, for two tokens that differ as strings: equal when both are numbers (ASCII decimal notation,
    ``inf``, ``infinity`` or ``nan``, any case, a sign) within ``absolute`` of each other or within ``relative``
    times the expected one. An integer expected and an integral value given (``3``, ``3.0``, ``1000001e0``) are
    equal only as integers (a count off by one is wrong, however large, however it is written; a value that is not
    integral, ``2.9999999997``, is within the tolerance of ``3`` or not),
    NaN only to NaN, an infinity only to the same one. Reckoned in decimal (``arithmetic``: 60 digits, and an
    overflow is an infinity, never an error), so a bound holds as written (0.100001 is within 1e-6 of 0.1)."""

    def __init__(self, absolute, relative):
        import decimal

        self.decimal = decimal.Decimal
        self.absolute, self.relative = decimal.Decimal(repr(absolute)), decimal.Decimal(repr(relative))
        self.context = decimal.Context(prec=60, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[])

    def arithmetic(self):
        """The decimal context the comparisons run in (the judge's own is put back after)."""
        import decimal

        return decimal.localcontext(self.context)

    def number(self, token):
        """``token`` as a Decimal when it is a number of the rule's (``Decimal`` reads more: ``1_000``, digits of
        other scripts, ``sNaN``, ``NaN12``), else None."""
        if not token.isascii() or "_" in token:
            return None
        try:
            number = self.decimal(token)
        except ArithmeticError:  # (not a number: InvalidOperation)
            return None
        if number.is_nan() and token.lower() not in ("nan", "+nan", "-nan"):
            return None
        return number

    def __call__(self, token, wanted):
        mine, theirs = self.number(token), self.number(wanted)
        if mine is None or theirs is None:
            return False
        if not (mine.is_finite() and theirs.is_finite()):
            return mine.is_nan() and theirs.is_nan() or mine == theirs  # (NaN is equal to nothing else)
        if wanted.lstrip("+-").isdigit() and mine == mine.to_integral_value():  # (ASCII digits: number() said)
            return mine == theirs  # an integer expected, an integral value given (1000001.0, 1e6): a count, exact
        difference = abs(mine - theirs)
        return difference <= self.absolute or difference <= self.relative * abs(theirs)


# -------------------------------------------------------------------------------------------- a row's checker


class Checker:
    """A row's own checker: Python source (trusted: the dataset's text) that defines ``check(input, expected,
    got) -> bool``, compiled the first time it judges, in the judge. It travels with the tests (``io_tests``), so
    the candidate's process never holds it. ``accepted``: the tests whose expected output it has accepted (each
    checked once, before it first judges a program's output on that test)."""

    __slots__ = ("source", "code", "accepted")

    def __init__(self, source):
        self.source, self.code, self.accepted = source, None, set()


def accept(test):
    """None, or the dataset's error when the row's checker a test carries (third) does not accept that test's own
    expected output (``_checked``): asked once per test and judge, by the judge before the program's output is
    read and outside the sample's memory limit, so that nothing the program does decides it."""
    if len(test) < 3:
        return None
    checker, given, expected = test[2], test[0], test[1]
    if checker is None or (given, expected) in checker.accepted:
        return None
    kind, found = _guarded(checker, given, expected, expected)
    if kind != "result" or found is not True:
        why = found if kind != "result" else "it returned False"
        return _dataset_error(f"the row's checker does not accept this test's expected output: {why} (a dataset "
                              "error)")
    checker.accepted.add((given, expected))
    return None


def _checked(checker, given, expected, got):
    """The verdict of a row's checker on one test's output, run here in the judge, never in the candidate's
    process: in fresh globals, its prints and reads going nowhere, within CHECKER_S, and what it changed of the
    builtins and the standard streams put back.

    Whose failure a checker's failure is: first, once per test, the checker must accept the test's own expected
    output; a checker that does not load, or refuses, raises, answers other than a bool or runs out of time on it,
    is the dataset's failure (a harness_error that says so, whatever the program printed). Once it has, a checker
    that raises, answers other than a bool or runs out of time on the program's output was given an output it
    cannot read: the program's wrong answer, never the harness's error (which a program could choose so)."""
    if checker is None:
        return _dataset_error("the rule 'checker' needs the row's checker, and the tests carry none")
    refused = accept((given, expected, checker))  # (the judge asked already, before the program's output came)
    if refused is not None:
        return refused
    # It loaded and accepted the expected output: whatever fails now (its loading again included, under the
    # memory the program's output takes) fails on that output.
    kind, found = _guarded(checker, given, expected, got)
    if kind == "result" and found:
        return {"status": "passed"}
    first = got.lstrip()
    end = first.find("\n")
    first = (first if end < 0 else first[:end]).strip()
    why = "refused the output" if kind == "result" else f"could not judge the output ({found})"
    return {"status": "assertion_failed",
            "message": f"wrong answer: the row's checker {why} (its first line: {_cut(first)})"}


def _guarded(checker, given, expected, got):
    """(kind, what) of one call of the checker, within CHECKER_S: ("result", its bool), ("error", why: it raised,
    answered another type or ran out of time) or ("load", why it did not load)."""
    names, values = list(builtins.__dict__), list(builtins.__dict__.values())
    streams = sys.stdin, sys.stdout, sys.stderr

    def on_alarm(signum, frame):
        raise JudgeTimeout()

    previous = _set_handler(signal.SIGALRM, on_alarm)
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, CHECKER_S)
            sys.stdin = sys.stdout = sys.stderr = _SINK  # (the judge's own standard output is the supervisor's)
            found = _run_checker(checker, given, expected, got)
        finally:  # (first: once this ran, no alarm comes, and one that came in time is caught just below)
            signal.setitimer(signal.ITIMER_REAL, 0)
    except JudgeTimeout:
        found = ("error", f"it ran past its {CHECKER_S:g} s limit")
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        _restore_builtins(names, values)
        _set_handler(signal.SIGALRM, previous)
    return found


def _run_checker(checker, given, expected, got):
    if checker.code is None:
        try:
            checker.code = compile(checker.source, CHECKER_FILE, "exec", dont_inherit=True)
        except JudgeTimeout:
            raise
        except BaseException as exc:
            return "load", f"it did not load: {_said(exc)}"
    namespace: dict = {"__name__": "__checker__"}
    try:
        exec(checker.code, namespace)
    except JudgeTimeout:
        raise
    except BaseException as exc:
        return "load", f"it did not load: {_said(exc)}"
    check = namespace.get("check")
    if not callable(check):
        return "load", "it defines no check(input, expected, got)"
    try:
        result = check(given, expected, got)
    except JudgeTimeout:
        raise
    except BaseException as exc:
        return "error", f"it raised {_said(exc)}"
    if type(result) is not bool:
        return "error", f"it returned {type(result).__name__}, expected a bool"
    return "result", result


def _dataset_error(message):
    return {"status": "harness_error", "message": message[:MESSAGE_MAX]}


def _said(exc):
    """An exception of the checker in a few words: its type and message (a syntax error's line, not the file)."""
    try:
        if isinstance(exc, SyntaxError):
            return f"SyntaxError: {exc.msg} (line {exc.lineno})"
        text = str(exc)
    except BaseException:
        text = ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _same_decimals(line, wanted):
    """LiveCodeBench's rule for a line that differs: equal when both are whitespace-separated decimals, token by
    token equal (``1.0`` is ``1``, ``2e1`` is ``20``)."""
    from decimal import Decimal

    try:
        return [Decimal(token) for token in line.split()] == [Decimal(token) for token in wanted.split()]
    except MemoryError:
        raise
    except Exception:  # not numbers (or a signalling NaN, which refuses to compare): not equal
        return False


def _cut(line):
    return repr(line if len(line) <= LINE_MAX else line[:LINE_MAX] + "...")
