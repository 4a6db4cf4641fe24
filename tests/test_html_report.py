"""The HTML page: the pure renderer against hand-made reports, then real sessions (--humaneval-html, serial and
xdist), the `html` command on their saved files, and pytest-html's report when pytest-html is installed.

The page in a real browser is tested in test_html_browser.py.
"""

from __future__ import annotations

import json
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest
from sessions import NO_CACHE, read_report

from pytest_humaneval.__main__ import main as cli
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.outputs import html_page as html_report
from pytest_humaneval.scoring.metrics import pass_at_k

HOSTILE = '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"><!--'


class Page(HTMLParser):
    """The parts of a page the tests look at: every start tag with its attributes, text by element id."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: dict[int, str] = {}
        self._open: list[int] = []
        self.island: str | None = None
        self._in_island = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_island = tag == "script" and dict(attrs).get("id") == "humaneval-data"
        if tag not in ("meta", "input", "line", "circle", "path"):
            self._open.append(len(self.tags) - 1)

    def handle_endtag(self, tag):
        if self._open:
            self._open.pop()
        self._in_island = False

    def handle_data(self, data):
        if self._in_island:
            self.island = (self.island or "") + data
        elif self._open:
            self.text[self._open[-1]] = self.text.get(self._open[-1], "") + data

    def find(self, attr: str) -> dict[str, str]:
        """{attribute value: the element's own text} for every element carrying ``attr``."""
        return {attrs[attr]: self.text.get(i, "") for i, (_, attrs) in enumerate(self.tags) if attr in attrs}

    def data(self) -> dict:
        return json.loads(self.island)


def row(task: str, sample: int, status: str, completion: str | None = "    return 1\n", **extra) -> dict:
    line = {"task_id": task, "sample": sample, "status": status, "passed": status == "passed",
            "completion": completion, "duration_ms": 3.25, "detail": "" if status == "passed" else "boom"}
    line.update(extra)
    return line


def report_for(rows: list[dict], ks: tuple[int, ...] = (1,), **measurements) -> dict:
    """A report as build_report makes it, computed from rows (for the renderer's unit tests)."""
    problems: dict[str, dict] = {}
    counts = dict.fromkeys(("passed", "assertion_failed", "runtime_error", "timeout", "not_run", "harness_error"), 0)
    for r in rows:
        p = problems.setdefault(r["task_id"], {"n": 0, "c": 0, "statuses": {}})
        p["n"] += 1
        p["c"] += r["status"] == "passed"
        p["statuses"][r["status"]] = p["statuses"].get(r["status"], 0) + 1
        counts[r["status"]] += 1
    values = {}
    for k in ks:
        for p in problems.values():
            p[f"pass_at_{k}"] = pass_at_k(p["n"], p["c"], k)
        values[f"human-eval.pass_at_{k}"] = {
            "value": sum(p[f"pass_at_{k}"] for p in problems.values()) / len(problems), "class": "deterministic",
            "official": True, "interval": {"low": 0.1, "high": 0.9, "confidence": 0.95, "method": "bootstrap"}}
    values["human-eval.coverage"] = {"value": 1.0, "class": "deterministic", "official": False}
    values.update(measurements)
    n = {p["n"] for p in problems.values()}
    return {"measurements": values, "counts": counts, "planned": len(rows), "attempted": len(rows),
            "coverage": 1.0, "success_rate": 0.5, "attempted_success_rate": 0.5, "problems": problems,
            "dataset": {"name": "openai_humaneval", "label": "openai_humaneval sample (3/164 problems)",
                        "digest": "sha256:" + "ab" * 32, "problems": len(problems), "full": False},
            "run": {"mode": "samples", "model": None, "n": n.pop() if len(n) == 1 else None, "k": list(ks),
                    "temperature": None, "api": None, "timeout_s": 3.0, "isolation": "namespaces",
                    "versions": {"python": "3.11.7"}},
            "gate": None}


# -- the pure renderer ---------------------------------------------------------------------------------------

def test_data_island_is_inert():
    """The data island is inert inside a script element."""
    data = {"texts": [HOSTILE, "line\u2028separator\u2029paragraph", "a & b > c", "\ud800 lone surrogate"]}
    text = html_report.island_json(data)
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}
    assert text.isascii()
    assert json.loads(text) == data


