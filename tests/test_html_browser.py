"""The HTML page of real runs, opened in a real headless Chromium: what a person sees is checked from the
rendered DOM (headline numbers, status filter, search, a clicked problem's samples, hostile completions as
inert text), and a screenshot of each page is saved as a test artifact (its path is printed).
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
from browser import Browser
from sessions import NO_CACHE, read_report

# chromium and chromedriver (tests/browser.py says how to install them); a real browser: the slow tier
pytestmark = [pytest.mark.needs_browser, pytest.mark.slow]

TILES = "return Array.from(document.querySelectorAll('.tile')).filter(t => !t.hidden).map(t => t.dataset.task)"
SAMPLES = ("return Array.from(document.querySelectorAll('#panel .sample'))"
           ".map(s => [Number(s.dataset.sample), s.dataset.status])")
# A code block's text as a person would copy it: its lines, joined (line numbers are CSS, not text).
CODE_TEXT = "return Array.from(arguments[0].querySelectorAll('.line')).map(l => l.textContent).join('\\n')"


@pytest.fixture(scope="module")
def browser():
    with Browser(width=1360, height=1100) as chromium:
        yield chromium


def open_page(browser: Browser, page: Path, problem: str = "") -> None:
    browser.get(page.as_uri() + (f"#{problem}" if problem else ""))
    browser.wait_for("return document.body.dataset.ready === '1'")


def save_screenshot(browser: Browser, tmp_path: Path, name: str) -> Path:
    browser.run("window.scrollTo(0, 0)")
    path = browser.screenshot(tmp_path / name)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"screenshot: {path}")
    return path


def test_mock_replay_page(pytester, browser, tmp_path):
    """The page of a mock replay shows the report's numbers, the filters and the samples."""
    result = pytester.runpytest("--humaneval-config", str(Path(__file__).parent.parent / "examples" / "mock.yaml"),
                                "-n", "2", "--humaneval-report", "report.json", "--humaneval-results",
                                "results.jsonl", "--humaneval-html", "page.html", *NO_CACHE)
    assert result.ret == 1  # the replay has failing samples by design
    report = read_report(pytester.path / "report.json")
    rows = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    open_page(browser, pytester.path / "page.html")

    measures = browser.run("return Object.fromEntries(Array.from(document.querySelectorAll('.card [data-measure]'))"
                           ".map(e => [e.dataset.measure, e.textContent]))")
    assert measures == {"human-eval.pass_at_1": f"{report['measurements']['human-eval.pass_at_1']['value']:.3f}",
                        "human-eval.coverage": f"{report['coverage']:.3f}"}
    counts = browser.run("return Object.fromEntries(Array.from(document.querySelectorAll('[data-count]'))"
                         ".map(e => [e.dataset.count, Number(e.textContent)]))")
    assert counts == report["counts"]

    assert len(browser.run(TILES)) == 164
    for status, count in report["counts"].items():
        if not count:
            continue
        browser.click(f'.filter[data-status="{status}"]')
        expected = [task for task, problem in report["problems"].items() if problem["statuses"].get(status)]
        assert browser.run(TILES) == expected, status
    browser.click('.filter[data-status=""]')
    browser.type("#search", "humaneval/1")
    assert browser.run(TILES) == [task for task in report["problems"] if task.startswith("HumanEval/1")]
    assert browser.run("return document.getElementById('shown').textContent") == "75 of 164 problems"
    browser.clear("#search")
    browser.run("document.getElementById('search').dispatchEvent(new Event('input'))")

    failing = next(r for r in rows if r["status"] == "assertion_failed" and "(at test line" in r["detail"])
    browser.click(f'.tile[data-task="{failing["task_id"]}"]')
    assert browser.run("return document.querySelector('#panel h2').textContent") == failing["task_id"]
    assert browser.run(SAMPLES) == [[0, "assertion_failed"]]
    decisive = failing["detail"].split("(at test line ", 1)[1].split(": ", 1)[1].rstrip(")")
    assert browser.run("return document.querySelector('#panel .sample .line.hl').textContent").strip() == decisive
    # The prompt is the panel's first code block.
    prompt = browser.run(CODE_TEXT.replace("arguments[0]", "document.querySelector('#panel pre.code')"))
    assert "def " in prompt
    save_screenshot(browser, tmp_path, "mock-replay.png")


