"""Standard-input and functional problems judged end to end (issue 52): a rows file in LiveCodeBench's schema is a
dataset for the ``Verifier`` and for a pytest run in samples mode; the bundled corpus's reference programs pass and
its wrong ones fail on the test they fail; a functional problem's answers are compared in the judge as plain values,
so an always-equal object or a patched ``json`` changes nothing, and its expected values are nowhere the program can
look. The sandbox's side of a standard-input test is tests/test_stdin_judge.py (every isolation mode)."""

from __future__ import annotations

import hashlib
import json
import secrets
from pathlib import Path

import pytest

from pytest_humaneval import Verifier
from pytest_humaneval.engine.verdict import Status

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "pytest_humaneval" / "fixtures"
PROGRAMS = json.loads((FIXTURES / "io_corpus_programs.json").read_text())


def functional_row(question_id: str, func_name: str, tests: list[tuple[list, object]]) -> dict:
    """A functional problem in LiveCodeBench's schema: each test's arguments one JSON value a line."""
    cases = [{"input": "\n".join(json.dumps(argument) for argument in arguments), "output": json.dumps(expected),
              "testtype": "functional"} for arguments, expected in tests]
    return {"question_title": question_id, "question_content": "...", "platform": "leetcode",
            "question_id": question_id, "contest_id": "c", "contest_date": "2025-01-01T00:00:00",
            "starter_code": f"class Solution:\n    def {func_name}(self):\n        pass\n", "difficulty": "easy",
            "public_test_cases": json.dumps(cases[:1]), "private_test_cases": json.dumps(cases[1:]),
            "metadata": json.dumps({"func_name": func_name})}


def test_the_corpus_references_pass_and_the_wrong_programs_fail():
    samples = []
    for task, pair in PROGRAMS.items():
        samples += [(task, pair["reference"]), {"task_id": task, "solution": pair["wrong"]}]
    with Verifier(FIXTURES / "io_corpus.jsonl", timeout_s=6) as verifier:
        verdicts = verifier.verify(samples)
    assert [v.status for v in verdicts[0::2]] == [Status.PASSED] * len(PROGRAMS), verdicts[0::2]
    assert [v.status for v in verdicts[1::2]] == [Status.ASSERTION_FAILED] * len(PROGRAMS), verdicts[1::2]
    assert all("wrong answer" in v.detail and " of " in v.detail for v in verdicts[1::2]), verdicts[1::2]


def test_functional_answers_are_compared_in_the_judge(tmp_path):
    """The answer crosses as a plain value and the judge compares it: an always-equal object, a list subclass whose
    == says True, a patched json module, an exit before the answer: none passes; the right answer does."""
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(functional_row("twice", "twice", [([3], 6), ([5], 10)])) + "\n")
    right = "class Solution:\n    def twice(self, n):\n        return 2 * n\n"
    cheats = {
        "always equal": ("class Always:\n    def __eq__(self, other):\n        return True\n\n\n"
                         "class Solution:\n    def twice(self, n):\n        return Always()\n"),
        "list that equals all": ("class Yes(list):\n    def __eq__(self, other):\n        return True\n\n\n"
                                 "class Solution:\n    def twice(self, n):\n        return Yes()\n"),
        "json patched": ("import json\njson.loads = lambda *a, **k: 0\njson.dumps = lambda *a, **k: '0'\n\n\n"
                         "class Solution:\n    def twice(self, n):\n        return 0\n"),
        "exit before answering": "import sys\n\n\nclass Solution:\n    def twice(self, n):\n        sys.exit(0)\n",
        "a module-level function of another name": "def other(n):\n    return 2 * n\n",
    }
    with Verifier(path) as verifier:
        verdicts = verifier.verify([("twice", right), *[("twice", code) for code in cheats.values()]])
    assert verdicts[0].status is Status.PASSED, verdicts[0]
    got = {name: verdict.status for name, verdict in zip(cheats, verdicts[1:], strict=True)}
    assert Status.PASSED not in got.values(), {name: v.detail for name, v in zip(cheats, verdicts[1:], strict=True)}


