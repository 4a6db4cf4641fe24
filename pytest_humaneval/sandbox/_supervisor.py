"""The sandbox supervisor: a warm process that runs one sample at a time: a fresh candidate and a trusted judge.

Started by :class:`pytest_humaneval.sandbox.Sandbox` as ``python -I _supervisor.py`` with a stripped
environment; its first message on fd 0 says where its folder is, which isolation to apply and which
descriptor is the socket on which the harness hands over open files (nothing of that is in its argv or
environment, which every process forked from it shows). It then reads length-prefixed JSON requests on fd 0
and answers on fd 1. It imports nothing from ``pytest_humaneval`` (so nothing of the harness is inherited by
the candidate) and only the standard library, plus its siblings (``_wire``, ``_judge``, ``_contain``,
``_suite``, ``_zygote``), loaded by path.

Each sample is two processes: the *candidate* (isolated, limited, unprivileged) executes ``prompt +
completion`` and serves calls to the entry point; the *judge* (trusted) executes the dataset's prompt and test
and calls ``check`` with a stand-in that forwards each call. Only plain values cross between them
(``_wire``), and the verdict is the judge's: nothing the completion does to its own interpreter can change the
judge's code or its verdict. The candidate is forked by a fork server (``_zygote``) that was forked from this
process before any request arrived, so its memory holds nothing of any test or of any other sample; what it
knows of its own sample it reads from a file of its own.

Why a warm supervisor rather than a fresh interpreter per sample: interpreter start-up and imports are paid once,
each sample still gets a brand-new process (a fork), and the wall-clock budget starts at the fork, so a busy
machine's start-up latency never eats into the candidate's time.

Why the supervisor is a child subreaper: the judge and the fork server are its children, and anything else
that ends up here (re-parented to it) is killed after the sample, so nothing can outlive a sample by changing
session or process group.
"""

from __future__ import annotations

import builtins
import ctypes
import json
import linecache
import os
import resource
import select
import signal
import struct
import sys
import time

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing here: type checkers take it as True
if TYPE_CHECKING:  # (not `import socket`: a module-level import would change how the lazy imports' calls compile)
    from socket import socket as Socket

FILES_FD = 5  # in the supervisor: the socket on which the harness hands over HumanEval+ suites files
EXCERPT_BYTES = 4096
STEP_PREFIX = "start-up step: "  # harness.STEP_PREFIX: the log's lines that say how far a start got
# Modules that HumanEval programs import all the time: imported once here, inherited by every fork.
# `random` re-seeds itself in each forked child (os.register_at_fork), so samples do not share a stream.
PRELOAD = (
    "math", "re", "string", "collections", "itertools", "functools", "heapq", "bisect", "hashlib",
    "typing", "random", "copy", "fractions", "statistics", "operator", "json", "decimal",
    "datetime",  # (with the rest: the environment LiveCodeBench's judge gives every program, data/io_problems.py)
)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36
SIGSTOP_BIT = 1 << (signal.SIGSTOP - 1)  # in /proc/PID/status's masks of pending signals
# The basic sandbox's candidate runs as this user and can stop or kill its judge or fork server: that is the
# program's failure (docs/safety.md, "In the basic sandbox"), said so.
BASIC = "(basic sandbox: it runs as your user)"
JUDGE_GRACE_S = 1.0  # how long past the deadline the supervisor waits for the judge's timeout verdict
# How long past a HumanEval+ suite's cap the supervisor waits for the judge's record before it kills the judge: its
# own timer ends a suite at the cap, unless a single C call on what the candidate sent (building a dict of keys
# chosen to collide, comparing it) holds it, which only killing it stops.
JUDGE_MARGIN_S = 0.5
# The largest suites file a judge decodes: HumanEval+'s largest is 147 MB (HumanEval/15); MBPP+'s Mbpp/255 is
# 1.4 GB (over a million 77-tuples per output, and no such output fits in one reply frame anyway).
MAX_SUITES_BYTES = 512 << 20
CANDIDATE_GRACE_S = 0.1  # how long a judged candidate (its channel closed) may take to end before it is killed
# A timeout is the program's only if it had the CPU it was given. One whose processes waited on a run queue for a
# quarter of its time or more, and ran for less than three quarters of it (so the wait was not its own threads
# queueing behind each other on its one CPU), was starved by others (samples beside it, the host): it is judged
# once more, and that verdict is the sample's (docs/safety.md, "Samples beside each other").
STARVED_SHARE = 0.25
# Without namespaces: each sample's working dir, under the supervisor's base dir, in a folder that holds nothing
# else (Landlock's shared layer lets candidates read in that folder, where each sample's new working dir is).
WORK_PARENT = "sandbox"
WORK_DIR = os.path.join(WORK_PARENT, "work")
_LIBC = ctypes.CDLL(None, use_errno=True)


def _sibling(name: str):
    """Load ``_NAME.py`` from this folder by path: started as ``python -I``, the folder is not on sys.path, and
    nothing of the package (nor pytest) may come in with it. Through the one loader of the supervisor's scripts
    (``_load.py``), itself loaded by path the first time."""
    if "_humaneval_load" not in sys.modules:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            "_humaneval_load", os.path.join(os.path.dirname(os.path.abspath(__file__)), "_load.py"))
        sys.modules["_humaneval_load"] = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(sys.modules["_humaneval_load"])  # type: ignore[union-attr]
    return sys.modules["_humaneval_load"].sibling(name)


_wire = _sibling("wire")
_judge = _sibling("judge")
_confine = _sibling("confine")
_elf = _sibling("elf")
_contain = _sibling("contain")
_view = _sibling("view")
_suite = _sibling("suite")
_zygote = _sibling("zygote")
# every file of the supervisor's own, as the judge leaves them out of a traceback: itself and what it loaded by path
_judge._OWN_FILES = (os.path.abspath(__file__), *(module.__file__ for name, module in sorted(sys.modules.items())
                                                   if name.startswith("_humaneval_")))
# What a judge may allocate while it judges one sample (or suite), beyond what it held when it began: the sample's
# own memory limit, for what the candidate returned (a generator's items a test pulls into a set, say), plus the
# message being read (MAX_FRAME, in two copies at most while it is decoded). Its address space (RLIMIT_AS) is
# held to that, so a candidate without a cgroup cannot make the judge hold what its own limit forbids it: on
# 2b2788d a returned generator of large items put 1,076 MiB in the judge of a set_equal task with memory_mb 512.
JUDGE_FRAMES_MB = 2 * (_wire.MAX_FRAME >> 20)