def test_static_page_escapes_everything():
    """Everything from the run is escaped in the static page."""
    rows = [row("HumanEval/0", 0, "passed", HOSTILE), row(f"Task/{HOSTILE}", 0, "runtime_error", HOSTILE,
                                                           raw=HOSTILE, stdout=HOSTILE)]
    rows[1]["detail"] = HOSTILE
    report = report_for(rows)
    report["run"]["model"] = HOSTILE
    report["dataset"]["label"] = HOSTILE
    page = html_report.render(report, rows, {"HumanEval/0": {"prompt": HOSTILE, "test": HOSTILE}})
    parsed = Page(page)
    assert [tag for tag, _ in parsed.tags if tag in ("script", "img")] == ["script", "script"]
    assert parsed.find("id")["model"] == HOSTILE  # shown as text, whole
    assert f"Task/{HOSTILE}" in parsed.find("data-task")
    data = parsed.data()
    assert HOSTILE in data["texts"] and f"Task/{HOSTILE}" in data["problems"]
    assert page.count("</script>") == 2


def test_headline_is_the_reports():
    """The headline numbers and counts are the report's."""
    rows = [row("HumanEval/0", 0, "passed"), row("HumanEval/0", 1, "assertion_failed"),
            row("HumanEval/1", 0, "timeout"), row("HumanEval/1", 1, "passed")]
    report = report_for(rows, (1, 2), **{
        "human-eval.avg_latency_ms": {"value": 4.5, "class": "timing", "official": False},
        "human-eval.cost_usd": {"value": 0.0123, "class": "usage", "official": False},
        "human-eval.something_new": {"value": 7, "class": "usage", "official": False}})
    parsed = Page(html_report.render(report, rows))
    measures = parsed.find("data-measure")
    assert measures["human-eval.pass_at_1"] == "0.500" and measures["human-eval.pass_at_2"] == "1.000"
    assert measures["human-eval.coverage"] == "1.000"
    assert measures["human-eval.avg_latency_ms"] == "4.5 ms" and measures["human-eval.cost_usd"] == "$0.0123"
    assert measures["human-eval.something_new"] == "7"  # a measurement this page does not know still shows
    assert parsed.find("data-count") == {s: str(n) for s, n in report["counts"].items()}
    assert parsed.find("data-interval")["human-eval.pass_at_1"] == "95% interval 0.100 – 0.900 (bootstrap)"
    tiles = {attrs["data-task"]: attrs for tag, attrs in parsed.tags if "data-task" in attrs and tag == "button"}
    assert tiles["HumanEval/0"]["data-statuses"] == "passed assertion_failed"
    assert tiles["HumanEval/1"]["data-statuses"] == "timeout passed"


def test_pass_at_k_curve():
    """The pass@k curve is drawn from the per-problem counts when n is above one."""
    rows = [row(f"HumanEval/{t}", s, "passed" if s < t + 1 else "assertion_failed") for t in range(3)
            for s in range(10)]
    report = report_for(rows, (1, 5, 10))
    parsed = Page(html_report.render(report, rows))
    dots = {attrs["data-k"]: float(attrs["data-value"]) for tag, attrs in parsed.tags
            if tag == "circle" and "run" in attrs["class"]}
    assert dots == {str(k): pytest.approx(report["measurements"][f"human-eval.pass_at_{k}"]["value"])
                    for k in (1, 5, 10)}
    points = html_report.curve({"A": (10, 1), "B": (10, 3)})
    assert [k for k, _ in points] == list(range(1, 11))
    assert points[1] == (2, pytest.approx((pass_at_k(10, 1, 2) + pass_at_k(10, 3, 2)) / 2))
    single = [row("HumanEval/0", 0, "passed")]
    assert "<svg" not in html_report.render(report_for(single), single)  # one sample per problem: no curve
    big = html_report.curve({"A": (200, 17)}, ks=(1, 10, 100))
    assert len(big) <= html_report.CURVE_POINTS + 3 and {1, 10, 100, 200} <= {k for k, _ in big}