def test_a_functional_problems_expected_values_are_nowhere_the_program_looks(tmp_path):
    """The method searches its whole process (every object, every frame) for a 32-hex-digit string with the SHA-256
    it is given, the expected answer's: it finds it when the token is among its own arguments (the control), and
    nowhere else."""
    hidden, told = secrets.token_hex(16), secrets.token_hex(16)

    def digest(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    path = tmp_path / "rows.jsonl"
    rows = [functional_row("hunt", "hunt", [([digest(hidden), ""], hidden)]),
            functional_row("control", "hunt", [([digest(told), told], told)])]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    hunter = ("import gc, hashlib, re, sys\n\n\nclass Solution:\n    def hunt(self, target, given):\n"
              "        token = re.compile(r'\\b[0-9a-f]{32}\\b')\n"
              "        def matches(text):\n"
              "            return [t for t in token.findall(text) if hashlib.sha256(t.encode()).hexdigest() == target]\n"
              "        found = matches(given)\n"
              "        for item in gc.get_objects():\n"
              "            if isinstance(item, (dict, list, tuple)) and item is not found:\n"
              "                for value in (item.values() if isinstance(item, dict) else item):\n"
              "                    if isinstance(value, str):\n"
              "                        found += matches(value)\n"
              "        frame = sys._getframe()\n"
              "        while frame is not None:\n"
              "            for value in list(frame.f_locals.values()) + list(frame.f_globals.values()):\n"
              "                if isinstance(value, str):\n"
              "                    found += matches(value)\n"
              "            frame = frame.f_back\n"
              "        return found[0] if found else 'none'\n")
    with Verifier(path, timeout_s=10) as verifier:
        hunted, control = verifier.verify([("hunt", hunter), ("control", hunter)])
    assert control.status is Status.PASSED, control
    assert hunted.status is Status.ASSERTION_FAILED and "got 'none'" in hunted.detail, hunted


def test_the_example_config_runs_the_corpus(pytester):
    """examples/io-corpus.yaml, as the README gives it: the references pass, the wrong programs fail, each with the
    test it failed."""
    result = pytester.runpytest("--humaneval-config", str(ROOT / "examples" / "io-corpus.yaml"), "-rf",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(PROGRAMS), failed=len(PROGRAMS))
    result.stdout.fnmatch_lines(["score     pass@1 0.500  (8 problems, 16 samples)",
                                 "coverage  1.000 (16/16 attempted)",
                                 "  io/bracket-check[[]1[]] assertion_failed: test 1 of 4: wrong answer: line 2: expected "
                                 "'NO', got 'YES'"])


def test_livecodebenchs_saved_generations_are_a_samples_file(pytester):
    """LiveCodeBench's own output file (a JSON list of {question_id, code_list, ...}) scores as it is: each program of
    a code_list a sample of its question; an unknown question is one error naming its index."""
    import shutil

    shutil.copy(FIXTURES / "io_corpus.jsonl", pytester.path / "rows.jsonl")
    # as LiveCodeBench's runner writes them: the statement and the model's answers first, code_list last
    outputs = [{"question_title": task, "question_content": "A statement. " * 400, "platform": "atcoder",
                "question_id": task, "output_list": ["```python\n...\n```"] * 2,
                "code_list": [pair["reference"], pair["wrong"]]} for task, pair in PROGRAMS.items()]
    (pytester.path / "generations.json").write_text(json.dumps(outputs, indent=4))
    config = pytester.makefile(".yaml", run="target: {mode: samples, samples: generations.json}\n"
                                            "dataset: rows.jsonl\nparams: {allow_code_execution: true, timeout_s: 6}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(PROGRAMS), failed=len(PROGRAMS))
    (pytester.path / "generations.json").write_text(json.dumps([{"question_id": "nope", "code_list": ["x"]}]))
    result = pytester.runpytest("--humaneval-config", str(config), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(['*generations.json: [[]0[]]: question_id: expected a task of the dataset, '
                                 'found "nope"'])


def test_the_score_per_difficulty_and_platform(pytester):
    """The terminal, the report and the Markdown summary break the score down by the rows' difficulty and platform:
    here every LeetCode-style problem gets its wrong program and every other its reference."""
    import shutil

    rows = [json.loads(line) for line in (FIXTURES / "io_corpus.jsonl").read_text().splitlines() if line.strip()]
    shutil.copy(FIXTURES / "io_corpus.jsonl", pytester.path / "rows.jsonl")
    right = {row["question_id"]: row["platform"] != "leetcode" for row in rows}
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps(
        {"task_id": task, "solution": PROGRAMS[task]["reference" if ok else "wrong"]}) + "\n"
        for task, ok in right.items()))
    config = pytester.makefile(".yaml", run="target: {mode: samples, samples: samples.jsonl}\n"
                                            "dataset: rows.jsonl\nparams: {allow_code_execution: true, timeout_s: 6}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "-p", "no:cacheprovider",
                                "--humaneval-report", "report.json", "--humaneval-markdown", "summary.md")
    expected: dict[str, dict[str, dict]] = {}
    for facet in ("difficulty", "platform"):
        for row in rows:
            group = expected.setdefault(facet, {}).setdefault(row[facet], {"problems": 0, "passed": 0})
            group["problems"] += 1
            group["passed"] += right[row["question_id"]]
    report = json.loads((pytester.path / "report.json").read_text())
    assert report["breakdown"] == {facet: {name: {"problems": g["problems"], "pass_at": {"pass@1": g["passed"] /
                                                                                         g["problems"]}}
                                           for name, g in sorted(groups.items())}
                                   for facet, groups in expected.items()}
    assert report["breakdown"]["platform"]["leetcode"]["pass_at"]["pass@1"] == 0.0
    result.stdout.fnmatch_lines(["*by platform: atcoder pass@1 1.000 (*)  codeforces pass@1 1.000 (*)  leetcode "
                                 "pass@1 0.000 (3)"])
    assert "| leetcode | 3 | 0.000 |" in (pytester.path / "summary.md").read_text()


def test_the_safety_net_leaves_room_for_every_test(pytester):
    """pytest-timeout's safety net on an item (set when the user set no timeout) is the sandbox's limit on the
    sample plus a margin: for a standard-input problem, timeout_s for each of its tests, judged at most twice."""
    import shutil

    shutil.copy(FIXTURES / "io_corpus.jsonl", pytester.path / "rows.jsonl")
    rows = [json.loads(line) for line in (FIXTURES / "io_corpus.jsonl").read_text().splitlines() if line.strip()]
    stdin = next(row for row in rows if json.loads(row["metadata"] or "{}").get("func_name") is None)
    (pytester.path / "samples.jsonl").write_text(json.dumps({"task_id": stdin["question_id"], "solution": "pass"})
                                                 + "\n")
    pytester.makeconftest("""
        def pytest_collection_finish(session):
            for item in session.items:
                marker = item.get_closest_marker("timeout")
                print("NET", item.name, marker.args[0] if marker else None)
    """)
    config = pytester.makefile(".yaml", run="target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            "dataset: rows.jsonl\nparams: {allow_code_execution: true, timeout_s: 2}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "-p", "no:cacheprovider", "--collect-only", "-s")
    with Verifier(FIXTURES / "io_corpus.jsonl") as verifier:
        tests = verifier.problems[stdin["question_id"]].io_tests
    assert tests > 1
    result.stdout.fnmatch_lines([f"NET {stdin['question_id']}[[]0[]] {2 * 2.0 * tests + 60.0}"])


def test_each_call_of_a_functional_problem_has_its_own_time_limit(tmp_path):
    """timeout_s limits each test (each call) of a functional problem, as LiveCodeBench limits each: four calls of
    0.8 s pass under timeout_s 2; a call that never returns times out on its own, and says so."""
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(functional_row("slow", "slow", [([n], n) for n in range(4)])) + "\n")
    steady = "import time\n\n\nclass Solution:\n    def slow(self, n):\n        time.sleep(0.8)\n        return n\n"
    stuck = "class Solution:\n    def slow(self, n):\n        while n == 2:\n            pass\n        return n\n"
    with Verifier(path, timeout_s=2) as verifier:
        passed, hung = verifier.verify([("slow", steady), ("slow", stuck)])
    assert passed.status is Status.PASSED, passed
    assert hung.status is Status.TIMEOUT and hung.detail.startswith(
        "a call of the program (one test) took longer than its 2 s"), hung


