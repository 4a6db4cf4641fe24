"""This harness process's page holder (``_pin.py``, started once per process as ``python -I _pin.py``): the
candidate's view, computed once for every supervisor the process starts, and every page of it held in memory while
the process lives (``_holder``; ``_pin`` says why and how).

No pytest import: part of the harness (``harness`` hands its names on, as before it was split).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any, cast

from .vocabulary import DETAIL_MAX, LINE_MAX, STARTUP_TIMEOUT_S, clean_text, sandbox_env

PIN = Path(__file__).with_name("_pin.py")
# What the page holder (_pin.py) may hold in memory: every page a candidate can read (a plain venv: ~350 MiB). A
# view larger than this (a venv with torch, say) is not held, and the run says so.
PIN_BUDGET_MB = 4096
PIN_REFRESH_S = 3600.0  # how often the holder looks at every access time again (it reads each as it turns a day old)


class _Holder:
    """This harness process's page holder (``_pin.py``): the candidate's view, computed once for every supervisor
    this process starts, and every page of it held in memory while the process lives."""

    def __init__(self, replaces: str = "") -> None:
        self._replaces = replaces  # how the holder before it ended
        self._view: dict[str, Any] | None = None
        self._pinned: str | None = None
        self.strictatime: list[str] = []  # mounts of the view where every read moves an access time
        self._lock = threading.Lock()
        try:
            self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
                [sys.executable, "-I", str(PIN)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, env=sandbox_env(), cwd="/", start_new_session=True, close_fds=True)
            stdin = cast("IO[bytes]", self._proc.stdin)
            stdin.write(json.dumps({"budget_mb": PIN_BUDGET_MB, "refresh_s": PIN_REFRESH_S}).encode() + b"\n")
            stdin.flush()
        except OSError as exc:
            self._proc, self._pinned = None, f"page cache not held: the page holder did not start: {exc}"
        self._deadline = time.monotonic() + STARTUP_TIMEOUT_S
        self._buffer = b""

    def _line(self) -> dict[str, Any] | None:
        proc = self._proc
        if proc is None:
            return None
        fd = cast("IO[bytes]", proc.stdout).fileno()
        while b"\n" not in self._buffer:
            remaining = self._deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            value = json.loads(line)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def view(self) -> dict[str, Any] | None:
        """What a candidate may read (the supervisors' binds or Landlock rules); None if the holder could not say
        (each supervisor then computes it itself)."""
        with self._lock:
            if self._view is None and self._pinned is None:
                first = self._line()
                view = first.get("view") if first is not None else None
                if isinstance(view, dict):
                    self._view = view
                else:
                    self._pinned = "page cache not held: the page holder gave no view of what a candidate reads"
            return self._view

    def pinned(self) -> str:
        """How the pages a candidate can read are held, for the run's confinement line (waits for the holder)."""
        self.view()
        with self._lock:
            if self._pinned is None:
                done = self._line()
                how = done.get("pinned") if done is not None else None
                size = f"{done.get('files')} files, {done.get('mib')} MiB" if done is not None else ""
                mounts = done.get("strictatime") if done is not None else None
                self.strictatime = [clean_text(str(m), LINE_MAX, line=True) for m in mounts or ()][:8]
                if done is None:
                    self._pinned = f"page cache not held: the page holder did not answer within {STARTUP_TIMEOUT_S:g} s"
                elif how == "locked":
                    self._pinned = f"page cache held (every readable page locked in memory: {size})"
                elif how == "resident":
                    self._pinned = (f"page cache resident, not locked (every readable page read into memory once: "
                                    f"{size}; {clean_text(str(done.get('reason')), DETAIL_MAX, line=True)}: memory "
                                    "pressure can evict a page)")
                else:
                    self._pinned = f"page cache not held: {clean_text(str(done.get('reason')), DETAIL_MAX, line=True)}"
                if how in ("locked", "resident") and done and done.get("watch"):
                    self._pinned += (", files added to it later held within the hour only ("
                                     f"{clean_text(str(done['watch']), DETAIL_MAX, line=True)})")
                if self._replaces:
                    self._pinned += f", by a page holder that replaced one that {self._replaces}"
            return self._pinned

    def ended(self) -> str:
        """How this holder ended ("" while it lives, or if it never started)."""
        proc = self._proc
        if proc is None or proc.poll() is None:
            return ""
        code = proc.returncode
        return f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _end_child(proc)


def _end_child(proc: subprocess.Popen[bytes]) -> None:
    """Close a supervisor's or the page holder's pipes (its signal to end) and reap it: killed after 5 s."""
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()  # type: ignore[union-attr]  # both are pipes: never None
        except OSError:
            pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # with its judge and fork server, which may be stopped
        except ProcessLookupError:
            proc.kill()
        proc.wait()


_holders: dict[int, _Holder] = {}  # by process: a forked copy of the harness starts its own
_holders_lock = threading.Lock()


def _holder() -> _Holder:
    """This process's page holder; a new one if the last has ended (killed by the OOM killer, or by a candidate
    of Landlock ABI < 6, which cannot scope signals): every supervisor start looks, and says so."""
    with _holders_lock:
        holder = _holders.get(os.getpid())
        ended = holder.ended() if holder is not None else ""
        if holder is None or ended:
            holder = _holders[os.getpid()] = _Holder(replaces=ended)
        return holder


def _close_holders() -> None:
    holder = _holders.pop(os.getpid(), None)
    if holder is not None:
        holder.close()


atexit.register(_close_holders)