def test_plus_fields_render():
    """HumanEval+ fields render when present."""
    rows = [row("HumanEval/0", 0, "passed", base_status="passed", plus_status="passed"),
            row("HumanEval/0", 1, "assertion_failed", base_status="passed", plus_status="assertion_failed",
                plus_detail="first failing input: [1e9]"),
            row("HumanEval/1", 0, "assertion_failed", base_status="assertion_failed", plus_status="passed"),
            row("HumanEval/1", 1, "assertion_failed", base_status="passed", plus_status="assertion_failed")]
    report = report_for(rows, (1, 2))
    report["measurements"]["human-eval.base_pass_at_1"] = {"value": 0.75, "class": "deterministic",
                                                           "official": False}
    parsed = Page(html_report.render(report, rows))
    measures = parsed.find("data-measure")
    assert measures["human-eval.base_pass_at_1"] == "0.750" and measures["human-eval.pass_at_1"] == "0.250"
    series = {attrs.get("data-series") for tag, attrs in parsed.tags if tag == "path"}
    assert series == {"run", "base"}  # the base tests' curve beside the HumanEval+ one
    data = parsed.data()
    extra = data["problems"]["HumanEval/0"]["samples"][1][5]
    assert extra["t"].keys() == {"base_status", "plus_status", "plus_detail"}
    assert data["texts"][extra["t"]["plus_detail"]] == "first failing input: [1e9]"


def test_empty_fields_get_no_row():
    """Fields without a value get no row on the page."""
    # A runtime row of a server that reported no reasoning and no usage: those fields are null.
    rows = [row("HumanEval/0", 0, "assertion_failed", raw="```python\n...\n```", reasoning=None, finish_reason=None,
                prompt_tokens=None, completion_tokens=12, cached=False, reasoning_tokens=None, base_failure="")]
    extra = html_report.data_island(rows)["problems"]["HumanEval/0"]["samples"][0][5]
    assert extra["f"] == {"completion_tokens": 12, "cached": False}
    assert extra["t"].keys() == {"raw"}


def test_tile_colours_have_legends():
    """The tile colours have a legend for each way of colouring."""
    rows = [row("HumanEval/0", 0, "assertion_failed"), row("HumanEval/1", 0, "passed")]
    plain = html_report.render(report_for(rows), rows)
    legend = plain.split('<p class="tile-legend" id="tile-legend">', 1)[1].split("</p>", 1)[0]
    assert "the share of the problem's samples that passed, 0%" in legend and "100%" in legend
    assert "hatched: none of its samples was attempted" in legend and "by-change" not in legend
    with_baseline = html_report.render(report_for(rows), rows, baseline=report_for(rows))
    legend = with_baseline.split('<p class="tile-legend" id="tile-legend">', 1)[1].split("</p>", 1)[0]
    assert all(f'<span class="swatch {name}"></span> {name}' in legend
               for name in ("regressed", "improved", "same", "new"))


def breakdown(page: Page) -> dict[str, dict[str, list[str]]]:
    """The page's breakdown tables as {facet: {group: [cell texts]}}, the header row under "" (in page order)."""
    tables: dict[str, dict[str, list[str]]] = {}
    cells: list[str] | None = None
    for i, (tag, attrs) in enumerate(page.tags):
        if tag == "table" and "data-facet" in attrs:
            facet = tables.setdefault(attrs["data-facet"] or "", {})
        elif tag == "tr" and "data-facet" not in attrs and tables:
            cells = facet.setdefault(attrs.get("data-group") or "", [])
        elif tag in ("th", "td") and cells is not None:
            cells.append(page.text.get(i, ""))
    return tables


SCRIPT_GROUP = "<script>alert(1)</script>"


