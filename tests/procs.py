"""Process helpers for the sandbox tests: a unique marker to put in a sleeper's argv, and who still has it."""

from __future__ import annotations

import os
import uuid
from pathlib import Path


def marker() -> str:
    """A unique, valid `sleep` argument (seconds), so the sleepers a test starts can be found again."""
    return f"{uuid.uuid4().int % 10**6 + 1000}.{uuid.uuid4().int % 10**6}"


SLEEPS = "import sys, time; time.sleep(float(sys.argv[1]))"  # the argument: a marker()


def sleeper(mark: str) -> str:
    """A sandboxed program's line that becomes a sleeper with ``mark`` on its command line (the candidate's view
    has the interpreter, not /bin/sleep): it needs ``os`` and ``sys``."""
    return f"os.execv(sys.executable, [sys.executable, '-c', {SLEEPS!r}, '{mark}'])"


def alive_with(text: str) -> list[int]:
    """Pids of live processes whose command line contains ``text``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if text.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                pass
    return found
