"""The run as one self-contained HTML page: the report JSON plus the per-sample results rows. Pure: no pytest.

What is static HTML (escaped here): the header, the scores, the statuses, the gate, the pass@k curve (SVG) and
one tile per problem, so the page says the essentials even with scripts off. What the page's own script builds
on demand, with ``textContent`` only: a problem's prompt and samples, from a JSON data island. Everything that
came from a candidate, a model or a dataset reaches the page through ``html.escape`` or that island, never as
markup.

Size: identical texts are stored once; the completions (and raw answers and outputs) of passing samples are kept
for the first ``PASSED_TEXTS_KEPT`` samples of each problem only; texts are added until ``TEXT_BUDGET`` bytes
of JSON, failing samples first, after which a text is cut to ``TRUNCATED_KEEP`` characters (with a note) or
left out. The results JSONL always has everything.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from typing import Any, TypedDict, cast

from .. import protocols
from ..data import impossible
from ..data.dataset import natural_key
from ..scoring.metrics import STATUSES, dataset_title, fmt, measure_label, pass_at_k

__all__ = ["PASSED_TEXTS_KEPT", "TEXT_BUDGET", "TRUNCATED_KEEP", "curve", "data_island", "render",
           "summary_fragment"]

PASSED_TEXTS_KEPT = 5
TEXT_BUDGET = 10_000_000  # bytes of JSON for texts: with the rows, a 32,800-sample page stays under ~15 MB
TRUNCATED_KEEP = 4_000
OMITTED = -1  # a text reference: the text existed but was left out (see the module docstring)
CURVE_POINTS = 40
# The results fields with a place of their own on the page; any other field is shown as "name: value".
ROW_FIELDS = ("task_id", "sample", "status", "passed", "completion", "duration_ms", "detail")
TEXT_FIELDS = ("raw", "stdout", "stderr", "traceback")
_PASS_AT = re.compile(r"^human-eval\.(?P<prefix>[a-z_]*?)pass_at_(?P<k>\d+)$")


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


@cache
def _asset(name: str) -> str:
    return resources.files("pytest_humaneval.outputs").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


# -- the data island -----------------------------------------------------------------------------------------

class _Texts:
    """Deduplicated texts under a byte budget; add() returns a reference into the table."""

    def __init__(self, budget: int) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}
        self.left = budget
        self.cut = self.omitted = 0

    def add(self, text: Any) -> int | None:
        if text is None:
            return None
        text = str(text)
        ref = self.index.get(text)
        if ref is not None:
            return ref
        size = len(json.dumps(text))
        stored = text
        if size > self.left:
            if self.left < TRUNCATED_KEEP * 2:
                self.omitted += 1
                return OMITTED
            stored = (text[:TRUNCATED_KEEP] + f"\n... [cut here: {len(text) - TRUNCATED_KEEP:,} more characters; "
                      "the page's size budget was spent, the results JSONL has the whole text]")
            size = len(json.dumps(stored))
            self.cut += 1
        self.left -= size
        self.index[text] = len(self.items)
        self.items.append(stored)
        return self.index[text]


def _sorted_rows(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    by_task: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        by_task.setdefault(str(row["task_id"]), []).append(row)
    for samples in by_task.values():
        samples.sort(key=lambda row: row.get("sample", 0))
    return dict(sorted(by_task.items(), key=lambda item: natural_key(item[0])))


class SampleExtra(TypedDict):
    """A sample's fields beyond the row's own: texts by reference (``t``), plain values (``f``)."""

    t: dict[str, int | None]
    f: dict[str, bool | int | float | None]


class IslandProblem(TypedDict):
    prompt: int | None  # a reference into the texts
    test: int | None
    samples: list[list[object]]  # [index, status, duration_ms, detail, completion, extra]


class Island(TypedDict):
    """What the page's script reads (``data_island``)."""

    statuses: list[str]
    texts: list[str]
    problems: dict[str, IslandProblem]
    baseline: dict[str, object] | None  # the baseline report's problems, as read back (passed on to the page)
    prompts: bool
    passed_texts_kept: int
    cut: int
    omitted: int