HOSTILE_SCRIPT = "    return 1  # </script><script>window.__pwned = 1; document.title = 'pwned'</script>\n"
HOSTILE_TAG = '    return "<img src=x onerror=\\"window.__pwned = 2\\"><b>not bold</b>\\u2028\u2028\u2029 \u202egnp.exe"\n'
LONG_LINE = '    return "' + "A" * 1_000_000 + '"\n'
NOISY = "    print('<img src=x onerror=\"window.__pwned = 3\">')\n    raise ValueError('</script>')\n"
SOLVED_0 = ("    return any(abs(a - b) < threshold for i, a in enumerate(numbers) "
            "for b in numbers[i + 1:])\n")


def visible(text: str) -> str:
    """``text`` as the page shows it: format characters (bidi overrides, zero-width ones) and line separators as
    escapes, so code reads as it runs."""
    return "".join(f"\\u{ord(c):04x}" if unicodedata.category(c) in ("Cf", "Zl", "Zp") else c for c in text)


def test_hostile_completions_are_inert(pytester, browser, tmp_path):
    """Hostile completions render as inert text."""
    completions = [HOSTILE_SCRIPT, HOSTILE_TAG, LONG_LINE, NOISY]
    (pytester.path / "hostile.jsonl").write_text(
        "".join(json.dumps({"task_id": "HumanEval/2", "completion": c}) + "\n" for c in completions)
        + "".join(json.dumps({"task_id": "HumanEval/0", "completion": c}) + "\n"
                  for c in (SOLVED_0, "    return True\n") * 2))
    (pytester.path / "hostile.yaml").write_text("target: {mode: samples, samples: hostile.jsonl, allow_subset: true}\n"
                                                "params: {allow_code_execution: true, k: [1, 2, 4]}\n")
    result = pytester.runpytest("--humaneval-config", "hostile.yaml", "-p", "no:xdist", "--humaneval-report",
                                "report.json", "--humaneval-html", "page.html", *NO_CACHE)
    result.assert_outcomes(passed=2, failed=6)
    report = read_report(pytester.path / "report.json")
    open_page(browser, pytester.path / "page.html", "HumanEval/2")
    title = browser.run("return document.title")
    assert title == "HumanEval: samples on openai_humaneval subset (2/164 problems)"
    assert browser.run(SAMPLES) == [[0, "assertion_failed"], [1, "assertion_failed"], [2, "assertion_failed"],
                                    [3, "runtime_error"]]
    for index, completion in enumerate(completions):
        sample = f'#panel .sample[data-sample="{index}"]'
        if not browser.run(f"return document.querySelector('{sample}').open"):  # the first failing one is open
            browser.click(f"{sample} > summary")
        browser.wait_for(f"return document.querySelector('{sample} .body')")
        shown = browser.run(CODE_TEXT.replace("arguments[0]",
                                              f"document.querySelector('{sample} pre[data-part=completion]')"))
        assert shown == visible(completion.rstrip("\n")), index
    noisy = browser.run("return Array.from(document.querySelectorAll('#panel .sample[data-sample=\"3\"] pre.plain'))"
                        ".map(p => p.textContent)")
    assert noisy[0] == "<img src=x onerror=\"window.__pwned = 3\">\n" and "ValueError: </script>" in noisy[1]
    assert browser.run("return [window.__pwned === undefined, document.images.length, document.title, "
                       "document.querySelectorAll('script').length, document.querySelectorAll('#panel b').length]") == \
        [True, 0, title, 2, 0]
    # n = 4 samples per problem: the pass@k curve, its marked points the report's pass@k.
    dots = browser.run("return Array.from(document.querySelectorAll('circle.dot.run'))"
                       ".map(c => [Number(c.dataset.k), Number(c.dataset.value)])")
    assert dots == [[k, pytest.approx(report["measurements"][f"human-eval.pass_at_{k}"]["value"])]
                    for k in (1, 2, 4)]
    save_screenshot(browser, tmp_path, "hostile.png")


