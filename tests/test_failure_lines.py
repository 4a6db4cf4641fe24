"""A failing sample's line, where it is shortened (the line a failure names, the terminal's failing section), is
cut between tokens and says it was cut: never a token cut in half followed by the closing `)` (real sessions)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from sessions import NO_CACHE

from pytest_humaneval.sandbox import shorten

LONG = "    return 1 // 0 + len([" + ", ".join(str(1000 + i) for i in range(60)) + "])\n"


@pytest.mark.parametrize(("text", "width", "expected"), [
    ("short enough", 20, "short enough"),
    ("assert candidate(['1234567']) == ['the number']", 40, "assert candidate(['1234567']) ==..."),
    ("x" * 50, 20, "x" * 17 + "..."),  # no space in its last third: cut where it must be, and said so
])
def test_shorten(text, width, expected):
    assert shorten(text, width) == expected
    assert len(shorten(text, width)) <= width


def test_long_lines_are_cut_between_tokens(pytester):
    (pytester.path / "samples.jsonl").write_text(json.dumps({"task_id": "HumanEval/0", "completion": LONG}) + "\n")
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "--humaneval-results", "r.jsonl",
                                "--junitxml", "j.xml", "--tb=short", *NO_CACHE)
    result.assert_outcomes(failed=1)
    detail = json.loads((pytester.path / "r.jsonl").read_text())["detail"]
    assert detail.startswith("ZeroDivisionError: integer division or modulo by zero (at completion line ")
    assert detail.endswith(",...)"), detail  # the line cut after a whole number, marked, then the closing `)`
    # The failure line (JUnit's message, the failure block) ends where the cut line does: no `)` after the
    # ellipsis, which would read as the code's own.
    message = ET.parse(pytester.path / "j.xml").getroot().find(".//failure").get("message")
    assert message == f"runtime_error: {detail[:-1]}", message
    assert f"runtime_error: {detail[:-1]}" in result.stdout.lines
    prefix = "  HumanEval/0[0] runtime_error: "
    line = next(line for line in result.stdout.lines if line.startswith(prefix))
    shown = line[len(prefix):]
    assert shown.endswith("...") and len(shown) <= 100
    assert detail.startswith(shown[:-3]) and detail[len(shown) - 3] == " ", (shown, detail)  # cut before a space


def test_a_detail_cut_to_fit_its_notes_says_so(pytester, monkeypatch):
    """A runtime sample's detail gets generation's notes (which code block was taken) ahead of the judge's: when
    the two are longer than a detail may be, the detail is cut between words with an ellipsis, not mid-word."""
    from fake_openai import FakeOpenAI, chat, models

    from pytest_humaneval.data.dataset import load_problems
    from pytest_humaneval.sandbox import DETAIL_MAX

    prompt = load_problems()[1][0].prompt
    raising = f"{prompt}    raise ValueError({'word ' * 400!r})\n"

    def script(request, index):
        if request.method == "GET":
            return models()
        return chat(f"```python\nprint(1)\n```\n\n```python\n{raising}```\n")

    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-notes")
    with FakeOpenAI(script) as server:
        (pytester.path / "run.yaml").write_text(
            f"target: {{mode: runtime, endpoint: '{server.url}', model: test-model, credentials_ref: env:TEST_LLM_KEY}}\n"
            "params: {allow_code_execution: true, limit: 1}\n")
        result = pytester.runpytest("--humaneval-config", "run.yaml", "-p", "no:xdist", "--humaneval-results",
                                    "r.jsonl", *NO_CACHE)
    result.assert_outcomes(failed=1)
    detail = json.loads((pytester.path / "r.jsonl").read_text())["detail"]
    assert detail.startswith("took code block 2 of 2"), detail
    assert "ValueError: word word" in detail
    assert len(detail) <= DETAIL_MAX and detail.endswith("word..."), detail[-80:]
