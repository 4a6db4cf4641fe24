"""A failing sample's line, where it is shortened (the line a failure names, the terminal's failing section), is
cut between tokens and says it was cut: never a token cut in half followed by the closing `)` (real sessions)."""

from __future__ import annotations

import json

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
                                *NO_CACHE)
    result.assert_outcomes(failed=1)
    detail = json.loads((pytester.path / "r.jsonl").read_text())["detail"]
    assert detail.startswith("ZeroDivisionError: integer division or modulo by zero (at completion line ")
    assert detail.endswith(",...)"), detail  # the line cut after a whole number, marked, then the closing `)`
    prefix = "  HumanEval/0[0] runtime_error: "
    line = next(line for line in result.stdout.lines if line.startswith(prefix))
    shown = line[len(prefix):]
    assert shown.endswith("...") and len(shown) <= 100
    assert detail.startswith(shown[:-3]) and detail[len(shown) - 3] == " ", (shown, detail)  # cut before a space
