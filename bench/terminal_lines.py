"""A real benchmark run's terminal output, counted: the 1,640 completions of a real model, ~80% of them failing.

    python bench/terminal_lines.py [--samples ../shared/data/real-samples/codet_codegen16b.jsonl] [-- PYTEST_ARGS]

Runs ``python -m pytest --humaneval-config CFG`` with ``mode: samples`` on the file (a whole process, its output
as a terminal-less CI log gets it), and prints how many lines the session wrote, where the ``pass@1`` line is
from the end, and the last lines. Exit 1 when the output is over the budget of issue 21 (150 lines, ``pass@1``
among the last 30). Not a timing. The file is the shared data's (see its PROVENANCE.md); the test suite checks
the same budget on a synthetic failing run (``tests/test_terminal.py``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
DEFAULT = ROOT.parent / "shared" / "data" / "real-samples" / "codet_codegen16b.jsonl"
MAX_LINES, SCORE_WITHIN = 150, 30


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=Path, default=DEFAULT)
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    if not args.samples.is_file():
        print(f"{args.samples}: not found (the shared data's real samples; pass --samples FILE)", file=sys.stderr)
        return 2
    OUT.mkdir(parents=True, exist_ok=True)
    config = OUT / "terminal_lines.yaml"
    config.write_text(f"target: {{mode: samples, samples: {args.samples.resolve()}}}\n"
                      "params: {allow_code_execution: true}\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "--humaneval-config", str(config), "-p", "no:cacheprovider",
                          *args.pytest_args], cwd=OUT, capture_output=True, text=True)
    lines = run.stdout.splitlines()
    scores = [i for i, line in enumerate(lines) if line.startswith("score ") and "pass@1" in line]
    from_end = len(lines) - scores[-1] if scores else None
    print("\n".join(lines[-(SCORE_WITHIN + 2):]))
    print(f"\n{args.samples.name}: {len(lines)} lines of output (budget {MAX_LINES}); the pass@1 line is "
          f"{from_end if from_end is not None else 'missing'} lines from the end (budget {SCORE_WITHIN}); "
          f"pytest exited {run.returncode}")
    return 0 if scores and len(lines) <= MAX_LINES and from_end <= SCORE_WITHIN else 1


if __name__ == "__main__":
    sys.exit(main())
