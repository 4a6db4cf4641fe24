"""A standard-input and functional run's reports (issue 52): examples/io-corpus.yaml writing its report, results,
HTML page and JUnit file. The page has the score per difficulty and platform as the report has it; a wrong program's
detail (the test it failed, the first differing line, expected and got) is its JUnit failure's message and its
sample's detail on the page; the `html` command builds the same page from the saved files, the rows file as its
``--dataset``. The page in a real browser: test_html_browser.py."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from sessions import NO_CACHE, read_report
from test_html_report import Page, breakdown

from pytest_humaneval.__main__ import main as cli

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "pytest_humaneval" / "fixtures" / "io_corpus.jsonl"
PAIR_SUMS = "test 2 of 6: wrong answer: line 1: expected '3', got '4'"  # io/pair-sums's wrong program, sample 1


def test_io_corpus_breakdown_and_details_in_html_and_junit(pytester):
    """The corpus's page shows the breakdown, and each failing sample's detail is its JUnit message and page detail."""
    result = pytester.runpytest("--humaneval-config", str(ROOT / "examples" / "io-corpus.yaml"), "-p", "no:xdist",
                                "--humaneval-report", "report.json", "--humaneval-results", "results.jsonl",
                                "--humaneval-html", "page.html", "--junitxml", "junit.xml", *NO_CACHE)
    result.assert_outcomes(passed=8, failed=8)
    report = read_report(pytester.path / "report.json")
    page_text = (pytester.path / "page.html").read_text(encoding="utf-8")
    page = Page(page_text)

    assert report["breakdown"].keys() == {"difficulty", "platform"}
    assert breakdown(page) == {
        facet: {"": [facet, "problems", "samples", "pass@1"],
                **{name: [name, str(group["problems"]), str(group["problems"] * 2), f"{group['pass_at']['pass@1']:.3f}"]
                   for name, group in groups.items()}}
        for facet, groups in report["breakdown"].items()}
    assert breakdown(page)["platform"]["leetcode"] == ["leetcode", "3", "6", "0.500"]

    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    failing = {f"{r['task_id']}[{r['sample']}]": r for r in rows if r["status"] != "passed"}
    assert failing["io/pair-sums[1]"]["detail"] == PAIR_SUMS
    cases = {case.get("name"): case for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    messages = {name: case.find("failure").get("message") for name, case in cases.items()
                if case.find("failure") is not None}
    assert messages == {name: f"{r['status']}: {r['detail']}" for name, r in failing.items()}
    assert messages["io/pair-sums[1]"] == f"assertion_failed: {PAIR_SUMS}"

    data = page.data()
    samples = data["problems"]["io/pair-sums"]["samples"]
    assert [(s[0], data["statuses"][s[1]], data["texts"][s[3]]) for s in samples] == [
        (0, "passed", ""), (1, "assertion_failed", PAIR_SUMS)]

    assert cli(["html", str(pytester.path / "report.json"), str(pytester.path / "results.jsonl"),
                "-o", str(pytester.path / "again.html"), "--dataset", str(CORPUS)]) == 0
    assert (pytester.path / "again.html").read_text(encoding="utf-8") == page_text
