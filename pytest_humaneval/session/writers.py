"""One plugin per output: the results JSONL, the report JSON, Markdown, HTML and the JUnit file's additions.

Each is registered in ``pytest_configure`` only when its option is set (on the controller, never under
``--collect-only``), kept under its own ``StashKey`` and unregistered in ``pytest_unconfigure``, as pytest's own
junitxml plugin does. All of them read the run from the collector (``summary.COLLECTOR_KEY``), which has made the
report by the time they write (its ``pytest_sessionfinish`` runs first). The HTML page is written last: a page
that cannot be written loses no other output.

JUnit goes through public ground only: pytest's junitxml plugin writes its file, then this plugin adds the run's
suite properties (pass@k, coverage, model, dataset, protocol, gate) and, with a gate, a ``humaneval::gate`` test
case to the file itself, as a later step of a CI job would, so nothing here depends on pytest's internals.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import IO

import pytest

from .. import protocols
from ..outputs import html_page
from ..outputs.markdown import render_markdown
from ..outputs.paths import OutputError, busy_error, is_job_summary, open_private, publish
from ..scoring.selection import Partial
from .summary import COLLECTOR_KEY, Collector, Row

__all__ = ["WRITER_KEYS", "Html", "Junit", "Markdown", "PytestHtmlSummary", "Report", "Results", "make"]

XML_HEAD = '<?xml version="1.0" encoding="utf-8"?>'  # as junitxml writes it


def _collector(config: pytest.Config) -> Collector:
    return config.stash[COLLECTOR_KEY]


def _taken(session: pytest.Session, option: str, path: Path) -> bool:
    """Whether ``path`` became another live session's results file since configure checked it (that session
    started in between): then it is not written, which would cut that session's rows short; the section says so,
    and the session exits 3 (an output it was asked for is missing), as when a report hook fails."""
    busy = busy_error(option, path)
    if busy is None:
        return False
    _collector(session.config).unwritten.append(busy)
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
    return True


class Results:
    """``--humaneval-results``: one JSON line per sample as its verdict arrives, the samples that never ran at the
    end. Readable by this user alone while samples run (a candidate that runs as another uid, and finds the file
    at all, cannot copy its neighbours' passing answers from it); its usual mode comes back at the end."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config, self.path = config, path
        self._file: IO[str] | None = None

    def pytest_sessionstart(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._file = open_private(self.path)
        except OutputError as exc:  # another live session writes it (it started since configure)
            raise pytest.UsageError(str(exc)) from None
        _collector(self.config).listeners.append(self.write)

    def write(self, row: Row) -> None:
        if self._file is not None:
            self._file.write(json.dumps(row) + "\n")
            self._file.flush()

    def pytest_sessionfinish(self) -> None:
        if self._file is None:
            return
        collector = _collector(self.config)
        for key in collector.planned or []:
            if key not in collector.tally.verdicts:
                self.write(collector.final_row(key))
        self._file.close()
        self._file = None
        publish(self.path)


class Report:
    """``--humaneval-report``: the run summary JSON (its format: docs/ci-and-reports.md, Outputs)."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config, self.path = config, path

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        collector = _collector(self.config)
        if collector.finished and not _taken(session, "--humaneval-report", self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(collector.report, indent=2) + "\n", encoding="utf-8")


class Markdown:
    """``--humaneval-markdown``: the summary for a merge request or ``$GITHUB_STEP_SUMMARY`` (appended to there,
    so other steps' sections stay)."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config, self.path = config, path

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        collector = _collector(self.config)
        if not collector.finished or _taken(session, "--humaneval-markdown", self.path):
            return
        text = render_markdown(collector.report)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if is_job_summary(self.path):
            with self.path.open("a", encoding="utf-8") as handle:
                handle.write(text)
        else:
            self.path.write_text(text, encoding="utf-8")


class Html:
    """``--humaneval-html``: the run as one self-contained page. Last of all (``trylast``, registered first)."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config, self.path = config, path

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        collector = _collector(self.config)
        if not collector.finished or _taken(session, "--humaneval-html", self.path):
            return
        report = collector.report
        problems = {task: {"prompt": problem.prompt, "test": problem.test}
                    for task, problem in collector.run.plan.problems.items() if task in report["problems"]}
        try:  # read at the start already; only its per-problem statuses are new here
            baseline = json.loads(collector.baseline.path.read_text(encoding="utf-8")) if collector.baseline else None
        except (OSError, ValueError):
            baseline = None
        page = html_page.render(report, collector.final_rows(), problems, baseline)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(page, encoding="utf-8")


class Junit:
    """``--junitxml``: the run's suite properties and the gate's test case, added to the file junitxml wrote
    (``trylast``: after junitxml's own ``pytest_sessionfinish``)."""

    def __init__(self, config: pytest.Config, path: Path) -> None:
        self.config, self.path = config, path

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        collector = _collector(self.config)
        if not collector.finished or not self.path.is_file():
            return
        try:
            root = ET.parse(self.path).getroot()
        except (OSError, ET.ParseError):  # not junitxml's file after all: leave it as it is
            return
        suite = root if root.tag == "testsuite" else root.find("testsuite")
        if suite is None:
            return
        properties = suite.find("properties")
        if properties is None:
            properties = ET.Element("properties")
            suite.insert(0, properties)
        for name, value in suite_properties(collector):
            ET.SubElement(properties, "property", name=name, value=value)
        gate = collector.gate_result
        if gate is not None:
            self._gate_case(suite, gate.passed, "gate FAILED: " + "; ".join(gate.failures()))
        self.path.write_text(XML_HEAD + ET.tostring(root, encoding="unicode"), encoding="utf-8")

    def _gate_case(self, suite: ET.Element, passed: bool, failure: str) -> None:
        """The gate as a test case, as junitxml writes one (xunit1 adds the file attribute)."""
        prefix = self.config.getoption("junitprefix", None)
        attributes = {"classname": f"{prefix}.humaneval" if prefix else "humaneval", "name": "gate"}
        if self.config.getini("junit_family") == "xunit1":
            attributes["file"] = "humaneval"
        attributes["time"] = "0.000"
        case = ET.SubElement(suite, "testcase", attributes)
        if not passed:
            ET.SubElement(case, "failure", message=failure).text = failure
        for name in ("tests",) + (() if passed else ("failures",)):
            suite.set(name, str(int(suite.get(name, "0")) + 1))


def suite_properties(collector: Collector) -> list[tuple[str, str]]:
    """The run's JUnit suite properties: the scores, what was measured, and how the run ended."""
    report = collector.report
    found = [(name, measurement["value"]) for name, measurement in report["measurements"].items()
             if name.startswith(("human-eval.pass_at_", "human-eval.base_pass_at_"))
             or name in ("human-eval.coverage", "human-eval.cheat_rate")]
    impossible = report.get("impossible")
    if impossible is not None:  # an impossible dataset: every sample's category, counted
        found += [(f"human-eval.impossible.{name}", count) for part in ("categories", "evidence")
                  for name, count in impossible[part].items()]
    found += [("human-eval.model", report["run"]["model"] or report["run"]["mode"]),
              ("human-eval.dataset_label", report["dataset"]["label"]),
              ("human-eval.dataset_digest", report["dataset"]["digest"])]
    if report["run"]["protocol"] is not None:  # None: a mock run, which samples no model
        found.append(("human-eval.protocol", protocols.line(report["run"]["protocol"])))
    if report["dataset"]["partial"] is not None:
        partial = report["dataset"]["partial"]
        found.append(("human-eval.partial", Partial(partial["selected"], partial["planned"],
                                                    tuple(partial["by"])).describe()))
    if collector.interrupted is not None:
        found.append(("human-eval.interrupted", collector.interrupted))
    if collector.gate_result is not None:
        found.append(("human-eval.gate", "PASS" if collector.gate_result.passed else "FAIL"))
    return [(name, str(value)) for name, value in found]


class PytestHtmlSummary:
    """Registered only when pytest-html is present: its report's summary gets pass@k, coverage and the gate."""

    def pytest_html_results_summary(self, prefix: list[str], session: pytest.Session) -> None:
        collector = session.config.stash.get(COLLECTOR_KEY, None)
        if collector is not None and collector.finished and collector.report:
            prefix.append(html_page.summary_fragment(collector.report))


# name -> (option, plugin); the HTML page first, so that among the trylast ones it is called last
WRITERS: dict[str, tuple[str, type]] = {
    "humaneval-html": ("humaneval_html", Html),
    "humaneval-junit": ("xmlpath", Junit),
    "humaneval-results": ("humaneval_results", Results),
    "humaneval-report": ("humaneval_report", Report),
    "humaneval-markdown": ("humaneval_markdown", Markdown),
}
def make(config: pytest.Config) -> list[tuple[str, object]]:
    """(name, plugin) for each output whose option is set, each kept under its own key of the stash too."""
    made: list[tuple[str, object]] = []
    for name, (option, kind) in WRITERS.items():
        value = config.getoption(option, None)
        if not value:
            continue
        path = Path(os.path.abspath(os.path.expanduser(os.path.expandvars(value)))) if kind is Junit else Path(value)
        writer = kind(config, path)
        config.stash[WRITER_KEYS[name]] = writer
        made.append((name, writer))
    return made


WRITER_KEYS = {name: pytest.StashKey[object]() for name in WRITERS}
