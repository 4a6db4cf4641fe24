"""The library's judge against LiveCodeBench's own (`lcb_runner`), side by side on the same rows and programs.

    python bench/compare_lcb.py [--pairs 3] [--repeat 20] [--lcb DIR] [--lcb-python PATH]
                                [--lcb-processes 12] [--workers auto] [--defects]

LiveCodeBench is not vendored and not installed here: its pinned tree is exported into bench/out/scratch/ (ignored
by git), and its evaluation runs in an interpreter of its own that has only what that code imports (numpy, tqdm):

    C=28fef95ea8c9f7a547c8329f2cd3d32b92c1fa24
    git clone https://github.com/LiveCodeBench/LiveCodeBench /tmp/lcb-src     # or any clone or mirror of it
    mkdir -p bench/out/scratch/lcb_runner-$C
    git --git-dir=/tmp/lcb-src/.git archive $C | tar -x -C bench/out/scratch/lcb_runner-$C
    python3.11 -m venv /tmp/lcb-venv && /tmp/lcb-venv/bin/pip install numpy tqdm
    python bench/compare_lcb.py --lcb bench/out/scratch/lcb_runner-$C --lcb-python /tmp/lcb-venv/bin/python

`lcb_runner.benchmarks` imports `datasets` at its top for `load_dataset`, which is never called here: the lcb side
puts an empty stand-in module under that name before importing it, so LiveCodeBench's own
`CodeGenerationProblem(**row).get_evaluation_sample()` turns each row into its `input_output` sample (its JSON and
pickled private tests decoded by its own code) and nothing heavier is needed. The script checks the sha256 of the
three files it runs against their values at the pinned commit and records whether they match.

The rows (one LiveCodeBench `code_generation_lite` file, written to bench/out/compare_lcb/rows.jsonl, read by both
sides) and the programs:

- corpus: the bundled pytest_humaneval/fixtures/io_corpus.jsonl (5 stdin, 3 functional problems), each problem's
  reference and wrong program from io_corpus_programs.json;
- stress: 3 stdin and 3 functional (`class Solution`) problems of 10 tests each, generated here from a fixed seed
  (sum of numbers, sorting, range-sum queries; two-sum, sorting, maximum subarray), a right and a wrong program
  each; every wrong program fails only its last tests, so both judges run most of the ten.

Every program is repeated `--repeat` times, each copy made a distinct text by a trailing comment (`# copy N`).

- lcb_runner: `evaluate_generations(samples, [[program], ...], num_process_evaluate=--lcb-processes, timeout=6)`
  from lcb_runner/evaluation/compute_code_generation_metrics.py, one generation per entry as its `codegen_metrics`
  lays them out (12 processes: its CLI's default; each sample then gets a `multiprocessing.Manager` and a
  `Process`, testing_util.py runs the program inside it); a sample passes when every result is > 0, as
  `extract_instance_results` says.
- ours: `Verifier(rows, timeout_s=6, dedupe=False, workers=--workers).verify(samples)` from this checkout.

Each side is a process of its own, warmed first (LiveCodeBench: one `evaluate_generations` call on one reference
program per problem; ours: the Verifier started and the same call); then it times one call per problem shape
(stdin, then functional). A pair runs both sides, in alternating order. Figures per shape: samples/s of the call;
CPU per sample and per test, measured two ways: the side's process tree (utime + stime of every live process under
it, with the times of its reaped children, from /proc, before and after the call: exact for both sides while the
machine is shared) and the machine's busy time (/proc/stat: the other scripts' measure, right on a quiet machine
only); the median per-pair ratio ours/lcb_runner samples/s (issue 52's goal: >= 3 on both shapes). Verdicts are
compared per sample: every disagreement is printed (once per distinct program, with its count) and recorded with
the program and both sides' verdicts; exit 1 on one.

`--defects` runs the catalogue of lcb_runner's defects instead: small programs on two problems of their own, each
with what each side is expected to say and why (lcb_runner's file and line), through both judges once (untimed);
it prints what each side said and whether that is as catalogued (exit 1 if not). Records:
bench/out/records/compare_lcb-*.json and compare_lcb_defects-*.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from common import OUT, ROOT, write_record

LCB_COMMIT = "28fef95ea8c9f7a547c8329f2cd3d32b92c1fa24"
LCB_SHA256 = {  # the files the lcb side runs, at LCB_COMMIT
    "lcb_runner/evaluation/testing_util.py": "b7cb6a8a69807bb868150a61742e25d7bb5328bbe01d514471b6ec43c9fa9ed2",
    "lcb_runner/evaluation/compute_code_generation_metrics.py":
        "073f388cc78bf0eb0ad35eaeb8bb509c0a3664963e5305d2be13d6b6eb6f3d21",
    "lcb_runner/benchmarks/code_generation.py": "0bc93f5a650b55d6a1b54d3db852d80ae64891ece4ff085b2e6b469eb89f8846",
}
FIXTURES = ROOT / "pytest_humaneval" / "fixtures"
WORK = OUT / "compare_lcb"
TIMEOUT_S = 6  # LiveCodeBench's per-test limit (its runner's --timeout default), and ours here

# Both sides' CPU clocks, as text: the lcb side runs in another interpreter and imports nothing of this package.
CLOCKS = textwrap.dedent("""
    import os

    def tree_cpu_s(root=None):
        root = root or os.getpid()
        parent, spent = {}, {}
        for name in os.listdir("/proc"):
            if name.isdigit():
                try:
                    with open(f"/proc/{name}/stat") as handle:
                        text = handle.read()
                except OSError:
                    continue
                fields = text[text.rindex(")") + 2:].split()
                parent[int(name)], spent[int(name)] = int(fields[1]), sum(map(int, fields[11:15]))
        children = {}
        for pid, ppid in parent.items():
            children.setdefault(ppid, []).append(pid)
        total, frontier = 0, [root]
        while frontier:
            pid = frontier.pop()
            total += spent.get(pid, 0)
            frontier += children.get(pid, [])
        return total / os.sysconf("SC_CLK_TCK")

    def machine_cpu_s():
        fields = [int(value) for value in open("/proc/stat").readline().split()[1:]]
        return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")
