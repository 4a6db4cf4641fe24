"""A script run in an isolation mode's own process, for tests that compare the modes: ``landlock`` is a default
container's confinement (``container.py``; skipped where it cannot be made), any other mode this machine as it is
(the script picks its isolation from its arguments)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from container import available

from pytest_humaneval.sandbox import _confine

HERE = Path(__file__).resolve().parent


def last_json(mode: str, script: str, *args: str, stdin: str | None = None) -> Any:
    """The last line ``python -c script *args`` prints, as JSON; in a default container for ``landlock``; ``stdin``
    its standard input (for what is too long for a command line, or must not be in one)."""
    command = [sys.executable, "-c", script, *args]
    if mode == "landlock":
        why = available()
        if why:
            pytest.skip(f"needs_root: a default container's confinement cannot be made here: {why}")
        if _confine.landlock_abi() < 1:
            pytest.skip("needs_landlock: the kernel has no Landlock")
        command = [sys.executable, str(HERE / "container.py"), "--", *command]
    run = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