def test_breakdown_per_difficulty_and_platform():
    """A report's breakdown (LiveCodeBench's rows) is a table per facet: each group's problems, samples and pass@k,
    in the report's order; a report without one has no such section."""
    rows = [row(f"io/{t}", s, "passed" if s < t else "assertion_failed") for t in range(3) for s in range(2)]
    report = report_for(rows, (1, 2))
    report["breakdown"] = {
        "difficulty": {"easy": {"problems": 2, "pass_at": {"pass@1": 0.25, "pass@2": 0.5}},
                       "hard": {"problems": 1, "pass_at": {"pass@1": 1.0, "pass@2": 1.0}}},
        "platform": {"atcoder": {"problems": 3, "pass_at": {"pass@1": 0.5, "pass@2": 2 / 3}}}}
    page = Page(html_report.render(report, rows))
    assert breakdown(page) == {
        "difficulty": {"": ["difficulty", "problems", "samples", "pass@1", "pass@2"],
                       "easy": ["easy", "2", "4", "0.250", "0.500"], "hard": ["hard", "1", "2", "1.000", "1.000"]},
        "platform": {"": ["platform", "problems", "samples", "pass@1", "pass@2"],
                     "atcoder": ["atcoder", "3", "6", "0.500", "0.667"]}}
    # the report's numbers, whole, for scripts that read the page
    assert [float(attrs["data-value"]) for _, attrs in page.tags if "data-pass-at" in attrs] == [
        0.25, 0.5, 1.0, 1.0, 0.5, 2 / 3]
    assert page.find("id")["breakdown-title"] == "Score by difficulty and platform"
    report["run"]["n"] = None  # samples per problem differ: no samples column (the group's count is not known)
    assert breakdown(Page(html_report.render(report, rows)))["platform"]["atcoder"] == ["atcoder", "3", "0.500",
                                                                                        "0.667"]
    del report["breakdown"]
    plain = Page(html_report.render(report, rows))
    assert "breakdown" not in plain.find("id") and breakdown(plain) == {}


def test_breakdown_names_are_text():
    """A breakdown's facet and group names come from dataset rows: they are shown as text, never markup."""
    rows = [row("io/0", 0, "passed")]
    report = report_for(rows)
    report["breakdown"] = {"platform": {SCRIPT_GROUP: {"problems": 1, "pass_at": {"pass@1": 1.0}},
                                        HOSTILE: {"problems": 1, "pass_at": {"pass@1": 0.0}}},
                           HOSTILE: {"easy": {"problems": 1, "pass_at": {HOSTILE: 1.0}}}}
    text = html_report.render(report, rows)
    page = Page(text)
    assert [tag for tag, _ in page.tags if tag in ("script", "img")] == ["script", "script"]
    assert text.count("</script>") == 2 and SCRIPT_GROUP not in text
    shown = breakdown(page)
    assert shown["platform"][SCRIPT_GROUP][0] == SCRIPT_GROUP and shown["platform"][HOSTILE][0] == HOSTILE
    assert shown[HOSTILE][""] == [HOSTILE, "problems", "samples", HOSTILE]


def test_texts_kept_up_to_the_cap():
    """Passing samples' texts are kept up to the cap, and failing ones always."""
    kept = html_report.PASSED_TEXTS_KEPT
    rows = [row("HumanEval/0", i, "passed", f"    return {i}\n") for i in range(kept + 4)]
    rows += [row("HumanEval/0", kept + 4 + i, "runtime_error", f"    raise ValueError({i})\n") for i in range(3)]
    rows += [row("HumanEval/1", i, "passed", "    return 'same'\n") for i in range(50)]
    data = html_report.data_island(rows)
    samples = data["problems"]["HumanEval/0"]["samples"]
    completions = [data["texts"][s[4]] if s[4] >= 0 else None for s in samples]
    assert completions[:kept] == [f"    return {i}\n" for i in range(kept)]
    assert completions[kept:kept + 4] == [None] * 4  # -1: left out, the page says so
    assert completions[kept + 4:] == [f"    raise ValueError({i})\n" for i in range(3)]
    same = {s[4] for s in data["problems"]["HumanEval/1"]["samples"][:kept]}
    assert len(same) == 1 and data["texts"].count("    return 'same'\n") == 1  # identical texts stored once