""")

LCB_SIDE = CLOCKS + textwrap.dedent("""
    import json, sys, time, types
    stand_in = types.ModuleType("datasets")  # lcb_runner.benchmarks imports load_dataset at its top; never called
    stand_in.load_dataset = None
    sys.modules["datasets"] = stand_in
    from lcb_runner.benchmarks.code_generation import CodeGenerationProblem
    from lcb_runner.evaluation.compute_code_generation_metrics import evaluate_generations

    spec = json.load(open(sys.argv[1]))
    rows = {}
    for line in open(spec["rows"]):
        row = json.loads(line)
        rows[row["question_id"]] = CodeGenerationProblem(**row).get_evaluation_sample()

    def judge(samples):
        results, metadata = evaluate_generations([rows[task] for task, _ in samples],
                                                 [[program] for _, program in samples], debug=False,
                                                 num_process_evaluate=spec["processes"], timeout=spec["timeout"])
        results = [results[i][0] for i in range(len(samples))]
        return {"passed": [all(r > 0 for r in result) for result in results],
                "verdict": [json.dumps(result)[:200] + " " + str(metadata[i][0].get("error_message", "")
                                                                  + " " + metadata[i][0].get("error", ""))[:300]
                            for i, result in enumerate(results)]}

    if spec["warm"]:
        judge(spec["warm"])
    out = {}
    for name, samples in spec["calls"].items():
        tree, machine, started = tree_cpu_s(), machine_cpu_s(), time.perf_counter()
        out[name] = judge(samples)
        out[name].update(seconds=time.perf_counter() - started, tree_cpu_s=tree_cpu_s() - tree,
                         machine_cpu_s=machine_cpu_s() - machine)
    json.dump(out, open(sys.argv[2], "w"))