def _prctl(option: int, value: int) -> bool:
    return _LIBC.prctl(option, value, 0, 0, 0) == 0


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = os.read(fd, size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_message(fd: int) -> dict | None:
    header = _read_exact(fd, 4)
    if header is None:
        return None
    body = _read_exact(fd, struct.unpack(">I", header)[0])
    return None if body is None else json.loads(body)


def write_message(fd: int, message: dict) -> None:
    body = json.dumps(message).encode()
    _write_all(fd, struct.pack(">I", len(body)) + body)


# ------------------------------------------------------------------------------------------- the problems


class Problem:
    """A problem as the supervisor and the judge keep it: its texts (and, in the judge, their compiled code).
    The harness sends a problem's prompt and test once per supervisor, then only its number (they are most of
    a request's bytes); the supervisor does the same towards the judge. Compiled in the judge (trusted text:
    the dataset's, never a completion), without this module's compiler flags."""

    __slots__ = ("prompt", "test", "prompt_code", "test_code", "lines", "suite_fd", "suite_offset", "tests")

    def __init__(self, prompt: str, test: str, suite_fd: int | None = None, suite_offset: int = 0,
                 compiled: bool = True, io: bool = False) -> None:
        self.prompt, self.test = prompt, test
        # HumanEval+: an open descriptor of the file that holds the problem's suites, from suite_offset on
        self.suite_fd, self.suite_offset = suite_fd, suite_offset
        self.prompt_code = self.test_code = self.lines = None
        # A standard-input problem: its tests, [input, expected output] pairs (the test is their JSON, no code)
        self.tests = _judge.io_tests(test) if io else None
        if not compiled or io:
            return
        try:
            self.prompt_code = compile(prompt, _judge.PROMPT_FILE, "exec", dont_inherit=True)
        except SyntaxError:  # a prompt that is not a module on its own: the judge goes without its helpers
            self.prompt_code = compile("", _judge.PROMPT_FILE, "exec", dont_inherit=True)
        self.test_code = compile(test, _judge.TEST_FILE, "exec", dont_inherit=True)
        self.lines = {name: (len(text), None, text.splitlines(True), name)  # linecache entries: tracebacks
                      for name, text in ((_judge.PROMPT_FILE, prompt), (_judge.TEST_FILE, test))}


def _problem(request: dict, problems: dict, suite_fd: int | None = None, compiled: bool = True) -> Problem:
    """The request's problem: registered when the request carries its texts (with its suites file, received
    just before it), else known from before."""
    number = request["problem"]
    if "test" in request:
        old = problems.get(number)
        if old is not None and old.suite_fd is not None:
            os.close(old.suite_fd)
        problems[number] = Problem(request["prompt"], request["test"], suite_fd, request.get("suite_offset", 0),
                                   compiled, io=request.get("io") is not None)
    return problems[number]


def _suite_file(request: dict) -> int | None:
    """The descriptor the harness sent for a request that registers a HumanEval+ problem."""
    if "suite_offset" not in request:
        return None
    import socket

    _, fds, _, _ = socket.recv_fds(socket.socket(fileno=os.dup(FILES_FD)), 1, 1)
    if len(fds) != 1:
        raise OSError("the suites file of the problem did not arrive")
    return fds[0]


# ----------------------------------------------------------------------------------------- the supervisor


def _excerpt(fd: int) -> str:
    """The start of a captured stream, read through the supervisor's own descriptor of the file."""
    size = os.fstat(fd).st_size
    if not size:
        return ""
    text = os.pread(fd, EXCERPT_BYTES, 0).decode("utf-8", "replace")
    if size > EXCERPT_BYTES:
        text += f"\n... [{size - EXCERPT_BYTES} more bytes not shown]"
    return text


def _signal_detail(signum: int, request: dict) -> str:
    limits = request["limits"]
    reasons: dict[int, str] = {
        signal.SIGXCPU: "CPU time limit exceeded",
        signal.SIGXFSZ: f"file size limit exceeded ({limits['file_size_mb']} MiB; output flood?)",
        signal.SIGSEGV: "segmentation fault (C stack overflow or a crash in native code)",
        signal.SIGKILL: "killed (SIGKILL)",
    }
    name = signal.Signals(signum).name if signum in signal.Signals._value2member_map_ else str(signum)
    return f"killed by {name}: {reasons.get(signum, 'terminated by a signal')}"


class Retire(Exception):
    """This supervisor can no longer vouch for its samples: the harness replaces it after this reply."""


class NotRun(Retire):
    """This supervisor cannot run the sample and ran nothing of it: the harness replaces it and runs the sample on the
    fresh one (once), as a request a supervisor never took."""


class Tampered(Exception):
    """The program reached a trusted process: it changed its limits, priority, CPUs or folder, or killed the
    fork server. Only a candidate that shares the harness's uid can (the basic sandbox, user namespaces): there
    it is the program's failure (the message says what it did); with namespaces as root, where the candidate
    runs as another uid, the host did it."""


class Supervisor:
    """What runs the samples: the judge, the candidates' fork server, the sample's limits and working dir, and
    what was true of this process when it started."""

    def __init__(self, base: str, isolation, cgroups) -> None:
        self.base, self.isolation, self.cgroups = base, isolation, cgroups
        isolation.per_process = not cgroups.kind  # before the fork server is forked: its candidates know it
        isolation.pinned = not cgroups.cpu
        self.tmpfs_mb: int | None = None  # the size /tmp and /dev/shm were given (per-process limits, namespaces)
        self.work = _contain.WORK if isolation.namespaced else os.path.join(base, WORK_DIR)
        self.problems: dict = {}
        self.serial = 0
        self.started = False  # whether a candidate of the current sample was forked (run_sample, _run_once)
        self.judge = JudgeProcess(watch=isolation.shares_uid)
        self.zygote = _zygote.Zygote()
        self.baseline = _contain.Baseline(base, watch=isolation.shares_uid)

    def start(self) -> None:
        """The fork server first: nothing of any sample has reached this process yet."""
        self.zygote.start(self.isolation, prefer_oom=bool(self.cgroups.kind))
        self.judge.start()

    def stop(self) -> None:
        self.judge.stop()
        self.zygote.stop()

    def run_sample(self, request: dict) -> dict:
        """Run one sample and return the reply: a HumanEval sample once (the dataset's test), a HumanEval+
        sample twice (its base suite, then its plus suite, each against a fresh candidate, as EvalPlus runs
        them); then check that nothing the program did reached the supervisor."""
        self.serial += 1
        self.started = False  # no candidate of this sample forked yet (_run_once)
        problem = _problem(request, self.problems, _suite_file(request), compiled=False)
        try:
            if request.get("io") is not None:
                reply = self._run_io(request, problem)
            elif request.get("suite") is None:
                timeout_s = float(request["timeout_s"])
                reply = self._run_once(request, problem, None, timeout_s)
                if reply.get("starved"):
                    reply = _judged_again(reply, self._run_once(request, problem, None, timeout_s))
                reply.pop("starved", None)
            else:
                # Each suite's own cap (from the canonical solution's times) is the judge's to keep; this is the
                # longest any suite may take, for the supervisor to stop a stalled one.
                cap = _suite.CAP_S + _suite.CAP_SLACK_S + 1.0
                base_reply = self._run_suite(request, problem, "base", cap)
                plus_reply = self._run_suite(request, problem, "plus", cap)
                reply = _combined(base_reply, plus_reply)
            changed = self.baseline.changed()
            if changed:
                raise Tampered(f"the program changed the sandbox supervisor's own state ({changed})")
        except Tampered as exc:
            if self.isolation.level == "namespaces":  # another uid: the program could not have done it
                raise Retire(f"from outside the sandbox, during this sample: {exc}; its verdict is void") from None
            return _void(request, str(exc))
        except _zygote.LeftInFlight as exc:  # the sample's own doing, in every mode that lets it send descriptors
            return _void(request, str(exc))
        return reply

    def _run_io(self, request: dict, problem: Problem) -> dict:
        """A standard-input program: each test against a fresh candidate (its input on the candidate's standard
        input, what it writes to its standard output read by the judge, which compares it), each within
        ``timeout_s``, until one fails: that test's verdict is the sample's. The sample's time counts every test."""
        timeout_s, tests = float(request["timeout_s"]), problem.tests or []
        total = 0.0
        reply: dict = {"status": "passed", "detail": ""}  # (no test: nothing to fail)
        for index in range(len(tests)):
            reply = self._run_once(request, problem, None, timeout_s, io=index)
            if reply.get("starved"):
                reply = _judged_again(reply, self._run_once(request, problem, None, timeout_s, io=index))
            reply.pop("starved", None)
            total += float(reply["duration_ms"])
            if reply["status"] != "passed" or reply.get("retire"):
                reply["detail"] = f"test {index + 1} of {len(tests)}: {reply['detail']}".rstrip(": ")
                break
        reply["duration_ms"] = round(total, 3)
        return reply

    def _run_suite(self, request: dict, problem: Problem, suite: str, cap: float) -> dict:
        """One HumanEval+ suite: its inputs in batches; judged again one input at a time, against a fresh
        candidate, when an answer in a batch came later than its limit after the batch was sent (the judge's
        ``again``: see ``_suite.judge_suite``). The sample's time counts both attempts."""
        reply = self._run_once(request, problem, suite, cap)
        # (a first attempt that ends its supervisor, by files it left, is a runtime_error: the verdict)
        if reply["status"] == "again":
            first_ms = reply["duration_ms"]
            reply = self._run_once(request, problem, suite, cap, sequential=True)
            reply["duration_ms"] = round(reply["duration_ms"] + first_ms, 3)
        elif reply.get("starved"):  # the second attempt is the last either way: one input at a time
            reply = _judged_again(reply, self._run_once(request, problem, suite, cap, sequential=True))
        reply.pop("starved", None)
        return reply

    def _fresh_work(self) -> str:
        """The candidate's empty working dir, always at the same path, owned by the candidate's uid."""
        work = self.work
        try:
            os.mkdir(work, 0o700)
        except FileExistsError:  # only a removal that failed after the previous sample leaves it behind
            _clear(work, self.serial)
            os.mkdir(work, 0o700)
        if self.isolation.uid is not None:
            os.chown(work, self.isolation.uid, self.isolation.gid)
        return work

    def _end_candidate(self, data: bytes | None, until: float | None = None) -> tuple[int | None, list | None]:
        """The candidate's wait status if it ended by itself (None: it was killed), after checking that it left the
        fork server as it was and no process of its behind; and, when it was killed, what its tree ran and waited
        for (``Zygote.finish``). ``data``: the judge's reply, which says how long the candidate may take to end
        by itself; ``until``: a standard-input test's deadline, which a program whose output ended may run up to
        (as under ``python prog.py``, closing its standard output early does not end it)."""
        # The judge saw the candidate's pipe close: the process itself, whose end says why, has a moment. After
        # any other verdict the judge has closed its end, and the candidate ends at once unless it hangs on;
        # after a timeout it is still at work, and is killed now.
        if data is None or b'"status": "timeout"' in data or b'"status": "again"' in data:
            grace = 0.0
        else:
            grace = 1.0 if b'"candidate_gone": true' in data else CANDIDATE_GRACE_S
            if until is not None and b'"candidate_gone": true' in data:
                grace = max(CANDIDATE_GRACE_S, until - time.monotonic())
        basic = self.isolation.level == "basic"
        stopped = f"the program stopped the sandbox's fork server (its parent process) {BASIC}"
        if basic and _held(self.zygote.pid):  # it would not answer: no need to wait for it
            raise Tampered(stopped)
        try:
            candidate_status, changed, usage = self.zygote.finish(grace)
        except _zygote.ZygoteGone as exc:
            if basic and _held(self.zygote.pid):
                raise Tampered(stopped) from None
            if not self.isolation.namespaced:  # the program runs as this user, and killed its parent
                raise Tampered("the program killed the sandbox's fork server (its parent process)") from None
            raise Retire(str(exc)) from None
        if changed:
            raise Tampered(f"the program changed the sandbox fork server's own state ({changed})")
        if basic and _held(self.zygote.pid):  # (a stop sent by a process of the sample just before it was killed)
            raise Tampered(stopped)
        spare = (self.judge.pid, self.zygote.pid)
        if _zygote.own_children(spare):  # only the judge and the fork server belong
            _zygote.kill_descendants(spare=spare)
        return candidate_status, usage

    def _run_once(self, request: dict, problem: Problem, suite: str | None, timeout_s: float,
                  sequential: bool = False, io: int | None = None) -> dict:
        """One candidate, judged once: the candidate in a fresh, isolated child of the fork server (in a fresh,
        empty working dir, always at the same path so HOME and TMPDIR are set once: /tmp/work with namespaces,
        ``BASE/work`` in basic mode), its output captured in files no path leads to, judged by the judge
        process over two pipes (the dataset's test, or one HumanEval+ suite). The wall-clock budget starts when
        the fork is asked for and covers both."""
        if self.isolation.level == "basic" and _held(self.zygote.pid):  # (a sample's stop shows at its own end)
            if not self.started:  # nothing of it ran: the harness runs it again on a fresh supervisor
                raise NotRun("the sandbox's fork server was stopped between samples, from outside; this sample did "
                             "not run")
            raise Retire("the sandbox's fork server was stopped from outside between two runs of this sample's "
                         "candidate")
        self.started = True
        work, judge = self._fresh_work(), self.judge
        judge_waited = _waited_ms(judge.pid)  # the judge's own wait for a CPU, before this candidate
        out_fd, err_fd = _capture(self.base, "stdout"), _capture(self.base, "stderr")
        own = _zygote.request_file({"prompt": "" if request.get("whole") is True else problem.prompt,
                                    "completion": request["completion"],
                                    "entry_point": request["entry_point"], "timeout_s": timeout_s,
                                    "limits": request["limits"], "work": work, "stdin": io is not None,
                                    "preamble": request.get("preamble", "")})
        requests_r, requests_w = os.pipe()
        replies_r, replies_w = os.pipe()
        setup_r, setup_w = os.pipe()
        memory_mb = int(request["limits"]["memory_mb"])
        self.cgroups.limit(memory_mb, _contain.SANDBOX_NPROC)
        if self.isolation.per_process and self.isolation.namespaced and self.tmpfs_mb != memory_mb:
            _contain.size_tmpfs(memory_mb)
            self.tmpfs_mb = memory_mb
        oom_kills = self.cgroups.oom_kills()
        basic = self.isolation.level == "basic"
        # Killed since the last sample, or (basic) stopped by something outside any sample: a fresh one judges this.
        if judge.pid is not None and (not judge.alive() or (basic and _held(judge.pid))):
            judge.stop()
        message = judge.message(request, problem, suite, timeout_s, sequential, io)

        started = time.monotonic()
        try:
            # (files in the working dir are memory: half the limit for them, the rest for the process)
            self.zygote.spawn((own, out_fd, err_fd, requests_r, replies_w, setup_w), max(16, memory_mb // 2))
        finally:
            for fd in (own, requests_r, replies_w, setup_w):
                os.close(fd)
        try:
            judge.send(message, requests_w, replies_r)
        except OSError:  # the judge died since the last sample (it was killed): a fresh one judges this one
            judge.stop()
            judge.start()
            judge.send(judge.message(request, problem, suite, timeout_s, sequential, io), requests_w, replies_r)
        os.close(requests_w)
        os.close(replies_r)
        deadline = started + timeout_s
        # (a standard-input test's output is compared once it has ended: that is the judge's time, not the program's)
        data = judge.receive(deadline + JUDGE_GRACE_S + (_judge.IO_COMPARE_S if io is not None else 0.0))
        cap = None
        if suite is not None and data is not None:
            # The judge's notice that it starts the suite, with its cap (from the canonical solution's times, which
            # only the judge reads): from now on its work on this sample is bounded by that cap, not the longest.
            cap = _suite_cap(data)
            if cap is not None:
                deadline = min(deadline, time.monotonic() + cap)
                data = judge.receive(deadline + JUDGE_MARGIN_S)
        duration_ms = (time.monotonic() - started) * 1000.0
        candidate_status, usage = self._end_candidate(data, deadline if io is not None else None)
        late = time.monotonic() >= deadline  # (a standard-input test's program killed at its deadline: a timeout)
        if usage is not None and usage[1] is not None and judge_waited is not None:
            # The candidate also waits while its judge, which runs the test, waits for a CPU: that wait is the
            # sample's too (a correct sample timed out with its judge starved, beside a hog and a busy suite).
            after = _waited_ms(judge.pid)
            if after is not None:
                usage = [usage[0], round(usage[1] + max(0.0, after - judge_waited), 3), *usage[2:]]
        record = judge.record(data, deadline)
        if data is None and cap is not None and record["status"] == "timeout":  # the judge was killed at its cap
            record["message"] = f"the suite ran past its {cap:g} s limit (the judge was stopped)"
        lost = self._judge_lost(record, oom_kills, request, judging=suite is None or cap is not None)
        if lost is not None:
            record = lost
        if record.get("tampered"):
            raise Tampered(f"the program changed the sandbox judge's own state ({record['tampered']})")
        set_up = _was_set_up(setup_r)
        reply: dict = {"duration_ms": round(duration_ms, 3), "stdout": _excerpt(out_fd), "stderr": _excerpt(err_fd)}
        for fd in (out_fd, err_fd):
            os.close(fd)
        left = _clear(work, self.serial)
        if self.isolation.namespaced:
            left = ", ".join(filter(None, [left, _contain.empty_shared(self.isolation)]))
        if not set_up:  # the program never started: whatever happened is the sandbox's, not the program's
            why = reply["stderr"].strip() or _verdict(record, candidate_status, timeout_s, request)["detail"]
            raise Retire(f"the sandbox could not set up the candidate's process: {why}")
        reply.update(_io_verdict(record, candidate_status, timeout_s, request, late) if io is not None else
                     _verdict(record, candidate_status, timeout_s, request))
        if self.cgroups.oom_kills() > oom_kills and reply["status"] == "runtime_error" and not record.get("oom"):
            reply["detail"] = (f"the sample's process tree went over its memory limit "
                               f"({request['limits']['memory_mb']} MiB, cgroup {self.cgroups.kind}) and was killed; "
                               f"{reply['detail']}")
        if left:  # only the program wrote there: what it left that cannot go is its failure, and ends this supervisor
            reply.update(status="runtime_error", retire=True, where=None,
                         detail=f"the program left files the sandbox could not remove ({left[:200]})")
        elif reply["status"] == "timeout" and usage is not None:
            reply["starved"] = _starved(*usage)
        return reply

    def _judge_lost(self, record: dict, oom_kills: int, request: dict, judging: bool) -> dict | None:
        """The sample's record when its judge was lost during it for the sample's doing (None otherwise; the record
        stands): killed by the memory limit of the sample's cgroup (its OOM counter moved) while it judged what the
        candidate returned, in every mode (a HumanEval+ judge only once its suite's table is decoded, ``judging``);
        in the basic sandbox, also killed or stopped by the candidate, which runs as this user. The candidate's tree
        is gone by now, so a stop it sent shows (``_held``)."""
        how = record.pop("judge", "")
        if self.isolation.level == "basic" and not how and _held(self.judge.pid):  # (after its verdict, even)
            self.judge.stop()
            how = "stopped"
        if how.startswith("killed") and judging and self.cgroups.oom_kills() > oom_kills:
            return {"status": "runtime_error", "oom": True,
                    "message": "MemoryError: the judge ran out of the sample's memory on what the candidate returned "
                               f"(the sample's process tree went over its limit, {request['limits']['memory_mb']} "
                               f"MiB, cgroup {self.cgroups.kind}, and the judge was killed)"}
        if self.isolation.level != "basic" or not (how == "stopped" or how.startswith("killed")):
            return None
        what = "stopped its own judge" if how == "stopped" else f"killed its own judge ({how.partition(' by ')[2]})"
        return {"status": "runtime_error", "message": f"the program {what} {BASIC}; its verdict is void"}


def _held(pid: int | None) -> bool:
    """Whether process ``pid`` is stopped, or has been sent SIGSTOP and not acted on it yet (a stop sent by a process
    of the sample just before it was killed, which the target takes at its next system call). The state is read once
    more after the pending signals: a stop taken between the two reads shows in the second."""
    if pid is None:
        return False
    try:
        with open(f"/proc/{pid}/status", "rb") as handle:
            fields = dict(line.split(b":", 1) for line in handle.read().splitlines() if b":" in line)
        if fields[b"State"].split()[0] in (b"T", b"t") or \
                any(int(fields[name].strip(), 16) & SIGSTOP_BIT for name in (b"SigPnd", b"ShdPnd")):
            return True
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rpartition(b")")[2].split()[0] in (b"T", b"t")
    except (OSError, KeyError, ValueError, IndexError):
        return False


def _waited_ms(pid: int | None) -> float | None:
    """How long ``pid`` (the judge: one thread) has waited on a run queue, in ms (schedstat: one read, on every
    sample's path); None where it cannot be read."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/schedstat", "rb") as handle:
            return int(handle.read().split()[1]) / 1e6
    except (OSError, ValueError, IndexError):
        return None


def _starved(ran_ms: float, waited_ms: float, wall_ms: float) -> str:
    """Why a timed-out candidate was starved of CPU by others ("" when it was not): its processes ran for less than
    three quarters of its time and waited on a run queue (they, or the judge that calls them) for a quarter or more
    (STARVED_SHARE). One that sleeps or
    blocks waits for no CPU; one whose own threads or processes queue behind each other on its one CPU ran it
    the whole time."""
    if waited_ms < STARVED_SHARE * wall_ms or ran_ms > (1.0 - STARVED_SHARE) * wall_ms:
        return ""
    return (f"in {wall_ms / 1000:.2f} s its processes ran {ran_ms / 1000:.2f} s and waited {waited_ms / 1000:.2f} s "
            "for a CPU other programs held")


def _judged_again(first: dict, again: dict) -> dict:
    """The verdict of a sample (or suite) judged again because its first attempt timed out starved of CPU: the
    second attempt's, its detail saying so, its time both attempts'."""
    note = f"judged twice: its first attempt timed out starved of CPU ({first['starved']})"
    again["detail"] = f"{again['detail']}; {note}" if again.get("detail") else note
    again["duration_ms"] = round(again["duration_ms"] + first["duration_ms"], 3)
    again.pop("starved", None)
    return again


def _was_set_up(setup_r: int) -> bool:
    """Whether the candidate's set-up finished (it writes b"1" to its set-up pipe just before the program
    starts); closes the pipe."""
    os.set_blocking(setup_r, False)
    try:
        return os.read(setup_r, 1) == b"1"
    except BlockingIOError:
        return False
    finally:
        os.close(setup_r)


def _void(request: dict, why: str) -> dict:
    """The reply for a sample whose program reached past its candidate (``why``): its runtime_error, its verdict
    void, and a fresh supervisor for the next; a HumanEval+ sample's with both of its suites, as every reply of one
    has (else the harness would take the reply for its own fault, a harness_error the program chose)."""
    detail = f"{why}; its verdict is void, and a fresh supervisor takes over"
    reply = {"status": "runtime_error", "retire": True, "duration_ms": 0.0, "detail": detail}
    if request.get("suite") is not None:
        void = {"status": "runtime_error", "detail": detail, "where": None}
        reply.update(detail=f"base: {detail}", suites={"base": dict(void), "plus": dict(void)})
    return reply


def _combined(base: dict, plus: dict) -> dict:
    """A HumanEval+ sample's reply: passed only if both suites passed; else the first failing suite's status,
    with both suites' statuses and details kept apart."""
    status = base["status"] if base["status"] != "passed" else plus["status"]
    failing = base if base["status"] != "passed" else plus
    reply = dict(failing, status=status, duration_ms=round(base["duration_ms"] + plus["duration_ms"], 3))
    reply["suites"] = {"base": {"status": base["status"], "detail": base.get("detail", ""),
                                "where": base.get("where")},
                       "plus": {"status": plus["status"], "detail": plus.get("detail", ""),
                                "where": plus.get("where")}}
    if status != "passed":
        which = "base" if failing is base else "plus"
        reply["detail"] = f"{which}: {failing.get('detail', '')}"
    return reply


def _capture(base: str, name: str) -> int:
    """A file for one captured stream, reachable by no path (RLIMIT_FSIZE bounds it like any file)."""
    try:
        return os.memfd_create(f"humaneval-{name}")
    except (AttributeError, OSError):  # no memfd (old kernel or libc): a file, unlinked at once
        path = os.path.join(base, f"{name}.{os.getpid()}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        os.unlink(path)
        return fd


def _clear(work: str, serial: int) -> str:
    """The working dir, gone: the common case (the program left it empty) in one syscall, anything else
    removed however deep; what even that cannot remove is moved aside, so the next sample still starts empty.
    Returns what could not be removed ("" when all went); if it cannot be moved either, this supervisor
    retires."""
    if _contain.remove_tree(work):
        return ""
    try:
        os.rename(work, f"{work}.left-{serial}")
    except OSError as exc:
        raise Retire(f"the previous sample's working dir could not be removed: {exc}") from None
    return work


class JudgeProcess:
    """The trusted judge: one process, forked from this warm supervisor once, that judges sample after sample.

    Not the supervisor itself: while a candidate forked from the supervisor lives, every page the supervisor
    writes is copied (copy-on-write), and judging writes many (measured: ~250 page faults, about 0.7 ms a
    sample). Not a fork per sample either, which costs the same again. Each sample gets fresh globals, and
    ``_judge.judge`` puts back what a test could change in the process; a judge that overran its deadline or
    failed is replaced by a fresh fork, so nothing of one sample's judge reaches the next.

    The candidate cannot reach this process: it never holds its socket, and it either runs as another uid or
    this process is non-dumpable (as the supervisor is), so it can neither write here nor read or trace it.
    """

    def __init__(self, watch: bool = True) -> None:
        self.pid: int | None = None
        self._sock: Socket | None = None
        self._known: set = set()  # problem numbers this judge process has the texts of
        self._watch = watch  # check its own state after each sample (a candidate that shares its uid)

    def start(self) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # ends with the supervisor, even stopped
                _judge_main(theirs, self._watch)
            finally:
                os._exit(70)
        theirs.close()
        self.pid, self._sock, self._known = pid, ours, set()

    def message(self, request: dict, problem: Problem, suite: str | None,
                seconds: float, sequential: bool = False, io: int | None = None) -> tuple[bytes, tuple[int, ...]]:
        """The judge's request for a sample (or one of its HumanEval+ suites) and the descriptors to hand over
        with it besides the candidate's pipes (the problem's suites file, the first time), made before the
        candidate's fork (see ``send``)."""
        if self.pid is None:
            self.start()
        message = {"problem": request["problem"], "entry_point": request["entry_point"], "seconds": seconds,
                   "memory_mb": int(request["limits"]["memory_mb"])}
        if io is not None:  # the index of the test this candidate is judged on, and the rule that compares
            message.update(io=io, rule=request["io"])
        if request.get("call_s") is not None:  # a functional problem: each call (test) limited on its own
            message["call_seconds"] = float(request["call_s"])
        if suite is not None:
            settings = request["suite"]
            message.update(suite=suite, oracle=settings.get("oracle"), min_time_limit_s=settings["min_time_limit_s"],
                           time_limit_factor=settings["time_limit_factor"], sequential=sequential)
        extra: tuple[int, ...] = ()
        if request["problem"] not in self._known:
            message.update(prompt=problem.prompt, test=problem.test)
            if problem.suite_fd is not None:
                message["suite_offset"] = problem.suite_offset
                extra = (problem.suite_fd,)
            self._known.add(request["problem"])
        body = json.dumps(message).encode()
        return struct.pack(">I", len(body)) + body, extra

    def alive(self) -> bool:
        """Whether the judge process still runs (it can be killed between samples: the OOM killer, the host); looked
        at without reaping it, so ``stop`` never signals a pid that may have been given to another process."""
        return self.pid is not None and self.ended() == ""

    def lost(self, wait_s: float) -> str:
        """How the judge stopped working: how it ended, or "stopped", or "" while it runs; after its channel closed
        (it is exiting: the kernel closes its files before it is a zombie) waiting up to ``wait_s`` for its end."""
        give_up = time.monotonic() + wait_s
        while True:
            how = self.ended() or ("stopped" if _held(self.pid) else "")
            if how or time.monotonic() >= give_up:
                return how
            time.sleep(0.001)

    def ended(self) -> str:
        """How the judge process ended ("killed by SIGKILL", "exited with status 70"), or "" while it lives."""
        if self.pid is None:
            return "gone"
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return "gone"
        if info is None:
            return ""
        if info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            name = signal.Signals(info.si_status).name if info.si_status in signal.Signals._value2member_map_ \
                else str(info.si_status)
            return f"killed by {name}"
        return f"exited with status {info.si_status}"

    def send(self, message: tuple[bytes, tuple[int, ...]], requests: int, replies: int) -> None:
        """Hand the judge its request and its ends of the candidate's pipes. This and ``receive`` are all the
        supervisor does while the candidate lives: every page it writes meanwhile is copied (copy-on-write)."""
        import socket

        data, extra = message
        # the judge was started by message(), called just before
        sent = socket.send_fds(self._sock, [data], [requests, replies, *extra])  # type: ignore[arg-type]
        if sent < len(data):
            self._sock.sendall(data[sent:])  # type: ignore[union-attr]

    def receive(self, deadline: float) -> bytes | None:
        """The judge's record, unparsed; None when it did not come by the deadline, or the judge ended (it is
        replaced for the next sample)."""
        if self._sock is None:
            return None
        try:
            return _read_frame_until(self._sock.fileno(), deadline)
        except OSError:
            return None

    def record(self, data: bytes | None, deadline: float) -> dict:
        """The judge's record as a dict: a timeout when it did not come by the deadline, a harness_error when
        the judge failed. A judge that overran or failed is replaced: it may have left anything behind."""
        try:
            record = json.loads(data) if data is not None else None
        except ValueError:
            record = None
        if not isinstance(record, dict):
            how = self.lost(1.0 if data is None and time.monotonic() < deadline else 0.0)  # (for _judge_lost)
            self.stop()
            if time.monotonic() >= deadline:
                return {"status": "timeout", "judge": how}
            return {"status": "harness_error", "message": "the judge process ended without a verdict", "judge": how}
        if record.get("status") in ("timeout", "harness_error"):
            self.stop()
        return record

    def finish(self) -> None:
        """End the judge process the ordinary way (it exits when its socket closes), and reap it."""
        if self.pid is not None:
            self._sock.close()  # type: ignore[union-attr]  # set by start(), with pid
            try:
                os.waitpid(self.pid, 0)
            except ChildProcessError:
                pass
        self.pid, self._sock = None, None

    def stop(self) -> None:
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            self._sock.close()  # type: ignore[union-attr]  # set by start(), with pid
        self.pid, self._sock = None, None


def _judge_main(sock, watch: bool) -> None:
    """The judge process's loop: a request and the judge's ends of the candidate's two pipes in, a record out."""
    import socket

    fd = sock.fileno()
    os.closerange(3, fd)  # nothing of the harness's channel, nor of the sample being forked
    os.closerange(fd + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    baseline = _contain.Baseline(watch=watch)
    problems: dict = {}
    decoded: dict = {}
    _contain.Cgroups.protect_self()
    while True:
        data, fds, _, _ = socket.recv_fds(sock, 1 << 16, 3)
        if not data:
            os._exit(0)
        try:
            size = struct.unpack(">I", data[:4])[0]
            body = data[4:]
            while len(body) < size:
                chunk = sock.recv(size - len(body))
                if not chunk:
                    os._exit(0)
                body += chunk
            request = json.loads(body)
            problem = _problem(request, problems, fds[2] if len(fds) > 2 else None)
            if problem.lines is not None:  # (a standard-input problem's tests are no code)
                linecache.cache.update(problem.lines)
            requests, replies = fds[:2]
            if "io" in request:
                test = (problem.tests or [])[request["io"]]
                # a row's checker accepts the test's expected output first, outside the sample's memory limit and
                # before the program's output is read: a refusal is the dataset's, whatever the program does
                refused = _judge.accept(test)
                if refused is not None:
                    record = refused
                else:
                    with _JudgeMemory(request.get("memory_mb")):
                        record = _judge.judge_io(test, request["rule"], requests, replies, request["seconds"])
            elif "suite" in request:
                suite = _suites(problem, decoded)[request["suite"]]
                # the supervisor holds this judge to the suite's cap from here (decoding the table came before)
                write_message(fd, {"cap": _suite.limits(suite[2], request["min_time_limit_s"],
                                                        request["time_limit_factor"])[1]})
                with _JudgeMemory(request.get("memory_mb")):
                    record = _suite.judge_suite(suite, request["entry_point"],
                                                request.get("oracle"), request["min_time_limit_s"],
                                                request["time_limit_factor"], requests, replies,
                                                batched=not request.get("sequential"))
            else:
                with _JudgeMemory(request.get("memory_mb")):
                    record = _judge.judge(problem.prompt_code, problem.test_code, request["entry_point"],
                                          requests, replies, request["seconds"], request.get("call_seconds"))
        except SuitesTooLarge as exc:
            record = {"status": "harness_error", "message": str(exc)}
        except Exception as exc:
            record = {"status": "harness_error", "message": f"the judge failed: {type(exc).__name__}: {exc}"}
        finally:
            for handle in fds[:2]:  # a suites file stays with its problem
                try:
                    os.close(handle)
                except OSError:  # closed already: a standard-input test closes the input's end once written
                    pass
        tampered = baseline.changed()
        if tampered:  # a candidate that shares this uid reached this process: nothing it judges now is sure
            record = {"status": "harness_error", "tampered": tampered,
                      "message": f"the judge's own state changed during this sample ({tampered})"}
        write_message(fd, record)
        if tampered:
            os._exit(0)


class _JudgeMemory:
    """While the judge judges one sample: its address space held to what it has now, plus the sample's memory
    limit and JUDGE_FRAMES_MB (RLIMIT_AS's soft limit; the hard one, and so the soft one after, as they were).
    What goes past it is a MemoryError in the judge, which fails the sample (``_judge``)."""

    def __init__(self, memory_mb: int | None) -> None:
        self.memory_mb = memory_mb
        self.before: tuple[int, int] | None = None

    def __enter__(self) -> None:
        if type(self.memory_mb) is not int:
            return
        try:
            with open("/proc/self/statm", "rb") as handle:
                size = int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return  # no /proc: the limit cannot be put above what the judge holds already
        self.before = resource.getrlimit(resource.RLIMIT_AS)
        soft, hard = size + ((self.memory_mb + JUDGE_FRAMES_MB) << 20), self.before[1]
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

    def __exit__(self, *exc_info: object) -> None:
        if self.before is not None:
            resource.setrlimit(resource.RLIMIT_AS, self.before)


def _suites(problem: Problem, decoded: dict) -> dict:
    """The problem's HumanEval+ suites (trusted data: the dataset's inputs and its canonical solution's outputs
    and times), read by the judge from the file the harness handed over and decoded; only the last two
    problems' are kept (some hold hundreds of MB)."""
    name = (problem.suite_fd, problem.suite_offset)
    if name not in decoded:
        # only a HumanEval+ problem (suite_fd set) is asked for its suites
        size = os.fstat(problem.suite_fd).st_size - problem.suite_offset  # type: ignore[arg-type]
        if size > MAX_SUITES_BYTES:
            raise SuitesTooLarge(f"the task's expected outputs are {size / (1 << 20):,.0f} MiB, more than a judge "
                                 f"holds ({MAX_SUITES_BYTES >> 20} MiB: decoded, they would take many times that "
                                 "in memory); this task cannot be judged here")
        chunks, position = [], problem.suite_offset
        while size > 0:
            chunk = os.pread(problem.suite_fd, min(size, 1 << 24), position)  # type: ignore[arg-type]
            if not chunk:
                raise OSError("a suites file shorter than it was")
            chunks.append(chunk)
            position += len(chunk)
            size -= len(chunk)
        base_in, base_out, base_s, plus_in, plus_out, plus_s, atol = _wire.decode(b"".join(chunks))
        while len(decoded) >= 2:
            decoded.pop(next(iter(decoded)))
        decoded[name] = {"base": (base_in, base_out, base_s, atol, _suite.calls(base_in)),
                         "plus": (plus_in, plus_out, plus_s, atol, _suite.calls(plus_in))}
    return decoded[name]


class SuitesTooLarge(Exception):
    """A task's expected outputs too large for the judge to decode (MBPP+'s Mbpp/255: 1.4 GB)."""


def _suite_cap(data: bytes) -> float | None:
    """The cap in the judge's notice that it starts a suite, or None when ``data`` is not one (a record sent
    before the suite began: a judge that failed)."""
    try:
        notice = json.loads(data)
    except ValueError:
        return None
    if not isinstance(notice, dict) or set(notice) != {"cap"} or type(notice["cap"]) is not float:
        return None
    return notice["cap"]


def _read_frame_until(fd: int, deadline: float) -> bytes | None:
    """The body of a length-prefixed message, or None at end of file or when the deadline passes first."""
    chunks, needed, header = [], 4, None
    while needed:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            return None
        chunk = os.read(fd, needed)
        if not chunk:
            return None
        chunks.append(chunk)
        needed -= len(chunk)
        if not needed and header is None:
            header = b"".join(chunks)
            chunks, needed = [], struct.unpack(">I", header)[0]
    return b"".join(chunks)


def _verdict(record: dict, candidate_status: int | None, timeout_s: float, request: dict) -> dict:
    if record["status"] == "timeout" and not record.get("message"):
        return {"status": "timeout", "detail": f"timed out after {timeout_s:g} s"}
    reply = {"status": record["status"], "detail": record.get("message", ""), "where": record.get("where"),
             "traceback": record.get("traceback", "")}
    if record.get("candidate_gone"):
        if candidate_status is None:
            reply["detail"] = "the program closed its channel to the test before check() finished"
        elif os.WIFSIGNALED(candidate_status):
            reply["detail"] = _signal_detail(os.WTERMSIG(candidate_status), request)
        else:
            reply["detail"] = f"the program ended with exit code {os.WEXITSTATUS(candidate_status)} before " \
                              "check() finished"
    if record.get("call"):  # a HumanEval+ suite: the input it failed on comes first
        reply["detail"] = f"{record['call']}: {reply['detail']}"
    return reply


def _io_verdict(record: dict, candidate_status: int | None, timeout_s: float, request: dict, late: bool) -> dict:
    """One test of a standard-input program: its output matched (the judge's record) and it ended by itself with
    exit code 0, or the first of what went wrong: its time, a signal or another exit code (with whatever it wrote),
    then its output."""
    if record["status"] == "timeout" and not record.get("message"):
        return {"status": "timeout", "detail": f"timed out after {timeout_s:g} s"}
    if record["status"] not in ("passed", "assertion_failed"):  # over its output's cap; a judge's failure
        return {"status": record["status"], "detail": record.get("message", "")}
    if candidate_status is None and late:  # its output ended, and it went on past its time
        return {"status": "timeout", "detail": f"timed out after {timeout_s:g} s (its standard output closed)"}
    if candidate_status is None:
        return {"status": "runtime_error", "detail": "the program closed its standard output and did not end"}
    if os.WIFSIGNALED(candidate_status):
        return {"status": "runtime_error", "detail": _signal_detail(os.WTERMSIG(candidate_status), request)}
    if os.WEXITSTATUS(candidate_status) != 0:
        return {"status": "runtime_error", "detail": f"the program ended with exit code "
                                                     f"{os.WEXITSTATUS(candidate_status)}"}
    return {"status": record["status"], "detail": record.get("message", "")}


_WARM_UP = {
    "prompt": 'from typing import List\n\n\ndef first(values: List[int]) -> int:\n    """The first value."""\n',
    "completion": "    if not values:\n        raise ValueError('empty')\n    return values[0]\n",
    "test": "\n\nMETADATA = {}\n\n\ndef check(candidate):\n    assert candidate([1, 2]) == 1\n    try:\n"
            "        candidate([])\n    except ValueError:\n        pass\n"
            "    assert candidate([2, -0.5, 'x', (1,), {1: {2}}, 1 << 70]) == 1, 'failing on purpose'\n",
    "entry_point": "first",
}


def _warm_up() -> None:
    """Do once, here, what every sample would otherwise do first in its own fork: import the usual modules,
    and take one trusted sample through both halves (compile, serving calls, encoding and decoding values, a
    raised exception, a failing assertion and its description). Their lazily built state (the compiler's ~120
    AST node types above all) then exists before the fork instead of being rebuilt, page by copied page, in
    every child: about 1.4 ms a sample. The candidate half runs in a thread here, on a pair of pipes.
    """
    import threading

    for name in PRELOAD:
        __import__(name)
    sample = _WARM_UP
    problem = Problem(sample["prompt"], sample["test"])
    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    server = threading.Thread(target=_judge.serve, args=(sample["prompt"], sample["completion"],
                                                         sample["entry_point"], requests_r, replies_w))
    server.start()
    json.dumps(_judge.judge(problem.prompt_code, problem.test_code, sample["entry_point"], requests_w, replies_r))
    os.close(requests_w)
    server.join()
    for fd in (requests_r, replies_r, replies_w):
        os.close(fd)
    linecache.cache.pop(_judge.CANDIDATE_FILE, None)
    builtins.__dict__.pop("_", None)


def _step(name: str) -> None:
    """A start-up step reached, in the log (stderr): a start that never answers is reported with its last one."""
    os.write(2, f"{STEP_PREFIX}{name}\n".encode())


def main() -> int:
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # The harness's channel moves off fds 0 and 1, which point at /dev/null from here on: whatever a test
    # reads or prints while it is judged in this process can never reach the channel.
    channel_in, channel_out = os.dup(0), os.dup(1)  # fds 3 and 4: every per-sample fd comes after them
    start = read_message(channel_in)  # where its folder is, what to isolate with, where files come in
    if start is None:
        return 1
    base, requested, files = start["base"], start["isolation"], int(start["files_fd"])
    if isinstance(start.get("view"), dict):  # what the harness's page holder found a candidate may read
        _view.VIEW = start["view"]
    if files != FILES_FD:
        os.dup2(files, FILES_FD)
        os.close(files)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    # Default dispositions, inherited as they are by every sample: the harness started this process in a
    # session of its own, so a Ctrl-C at the terminal never reaches it (the harness decides when it stops);
    # Python's KeyboardInterrupt handler goes, and an ignored disposition inherited from the harness (they
    # survive exec) is undone.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    # The sample's cgroups are made while this process still sees the host's cgroup folders.
    _step("cgroups")
    cgroups = _contain.Cgroups.create(f"pytest-humaneval-{os.getpid()}")
    _step("namespaces")
    try:
        isolation = _contain.isolate(requested)
    except OSError as exc:  # namespaces entered but not set up: this process is unusable, say why
        write_message(channel_out, {"ready": False, "reason": f"namespace set-up failed: {exc}",
                                    "cgroups": cgroups.paths})
        return 1
    _step("keyrings")
    isolation.keyring = _contain.fresh_session_keyring()  # before anything forks: every child inherits it
    _contain.release_user_keyrings(isolation, only_if_held=True)  # what a killed supervisor of this uid left
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    if isolation.namespaced:
        base = _contain.OWN  # on this namespace's own tmpfs; the harness's folder is out of view
        os.makedirs(base, mode=0o700, exist_ok=True)
        os.environ["HOME"] = os.environ["TMPDIR"] = _contain.WORK  # emptied after every sample
    else:
        os.environ["HOME"] = os.environ["TMPDIR"] = os.path.join(base, WORK_DIR)  # the same for every sample
        os.makedirs(os.path.join(base, WORK_PARENT), mode=0o755, exist_ok=True)
        if isolation.plan is not None:
            isolation.plan.work_parent = os.path.join(base, WORK_PARENT)
    _step("warm-up")
    _warm_up()
    _prctl(PR_SET_DUMPABLE, 0)  # no candidate may trace, or read the memory of, the supervisor or the judge
    supervisor = Supervisor(base, isolation, cgroups)
    _step("judge and fork server")
    try:
        supervisor.start()
    except OSError as exc:
        write_message(channel_out, {"ready": False, "reason": f"the sandbox's processes did not start: {exc}",
                                    "cgroups": cgroups.paths})
        return 1
    _step("first sample (probe)")
    probe = _probe(supervisor)
    if probe:
        write_message(channel_out, {"ready": False, "reason": probe, "cgroups": cgroups.paths})
        return 1
    write_message(channel_out, {"ready": True, "isolation": isolation.level, "reason": isolation.reason,
                                "ids": isolation.ids, "uid": isolation.uid, "gid": isolation.gid,
                                "keyring": isolation.keyring, "confinement": isolation.confinement,
                                "limits": cgroups.description, "cgroups": cgroups.paths})
    while True:
        request = read_message(channel_in)
        if request is None:  # the harness closed the pipe: done, without the interpreter's slow clean-up
            supervisor.judge.finish()
            _contain.release_user_keyrings(isolation)
            os._exit(0)
        try:
            reply = supervisor.run_sample(request)
        except Exception as exc:  # the sandbox's own failure: this sample's harness_error, then a fresh one
            detail = str(exc) if isinstance(exc, Retire) else f"{type(exc).__name__}: {exc}"
            reply = {"status": "harness_error", "detail": detail, "duration_ms": 0.0, "retire": True}
            if isinstance(exc, NotRun):
                reply["not_run"] = True
        reply["id"] = request.get("id")
        write_message(channel_out, reply)
        if reply.get("retire"):
            supervisor.stop()
            # Without namespaces, what the candidate started outlives its fork server, and comes back to this process
            # (a subreaper): it goes too.
            _zygote.kill_descendants()
            _contain.release_user_keyrings(isolation)
            os._exit(0)


def _probe(supervisor: Supervisor) -> str:
    """Run one real sample before saying ready, so the isolation announced is the one every sample gets (a
    uid the kernel refuses, a mount a container forbids: found here, not on every sample). "" when it passed."""
    sample = dict(_WARM_UP, completion="    return values[0]\n", timeout_s=30.0, problem=0,
                  limits={"memory_mb": 2048, "file_size_mb": 16, "open_files": 256})
    sample["test"] = "def check(candidate):\n    assert candidate([7]) == 7\n"
    level = supervisor.isolation.level
    try:
        reply = supervisor.run_sample(sample)
    except Exception as exc:
        return f"isolation {level} could not run a sample: {exc}"
    if reply["status"] != "passed":
        return f"isolation {level} could not run a sample: {reply['status']}: {reply.get('detail')}"
    return ""


if __name__ == "__main__":
    sys.exit(main())
