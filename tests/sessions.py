"""Shared by the tests that run real pytest sessions with pytester."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

# httpx imports httpcore lazily, at its first request, and keeps a map of httpcore's exception classes. If that
# first request happens inside an in-process pytester run, pytester drops httpcore from sys.modules afterwards,
# the next request imports a second httpcore whose exceptions httpx no longer maps, and an endpoint test of this
# process sees a raw httpcore.ConnectError. Importing it here, while the test modules are collected, keeps one.
import httpcore  # noqa: F401

# The test process imported pytest_humaneval already, so in-process runs cannot assertion-rewrite it: not news.
QUIET_REWRITE = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
NO_CACHE = ("-p", "no:cacheprovider", *QUIET_REWRITE)


def read_report(path: Path) -> dict:
    return json.loads(path.read_text())


def interruptible_pytest(*args: str, cwd: Path) -> subprocess.Popen:
    """``python -m pytest *args`` in a real subprocess that a test stops with SIGINT, output in ``stdout``.

    A shell starts its background jobs with SIGINT ignored (``.ci/run &``, nohup), and Python keeps an ignored
    SIGINT: such a child would never see the test's Ctrl-C. It gets SIGINT's default back before it starts."""
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
