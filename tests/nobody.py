"""A sandbox supervisor started as ``nobody`` with the system interpreter: the harness of a user who is not root.

The test's own interpreter may be unreadable to that user (a pyenv build under /root), so the supervisor's files
are copied to a folder of its own and run by the system ``python3``, spoken to over the supervisor's own
protocol. ``contained``: inside a default container's confinement as well (``container.py``), so it has no
user namespaces either.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from programs import script

from pytest_humaneval import sandbox
from pytest_humaneval.sandbox import Program

SYSTEM_PYTHON = next((p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None)
CONTAINER = Path(__file__).with_name("container.py")
NOBODY = 65534


def unavailable() -> str:
    """"" where a supervisor can be started as nobody here, else why not."""
    if os.geteuid() != 0:
        return "needs root (to start the supervisor as nobody)"
    if SYSTEM_PYTHON is None:
        return "needs a system python3 (/usr/bin/python3) that nobody can run"
    return ""


@contextmanager
def supervisor(contained: bool = False) -> Iterator[tuple[dict, Callable[..., dict]]]:
    """(its ready message, run(program, timeout_s=3.0, memory_mb=2048) -> reply)."""
    home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="humaneval-test-"))  # pytest's tmp_path is 0700
    for part in sandbox.SANDBOX_FILES:
        shutil.copy(sandbox.SUPERVISOR.with_name(part), home / part)
        (home / part).chmod(0o644)
    os.chown(home, NOBODY, NOBODY)

    def demote() -> None:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)

    command = [SYSTEM_PYTHON, "-I", str(home / "_supervisor.py")]
    if contained:  # container.py drops to nobody itself, after its filter is in place
        command = [sys.executable, str(CONTAINER), "--user", str(NOBODY), "--", *command]
    files, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    proc = subprocess.Popen(command, pass_fds=(theirs.fileno(),), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            preexec_fn=None if contained else demote, env={"PATH": "/usr/bin:/bin"}, cwd=home)
    sandbox.harness._send(proc, {"base": str(home), "isolation": "auto", "files_fd": theirs.fileno()})
    numbers: dict = {}  # a problem's number, as the harness gives each (prompt, test) its own

    def run(program: str | Program, timeout_s: float = 3.0, memory_mb: int = 2048) -> dict:
        job = script(program) if isinstance(program, str) else program
        suite = job.suite
        key = (job.prompt, job.test, (suite.path, suite.offset) if suite else None)
        first = key not in numbers
        number = numbers.setdefault(key, len(numbers) + 1)
        request = {"id": 1, "problem": number, "prompt": job.prompt, "completion": job.completion,
                   "test": job.test, "entry_point": job.entry_point, "timeout_s": timeout_s,
                   "limits": {"memory_mb": memory_mb, "file_size_mb": 16, "open_files": 256}}
        if job.whole:
            request["whole"] = True
        if job.io is not None:  # a standard-input program: each test a candidate of its own
            request["io"] = job.io
        if suite is not None:  # a HumanEval+ suite, handed over by descriptor as the harness does
            request["suite"] = {"min_time_limit_s": suite.min_time_limit_s,
                                "time_limit_factor": suite.time_limit_factor, "oracle": suite.oracle}
            if first:
                request["suite_offset"] = suite.offset
                fd = os.open(suite.path, os.O_RDONLY | os.O_CLOEXEC)
                try:
                    socket.send_fds(files, [b"F"], [fd])
                finally:
                    os.close(fd)
        sandbox.harness._send(proc, request)
        wait_s = 2 * sandbox.SUITE_ATTEMPTS * sandbox.SUITE_CAP_S if suite is not None else \
            timeout_s * max(1, 2 * job.io_tests)
        return sandbox.harness._receive(proc, 30 + wait_s)

    try:
        yield sandbox.harness._receive(proc, 30), run
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        proc.wait(timeout=10)
        files.close()
        theirs.close()
        shutil.rmtree(home)