def test_spent_budget_cuts_texts():
    """A spent budget cuts, then leaves out, texts: the failing samples' first."""
    big = "x" * 30_000
    rows = [row("HumanEval/0", 0, "passed", "p" + big), row("HumanEval/0", 1, "assertion_failed", "f" + big),
            row("HumanEval/0", 2, "assertion_failed", "g" + big)]
    data = html_report.data_island(rows, budget=41_000)
    samples = data["problems"]["HumanEval/0"]["samples"]
    assert data["texts"][samples[1][4]] == "f" + big  # failing first, whole
    cut = data["texts"][samples[2][4]]
    assert cut.startswith("g" + "x" * 3000) and "cut here: 26,001 more characters" in cut
    assert samples[0][4] == html_report.OMITTED and (data["cut"], data["omitted"]) == (1, 1)


@pytest.mark.slow
@pytest.mark.parametrize("failing_every", [3, 1], ids=["a third failing", "all failing"])
def test_32800_samples_under_15_mb(failing_every):
    """A 32,800-sample run of distinct completions stays under 15 MB."""
    problems = load_problems()[1]
    rows = []
    for p in problems:
        solution = p.canonical_solution or "    pass\n"
        for s in range(200):
            failing = s % failing_every == 0
            rows.append(row(p.task_id, s, "assertion_failed" if failing else "passed",
                            f"{solution}    # sample {s}: {'a model explains itself ' * 10}\n",
                            traceback=f"Traceback ...\nAssertionError: sample {s}\n" if failing else None))
            if failing:
                rows[-1]["detail"] = f"AssertionError (at test line {s % 9 + 1}: assert candidate(1) == {s})"
    report = report_for(rows, (1, 10, 100))
    problem_texts = {p.task_id: {"prompt": p.prompt, "test": p.test} for p in problems}
    started = time.perf_counter()
    page = html_report.render(report, rows, problem_texts)
    elapsed = time.perf_counter() - started
    size = len(page.encode())
    print(f"32,800 samples: {size / 1e6:.1f} MB rendered in {elapsed:.2f} s")
    assert size < 15e6
    data = Page(page).data()
    assert sum(len(p["samples"]) for p in data["problems"].values()) == 32_800
    if failing_every > 1:
        assert data["cut"] == data["omitted"] == 0  # under the budget: every kept text whole
    else:
        assert data["cut"] + data["omitted"] > 0  # over it: the last failing samples' texts cut or left out


def test_baseline_tiles():
    """With a baseline, the tiles say regressed, improved, same or new."""
    rows = [row("HumanEval/0", 0, "assertion_failed"), row("HumanEval/1", 0, "passed"),
            row("HumanEval/2", 0, "passed"), row("HumanEval/3", 0, "passed")]
    old = [row("HumanEval/0", 0, "passed"), row("HumanEval/1", 0, "assertion_failed"),
           row("HumanEval/2", 0, "passed")]
    page = Page(html_report.render(report_for(rows), rows, baseline=report_for(old)))
    changes = {attrs["data-task"]: attrs["data-change"] for tag, attrs in page.tags
               if tag == "button" and "data-task" in attrs}
    assert changes == {"HumanEval/0": "regressed", "HumanEval/1": "improved", "HumanEval/2": "same",
                       "HumanEval/3": "new"}
    assert page.data()["baseline"]["HumanEval/1"]["statuses"] == {"assertion_failed": 1}


# -- real sessions and the `html` command ---------------------------------------------------------------------

SOLVED_0 = ("HumanEval/0", "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) "
                           "for b in numbers[i + 1:])\n")
WRONG_0 = ("HumanEval/0", "    return False\n")
NOISY_2 = ("HumanEval/2", "    print('to stdout <b>')\n    import sys\n    print('to stderr', file=sys.stderr)\n"
                          "    return number / 0\n")
SOLVED_2 = ("HumanEval/2", "    return number % 1.0\n")