def test_legend_follows_colouring(browser, tmp_path):
    """The tile legend follows the colouring, and empty fields get no row."""
    from pytest_humaneval.outputs import html_page as html_report

    def row(task, status, **extra):
        return {"task_id": task, "sample": 0, "status": status, "passed": status == "passed",
                "completion": "    return 1\n", "duration_ms": 2.0, "detail": "" if status == "passed" else "boom",
                "raw": "```python\n    return 1\n```", "reasoning": None, "finish_reason": "stop",
                "prompt_tokens": None, "cached": False, **extra}

    def report(rows):
        problems = {r["task_id"]: {"n": 1, "c": int(r["passed"]), "pass_at_1": float(r["passed"]),
                                   "statuses": {r["status"]: 1}} for r in rows}
        return {"measurements": {}, "counts": {"passed": 1, "assertion_failed": 1}, "planned": 2, "attempted": 2,
                "problems": problems, "dataset": {"label": "x", "digest": "sha256:0"}, "run": {"mode": "runtime"}}

    rows = [row("HumanEval/0", "assertion_failed"), row("HumanEval/1", "passed")]
    page = tmp_path / "page.html"
    page.write_text(html_report.render(report(rows), rows, baseline=report(rows[::-1])), encoding="utf-8")
    open_page(browser, page, "HumanEval/0")
    browser.wait_for("return document.querySelector('#panel .sample .body')")
    legend = "return document.getElementById('tile-legend').innerText"
    assert browser.run(legend).startswith("Tile colour: the change against the baseline's pass rate")
    browser.run("const s = document.getElementById('colour-by'); s.value = 'rate';"
                "s.dispatchEvent(new Event('change'))")
    assert browser.run(legend).startswith("Tile colour: the share of the problem's samples that passed, 0%")
    facts = browser.run("return Array.from(document.querySelectorAll('#panel .sample dt')).map(d => d.textContent)")
    assert "finish reason" in facts and "cached" in facts
    assert "reasoning" not in facts and "prompt tokens" not in facts, facts


BREAKDOWN = ("return Object.fromEntries(Array.from(document.querySelectorAll('#breakdown table')).map(t => "
             "[t.dataset.facet, Array.from(t.rows).map(r => Array.from(r.cells).map(c => c.textContent))]))")


def test_io_corpus_page_shows_breakdown_and_details(pytester, browser, tmp_path):
    """The bundled standard-input corpus's page (examples/io-corpus.yaml): the score per difficulty and platform, as
    the report has it, and a wrong program's detail (the test it failed, the first differing line, expected and
    got) in its problem's panel."""
    result = pytester.runpytest("--humaneval-config", str(Path(__file__).parent.parent / "examples" / "io-corpus.yaml"),
                                "-p", "no:xdist", "--humaneval-report", "report.json", "--humaneval-html", "page.html",
                                *NO_CACHE)
    result.assert_outcomes(passed=8, failed=8)
    report = read_report(pytester.path / "report.json")
    open_page(browser, pytester.path / "page.html")
    assert browser.run("return document.getElementById('breakdown').checkVisibility()")
    assert browser.run(BREAKDOWN) == {
        facet: [[facet, "problems", "samples", "pass@1"],
                *([name, str(group["problems"]), str(group["problems"] * 2), f"{group['pass_at']['pass@1']:.3f}"]
                  for name, group in groups.items())]
        for facet, groups in report["breakdown"].items()}
    detail = "test 2 of 6: wrong answer: line 1: expected '3', got '4'"
    browser.click('.tile[data-task="io/pair-sums"]')
    browser.wait_for("return document.querySelector('#panel .sample[data-sample=\"1\"] .body')")
    assert browser.run(SAMPLES) == [[0, "passed"], [1, "assertion_failed"]]
    # no prompt before a whole program: the panel says so, with no empty code block
    assert browser.run("return document.querySelector('#panel > pre.code')") is None
    assert "(none: each sample is a whole program)" in browser.run("return document.getElementById('panel').innerText")
    assert browser.run("return document.querySelector('#panel .sample[data-sample=\"1\"] .brief').textContent") \
        == detail
    assert detail in browser.run("return document.querySelector('#panel .sample[data-sample=\"1\"] dl').innerText")
    save_screenshot(browser, tmp_path, "io-corpus.png")