def test_programs_get_livecodebenchs_environment(tmp_path):
    """The modules LiveCodeBench's judge imports before every program are there without an import, as a model's
    answer copied from the starter code expects (typing's List; collections' defaultdict, math's gcd): the
    reference's verdicts. Its lines are not the program's: a crash names the program's own line."""
    path = tmp_path / "rows.jsonl"
    stdin_row = {**functional_row("gcds", "x", []), "metadata": "{}", "question_id": "gcds",
                 "public_test_cases": json.dumps([{"input": "12 18\n", "output": "6\n", "testtype": "stdin"}]),
                 "private_test_cases": json.dumps([])}
    rows = [functional_row("total", "total", [([[1, 2, 3]], 6)]), stdin_row]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    typed = "class Solution:\n    def total(self, nums: List[int]) -> int:\n        return sum(nums)\n"
    bare = "counts = defaultdict(int)\na, b = map(int, input().split())\nprint(gcd(a, b))\n"
    with Verifier(path) as verifier:
        got = verifier.verify([("total", typed), ("gcds", bare)])
    assert [v.status for v in got] == [Status.PASSED, Status.PASSED], got
    from pytest_humaneval.data.io_problems import ENVIRONMENT
    from pytest_humaneval.sandbox import Limits, Program, Sandbox

    box = Sandbox("auto").start()
    try:
        crashed = box.run(Program("", "x = 1\nraise ValueError('mine')\n", json.dumps([["", "1\n"]]), "", whole=True,
                                  io="lcb", io_tests=1, preamble=ENVIRONMENT), Limits(timeout_s=5))
    finally:
        box.close()
    assert 'File "<humaneval>", line 2, in <module>' in crashed.stderr, crashed.stderr
