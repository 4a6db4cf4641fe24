"""The HTML page of a 32,800-sample run (n = 200 over the 164 problems): its size, the time to write it, and
the time a real headless Chromium takes to show it and to open the biggest problem.

    python bench/html_page.py                 # synthetic results: every completion distinct, a third failing
    python bench/html_page.py --failing-every 1   # the same, every sample failing: the size budget binds
    python bench/html_page.py --scale-run     # the real bench/scale.yaml run (canonical solutions, ~2 min)

The synthetic rows are the worst case the page's size rules meet in practice (nothing to deduplicate, many
failing samples with detail and traceback); their report is built by the plugin's own code (summarize,
build_report) on the scale config's plan. Needs Debian's chromium and chromium-driver. Outputs go to
bench/out/html/. Times vary with the machine's load: quote them from a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the WebDriver helper the browser tests use

from browser import Browser, missing  # noqa: E402

from pytest_humaneval.config import load_config  # noqa: E402
from pytest_humaneval.engine.benchmark_run import Run  # noqa: E402
from pytest_humaneval.engine.planning import build_plan  # noqa: E402
from pytest_humaneval.engine.report import build_report  # noqa: E402
from pytest_humaneval.outputs import html_page as html_report  # noqa: E402
from pytest_humaneval.scoring.metrics import Outcome, summarize  # noqa: E402

OUT = ROOT / "bench" / "out" / "html"
SCALE = ROOT / "bench" / "scale.yaml"


def synthetic(out: Path, failing_every: int) -> tuple[dict, list[dict], dict]:
    config = load_config(SCALE)
    plan = build_plan(config)
    rows, outcomes = [], {}
    for sample in plan.samples:
        failing = sample.index % failing_every == 0
        status = "assertion_failed" if failing else "passed"
        row = {"task_id": sample.task_id, "sample": sample.index, "status": status, "passed": not failing,
               "completion": f"{sample.completion}    # sample {sample.index}: {'a model explains itself ' * 10}\n",
               "duration_ms": 3.0 + sample.index % 7, "detail": ""}
        if failing:
            row["detail"] = f"AssertionError (at test line {sample.index % 9 + 1}: assert candidate(1) == 2)"
            row["traceback"] = f"Traceback (most recent call last):\n  ...\nAssertionError: sample {sample.index}\n"
        rows.append(row)
        outcomes[sample.key] = Outcome(sample.task_id, sample.index, status, row["duration_ms"])
    summary = summarize([s.key for s in plan.samples], outcomes, config.params.k)
    report = build_report(Run(config, plan, "namespaces"), summary, [], None)
    problems = {p.task_id: {"prompt": p.prompt, "test": p.test} for p in plan.selection.problems}
    return report, rows, problems


def scale_run(out: Path) -> tuple[dict, list[dict], dict]:
    command = [sys.executable, "-m", "pytest", "--humaneval-config", str(SCALE), "-n", "2", "-q",
               "-p", "no:cacheprovider", "--humaneval-report", str(out / "scale.json"),
               "--humaneval-results", str(out / "scale.jsonl"), "--humaneval-html", str(out / "scale-plugin.html")]
    print("running:", " ".join(command[1:]))
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    plan = build_plan(load_config(SCALE))
    report = json.loads((out / "scale.json").read_text())
    rows = [json.loads(line) for line in (out / "scale.jsonl").read_text().splitlines()]
    return report, rows, {p.task_id: {"prompt": p.prompt, "test": p.test} for p in plan.selection.problems}


def measure(browser: Browser, page: Path, biggest: str) -> dict[str, float]:
    browser.get(page.as_uri())
    browser.wait_for("return document.body.dataset.ready === '1'", timeout_s=60)
    shown = browser.run_async(  # after two animation frames the page has been laid out and painted
        "const done = arguments[arguments.length - 1];"
        "requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now())))")
    click = ("const done = arguments[arguments.length - 1]; const t = performance.now();"
             f"document.querySelector('.tile[data-task=\"{biggest}\"]').click();"
             "requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t)))")
    first_click = browser.run_async(click)  # includes parsing the data island
    second_click = browser.run_async(click)
    samples = browser.run("return document.querySelectorAll('#panel .sample').length")
    return {"page shown (ms since navigation start)": shown, "first problem opened (ms)": first_click,
            "problem opened again (ms)": second_click, "samples listed": samples}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale-run", action="store_true", help="use the real scale run instead of synthetic rows")
    parser.add_argument("--failing-every", type=int, default=3,
                        help="synthetic: one sample in N fails (default 3; 1: all fail, the page's size budget binds)")
    parser.add_argument("--rounds", type=int, default=3, help="page loads in the browser (median reported)")
    args = parser.parse_args()
    if missing():
        sys.exit(missing())
    OUT.mkdir(parents=True, exist_ok=True)
    report, rows, problems = scale_run(OUT) if args.scale_run else synthetic(OUT, args.failing_every)
    started = time.perf_counter()
    text = html_report.render(report, rows, problems)
    written = time.perf_counter() - started
    page = OUT / ("scale.html" if args.scale_run else "synthetic.html")
    page.write_text(text, encoding="utf-8")
    print(f"{len(rows):,} samples: page {page.stat().st_size / 1e6:.1f} MB, rendered by Python in {written:.2f} s")
    with Browser() as browser:
        results = [measure(browser, page, "HumanEval/0") for _ in range(args.rounds)]
    for name in results[0]:
        values = sorted(r[name] for r in results)
        print(f"{name:42s} median {values[len(values) // 2]:8.0f}   (all: {', '.join(f'{v:.0f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