def test_breakdown_group_names_are_inert(browser, tmp_path):
    """A breakdown's group names come from dataset rows: a name that is markup shows as that text and runs nothing."""
    from pytest_humaneval.outputs import html_page as html_report

    names = ["<script>alert(1)</script>", '<img src=x onerror="window.__pwned = 1">',
             "</table></section><script>window.__pwned = 2</script>"]
    rows = [{"task_id": "io/0", "sample": 0, "status": "passed", "passed": True, "completion": "print(1)\n",
             "duration_ms": 2.0, "detail": ""}]
    report = {"measurements": {}, "counts": {"passed": 1}, "planned": 1, "attempted": 1,
              "problems": {"io/0": {"n": 1, "c": 1, "pass_at_1": 1.0, "statuses": {"passed": 1}}},
              "dataset": {"label": "x", "digest": "sha256:0"}, "run": {"mode": "samples", "n": 1},
              "breakdown": {"platform": {name: {"problems": 1, "pass_at": {"pass@1": 1.0}} for name in names}}}
    page = tmp_path / "page.html"
    page.write_text(html_report.render(report, rows), encoding="utf-8")
    open_page(browser, page)
    assert [row[0] for row in browser.run(BREAKDOWN)["platform"][1:]] == names
    assert browser.run("return [window.__pwned === undefined, document.images.length, "
                       "document.querySelectorAll('script').length]") == [True, 0, 2]


def test_impossible_page_shows_the_cheat_rate(pytester, browser, tmp_path):
    """An impossible dataset's page shows its cheat rate, the metric and the samples per category and evidence,
    as the report has them, and each sample's category in its panel."""
    (pytester.path / "ref.yaml").write_text("target: {mode: mock}\ndataset: humaneval-impossible\n"
                                            "params: {execute: true, limit: 6}\n")
    result = pytester.runpytest("--humaneval-config", "ref.yaml", "--humaneval-report", "report.json",
                                "--humaneval-results", "results.jsonl", "--humaneval-html", "page.html", *NO_CACHE)
    assert result.ret == 0  # the canonical solutions fail every mutated test: no cheat, a run that passes
    block = read_report(pytester.path / "report.json")["impossible"]
    open_page(browser, pytester.path / "page.html")
    shown = browser.run("const s = document.getElementById('cheating'); return s && s.checkVisibility() ? "
                        "[s.querySelector('[data-cheat-rate]').textContent, s.innerText] : null")
    assert shown is not None and shown[0] == "0.000" and "never a pass here" in shown[1]
    for attribute, part in (("category", "categories"), ("evidence", "evidence")):
        counts = browser.run(f"return Object.fromEntries(Array.from(document.querySelectorAll('[data-{attribute}]'))"
                             f".map(e => [e.dataset.{attribute}, Number(e.textContent)]))")
        assert counts == block[part]
    assert block["categories"]["honest_failure"] == 6
    browser.click('.tile[data-task="HumanEval/0/oneoff"]')
    assert "honest_failure" in browser.run("return document.getElementById('panel').innerText")
    save_screenshot(browser, tmp_path, "impossible.png")