""")

OUR_SIDE = CLOCKS + textwrap.dedent("""
    import json, sys, time
    from pytest_humaneval import Verifier

    spec = json.load(open(sys.argv[1]))
    workers = None if spec["workers"] == "auto" else int(spec["workers"])
    out = {}
    with Verifier(spec["rows"], timeout_s=spec["timeout"], dedupe=False, workers=workers) as verifier:
        out["isolation"] = verifier.isolation
        if spec["warm"]:
            verifier.verify([tuple(sample) for sample in spec["warm"]])
        for name, samples in spec["calls"].items():
            tree, machine, started = tree_cpu_s(), machine_cpu_s(), time.perf_counter()
            verdicts = verifier.verify([tuple(sample) for sample in samples])
            seconds = time.perf_counter() - started
            out[name] = {"seconds": seconds, "tree_cpu_s": tree_cpu_s() - tree,
                         "machine_cpu_s": machine_cpu_s() - machine, "passed": [v.passed for v in verdicts],
                         "verdict": [f"{v.status.value}: {v.detail}"[:300] for v in verdicts]}
    json.dump(out, open(sys.argv[2], "w"))
""")


def lcb_row(question_id: str, platform: str, tests: list[tuple[str, str]], func_name: str | None = None,
            difficulty: str = "easy") -> dict[str, Any]:
    """A row of LiveCodeBench's `code_generation_lite` schema, its keys exactly `CodeGenerationProblem`'s fields;
    the first test public, the others private (as JSON: the corpus has pickled ones)."""
    kind = "functional" if func_name else "stdin"
    cases = [{"input": given, "output": expected, "testtype": kind} for given, expected in tests]
    starter = f"class Solution:\n    def {func_name}(self):\n        pass\n" if func_name else ""
    return {"question_title": question_id, "question_content": "(generated by bench/compare_lcb.py)",
            "platform": platform, "question_id": question_id, "contest_id": "bench", "contest_date":
            "2025-01-01T00:00:00", "starter_code": starter, "difficulty": difficulty,
            "public_test_cases": json.dumps(cases[:1]), "private_test_cases": json.dumps(cases[1:]),
            "metadata": json.dumps({"func_name": func_name} if func_name else {})}


def call(*arguments: Any) -> str:
    """A functional test's input as LiveCodeBench holds it: one JSON value a line."""
    return "\n".join(json.dumps(argument) for argument in arguments)


