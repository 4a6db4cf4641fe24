"""The suite's two tiers: the default one, which ``pytest tests -n auto`` runs in a few minutes, and the slow one
(tests marked ``slow``: sessions that start many sandboxes, attackers, learners, real servers, ssh hosts, a
browser), which CI runs in full and a developer runs with ``--run-slow``.

A slow test is skipped unless the slow tier is asked for, with a reason that starts with ``slow:`` and says how to
run it; the header of a session that runs the suite says which tiers run, and its end counts the slow tests it
left out. The tier is asked for by ``--run-slow``, by ``HUMANEVAL_TEST_SLOW=1`` (which ``.ci/run`` sets for every
run it makes), or by a ``-m`` expression that names ``slow`` (``-m slow`` runs the slow tier alone; ``-m "not
slow"`` deselects it).
Other ``-m`` selections (``-m needs_root``, ``-m "not needs_ssh_hosts"``) leave the tiers as they are.

How to decide whether a test is slow: docs/development.md, "The test tiers". tests/conftest.py imports the hooks
below; tests/test_tiers.py tests them in a pytester session whose conftest is this file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

SLOW_VAR = "HUMANEVAL_TEST_SLOW"
MARK = "slow"
REASON = f"{MARK}: the slow tier runs with --run-slow (or {SLOW_VAR}=1)"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help=f"run the slow tier too (tests marked {MARK}: many sandboxes, attackers, learners, real "
                          f"servers, ssh hosts, a browser). Default: ${SLOW_VAR}=1 does the same; else only a -m "
                          f"expression that names {MARK} runs them.")


def runs_slow(config: pytest.Config) -> bool:
    """Whether this session runs the slow tier: asked for, or left to a -m expression that names it."""
    if config.getoption("--run-slow", False):
        return True
    if os.environ.get(SLOW_VAR, "").strip() not in ("", "0"):
        return True
    return MARK in re.findall(r"\w+", config.getoption("markexpr", "") or "")


def runs_suite(config: pytest.Config) -> bool:
    """Whether the session collects this suite: a path it collects is the suite's folder (this file's), inside
    it, or holds it. A benchmark run in the checkout (``pytest --humaneval-config examples/reference.yaml``) loads
    this conftest from ``testpaths`` but collects its config file alone (the plugin makes it the session's one
    path before the header is written), so its header has no tiers line."""
    suite = Path(__file__).resolve().parent
    for arg in config.args:
        path = Path(arg.split("::")[0])
        path = (path if path.is_absolute() else config.invocation_params.dir / path).resolve()
        if path == suite or suite in path.parents or path in suite.parents:
            return True
    return False


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not runs_suite(config):
        return []
    if runs_slow(config):
        return ["tiers: default and slow (all tests)"]
    return [f"tiers: default only (tests marked {MARK} are skipped: --run-slow or {SLOW_VAR}=1 runs them)"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if runs_slow(config):
        return
    skip = pytest.mark.skip(reason=REASON)
    for item in items:
        if item.get_closest_marker(MARK) is not None:
            item.add_marker(skip)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, (tuple, list)) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    left_out = [report for report in terminalreporter.stats.get("skipped", [])
                if _skip_reason(report).removeprefix("Skipped: ").startswith(f"{MARK}:")]
    if left_out:
        terminalreporter.write_line(f"{len(left_out)} slow test(s) not run: the slow tier runs with --run-slow "
                                    f"(or {SLOW_VAR}=1), as CI does", yellow=True)
