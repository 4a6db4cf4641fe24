"""A tiny pytest plugin for the benchmarks: prints the controller's peak RSS and item rate at the end.

    python -m pytest -p bench.peak_rss ...   (from the repository root, so `bench` is importable)
"""

from __future__ import annotations

import time

_started = time.monotonic()
_items = 0


def pytest_runtest_logreport(report) -> None:
    # Counted here rather than from the terminal's stats: a benchmark session's terminal keeps no report of a
    # failing sample (docs/usage.md, "A benchmark run reads like a report").
    global _items
    if report.when == "teardown":
        _items += 1


def _vm_hwm_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def pytest_terminal_summary(terminalreporter, config) -> None:
    if hasattr(config, "workerinput"):
        return
    elapsed = time.monotonic() - _started
    items = _items
    terminalreporter.write_line(f"bench: controller peak RSS {_vm_hwm_kib() / 1024:.0f} MiB, {items} items in "
                                f"{elapsed:.1f} s ({items / elapsed:.0f} items/s, whole session)")