def samples_run(pytester: pytest.Pytester, name: str, rows: list[tuple[str, str]], gate: str = "") -> str:
    (pytester.path / f"{name}.jsonl").write_text(
        "".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in rows))
    config = (f"target: {{mode: samples, samples: {name}.jsonl, allow_subset: true}}\n"
              "params: {allow_code_execution: true, k: [1, 2]}\n" + (f"gate: {gate}\n" if gate else ""))
    (pytester.path / f"{name}.yaml").write_text(config)
    return f"{name}.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("dist", [("-p", "no:xdist"), ("-n", "2")])
def test_html_option_and_command(pytester, dist):
    """The --humaneval-html option writes the page, and the command rebuilds it from saved files."""
    base = samples_run(pytester, "base", [SOLVED_0, SOLVED_0, SOLVED_2, SOLVED_2])
    pytester.runpytest("--humaneval-config", base, "-p", "no:xdist", "--humaneval-report", "base.json",
                       *NO_CACHE).assert_outcomes(passed=4)
    new = samples_run(pytester, "new", [SOLVED_0, WRONG_0, NOISY_2, SOLVED_2],
                      gate="{baseline: base.json, max_drop: 0.9}")
    result = pytester.runpytest("--humaneval-config", new, *dist, "--humaneval-report", "new.json",
                                "--humaneval-results", "new.jsonl", "--humaneval-html", "out/page.html", *NO_CACHE)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["html      out/page.html"])
    page_text = (pytester.path / "out" / "page.html").read_text()
    page, report = Page(page_text), read_report(pytester.path / "new.json")
    assert page.find("data-measure")["human-eval.pass_at_1"] == f"{report['measurements']['human-eval.pass_at_1']['value']:.3f}"
    assert page.find("id")["gate-verdict"] == "gate PASS"
    data = page.data()
    noisy = data["problems"]["HumanEval/2"]["samples"][0]
    assert data["statuses"][noisy[1]] == "runtime_error"
    extra = {name: data["texts"][ref] for name, ref in noisy[5]["t"].items()}
    assert extra["stdout"] == "to stdout <b>\n" and extra["stderr"] == "to stderr\n"
    assert "ZeroDivisionError" in extra["traceback"]
    assert data["texts"][data["problems"]["HumanEval/2"]["prompt"]].startswith("\n\ndef truncate_number")
    assert data["baseline"]["HumanEval/0"] == read_report(pytester.path / "base.json")["problems"]["HumanEval/0"]
    # The results rows carry the output too, so the page built later from the saved files is the same page.
    rows = [json.loads(line) for line in (pytester.path / "new.jsonl").read_text().splitlines()]
    assert [r.get("stdout") for r in rows if r["task_id"] == "HumanEval/2" and r["sample"] == 0] == ["to stdout <b>\n"]
    assert cli(["html", str(pytester.path / "new.json"), str(pytester.path / "new.jsonl"),
                "-o", str(pytester.path / "again.html")]) == 0
    assert (pytester.path / "again.html").read_text() == page_text


def test_command_names_bad_input(tmp_path, capsys):
    """The html command names the bad input and exits 2."""
    report = report_for([row("HumanEval/0", 0, "passed")])
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "results.jsonl").write_text(json.dumps(row("HumanEval/0", 0, "passed")) + "\n"
                                            + json.dumps({**row("HumanEval/0", 1, "passed"), "sample": "1"}) + "\n")
    out = str(tmp_path / "page.html")
    assert cli(["html", str(tmp_path / "report.json"), str(tmp_path / "results.jsonl"), "-o", out]) == 2
    assert capsys.readouterr().err == f'error: {tmp_path / "results.jsonl"}:2: sample: expected an integer, found "1"\n'
    assert cli(["html", str(tmp_path / "missing.json"), str(tmp_path / "results.jsonl"), "-o", out]) == 2
    assert "missing.json: cannot read the report: No such file or directory" in capsys.readouterr().err
    (tmp_path / "results.jsonl").write_text(json.dumps(row("HumanEval/0", 0, "passed")) + "\n")
    (tmp_path / "other.jsonl").write_text(json.dumps({"task_id": "Other/0", "prompt": "", "entry_point": "f",
                                                      "test": "def check(candidate): pass"}) + "\n")
    assert cli(["html", str(tmp_path / "report.json"), str(tmp_path / "results.jsonl"), "-o", out,
                "--dataset", str(tmp_path / "other.jsonl")]) == 2
    assert "other.jsonl: expected every problem of the report, found no HumanEval/0" in capsys.readouterr().err
    assert not Path(out).exists()


