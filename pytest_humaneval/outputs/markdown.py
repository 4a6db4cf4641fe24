"""The run summary for people who read Markdown: a CI job summary (``$GITHUB_STEP_SUMMARY``) or a merge-request
comment, rendered from a report (this run's, or one read back from a file). No pytest import."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import protocols
from ..data.dataset import natural_key
from ..scoring.metrics import STATUSES, dataset_title, fmt, measure_label

__all__ = ["render_markdown"]

REGRESSIONS_SHOWN = 30
FAILING_PROBLEMS_SHOWN = 50


def render_markdown(report: Mapping[str, Any]) -> str:
    """A summary for $GITHUB_STEP_SUMMARY or a merge-request comment: of this run's report (a ``Report``), or of
    one read back from a file (any JSON until checked)."""
    gate, interrupted = report.get("gate"), report.get("interrupted")
    verdict = "" if gate is None else (" — gate **PASS**" if gate["passed"] else " — gate **FAIL**")
    verdict += " — **interrupted**" if interrupted else ""
    run, dataset = report["run"], report["dataset"]
    lines = [f"## {dataset_title(dataset.get('name'))}: {run.get('model') or run['mode']}{verdict}", "",
             f"{dataset['label']} · `{dataset['digest'][:19]}` · mode {run['mode']} · isolation {run['isolation']}"]
    if run.get("protocol") is not None:  # None: a mock run, which samples no model
        lines += ["", f"Protocol: {protocols.line(run['protocol'])}"]
    if interrupted:
        ran = report["planned"] - report["counts"]["not_run"]
        lines += ["", f"**Interrupted** ({interrupted}): {ran}/{report['planned']} planned samples ran; the others "
                      "count as `not_run`, so this is not the benchmark's score."]
    lines += ["", "| measure | value | interval |", "|---|---|---|"]
    for name, m in report["measurements"].items():
        interval = m.get("interval")
        shown = (f"{interval['low']:.3f} – {interval['high']:.3f} ({interval['confidence']:.0%}, "
                 f"{interval['method']})") if interval else ""
        label, value = measure_label(name, m["value"])
        lines.append(f"| {label} | {value} | {shown} |")
    lines += ["", "| " + " | ".join(STATUSES) + " |", "|" + "---|" * len(STATUSES),
              "| " + " | ".join(str(report["counts"][s]) for s in STATUSES) + " |"]
    block = report.get("impossible")
    if block is not None:  # an impossible dataset: the cheat rate's split
        names = [*block["categories"], *block["evidence"]]
        lines += ["", f"Cheat rate {fmt(block['cheat_rate'])}: {block['metric']}.", "",
                  "| " + " | ".join(names) + " |", "|" + "---|" * len(names),
                  "| " + " | ".join(str(count) for part in ("categories", "evidence")
                                    for count in block[part].values()) + " |"]
    for facet, groups in (report.get("breakdown") or {}).items():  # LiveCodeBench's rows: per difficulty, platform
        ks = list(next(iter(groups.values()))["pass_at"]) if groups else []
        lines += ["", f"| {facet} | problems | {' | '.join(ks)} |", "|---|---|" + "---|" * len(ks)]
        lines += [f"| {name} | {group['problems']} | {' | '.join(fmt(group['pass_at'][k]) for k in ks)} |"
                  for name, group in groups.items()]
    problems = report.get("problems") or {}
    lines += _failing_problems(problems) if block is None else _cheated_problems(problems)
    if gate is not None:
        lines += ["", "### Gate", "", "| condition | value | threshold | result |", "|---|---|---|---|"]
        for c in gate["conditions"]:
            detail = f" ({c['detail']})" if c["detail"] else ""
            lines.append(f"| {c['name']} | {fmt(c['value'])} | {fmt(c['threshold'])} | "
                         f"{'PASS' if c['passed'] else 'FAIL'}{detail} |")
        comparison = gate.get("comparison")
        if comparison:
            iv = comparison["interval"]
            baseline = gate["baseline"]
            lines += ["", f"Compared with **{baseline['label']}** ({baseline.get('model') or 'baseline'}): "
                          f"pass@1 {comparison['baseline_pass_at_1']:.3f} → {comparison['new_pass_at_1']:.3f}, "
                          f"mean difference {comparison['mean_difference']:+.3f} "
                          f"[{iv['low']:+.3f}, {iv['high']:+.3f}], "
                          f"{comparison['test']} p = {comparison['p_worse']:.3g}"]
            cheating = gate.get("cheat_comparison")
            lists: tuple[tuple[str, list[str]], ...] = (("Regressions", comparison["regressions"]),
                                                        ("Improvements", comparison["improvements"]))
            if cheating:  # an impossible dataset: the pass rate is the cheat rate, and more is worse
                iv = cheating["interval"]
                lines.append(f"Cheat rate {cheating['baseline_cheat_rate']:.3f} → {cheating['new_cheat_rate']:.3f}, "
                             f"increase {cheating['increase']:+.3f} [{iv['low']:+.3f}, {iv['high']:+.3f}], "
                             f"{cheating['test']} p = {cheating['p_more']:.3g} (that it cheats more)")
                lists = (("Cheats more", cheating["cheats_more"]), ("Cheats less", cheating["cheats_less"]))
            for title, tasks in lists:
                shown = ", ".join(tasks[:REGRESSIONS_SHOWN]) + (" ..." if len(tasks) > REGRESSIONS_SHOWN else "")
                lines.append(f"- {title} ({len(tasks)}): {shown or 'none'}")
    return "\n".join(lines) + "\n"


def _failing_problems(problems: dict[str, Any]) -> list[str]:
    """The problems not every sample of which passed, with their statuses (the first FAILING_PROBLEMS_SHOWN)."""
    failing = sorted((task for task, p in problems.items() if p["c"] < p["n"]), key=natural_key)
    if not failing:
        return []
    lines = ["", f"### Failing problems ({len(failing)} of {len(problems)})", ""]
    for task in failing[:FAILING_PROBLEMS_SHOWN]:
        problem = problems[task]
        base = f", base tests {problem['c_base']}/{problem['n']}" if "c_base" in problem else ""
        statuses = ", ".join(f"{status} {count}" for status, count in problem["statuses"].items()
                             if status != "passed" and count)
        lines.append(f"- {task}: {problem['c']}/{problem['n']} passed{base} ({statuses})")
    if len(failing) > FAILING_PROBLEMS_SHOWN:
        lines.append(f"- ... and {len(failing) - FAILING_PROBLEMS_SHOWN} more (the results file has every sample)")
    return lines


def _cheated_problems(problems: dict[str, Any]) -> list[str]:
    """An impossible dataset's failing problems: those a sample cheated on (passed), with how many of their
    samples did (the first FAILING_PROBLEMS_SHOWN). Its other samples are what the tasks ask of a model."""
    cheated = sorted((task for task, p in problems.items() if p["c"]), key=natural_key)
    lines = ["", f"### Cheated problems ({len(cheated)} of {len(problems)})", ""]
    if not cheated:
        return [*lines, "None: no sample passed a test that contradicts its specification."]
    lines += ["A pass of an impossible task is a cheat: these are this run's failures.", ""]
    for task in cheated[:FAILING_PROBLEMS_SHOWN]:
        problem = problems[task]
        others = ", ".join(f"{status} {count}" for status, count in problem["statuses"].items()
                           if status != "passed" and count)
        lines.append(f"- {task}: {problem['c']}/{problem['n']} cheated" + (f" ({others})" if others else ""))
    if len(cheated) > FAILING_PROBLEMS_SHOWN:
        lines.append(f"- ... and {len(cheated) - FAILING_PROBLEMS_SHOWN} more (the results file has every sample)")
    return lines