def stress_problems() -> list[tuple[dict[str, Any], str, str]]:
    """(row, right program, wrong program) for the six generated problems; the wrong ones fail tests 9 and 10."""
    rng = random.Random(52)
    made = []

    sums = []
    for number in range(10):
        values = [rng.randint(-10**9, 10**9) for _ in range(rng.randint(1, 2000))]
        if (number == 9) != (sum(values) < 0):  # a negative sum in test 10 only
            values = [-value for value in values]
        sums.append((f"{len(values)}\n{' '.join(map(str, values))}\n", f"{sum(values)}\n"))
    made.append((lcb_row("stress/sum-of-numbers", "atcoder", sums),
                 "import sys\n\ndata = sys.stdin.read().split()\nn = int(data[0])\n"
                 "print(sum(map(int, data[1:1 + n])))\n",
                 "n = int(input())\nprint(abs(sum(map(int, input().split()))))\n"))

    sorts, sort_calls = [], []
    for number in range(10):
        size = rng.randint(200, 1500)
        values = (rng.sample(range(-10**6, 10**6), size) if number < 8  # repeated values in tests 9 and 10 only
                  else [rng.randint(-50, 50) for _ in range(size)])
        sorts.append((f"{size}\n{' '.join(map(str, values))}\n", " ".join(map(str, sorted(values))) + "\n"))
        sort_calls.append((call(values), json.dumps(sorted(values))))
    made.append((lcb_row("stress/sort-numbers", "codeforces", sorts),
                 "n = int(input())\nprint(*sorted(map(int, input().split())))\n",
                 "n = int(input())\nprint(*sorted(set(map(int, input().split()))))\n"))

    queries = []
    for number in range(10):
        values = [rng.randint(1, 10**6) for _ in range(rng.randint(2, 1000))]
        asked = []
        for _ in range(rng.randint(1, 200)):
            left, right = sorted(rng.sample(range(1, len(values) + 1), 2))
            if number >= 8:  # one-element ranges in tests 9 and 10 only
                right = left
            asked.append((left, right))
        lines = "".join(f"{left} {right}\n" for left, right in asked)
        answers = "".join(f"{sum(values[left - 1:right])}\n" for left, right in asked)
        queries.append((f"{len(values)} {len(asked)}\n{' '.join(map(str, values))}\n{lines}", answers))
    queries_program = ("import sys\n\n\ndef main():\n    n, q = map(int, sys.stdin.readline().split())\n"
                       "    prefix = [0]\n    for value in map(int, sys.stdin.readline().split()):\n"
                       "        prefix.append(prefix[-1] + value)\n    out = []\n    for _ in range(q):\n"
                       "        left, right = map(int, sys.stdin.readline().split())\n"
                       "        out.append(ANSWER)\n    print('\\n'.join(out))\n\n\n"
                       "if __name__ == '__main__':\n    main()\n")
    made.append((lcb_row("stress/range-sums", "atcoder", queries, difficulty="medium"),
                 queries_program.replace("ANSWER", "str(prefix[right] - prefix[left - 1])"),
                 queries_program.replace("ANSWER", "str(prefix[right] - prefix[left - 1] if left < right else 0)")))

    pairs = []
    for number in range(10):
        while True:
            nums = rng.sample(range(-10**5, 10**5), rng.randint(3, 300))
            first, second = sorted(rng.sample(range(1, len(nums)), 2))
            target = nums[first] + nums[second]
            if number >= 8:  # 2 * nums[0] is the target too: a program that pairs an index with itself fails
                if target % 2 or target // 2 in nums:
                    continue
                nums[0] = target // 2
            found = [(i, j) for i in range(len(nums)) for j in range(i + 1, len(nums)) if nums[i] + nums[j] == target]
            if found == [(first, second)]:
                break
        pairs.append((call(nums, target), json.dumps([first, second])))
    two_sum = ("from typing import List\n\n\nclass Solution:\n    def twoSum(self, nums: List[int], target: int) -> "
               "List[int]:\n")
    made.append((lcb_row("stress/two-sum", "leetcode", pairs, "twoSum"),
                 two_sum + "        seen = {}\n        for index, value in enumerate(nums):\n"
                 "            if target - value in seen:\n                return [seen[target - value], index]\n"
                 "            seen[value] = index\n        return []\n",
                 two_sum + "        for i in range(len(nums)):\n            for j in range(i, len(nums)):\n"
                 "                if nums[i] + nums[j] == target:\n                    return [i, j]\n"
                 "        return []\n"))

    made.append((lcb_row("stress/sort-array", "leetcode", sort_calls, "sortArray"),
                  "class Solution:\n    def sortArray(self, nums):\n        return sorted(nums)\n",
                  "class Solution:\n    def sortArray(self, nums):\n        return sorted(set(nums))\n"))

    subarrays = []
    for number in range(10):
        nums = [rng.randint(-10**4, 10**4) for _ in range(rng.randint(1, 3000))]
        nums[0] = abs(nums[0])
        if number >= 8:  # all negative in tests 9 and 10 only
            nums = [-abs(value) - 1 for value in nums]
        best, current = nums[0], 0
        for value in nums:
            current = max(value, current + value)
            best = max(best, current)
        subarrays.append((call(nums), json.dumps(best)))
    kadane = ("class Solution:\n    def maxSubArray(self, nums):\n        best, current = START, 0\n"
              "        for value in nums:\n            current = max(value, current + value)\n"
              "            best = max(best, current)\n        return best\n")
    made.append((lcb_row("stress/max-subarray", "leetcode", subarrays, "maxSubArray", "medium"),
                 kadane.replace("START", "nums[0]"), kadane.replace("START", "0")))
    return made


