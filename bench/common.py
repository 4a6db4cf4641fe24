"""What every bench script shares: where things are, and the JSON record each run leaves behind.

A script run as ``python bench/NAME.py`` has ``bench/`` on its import path, so ``from common import ...`` needs no
``sys.path`` edits; ``tests_on_path()`` adds the test suite's helpers (the loopback server, the browser) for the
scripts that use them.

``write_record(name, figures, raw)`` writes ``bench/out/records/NAME-STAMP.json`` and ``NAME-latest.json``: the
commit (and whether the tree had changes), the machine (CPUs, memory, kernel, Python, load average at the start
and the end), the command line, the figures the docs quote and the raw values they come from (per pair, per
sample). A figure in the docs names the record it comes from; ``bench/out/`` is not committed, so a figure is
checked by running its command again and reading the record it writes.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
RECORDS = OUT / "records"
SHARED = ROOT.parent / "shared" / "data"
REAL_SAMPLES = SHARED / "real-samples"
_LOAD_AT_START = os.getloadavg()

__all__ = ["OUT", "REAL_SAMPLES", "RECORDS", "ROOT", "SHARED", "commit", "machine", "tests_on_path", "write_record"]


def tests_on_path() -> None:
    """The test suite's helpers (``fake_openai``, ``browser``) importable by a bench script."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def commit(checkout: Path = ROOT) -> dict[str, Any]:
    """The commit a run measured, and whether the checkout had uncommitted changes to tracked files."""
    def git(*args: str) -> str:
        result = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True, check=False)
        return result.stdout.strip() if result.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "-uno"))}


def run_checkout(checkout: Path, code: str) -> dict[str, Any]:
    """Run ``code`` in a fresh interpreter with ``checkout`` first on PYTHONPATH (from /, so the current folder
    brings in no other copy of the package); the JSON of its last line of output, or exit with its error."""
    env = dict(os.environ, PYTHONPATH=str(checkout))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/")
    if done.returncode != 0:
        sys.exit(f"{checkout}: {done.stderr[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def machine() -> dict[str, Any]:
    memory = None
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            memory = int(next(line for line in handle if line.startswith("MemTotal:")).split()[1]) // 1024
    except (OSError, StopIteration, ValueError):
        pass
    return {"cpus": os.cpu_count(), "usable_cpus": len(os.sched_getaffinity(0)), "memory_mib": memory,
            "kernel": platform.release(), "machine": platform.machine(), "python": platform.python_version(),
            "load_at_start": [round(x, 2) for x in _LOAD_AT_START],
            "load_at_end": [round(x, 2) for x in os.getloadavg()]}


def write_record(name: str, figures: dict[str, Any], raw: Any = None, checkout: Path = ROOT) -> Path:
    """The run's record (see the module's docstring); returns its path."""
    RECORDS.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)
    record = {"name": name, "when": now.isoformat(timespec="seconds"), "command": [sys.executable, *sys.argv],
              **commit(checkout), "machine": machine(), "figures": figures, "raw": raw}
    text = json.dumps(record, indent=1, default=str) + "\n"
    path = RECORDS / f"{name}-{now.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(text, encoding="utf-8")
    (RECORDS / f"{name}-latest.json").write_text(text, encoding="utf-8")
    print(f"record: {path}")
    return path