def data_island(rows: Iterable[Mapping[str, Any]] | Mapping[str, list[Mapping[str, Any]]],
                problems: Mapping[str, Mapping[str, str]] | None = None,
                baseline: Mapping[str, Any] | None = None, budget: int = TEXT_BUDGET) -> Island:
    """What the page's script needs: per problem its prompt, test and samples (compact rows), texts by reference.

    A sample row is ``[index, status, duration_ms, detail, completion, extra]``: status an index into
    ``statuses``, detail and completion references into ``texts`` (None: none; -1: left out), extra None or
    ``{"t": {field: text reference}, "f": {field: plain value}}``.
    """
    by_task = rows if isinstance(rows, dict) else _sorted_rows(cast("Iterable[Mapping[str, Any]]", rows))
    problems = problems or {}
    statuses = list(STATUSES)
    texts = _Texts(budget)
    # Prompts and tests first: without them the samples make little sense.
    problem_refs = {task: {part: texts.add((problems.get(task) or {}).get(part)) for part in ("prompt", "test")}
                    for task in by_task}
    # Failing samples first; on an impossible dataset its cheats (passes) before everything, and all kept.
    failing_first = sorted(((task, i, row) for task, samples in by_task.items() for i, row in enumerate(samples)),
                           key=lambda item: (not _cheated(item[2]), item[2].get("status") == "passed"))
    refs: dict[tuple[str, int], dict[str, int | None]] = {}
    for task, position, row in failing_first:
        keep = row.get("status") != "passed" or _cheated(row) or position < PASSED_TEXTS_KEPT
        fields = {name: row.get(name) for name in ("completion", *TEXT_FIELDS)}
        refs[task, position] = {name: (texts.add(value) if keep else OMITTED) if value is not None else None
                                for name, value in fields.items()}
        refs[task, position]["detail"] = texts.add(row.get("detail") or "")
    out: dict[str, IslandProblem] = {}
    for task, samples in by_task.items():
        packed = []
        for position, row in enumerate(samples):
            status = str(row.get("status"))
            if status not in statuses:
                statuses.append(status)
            ref = refs[task, position]
            packed.append([row.get("sample"), statuses.index(status), row.get("duration_ms"), ref["detail"],
                           ref["completion"], _extra(row, ref, texts)])
        out[task] = {"prompt": problem_refs[task]["prompt"], "test": problem_refs[task]["test"], "samples": packed}
    base_problems = (baseline or {}).get("problems") or {}
    return {
        "statuses": statuses,
        "texts": texts.items,
        "problems": out,
        "baseline": {task: base_problems[task] for task in out if task in base_problems} if baseline else None,
        "prompts": bool(problems),
        "passed_texts_kept": PASSED_TEXTS_KEPT,
        "cut": texts.cut,
        "omitted": texts.omitted,
    }


def _cheated(row: Mapping[str, Any]) -> bool:
    """A results row of an impossible dataset that passed its mutated test: a cheat (engine/impossible.py)."""
    return row.get("impossible_category") == "cheated"


def _extra(row: Mapping[str, Any], ref: Mapping[str, int | None], texts: _Texts) -> SampleExtra | None:
    text_refs = {name: ref[name] for name in TEXT_FIELDS if ref.get(name) is not None}
    plain: dict[str, bool | int | float | None] = {}
    for name, value in row.items():
        if name in ROW_FIELDS or name in TEXT_FIELDS or value is None or value == "":
            continue  # a field without a value (no reasoning, no usage reported) has nothing to show
        if isinstance(value, str):
            text_refs[name] = texts.add(value)
        elif value is None or isinstance(value, (bool, int, float)):
            plain[name] = value
        else:
            text_refs[name] = texts.add(json.dumps(value))
    if not text_refs and not plain:
        return None
    return {"t": text_refs, "f": plain}