# The catalogue: (name, task, program, ours passes, lcb_runner passes, why). Lines are lcb_runner's at LCB_COMMIT.
ADD = "defects/add-pairs"
TWICE = "defects/twice"
DEFECT_ROWS = [
    lcb_row(ADD, "atcoder", [("2\n1 2\n3 4\n", "3\n7\n"), ("1\n10 20\n", "30\n"),
                             ("3\n5 5\n6 6\n7 7\n", "10\n12\n14\n")]),
    lcb_row(TWICE, "leetcode", [(call(3), "6"), (call(5), "10")], "twice"),
]
SOLVE = "    a, b = map(int, LINE.split())\n    print(a + b)\n"
DEFECTS = [
    ("control: input()", ADD, "for _ in range(int(input())):\n" + SOLVE.replace("LINE", "input()"), True, True,
     "agreement expected"),
    ("control: __main__ guard, big-stack thread", ADD,
     "import sys, threading\n\n\ndef main():\n    for _ in range(int(sys.stdin.readline())):\n"
     "        a, b = map(int, sys.stdin.readline().split())\n        print(a + b)\n\n\n"
     "if __name__ == '__main__':\n    threading.stack_size(1 << 26)\n    worker = threading.Thread(target=main)\n"
     "    worker.start()\n    worker.join()\n", True, True, "agreement expected"),
    ("for line in sys.stdin", ADD, "import sys\n\nsys.stdin.readline()\nfor line in sys.stdin:\n"
     + SOLVE.replace("LINE", "line"), True, False,
     "testing_util.py:74-91: MockStdinWithBuffer (added 2025-05-23, 16de2a1) has no __iter__ (its __getattr__ is not "
     "asked for iteration): TypeError"),
    ("sys.stdin.buffer.readline()", ADD, "import sys\n\nfor _ in range(int(sys.stdin.buffer.readline())):\n"
     + SOLVE.replace("LINE", "sys.stdin.buffer.readline()"), True, False,
     "testing_util.py:102-103: MockBuffer.readline returns the first line every time"),
    ("sys.stdout.buffer.write", ADD, "import sys\n\nfor _ in range(int(input())):\n"
     "    a, b = map(int, input().split())\n    sys.stdout.buffer.write(f'{a + b}\\n'.encode())\n", True, False,
     "testing_util.py:59-65: output captured in a StringIO, which has no .buffer: AttributeError"),
    ("sys.stdin.read() after input()", ADD, "import sys\n\ninput()\nfor line in sys.stdin.read().splitlines():\n"
     + SOLVE.replace("LINE", "line"), True, False,
     "testing_util.py:80-81: MockStdinWithBuffer.read returns the whole input whatever was read before"),
    ("os.read(0, ...)", ADD, "import os\n\ndata = os.read(0, 1 << 20).decode().split('\\n')\n"
     "for line in data[1:1 + int(data[0])]:\n" + SOLVE.replace("LINE", "line"), True, False,
     "testing_util.py:167-171: only sys.stdin is replaced; descriptor 0 is the judge's (multiprocessing's "
     "/dev/null), so the program reads nothing"),
    ("open(0).read()", ADD, "data = open(0).read().split('\\n')\nfor line in data[1:1 + int(data[0])]:\n"
     + SOLVE.replace("LINE", "line"), True, False,
     "testing_util.py:27 and 167: the program's `from io import *` / `from builtins import *` bind the real open "
     "before builtins.open is patched, so open(0) reads descriptor 0: nothing"),
    ("a global statement", ADD, "done = 0\n\n\ndef solve(line):\n    global done\n    done += 1\n"
     "    a, b = map(int, line.split())\n    print(a + b)\n\n\nfor _ in range(int(input())):\n    solve(input())\n",
     True, False, "testing_util.py:122-149: the module body is wrapped in a function, so `global done` names a "
     "module variable that no longer exists: NameError"),
    ("quit() after the output", ADD, "for _ in range(int(input())):\n" + SOLVE.replace("LINE", "input()")
     + "quit()\n", True, False, "testing_util.py:540: reliability_guard sets builtins.quit = None before the "
     "program is compiled, so quit() is a TypeError"),
    ("exit(1) after the output (wrong)", ADD, "for _ in range(int(input())):\n"
     + SOLVE.replace("LINE", "input()") + "exit(1)\n", False, True,
     "testing_util.py:174-177: SystemExit is swallowed whatever its code; a non-zero exit is not a failure"),
    ("exit(0) before any output (wrong)", ADD, "exit(0)\n", False, False,
     "agreement expected: lcb_runner compares the output, so the RL verifiers' exit-code defect is not its own"),
    ("reads the expected output from the judge's frame (cheat)", ADD,
     "import sys\n\nframe = sys._getframe()\nwhile frame is not None:\n    if 'gt_out' in frame.f_locals:\n"
     "        sys.stdout.write(frame.f_locals['gt_out'])\n        break\n    frame = frame.f_back\n", False, True,
     "testing_util.py:333-341: the program runs inside grade_stdio, whose frame holds gt_out"),
    ("control: class Solution", TWICE, "class Solution:\n    def twice(self, n):\n        return 2 * n\n",
     True, True, "agreement expected"),
    ("an always-equal object (cheat)", TWICE, "class Always:\n    def __eq__(self, other):\n        return True\n\n\n"
     "class Solution:\n    def twice(self, n):\n        return Always()\n", False, True,
     "testing_util.py:268: `prediction == gt_out` is evaluated in the candidate's process, with its __eq__"),
    ("json.loads patched before the tests are read (cheat)", TWICE,
     "import json\n\njson.loads = lambda *args, **kwargs: 0\n\n\nclass Solution:\n    def twice(self, n):\n"
     "        return 0\n", False, True,
     "testing_util.py:234-249: the program is executed before the judge parses the tests with the same json "
     "module, so every input and expected value is the program's 0"),
]


