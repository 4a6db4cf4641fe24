"""`python -m pytest_humaneval compare OLD.json NEW.json`: the gate's paired comparison of two saved reports.

Exit status: 0 when NEW is not significantly worse than OLD (beyond --max-drop), 1 when it is, 2 when the
reports cannot be compared (unreadable, or they measured different things: another dataset digest).
"""

from __future__ import annotations

import argparse
import sys

from .gate import BaselineError, check_digest, load_baseline
from .stats import compare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_humaneval", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    cmp = commands.add_parser("compare", help="paired comparison of two report JSON files")
    cmp.add_argument("old", help="the baseline report (e.g. the production model's)")
    cmp.add_argument("new", help="the candidate report")
    cmp.add_argument("--confidence", type=float, default=0.95, help="for the one-sided test (default 0.95)")
    cmp.add_argument("--max-drop", type=float, default=0.0, help="pass@1 drop tolerated (default 0)")
    args = parser.parse_args(argv)
    if not 0 < args.confidence < 1:
        parser.error(f"--confidence: expected a number between 0 and 1 (exclusive), found {args.confidence:g}")
    try:
        old, new = load_baseline(args.old), load_baseline(args.new)
        check_digest(old, new.label, new.digest)
    except BaselineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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


if __name__ == "__main__":
    sys.exit(main())
