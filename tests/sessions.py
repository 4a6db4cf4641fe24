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

from pytest_humaneval.scoring.schema import DatasetSection, Measurement, Report, ResultRow, RunSection

# The test process imported pytest_humaneval already, so in-process runs cannot assertion-rewrite it: not news.
QUIET_REWRITE = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
NO_CACHE = ("-p", "no:cacheprovider", *QUIET_REWRITE)


def read_report(path: Path, amended: frozenset[str] = frozenset()) -> dict:
    """A run's report, checked against its declared shape (``scoring/schema.py``) on the way: every test that
    reads a report checks the types the code declares against what a real run wrote (``amended``: the top-level
    keys a report hook of the test may have added)."""
    report = json.loads(path.read_text())
    assert_shape(report, Report, "report", amended)
    assert_shape(report["dataset"], DatasetSection, "report.dataset")
    assert_shape(report["run"], RunSection, "report.run")
    for name, measurement in report["measurements"].items():
        assert_shape(measurement, Measurement, f"report.measurements[{name!r}]")
    return report


def read_rows(path: Path) -> list[dict]:
    """A run's results rows, each checked against ``schema.ResultRow`` as ``read_report`` checks a report."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for number, row in enumerate(rows, 1):
        assert_shape(row, ResultRow, f"{path.name}:{number}")
    return rows


def assert_shape(value: dict, shape: type, where: str, extra: frozenset[str] = frozenset()) -> None:
    """``value`` has every key ``shape`` (a TypedDict) requires and none it does not declare (but ``extra``)."""
    required, known = shape.__required_keys__, shape.__required_keys__ | shape.__optional_keys__
    assert required <= value.keys(), f"{where}: missing {sorted(required - value.keys())}"
    assert value.keys() <= known | extra, f"{where}: undeclared {sorted(value.keys() - known - extra)}"


def interruptible_pytest(*args: str, cwd: Path) -> subprocess.Popen:
    """``python -m pytest *args`` in a real subprocess that a test stops with SIGINT, output in ``stdout``.

    A shell starts its background jobs with SIGINT ignored (``.ci/run &``, nohup), and Python keeps an ignored
    SIGINT: such a child would never see the test's Ctrl-C. It gets SIGINT's default back before it starts."""
    return subprocess.Popen([sys.executable, "-m", "pytest", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