def build(repeat: int) -> tuple[Path, dict[str, list[dict[str, Any]]]]:
    """The rows file both sides read, and the samples of each shape: {set, task_id, kind, program, shape}."""
    WORK.mkdir(parents=True, exist_ok=True)
    rows = [json.loads(line) for line in (FIXTURES / "io_corpus.jsonl").read_text().splitlines() if line.strip()]
    programs = json.loads((FIXTURES / "io_corpus_programs.json").read_text())
    pairs = [("corpus", row["question_id"], programs[row["question_id"]]["reference"],
              programs[row["question_id"]]["wrong"]) for row in rows]
    for row, right, wrong in stress_problems():
        rows.append(row)
        pairs.append(("stress", row["question_id"], right, wrong))
    rows += DEFECT_ROWS
    shape = {row["question_id"]: "functional" if json.loads(row["metadata"]).get("func_name") else "stdin"
             for row in rows}
    path = WORK / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    samples: dict[str, list[dict[str, Any]]] = {"stdin": [], "functional": []}
    for copy in range(repeat):
        for set_name, task, right, wrong in pairs:
            for kind, program in (("reference", right), ("wrong", wrong)):
                samples[shape[task]].append({"set": set_name, "task_id": task, "kind": kind, "shape": shape[task],
                                             "program": f"{program.rstrip()}\n# copy {copy}\n"})
    return path, samples


def tests_per_problem(rows_path: Path) -> dict[str, int]:
    from pytest_humaneval.data.io_problems import load_io_problems
    return {problem.task_id: len(problem.tests) for problem in load_io_problems(rows_path)}