@pytest.mark.parametrize(("breakdown", "expected"), [
    ([], "breakdown: expected a JSON object (facet -> group -> score), found list"),
    ({"platform": {"atcoder": {"problems": "3", "pass_at": {"pass@1": 0.5}}}},
     'breakdown: platform: atcoder: expected {"problems": an integer, "pass_at": {"pass@<k>": a number or null}}, '
     'found {"problems": "3", "pass_at": {"pass@1": 0.5}}'),
    ({"platform": {"atcoder": {"problems": 3, "pass_at": {"pass@1": "0.5"}}}}, "breakdown: platform: atcoder: expected"),
    ({"platform": ["atcoder"]}, "breakdown: platform: expected a JSON object (group -> score), found list"),
])
def test_command_names_a_bad_breakdown(tmp_path, capsys, breakdown, expected):
    """A report's breakdown that is not the shape a run writes is named, not rendered (the page formats its
    numbers)."""
    rows = [row("HumanEval/0", 0, "passed")]
    (tmp_path / "report.json").write_text(json.dumps({**report_for(rows), "breakdown": breakdown}))
    (tmp_path / "results.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert cli(["html", str(tmp_path / "report.json"), str(tmp_path / "results.jsonl"),
                "-o", str(tmp_path / "page.html")]) == 2
    assert f"error: {tmp_path / 'report.json'}: {expected}" in capsys.readouterr().err
    assert not (tmp_path / "page.html").exists()


def test_command_without_dataset(tmp_path, capsys):
    """The html command without the dataset says how to add the prompts."""
    rows = [row("Mine/0", 0, "passed")]
    report = report_for(rows)
    report["dataset"]["name"] = "mine"
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "results.jsonl").write_text(json.dumps(rows[0]) + "\n")
    assert cli(["html", str(tmp_path / "report.json"), str(tmp_path / "results.jsonl"),
                "-o", str(tmp_path / "page.html")]) == 0
    streams = capsys.readouterr()
    assert "no prompts on the page: the report's dataset is 'mine'" in streams.err and "--dataset" in streams.err
    assert streams.out.startswith(f"wrote {tmp_path / 'page.html'} (1 samples")
    data = Page((tmp_path / "page.html").read_text()).data()
    assert data["prompts"] is False and data["problems"]["Mine/0"]["prompt"] is None and data["baseline"] is None
    old = report_for([row("Mine/0", 0, "assertion_failed")])
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert cli(["html", str(tmp_path / "report.json"), str(tmp_path / "results.jsonl"),
                "-o", str(tmp_path / "page.html"), "--baseline", str(tmp_path / "old.json")]) == 0
    page = Page((tmp_path / "page.html").read_text())
    assert page.data()["baseline"] == {"Mine/0": old["problems"]["Mine/0"]}
    assert page.find("data-change") == {"improved": "0"}  # the tile of Mine/0, labelled with its number


def test_pytest_html_gets_summary(pytester):
    """pytest-html's report gets the HumanEval summary."""
    pytest.importorskip("pytest_html", reason="pytest-html is optional: its integration is tested where installed")
    (pytester.path / "mock.yaml").write_text("target: {mode: mock}\ngate: {min_pass_at_1: 0.5, min_coverage: 0.9}\n")
    result = pytester.runpytest("--humaneval-config", "mock.yaml", "-n", "2", "--html", "pytest-html.html",
                                "--self-contained-html", *NO_CACHE)
    assert result.ret == 0
    page = (pytester.path / "pytest-html.html").read_text()
    assert '<div class="humaneval-summary">' in page
    assert '<span data-measure="human-eval.pass_at_1">0.689</span>' in page
    assert '<span data-measure="human-eval.coverage">0.957</span>' in page
    assert "<b>gate</b> <span data-gate>PASS</span>" in page