def island_json(data: Any) -> str:
    """JSON that is inert inside <script type="application/json">: no '<' (so no '</script>' or '<!--'),
    no '>' or '&', no U+2028/U+2029; ASCII only, so a lone surrogate cannot break the file's encoding."""
    return (json.dumps(data, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


# -- numbers -------------------------------------------------------------------------------------------------

def curve(problems: Mapping[str, tuple[int, int]], ks: Iterable[int] = ()) -> list[tuple[int, float]]:
    """Mean pass@k over problems at up to CURVE_POINTS values of k (log-spaced, plus ``ks``), k from 1 to the
    smallest n; empty when that n is 1 (one sample per problem has no curve)."""
    if not problems:
        return []
    top = min(n for n, _ in problems.values())
    if top < 2:
        return []
    points = {1, top, *(k for k in ks if 1 <= k <= top)}
    if top <= CURVE_POINTS:
        points.update(range(1, top + 1))
    else:
        points.update(round(top ** (i / (CURVE_POINTS - 1))) for i in range(CURVE_POINTS))
    values = list(problems.values())
    return [(k, sum(pass_at_k(n, c, k) for n, c in values) / len(values)) for k in sorted(points)]


def _base_counts(by_task: Mapping[str, list[Mapping[str, Any]]]) -> dict[str, tuple[int, int]] | None:
    """HumanEval+ results: (n, samples whose base suite passed) per problem, when every row says."""
    counts = {}
    for task, samples in by_task.items():
        if not samples or any("base_status" not in row for row in samples):
            return None
        counts[task] = (len(samples), sum(row["base_status"] == "passed" for row in samples))
    return counts


def _problem_counts(report: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    return {task: (int(p["n"]), int(p["c"])) for task, p in (report.get("problems") or {}).items()}


def _changes(report: Mapping[str, Any], baseline: Mapping[str, Any] | None) -> dict[str, str]:
    """Per problem, against the baseline's pass rate c/n (as the gate's comparison): regressed, improved,
    same, or new (absent from the baseline). On an impossible dataset a pass is a cheat: a higher pass rate is
    the regression (it cheats more), as the gate's cheat-rate comparison has it."""
    if baseline is None:
        return {}
    old = _problem_counts(baseline)
    worse = -1 if _impossible(report) else 1
    out = {}
    for task, (n, c) in _problem_counts(report).items():
        if task not in old:
            out[task] = "new"
            continue
        change = (c / n - old[task][1] / old[task][0]) * worse
        out[task] = "regressed" if change < 0 else "improved" if change > 0 else "same"
    return out


def _impossible(report: Mapping[str, Any]) -> bool:
    """A run on an impossible dataset: its passes are cheats (engine/impossible.py)."""
    return report.get("impossible") is not None


def _rate_colour(rate: float, impossible: bool) -> str:
    """A tile's colour for its pass rate: red (0) to green (1); reversed on an impossible dataset, where a pass is
    a cheat."""
    good = 1 - rate if impossible else rate
    return f"hsl({good * 130:.0f} 62% {40 + good * 4:.0f}%)"


# -- the page ------------------------------------------------------------------------------------------------

def render(report: Mapping[str, Any], rows: Iterable[Mapping[str, Any]],
           problems: Mapping[str, Mapping[str, str]] | None = None,
           baseline: Mapping[str, Any] | None = None) -> str:
    """The page. ``problems``: task_id -> {"prompt", "test"} (optional: without it no prompt is shown);
    ``baseline``: the baseline's report JSON, for the change per problem and its pass@k curve."""
    by_task = _sorted_rows(rows)
    data = data_island(by_task, problems, baseline)
    run, dataset = report.get("run") or {}, report.get("dataset") or {}
    title = (f"{dataset_title(dataset.get('name'))}: {run.get('model') or run.get('mode') or 'run'} on "
             f"{dataset.get('label', 'a dataset')}")
    changes = _changes(report, baseline)
    body = "\n".join([
        _header(report),
        _scores(report),
        _cheating(report),
        _breakdown(report),
        _gate(report.get("gate")),
        '<main class="main"><div class="left">',
        _curve_svg(report, by_task, baseline),
        _controls(report, bool(changes)),
        _grid(report, changes),
        '</div><aside class="panel" id="panel"><p class="placeholder">Click a problem to see its prompt and '
        'every sample: status, time, detail, the completion with the decisive line marked, and the output.</p>'
        '</aside></main>',
    ])
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; '
            f'script-src \'unsafe-inline\'; img-src data:">\n'
            f"<title>{esc(title)}</title>\n<style>{_asset('report.css')}</style></head>\n"
            f"<body>\n{body}\n"
            f'<script type="application/json" id="humaneval-data">{island_json(data)}</script>\n'
            f"<script>{_asset('report.js')}</script>\n</body></html>\n")


def _header(report: Mapping[str, Any]) -> str:
    run, dataset, gate = report.get("run") or {}, report.get("dataset") or {}, report.get("gate")
    badge = ""
    if gate is not None:
        verdict = "PASS" if gate.get("passed") else "FAIL"
        badge = f' <span class="badge {verdict.lower()}" id="gate-verdict">gate {verdict}</span>'
    interrupted = report.get("interrupted")
    if interrupted:
        badge += ' <span class="badge interrupted" id="interrupted">interrupted</span>'
    facts = [("interrupted", interrupted), ("dataset", dataset.get("label")), ("digest", dataset.get("digest")),
             ("mode", run.get("mode")),
             ("isolation", run.get("isolation")), ("timeout", _seconds(run.get("timeout_s"))),
             ("samples per problem", run.get("n")), ("temperature", run.get("temperature")),
             ("api", run.get("api"))]
    if run.get("protocol") is not None:  # None: a mock run (no model); absent: a report of an earlier version
        facts.append(("protocol", protocols.line(run["protocol"])))
    versions = run.get("versions") or {}
    if versions:
        facts.append(("versions", ", ".join(f"{name} {value}" for name, value in versions.items())))
    items = "".join(f'<div><dt>{esc(name)}</dt><dd data-fact="{esc(name)}">{esc(value)}</dd></div>'
                    for name, value in facts if value is not None)
    return (f'<header class="top"><h1><span class="muted">{esc(dataset_title(dataset.get("name")))}</span> '
            f'<span id="model">{esc(run.get("model") or run.get("mode") or "run")}</span>{badge}</h1>'
            f'<dl class="facts">{items}</dl></header>')


def _seconds(value: Any) -> str | None:
    return None if value is None else f"{value:g} s"


def _pass_at_cards(measurements: Mapping[str, Any]) -> list[str]:
    found = []
    for name, m in measurements.items():
        match = _PASS_AT.match(name)
        if match:
            found.append((int(match["k"]), match["prefix"], name, m))
    plus = any(prefix == "base_" for _, prefix, _, _ in found)
    cards = []
    for k, prefix, name, m in sorted(found, key=lambda item: (item[0], item[1] != "")):
        label = f"{prefix.rstrip('_').replace('_', ' ')} pass@{k}".strip() if prefix else f"pass@{k}"
        note = "base tests only" if prefix == "base_" else ("base and plus tests" if plus else "")
        interval = m.get("interval")
        shown = (f'<div class="interval" data-interval="{esc(name)}">{interval["confidence"]:.0%} interval '
                 f'{interval["low"]:.3f} – {interval["high"]:.3f} ({esc(interval["method"])})</div>'
                 if interval else "")
        cards.append(f'<div class="card{" primary" if not prefix else ""}"><div class="label">{esc(label)}'
                     f'{f" <small>({note})</small>" if note else ""}</div>'
                     f'<div class="value" data-measure="{esc(name)}" data-value="{esc(m["value"])}">'
                     f'{fmt(m["value"])}</div>{shown}</div>')
    return cards


def _scores(report: Mapping[str, Any]) -> str:
    measurements = report.get("measurements") or {}
    cards = _pass_at_cards(measurements)
    coverage = measurements.get("human-eval.coverage", {}).get("value", report.get("coverage"))
    cards.append(f'<div class="card"><div class="label">coverage</div><div class="value" '
                 f'data-measure="human-eval.coverage" data-value="{esc(coverage)}">{fmt(coverage)}</div>'
                 f'<div class="interval">{esc(report.get("attempted"))}/{esc(report.get("planned"))} samples '
                 f'attempted</div></div>')
    other = []
    for name, m in measurements.items():
        if _PASS_AT.match(name) or name == "human-eval.coverage":
            continue
        value = m.get("value")
        label, shown = measure_label(name, value)
        other.append(f'<div><dt>{esc(label)}</dt><dd data-measure="{esc(name)}" data-value="{esc(value)}">'
                     f'{esc(shown)}</dd></div>')
    for name in ("success_rate", "attempted_success_rate"):
        if name in report:
            other.append(f'<div><dt>{name.replace("_", " ")}</dt><dd data-measure="{name}">'
                         f'{fmt(report[name])}</dd></div>')
    return (f'<section class="scores">{"".join(cards)}{_statuses(report)}'
            f'<dl class="measures">{"".join(other)}</dl></section>')


def _statuses(report: Mapping[str, Any]) -> str:
    counts = report.get("counts") or {}
    total = sum(counts.values()) or 1
    bar = "".join(f'<span class="seg s-{esc(s)}" style="flex-grow:{n}" title="{esc(s)} {n}"></span>'
                  for s, n in counts.items() if n)
    legend = "".join(f'<li><span class="chip s-{esc(s)}"></span>{esc(s)} <b data-count="{esc(s)}">{n}</b> '
                     f'<small>{n / total:.1%}</small></li>' for s, n in counts.items())
    return f'<div class="card statuses"><div class="bar">{bar}</div><ul class="legend">{legend}</ul></div>'


def _cheating(report: Mapping[str, Any]) -> str:
    """An impossible dataset's cheat rate (the pass rate: any pass is a cheat), with what the metric is, the
    instruction its prompts carried, and its split: the samples per category and the evidence for passes
    (engine/impossible.py)."""
    block = report.get("impossible")
    if block is None:
        return ""
    settings = (report.get("dataset") or {}).get("settings") or {}
    instruction = settings.get("impossible_instruction") or f"{impossible.DEFAULT_INSTRUCTION} (the default)"

    def counts(part: str, attribute: str) -> str:
        return "".join(f'<li>{esc(name.replace("_", " "))} <b {attribute}="{esc(name)}">{esc(count)}</b></li>'
                       for name, count in (block.get(part) or {}).items())

    cheat = block.get("cheat_rate")
    # The run's failures, as the Markdown's "Cheated problems" lists them: the problems a sample passed.
    cheated = sorted((task for task, p in (report.get("problems") or {}).items() if p.get("c")), key=natural_key)
    links = " ".join(f'<a href="#{esc(t)}" class="task-link">{esc(t)}</a>' for t in cheated) or "none"
    return (f'<section class="cheating" id="cheating"><h2>Cheating: cheat rate <span data-cheat-rate="'
            f'{esc("" if cheat is None else cheat)}">{fmt(cheat)}</span></h2><p>{esc(block.get("metric"))}.</p>'
            f'<p>Instruction in the prompts: <b data-instruction>{esc(instruction)}</b> (a cheat rate compares '
            'with one measured under the same instruction only).</p>'
            f'<p id="cheated-problems"><b>cheated problems ({len(cheated)})</b>, this run\'s failures: {links}</p>'
            f'<p><b>samples</b></p><ul class="legend">{counts("categories", "data-category")}</ul>'
            f'<p><b>evidence</b></p><ul class="legend">{counts("evidence", "data-evidence")}</ul></section>')


def _breakdown(report: Mapping[str, Any]) -> str:
    """The score per difficulty and per platform (the report's ``breakdown``, of LiveCodeBench's rows), a table per
    facet as the Markdown summary has it; the samples too when every problem has the same number (``run.n``), the
    group's count being its problems times that. The facet and group names come from dataset rows: escaped."""
    facets = report.get("breakdown") or {}
    if not facets:
        return ""
    n = (report.get("run") or {}).get("n")
    per_problem = n if isinstance(n, int) and not isinstance(n, bool) else None
    tables = []
    for facet, groups in facets.items():
        ks = list(next(iter(groups.values()))["pass_at"]) if groups else []
        columns = [facet, "problems", *(["samples"] if per_problem else []), *ks]
        rows = []
        for name, group in groups.items():
            counts = [group["problems"], *([group["problems"] * per_problem] if per_problem else [])]
            values = [(k, group["pass_at"].get(k)) for k in ks]
            scores = "".join(f'<td data-pass-at="{esc(k)}" data-value="{esc("" if value is None else value)}">'
                             f"{fmt(value)}</td>" for k, value in values)
            rows.append(f'<tr data-group="{esc(name)}"><th scope="row">{esc(name)}</th>'
                        + "".join(f"<td>{esc(count)}</td>" for count in counts) + f"{scores}</tr>")
        tables.append(f'<table data-facet="{esc(facet)}"><thead><tr>'
                      + "".join(f"<th>{esc(column)}</th>" for column in columns)
                      + f'</tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return (f'<section class="breakdown" id="breakdown"><h2 id="breakdown-title">Score by '
            f'{esc(" and ".join(facets))}</h2><div class="tables">{"".join(tables)}</div></section>')


def _gate(gate: Mapping[str, Any] | None) -> str:
    if gate is None:
        return ""
    verdict = "PASS" if gate.get("passed") else "FAIL"
    rows = "".join(
        f'<tr class="{"pass" if c["passed"] else "fail"}"><td>{esc(c["name"])}</td><td>{fmt(c["value"])}</td>'
        f'<td>{fmt(c["threshold"])}</td><td><b>{"PASS" if c["passed"] else "FAIL"}</b></td>'
        f'<td>{esc(c.get("detail") or "")}</td></tr>' for c in gate.get("conditions") or [])
    parts = [f'<section class="gate {verdict.lower()}"><h2>Gate: {verdict}</h2>'
             f'<table><thead><tr><th>condition</th><th>value</th><th>threshold</th><th>result</th><th>detail</th>'
             f'</tr></thead><tbody>{rows}</tbody></table>']
    comparison, base = gate.get("comparison"), gate.get("baseline")
    if comparison and base:
        iv = comparison["interval"]
        parts.append(f'<p>Baseline <b>{esc(base.get("model") or base.get("path"))}</b> ({esc(base.get("label"))}): '
                     f'pass@1 {comparison["baseline_pass_at_1"]:.3f} → {comparison["new_pass_at_1"]:.3f}, mean '
                     f'difference {comparison["mean_difference"]:+.3f} [{iv["low"]:+.3f}, {iv["high"]:+.3f}], '
                     f'{esc(comparison["test"])} p = {comparison["p_worse"]:.3g}</p>')
        titles = ["regressions", "improvements"]
        cheating = gate.get("cheat_comparison")
        if cheating:  # an impossible dataset: the pass rate is the cheat rate, and more is worse
            iv = cheating["interval"]
            parts.append(f'<p id="cheat-comparison">Cheat rate {cheating["baseline_cheat_rate"]:.3f} → '
                         f'{cheating["new_cheat_rate"]:.3f}, increase {cheating["increase"]:+.3f} '
                         f'[{iv["low"]:+.3f}, {iv["high"]:+.3f}], {esc(cheating["test"])} p = '
                         f'{cheating["p_more"]:.3g} (that it cheats more)</p>')
            comparison = {**comparison, "cheats more": cheating.get("cheats_more"),
                          "cheats less": cheating.get("cheats_less")}
            titles = ["cheats more", "cheats less"]
        for title in titles:
            tasks = comparison.get(title) or []
            links = " ".join(f'<a href="#{esc(t)}" class="task-link">{esc(t)}</a>' for t in tasks) or "none"
            parts.append(f'<p class="{title.replace(" ", "-")}"><b>{title} ({len(tasks)})</b>: {links}</p>')
    return "".join(parts) + "</section>"


def _curve_svg(report: Mapping[str, Any], by_task: Mapping[str, list[Mapping[str, Any]]],
               baseline: Mapping[str, Any] | None) -> str:
    ks = (report.get("run") or {}).get("k") or []
    series = [("this run", "run", curve(_problem_counts(report), ks))]
    base = _base_counts(by_task)
    if base:
        series.append(("this run, base tests", "base", curve(base, ks)))
    if baseline is not None:
        series.append(("baseline", "baseline", curve(_problem_counts(baseline), ks)))
    series = [s for s in series if s[2]]
    if not series or not series[0][2]:
        return ""
    top = max(points[-1][0] for _, _, points in series)
    width, height, left, right, upper, lower = 520, 240, 44, 16, 12, 34
    def x(k: int) -> float:
        return left + (width - left - right) * (math.log(k) / math.log(top) if top > 1 else 0)
    def y(v: float) -> float:
        return upper + (height - upper - lower) * (1 - v)
    grid = "".join(f'<line x1="{left}" x2="{width - right}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="gridline"/>'
                   f'<text x="{left - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>'
                   for v in (0, 0.25, 0.5, 0.75, 1))
    ticks = sorted({k for k in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000) if k <= top} | {top})
    grid += "".join(f'<text x="{x(k):.1f}" y="{height - lower + 16}" text-anchor="middle">{k}</text>' for k in ticks)
    grid += f'<text x="{(left + width - right) / 2}" y="{height - 4}" text-anchor="middle">k (log scale)</text>'
    lines, legend = [], []
    for label, css, points in series:
        path = " ".join(f"{'M' if j == 0 else 'L'}{x(k):.1f},{y(v):.1f}" for j, (k, v) in enumerate(points))
        lines.append(f'<path d="{path}" class="series {css}" data-series="{css}"/>')
        lines.extend(f'<circle cx="{x(k):.1f}" cy="{y(v):.1f}" r="3.5" class="dot {css}" data-k="{k}" '
                     f'data-value="{v!r}"><title>{esc(label)}: pass@{k} = {v:.3f}</title></circle>'
                     for k, v in points if k in ks)
        legend.append(f'<span class="key {css}"></span>{esc(label)}')
    return (f'<section class="curve"><h2>pass@k over k</h2><svg viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="pass@k curve">{grid}{"".join(lines)}</svg><div class="keys">{" ".join(legend)}</div>'
            f'</section>')


def _controls(report: Mapping[str, Any], with_changes: bool) -> str:
    counts = report.get("counts") or {}
    buttons = ['<button type="button" class="filter" data-status="" aria-pressed="true">all</button>']
    buttons += [f'<button type="button" class="filter" data-status="{esc(s)}" aria-pressed="false">'
                f'<span class="chip s-{esc(s)}"></span>{esc(s)}</button>' for s, n in counts.items() if n]
    change = ""
    if with_changes:
        change = ('<span class="group">change <select id="change-filter"><option value="">any</option>'
                  '<option>regressed</option><option>improved</option><option>same</option><option>new</option>'
                  '</select> colour by <select id="colour-by"><option value="change">change</option>'
                  '<option value="rate">pass rate</option></select></span>')
    example = min(report.get("problems") or {"HumanEval/12": None}, key=natural_key)  # the dataset's own ids
    return (f'<section class="controls"><span class="group">{"".join(buttons)}</span>{change}'
            f'<input type="search" id="search" placeholder="task id, e.g. {esc(example)}" aria-label="search by task '
            f'id"><span id="shown" class="muted"></span></section>')


def _grid(report: Mapping[str, Any], changes: Mapping[str, str]) -> str:
    tiles = []
    for task, problem in sorted((report.get("problems") or {}).items(), key=lambda item: natural_key(item[0])):
        n, c = int(problem["n"]), int(problem["c"])
        statuses = problem.get("statuses") or {}
        attempted = any(statuses.get(s) for s in ("passed", "assertion_failed", "runtime_error", "timeout"))
        rate = c / n if n else 0.0
        colour = _rate_colour(rate, _impossible(report)) if attempted else "#9aa1a9"
        change = changes.get(task, "")
        label = task.rsplit("/", 1)[-1]
        passed = "passed (cheated)" if _impossible(report) else "passed"
        tip = f"{task}: {c}/{n} {passed}" + (f", {change} against the baseline" if change else "")
        classes = "tile" + (" unrun" if not attempted else "") + (f" {change}" if change else "")
        tiles.append(f'<button type="button" class="{classes}" '
                     f'data-task="{esc(task)}" data-statuses="{esc(" ".join(s for s, v in statuses.items() if v))}" '
                     f'data-change="{esc(change)}" data-rate="{rate!r}" style="--rate:{colour}" title="{esc(tip)}">'
                     f'{esc(label)}</button>')
    mode = " by-change" if changes else ""
    legend = _tile_legend(bool(changes), _impossible(report))
    return f'<section class="grid{mode}" id="grid">{"".join(tiles)}</section>{legend}'


def _tile_legend(with_changes: bool, impossible: bool = False) -> str:
    """What a tile's colour means, for each way the grid is coloured (CSS shows the one in use)."""
    ramp = ", ".join(_rate_colour(rate, impossible) for rate in (0, 0.25, 0.5, 0.75, 1))
    passed = "passed (a pass is a cheat here)" if impossible else "passed"
    rate = (f'<span class="by-rate">Tile colour: the share of the problem\'s samples that {passed}, '
            f'0% <span class="ramp" style="background:linear-gradient(90deg, {ramp})"></span> 100%; '
            f'<span class="swatch unrun"></span> hatched: none of its samples was attempted.</span>')
    names = {"regressed": "regressed (cheats more)", "improved": "improved (cheats less)"} if impossible else {}
    change = (f'<span class="by-change">Tile colour: the change against the baseline\'s '
              f'{"cheat" if impossible else "pass"} rate, '
              + "; ".join(f'<span class="swatch {name}"></span> {names.get(name, name)}'
                          for name in ("regressed", "improved", "same", "new"))
              + " (not in the baseline).</span>") if with_changes else ""
    return f'<p class="tile-legend" id="tile-legend">{rate}{change}</p>'


def summary_fragment(report: Mapping[str, Any]) -> str:
    """The HumanEval summary for pytest-html's report (its summary section takes trusted markup)."""
    measurements = report.get("measurements") or {}
    parts = []
    for name, m in measurements.items():
        if _PASS_AT.match(name) or name in ("human-eval.coverage", "human-eval.cheat_rate"):
            iv = m.get("interval")
            extra = f" ({iv['confidence']:.0%} interval {iv['low']:.3f} – {iv['high']:.3f})" if iv else ""
            parts.append(f'<li><b>{esc(name.removeprefix("human-eval."))}</b> '
                         f'<span data-measure="{esc(name)}">{fmt(m["value"])}</span>{esc(extra)}</li>')
    dataset, gate = report.get("dataset") or {}, report.get("gate")
    if gate is not None:
        failing = [c for c in gate.get("conditions") or [] if not c["passed"]]
        why = "; ".join(f"{c['name']}: {fmt(c['value'])} vs {fmt(c['threshold'])}" for c in failing)
        parts.append(f'<li><b>gate</b> <span data-gate>{"PASS" if gate.get("passed") else "FAIL"}</span>'
                     f'{esc(": " + why) if why else ""}</li>')
    return (f'<div class="humaneval-summary"><h2>{esc(dataset_title(dataset.get("name")))}</h2>'
            f'<p>{esc(dataset.get("label"))} '
            f'<code>{esc(str(dataset.get("digest"))[:19])}</code></p><ul>{"".join(parts)}</ul></div>')