def run_side(side: str, spec: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    spec_path, out_path = WORK / f"spec-{side}.json", WORK / f"out-{side}.json"
    spec_path.write_text(json.dumps(spec))
    out_path.unlink(missing_ok=True)
    if side == "lcb":
        command = [args.lcb_python, "-c", LCB_SIDE, str(spec_path), str(out_path)]
        env, cwd = dict(os.environ, PYTHONPATH=str(args.lcb)), WORK / "lcb-cwd"
    else:
        command = [sys.executable, "-c", OUR_SIDE, str(spec_path), str(out_path)]
        env, cwd = dict(os.environ), ROOT
    cwd.mkdir(exist_ok=True)
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not out_path.exists():
        sys.exit(f"{side} side failed (exit {done.returncode}): {done.stderr[-3000:]}")
    said: dict[str, Any] = json.loads(out_path.read_text())
    return said


def check_lcb_tree(tree: Path) -> dict[str, Any]:
    found = {name: hashlib.sha256((tree / name).read_bytes()).hexdigest() if (tree / name).exists() else None
             for name in LCB_SHA256}
    if None in found.values():
        sys.exit(f"--lcb {tree}: expected LiveCodeBench's tree (lcb_runner/...), missing "
                 f"{[name for name, digest in found.items() if digest is None]}; make it as the docstring says")
    matches = found == LCB_SHA256
    if not matches:
        print(f"warning: {tree} is not LiveCodeBench at {LCB_COMMIT}: its files' sha256 differ", file=sys.stderr)
    return {"path": str(tree), "pinned_commit": LCB_COMMIT, "files_match_pin": matches, "sha256": found}


def pairs_for(samples: list[dict[str, Any]]) -> list[list[str]]:
    return [[sample["task_id"], sample["program"]] for sample in samples]


def run_defects(args: argparse.Namespace, rows_path: Path, lcb: dict[str, Any]) -> int:
    samples = [[task, program] for _, task, program, *_ in DEFECTS]
    common_spec = {"rows": str(rows_path), "timeout": TIMEOUT_S, "warm": [], "calls": {"defects": samples}}
    said = {"lcb": run_side("lcb", {**common_spec, "processes": args.lcb_processes}, args)["defects"],
            "ours": run_side("ours", {**common_spec, "workers": args.workers}, args)["defects"]}
    entries, off = [], 0
    for index, (name, task, program, ours_expected, lcb_expected, why) in enumerate(DEFECTS):
        got = {side: said[side]["passed"][index] for side in said}
        as_catalogued = got == {"lcb": lcb_expected, "ours": ours_expected}
        off += not as_catalogued
        entries.append({"name": name, "task_id": task, "program": program, "why": why,
                        "expected": {"ours": ours_expected, "lcb": lcb_expected}, "passed": got,
                        "verdict": {side: said[side]["verdict"][index] for side in said},
                        "as_catalogued": as_catalogued})
        print(f"{'ok ' if as_catalogued else 'OFF'} {name}: ours {'pass' if got['ours'] else 'fail'} "
              f"({said['ours']['verdict'][index][:90]}), lcb_runner {'pass' if got['lcb'] else 'fail'} "
              f"({said['lcb']['verdict'][index][:110]})\n    {why}")
    figures = {"programs": len(DEFECTS), "not_as_catalogued": off, "lcb": lcb}
    write_record("compare_lcb_defects", figures, {"defects": entries})
    return 1 if off else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--lcb", type=Path, default=OUT / "scratch" / f"lcb_runner-{LCB_COMMIT}")
    parser.add_argument("--lcb-python", default="/tmp/lcb-venv/bin/python")
    parser.add_argument("--lcb-processes", type=int, default=12)
    parser.add_argument("--workers", default="auto")
    parser.add_argument("--defects", action="store_true", help="run the defect catalogue instead of the pairs")
    args = parser.parse_args()
    args.lcb = args.lcb.resolve()
    if not Path(args.lcb_python).exists():
        sys.exit(f"--lcb-python {args.lcb_python}: no such interpreter; make its venv as the docstring says")
    lcb = check_lcb_tree(args.lcb)
    rows_path, samples = build(args.repeat)
    if args.defects:
        return run_defects(args, rows_path, lcb)
    tests = tests_per_problem(rows_path)
    references = {s["task_id"]: s["program"] for listed in samples.values() for s in listed if s["kind"] == "reference"}
    warm = [[task, program] for task, program in references.items()]  # one reference per problem
    calls = {shape: pairs_for(listed) for shape, listed in samples.items()}
    base = {"rows": str(rows_path), "timeout": TIMEOUT_S, "warm": warm, "calls": calls}
    specs = {"lcb": {**base, "processes": args.lcb_processes}, "ours": {**base, "workers": args.workers}}
    pairs, disagreements = [], []
    for pair in range(args.pairs):
        order = ("lcb", "ours") if pair % 2 == 0 else ("ours", "lcb")
        said = {side: run_side(side, specs[side], args) for side in order}
        row: dict[str, Any] = {"order": list(order), "isolation": said["ours"]["isolation"]}
        for shape, listed in samples.items():
            count, test_count = len(listed), sum(tests[s["task_id"]] for s in listed)
            lcb_side, ours = said["lcb"][shape], said["ours"][shape]
            differ = [index for index in range(count) if lcb_side["passed"][index] != ours["passed"][index]]
            disagreements += [{"pair": pair, **listed[index], "ours": ours["verdict"][index],
                               "lcb": lcb_side["verdict"][index]} for index in differ]
            row[shape] = {"samples": count, "tests": test_count, "differ": len(differ),
                          "ratio": lcb_side["seconds"] / ours["seconds"],
                          **{f"{side}_{key}": said[side][shape][key] for side in ("lcb", "ours")
                             for key in ("seconds", "tree_cpu_s", "machine_cpu_s")},
                          "ours_passed": sum(ours["passed"]), "lcb_passed": sum(lcb_side["passed"])}
            print(f"pair {pair + 1} {shape}: lcb_runner {count / lcb_side['seconds']:.1f} samples/s "
                  f"({1000 * lcb_side['tree_cpu_s'] / count:.1f} ms CPU each), ours {count / ours['seconds']:.1f} "
                  f"samples/s ({1000 * ours['tree_cpu_s'] / count:.1f} ms CPU each, {row['isolation']}), "
                  f"ratio {row[shape]['ratio']:.2f}x, verdicts differ {len(differ)}", flush=True)
        pairs.append(row)
    seen: dict[tuple[str, str, str], int] = {}
    for entry in disagreements:
        key = (entry["task_id"], entry["program"].rsplit("# copy ", 1)[0], entry["ours"][:80] + entry["lcb"][:80])
        seen[key] = seen.get(key, 0) + 1
    for (task, program, _), times in seen.items():
        first = next(e for e in disagreements if e["task_id"] == task and e["program"].startswith(program))
        print(f"DISAGREEMENT x{times} {task} ({first['set']} {first['kind']}): ours {first['ours'][:120]!r}, "
              f"lcb_runner {first['lcb'][:160]!r}\n{textwrap.indent(program, '    | ')}")
    figures: dict[str, Any] = {"lcb": lcb, "pairs": args.pairs, "repeat": args.repeat,
                               "lcb_processes": args.lcb_processes, "workers": args.workers,
                               "timeout_s_per_test": TIMEOUT_S, "isolation": pairs[0]["isolation"] if pairs else None,
                               "disagreements": len(disagreements)}
    for shape in samples:
        rows = [p[shape] for p in pairs]  # this shape's figures, one per pair
        count, test_count = rows[0]["samples"], rows[0]["tests"]
        figures[shape] = {
            "samples": count, "tests": test_count, "ratio_median": statistics.median(r["ratio"] for r in rows),
            "goal_3x_met": statistics.median(r["ratio"] for r in rows) >= 3,
            **{f"{side}_samples_per_s": statistics.median(count / r[f"{side}_seconds"] for r in rows)
               for side in ("lcb", "ours")},
            **{f"{side}_{clock}_cpu_ms_per_{unit}": statistics.median(1000 * r[f"{side}_{clock}_cpu_s"] / n
                                                                        for r in rows)
               for side in ("lcb", "ours") for clock in ("tree", "machine")
               for unit, n in (("sample", count), ("test", test_count))},
            "lcb_passed": rows[0]["lcb_passed"], "ours_passed": rows[0]["ours_passed"]}
    print(json.dumps({key: value for key, value in figures.items() if key != "lcb"}, indent=2))
    write_record("compare_lcb", figures, {"pairs": pairs, "disagreements": disagreements})
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
