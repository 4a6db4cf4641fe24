"""How a standard-input test's output is compared (issue 52), in the trusted judge: LiveCodeBench's rule (the
default), ``exact``, whitespace ``tokens``, ``casefold`` tokens, float tolerance (``float:TOL``,
``float:abs=A,rel=R``) and a row's own checker, run in the judge process, never in the candidate's. Judge-level
tests call the judge's comparison directly (no sandbox); the rules' one spelling and its errors; then rows that
name a rule or carry a checker, end to end through one ``Verifier`` (one sandbox): their verdicts, a checker's
dataset errors, and a program that hunts for the checker's text finds nothing."""

from __future__ import annotations

import builtins
import json
import secrets
import sys

import pytest
from test_stdin_judge import HUNTER, digest

from pytest_humaneval import Verifier
from pytest_humaneval.data.dataset import DatasetError
from pytest_humaneval.data.io_problems import as_problem, check_rule, problems_from_rows, with_rule
from pytest_humaneval.engine.verdict import Status
from pytest_humaneval.engine.verifier import VerifierError
from pytest_humaneval.sandbox import _judge
from pytest_humaneval.sandbox.vocabulary import IO_RULES, io_rule

EQUAL = [
    ("lcb", "1.0 \n\n", "1\n"),
    # exact: the text itself; \r\n is \n, and one final newline is optional on either side
    ("exact", "3\n", "3\n"),
    ("exact", "3", "3\n"),
    ("exact", "a  b\r\nc\r\n", "a  b\nc"),
    ("exact", "\n", ""),
    # tokens: whitespace-separated, compared as strings; lines, blank lines and runs of spaces do not count
    ("tokens", "1  2\n\n3 \n", "1 2 3\n"),
    ("tokens", "\tx\ty", "x y\n"),
    ("tokens", "", "\n\n"),
    ("casefold", "YES\nno\n", "yes\nNO\n"),
    ("casefold", "STRASSE", "straße"),
    # float: numbers within the tolerance; other tokens as strings
    ("float:1e-9", "0.1000000001\n", "0.1\n"),
    ("float:abs=1e-6", "0.100001", "0.1"),  # exactly at the bound, in decimal: equal
    ("float:rel=1e-6", "1000001", "1000000.0"),
    ("float:abs=0,rel=0", "1.50 2e1", "1.5 20"),
    ("float:1e-6", "3.0 YES", "3 YES"),
    ("float:1e-6", "-0.0", "0"),
    ("float:1e-6", "nan -NaN", "NaN nan"),
    ("float:1e-6", "inf -Infinity", "Infinity -inf"),
    ("float:abs=1e-6,rel=1e-9", "1e-7", "0"),
]

DIFFERENT = [
    ("lcb", "4\n", "3\n", "line 1: expected '3', got '4'"),
    ("exact", "3 \n", "3\n", "line 1: expected '3', got '3 '"),
    ("exact", " 3\n", "3\n", "line 1: expected '3', got ' 3'"),
    ("exact", "3\n\n", "3\n", "expected 1 line, got 2 (line 2: expected nothing, got '')"),
    ("exact", "a\nb\n", "a\n\nb\n", "line 2: expected '', got 'b'"),
    ("exact", "a\n", "a\nb\n", "expected 2 lines, got 1 (line 2: expected 'b', got nothing)"),
    ("exact", "YES\n", "Yes\n", "line 1: expected 'Yes', got 'YES'"),
    ("tokens", "1.0", "1", "token 1: expected '1', got '1.0'"),
    ("tokens", "1 2", "1 2 3", "expected 3 tokens, got 2 (token 3: expected '3', got nothing)"),
    ("tokens", "1 2 3 4 5", "1 2 3", "expected 3 tokens, got 5 (token 4: expected nothing, got '4')"),
    ("tokens", "Yes", "yes", "token 1: expected 'yes', got 'Yes'"),
    ("casefold", "YES NO", "yes yes", "token 2: expected 'yes', got 'NO'"),
    ("float:abs=1e-9", "0.100000002", "0.1", "token 1: expected '0.1', got '0.100000002'"),
    ("float:abs=1e-6", "0.1000011", "0.1", "token 1: expected '0.1', got '0.1000011'"),
    # two integers are equal only as integers: a count off by one is wrong, whatever the tolerance
    ("float:rel=1e-6", "1000000000000000001", "1000000000000000000",
     "token 1: expected '1000000000000000000', got '1000000000000000001'"),
    ("float:1e-6", "nan", "0", "token 1: expected '0', got 'nan'"),
    ("float:1e-6", "0", "nan", "token 1: expected 'nan', got '0'"),
    ("float:1e-6", "inf", "1e308", "token 1: expected '1e308', got 'inf'"),
    ("float:1e-6", "-inf", "inf", "token 1: expected 'inf', got '-inf'"),
    ("float:1e-6", "1_000", "1000", "token 1: expected '1000', got '1_000'"),
    ("float:1e-6", "0x10", "16", "token 1: expected '16', got '0x10'"),
    ("float:1e-6", "--nan NaN12 sNaN", "nan nan nan", "token 1: expected 'nan', got '--nan'"),
    ("float:1e-6", "nan NaN12", "nan nan", "token 2: expected 'nan', got 'NaN12'"),
    ("float:1e-6", "٣", "3", "token 1: expected '3', got '٣'"),
    ("float:1e-6", "YES", "yes", "token 1: expected 'yes', got 'YES'"),
    ("float:1e-6", "1e999999999", "1", "token 1: expected '1', got '1e999999999'"),
]


@pytest.mark.parametrize(("rule", "got", "expected"), EQUAL)
def test_outputs_equal_by_their_rule(rule, got, expected):
    assert _judge._compare(got, expected, rule) is None


@pytest.mark.parametrize(("rule", "got", "expected", "detail"), DIFFERENT)
def test_outputs_that_differ_say_where(rule, got, expected, detail):
    assert _judge._compare(got, expected, rule) == f"wrong answer: {detail}"


def test_a_long_line_or_token_is_cut_in_the_detail():
    long = "x" * 500
    assert _judge._compare(long + "y", long + "z", "tokens") == (
        f"wrong answer: token 1: expected '{long[:_judge.LINE_MAX]}...', got '{long[:_judge.LINE_MAX]}...'")
    assert _judge._compare(f"{long}y\n", f"{long}z\n", "exact") == (
        f"wrong answer: line 1: expected '{long[:_judge.LINE_MAX]}...', got '{long[:_judge.LINE_MAX]}...'")


def test_a_flood_of_tokens_is_compared_without_a_list_of_them():
    """Four million tokens that are not the expected text but are its tokens: equal, and the first difference past
    them is found (the tokens are read in chunks, not split into one list)."""
    expected = "1 " * 2_000_000 + "2\n"
    assert _judge._compare(expected.replace(" ", "\n"), expected, "tokens") is None
    assert _judge._compare(expected.replace(" ", "\n")[:-2] + "3\n", expected, "float:1e-6") == (
        "wrong answer: token 2000001: expected '2', got '3'")


# -- the rules' spelling ---------------------------------------------------------------------------------------

SPELLINGS = [
    ("lcb", "lcb"), ("exact", "exact"), ("tokens", "tokens"), ("casefold", "casefold"), ("checker", "checker"),
    ("float:1e-6", "float:abs=1e-06,rel=1e-06"),
    ("float:abs=1e-9", "float:abs=1e-09,rel=0.0"),
    ("float:rel=0.001", "float:abs=0.0,rel=0.001"),
    ("float:rel=1e-6,abs=0.5", "float:abs=0.5,rel=1e-06"),
    ("float:0", "float:abs=0.0,rel=0.0"),
]
REFUSED = ["", "LCB", "lcb ", "exactly", "float", "float:", "float:abs", "float:abs=", "float:-1", "float:nan",
           "float:inf", "float:abs=1,abs=2", "float:tol=1", "float:1e-6,rel=1", "float:abs=1;rel=2", 3, None]


@pytest.mark.parametrize(("rule", "canonical"), SPELLINGS)
def test_each_rule_has_one_spelling(rule, canonical):
    """The sandbox's vocabulary checks a rule and gives its one spelling; the judge reads both the same."""
    assert io_rule(rule) == canonical
    assert _judge.io_rule(rule) == _judge.io_rule(canonical)


@pytest.mark.parametrize("rule", REFUSED)
def test_a_bad_rule_is_one_line_naming_it(rule):
    with pytest.raises(ValueError) as info:
        io_rule(rule)
    message = str(info.value)
    assert "\n" not in message and "expected" in message and f"found {rule!r}" in message, message
    with pytest.raises(ValueError):
        _judge.io_rule(rule)


def test_the_rule_errors_say_what_was_expected():
    with pytest.raises(ValueError) as info:
        io_rule("exactly")
    assert str(info.value) == ("expected a comparison rule (lcb, exact, tokens, casefold, float:TOL, "
                               "float:abs=A,rel=R or checker), found 'exactly'")
    with pytest.raises(ValueError) as info:
        io_rule("float:abs=-1")
    assert str(info.value) == ("expected a tolerance that is a finite number >= 0 (float:TOL or float:abs=A,rel=R), "
                               "found 'float:abs=-1'")
    assert IO_RULES == _judge.IO_RULES


def test_a_runs_rule_is_checked_where_it_comes_from():
    """``check_rule``: a rule a run names (the lead's ``params.compare``), one line naming where; a checker is a
    row's own and is never a run's rule."""
    assert check_rule("float:1e-6", "params.compare") == "float:abs=1e-06,rel=1e-06"
    with pytest.raises(DatasetError) as info:
        check_rule("exactly", "params.compare")
    assert str(info.value) == ("params.compare: expected a comparison rule (lcb, exact, tokens, casefold, float:TOL, "
                               "float:abs=A,rel=R), found 'exactly'")
    with pytest.raises(DatasetError) as info:
        check_rule("checker", "params.compare")
    assert str(info.value) == ("params.compare: expected a comparison rule (lcb, exact, tokens, casefold, float:TOL, "
                               "float:abs=A,rel=R), found 'checker' (a row's own checker is its checker key)")


# -- a row's checker, in the judge -------------------------------------------------------------------------------

SUMS = "def check(input, expected, got):\n    a, b = map(int, input.split())\n    return got.split() == [str(a + b)]\n"


def checked(checker: str, got: bytes, given: str = "1 2\n", expected: str = "3\n") -> dict:
    """The judge's record of one output, the test read from its JSON as the judge reads it."""
    [test] = _judge.io_tests(json.dumps({"checker": checker, "tests": [[given, expected]]}))
    return _judge.judge_output(got, test, "checker")


def test_a_checker_decides_the_verdict():
    assert checked(SUMS, b"3\n") == {"status": "passed"}
    assert checked(SUMS, b"4\nmore\n") == {"status": "assertion_failed",
                                             "message": "wrong answer: the row's checker refused the output (its "
                                                        "first line: '4')"}
    sees = "def check(input, expected, got):\n    return (input, expected) == ('1 2\\n', '3\\n') and got in ('3\\n', ' 3 \\n')\n"
    assert checked(sees, b" 3 \n")["status"] == "passed"


NOT_EXPECTED = "the row's checker does not accept this test's expected output: "


@pytest.mark.parametrize(("checker", "why"), [
    ("def check(input, expected, got):\n    return 1 / 0\n", "it raised ZeroDivisionError: division by zero"),
    ("def check(input, expected, got):\n    return 1\n", "it returned int, expected a bool"),
    ("def check(input, expected, got):\n    return None\n", "it returned NoneType, expected a bool"),
    ("def check(input, expected, got):\n    return False\n", "it returned False"),
    ("def judge(input, expected, got):\n    return True\n", "it defines no check(input, expected, got)"),
    ("def check(input, expected, got)\n    return True\n", "it did not load: SyntaxError: expected ':' (line 1)"),
])
@pytest.mark.parametrize("got", [b"3\n", b"anything"])
def test_a_checker_that_fails_on_the_expected_output_is_a_dataset_error(checker, why, got):
    """A checker is the dataset's trusted text, and it must accept each test's own expected output: one that does
    not is the harness's failure (harness_error, saying so), whatever the program printed, never its pass."""
    assert checked(checker, got) == {"status": "harness_error", "message": f"{NOT_EXPECTED}{why} (a dataset error)"}


@pytest.mark.parametrize(("got", "why"), [
    (b"three\n", "could not judge the output (it raised ValueError: invalid literal for int() with base 10: "
                 "'three')"),
    (b"7 7\n", "could not judge the output (it returned NoneType, expected a bool)"),
])
def test_an_output_the_checker_cannot_read_is_a_wrong_answer(got, why):
    """Once the checker accepted the expected output, its failure on a program's output is that output's: a wrong
    answer, never a harness_error a program could choose by what it prints (a reward-hacking model would, where a
    harness_error costs the trainer a step)."""
    picky = ("def check(input, expected, got):\n    words = got.split()\n    if len(words) > 1:\n        return None\n"
             "    return int(words[0]) == sum(map(int, input.split()))\n")
    first = got.split()[0].decode()
    assert checked(picky, got) == {"status": "assertion_failed",
                                   "message": f"wrong answer: the row's checker {why} (its first line: "
                                              f"{_judge._cut(got.decode().strip())})"}
    assert first


def test_a_checker_past_its_time(monkeypatch):
    """Past its time on the expected output: the dataset's failure; on the program's output only: a wrong answer."""
    monkeypatch.setattr(_judge, "CHECKER_S", 0.2)
    assert checked("def check(input, expected, got):\n    while True:\n        pass\n", b"3\n") == {
        "status": "harness_error", "message": f"{NOT_EXPECTED}it ran past its 0.2 s limit (a dataset error)"}
    slow = "def check(input, expected, got):\n    while got != expected:\n        pass\n    return True\n"
    assert checked(slow, b"4\n") == {"status": "assertion_failed", "message": "wrong answer: the row's checker "
                                      "could not judge the output (it ran past its 0.2 s limit) (its first line: '4')"}


def test_a_checker_leaves_nothing_of_itself_in_the_judge(capsys):
    """What a checker prints goes nowhere (the judge's standard output is the supervisor's channel); a builtin it
    replaces and the streams it swaps are put back; each test's checker runs in fresh globals."""
    stdout = sys.stdout
    meddler = ("import builtins, sys\nseen = []\nbuiltins.len = lambda x: 0\nbuiltins.extra = 1\n"
               "sys.stdout = None\nprint('from the checker')\n\n\n"
               "def check(input, expected, got):\n    seen.append(got)\n    print('checking')\n"
               "    return len(seen) == 0\n")
    assert checked(meddler, b"3\n") == {"status": "passed"}
    assert checked(meddler, b"3\n") == {"status": "passed"}  # (a fresh namespace: seen is empty again)
    assert sys.stdout is stdout and len("ab") == 2 and not hasattr(builtins, "extra")
    assert "checking" not in capsys.readouterr().out


def test_the_checker_rule_needs_a_checker():
    [test] = _judge.io_tests(json.dumps([["1 2\n", "3\n"]]))
    assert _judge.judge_output(b"3\n", test, "checker") == {
        "status": "harness_error", "message": "the rule 'checker' needs the row's checker, and the tests carry none"}


@pytest.mark.parametrize(("text", "found"), [
    ('{"tests": [["1", "2"]], "checker": 3}', "a checker of int"),
    ('{"tests": [["1", "2"]]}', "keys tests"),
    ('{"tests": [["1"]], "checker": "def check(i, e, g): return True"}', "tests that are not all pairs of strings"),
])
def test_the_tests_with_a_checker_are_checked(text, found):
    with pytest.raises(ValueError) as info:
        _judge.io_tests(text)
    assert str(info.value) == (f"a standard-input problem's tests: expected [input, output] pairs of strings, or "
                               f"{{\"tests\": pairs, \"checker\": source}}, found {found}")


# -- rows, end to end --------------------------------------------------------------------------------------------

def stdin_row(question_id: str, tests: list[tuple[str, str]], **keys: object) -> dict:
    """A standard-input problem in LiveCodeBench's schema, with the rows' own keys (``compare``, ``checker``)."""
    cases = [{"input": given, "output": expected, "testtype": "stdin"} for given, expected in tests]
    return {"question_title": question_id, "question_content": "...", "platform": "codeforces",
            "question_id": question_id, "contest_id": "c", "contest_date": "2025-01-01T00:00:00", "starter_code": "",
            "difficulty": "easy", "public_test_cases": json.dumps(cases[:1]),
            "private_test_cases": json.dumps(cases[1:]), "metadata": "{}", **keys}


# Print two non-negative numbers whose sum is N: many answers are right, and only a checker can tell.
SPLIT = ("def check(input, expected, got):\n    n = int(input)\n    parts = got.split()\n"
         "    if len(parts) != 2 or not all(part.isdigit() for part in parts):\n        return False\n"
         "    return int(parts[0]) + int(parts[1]) == n\n")


def test_rows_with_their_own_rule_or_checker_are_judged_by_it(tmp_path):
    """A row's ``compare`` and ``checker`` decide its verdicts through the Verifier; a broken checker is the
    dataset's error on every sample (harness_error), never a pass; a program that hunts for the checker's text (a
    token only the checker holds, which it wants printed) finds nothing, and finds it in its own input (the
    control)."""
    hidden, told = secrets.token_hex(16), secrets.token_hex(16)
    wants = ("SECRET = {!r}\n\n\ndef check(input, expected, got):\n"
             "    return got.strip() in (SECRET, expected.strip())\n")
    rows = [
        stdin_row("split", [("5\n", "0 5\n"), ("8\n", "4 4\n")], checker=SPLIT),
        stdin_row("third", [("1\n", "0.333333333\n")], compare="float:1e-6"),
        stdin_row("answer", [("1\n", "Yes\n")], compare="casefold"),
        stdin_row("art", [("1\n", "*\n**\n")], compare="exact"),
        stdin_row("broken", [("1\n", "1\n")], checker="def check(input, expected, got):\n    return int(got) / 0\n"),
        stdin_row("hunt", [(f"{digest(hidden)}\n", "x\n")], checker=wants.format(hidden)),
        stdin_row("control", [(f"{digest(told)} {told}\n", "x\n")], checker=wants.format(told)),
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    samples = [
        ("split", "n = int(input())\nprint(n, 0)\n"),  # another right answer than the expected output's
        ("split", "n = int(input())\nprint(n, 1)\n"),
        ("third", "print(f'{1 / 3:.7f}')\n"),
        ("third", "print(0.33)\n"),
        ("answer", "print('YES')\n"),
        ("answer", "print('No')\n"),
        ("art", "print('*')\nprint('**')\n"),
        ("art", "print('* ')\nprint('**')\n"),
        ("broken", "print(1)\n"),
        ("hunt", HUNTER),
        ("control", HUNTER),
    ]
    with Verifier(path, timeout_s=20, workers=1) as verifier:
        verdicts = verifier.verify(samples)
    got = [(verdict.status, verdict.detail) for verdict in verdicts]
    assert [status for status, _ in got] == [
        Status.PASSED, Status.ASSERTION_FAILED, Status.PASSED, Status.ASSERTION_FAILED, Status.PASSED,
        Status.ASSERTION_FAILED, Status.PASSED, Status.ASSERTION_FAILED, Status.HARNESS_ERROR,
        Status.ASSERTION_FAILED, Status.PASSED], got
    assert got[1][1] == "test 1 of 2: wrong answer: the row's checker refused the output (its first line: '5 1')"
    assert got[3][1] == "test 1 of 1: wrong answer: token 1: expected '0.333333333', got '0.33'"
    assert got[5][1] == "test 1 of 1: wrong answer: token 1: expected 'Yes', got 'No'"
    assert got[7][1] == "test 1 of 1: wrong answer: line 1: expected '*', got '* '"
    assert got[8][1].endswith("test 1 of 1: the row's checker does not accept this test's expected output: it "
                              "raised ZeroDivisionError: division by zero (a dataset error)"), got[8]
    assert got[9][1].endswith("(its first line: 'none')"), got[9]


def test_a_runs_rule_replaces_the_rows_default():
    """``with_rule``: the rule of a run (the lead's ``params.compare``) for every standard-input problem but those a
    checker judges; functional problems keep theirs; a bad rule is one line."""
    rows = [stdin_row("a", [("1\n", "1\n")]), stdin_row("b", [("1\n", "1\n")], compare="exact"),
            stdin_row("c", [("1\n", "1\n")], checker=SPLIT)]
    problems = [as_problem(problem) for problem in problems_from_rows(rows)]
    assert [problem.io for problem in problems] == ["lcb", "exact", "checker"]
    assert [problem.io for problem in with_rule(problems, "float:1e-6")] == [
        "float:abs=1e-06,rel=1e-06", "float:abs=1e-06,rel=1e-06", "checker"]
    with pytest.raises(DatasetError) as info:
        with_rule(problems, "checker")
    assert str(info.value).startswith("compare: expected a comparison rule")


# -- a run's rule: params.compare, the Verifier's compare, evaluate's --compare ------------------------------------

def test_a_runs_rule_through_the_config_verifier_and_evaluate(tmp_path, capsys):
    """``params.compare`` (and the Verifier's ``compare``, evaluate's ``--compare``) judges every standard-input
    problem by that rule; it is in the digest and the label; a bad one, or one over problems that read no
    standard input, is one error naming the key."""
    from pytest_humaneval.__main__ import main
    from pytest_humaneval.config import ConfigError, load_config
    from pytest_humaneval.engine.planning import build_plan

    rows = tmp_path / "rows.jsonl"
    rows.write_text(json.dumps(stdin_row("yes", [("1\n", "Yes\n")])) + "\n")
    samples = tmp_path / "samples.jsonl"
    samples.write_text(json.dumps({"task_id": "yes", "solution": "print('YES')\n"}) + "\n")
    config = tmp_path / "run.yaml"

    def plan(params: str):
        config.write_text(f"dataset: rows.jsonl\ntarget: {{mode: samples, samples: samples.jsonl}}\n"
                          f"params: {{allow_code_execution: true{params}}}\n")
        return build_plan(load_config(config), expected=False)

    plain, folded = plan(""), plan(", compare: casefold")
    assert plain.selection.digest != folded.selection.digest
    assert "compared by casefold" in folded.selection.label and "compared by" not in plain.selection.label
    assert plan(", compare: 'float:1e-6'").selection.settings["compare"] == "float:abs=1e-06,rel=1e-06"
    with pytest.raises(ConfigError, match=r"run\.yaml: params\.compare: expected a comparison rule \(lcb, exact, "
                                          r"tokens, casefold, float:TOL, float:abs=A,rel=R\), found 'fuzzy'$"):
        plan(", compare: fuzzy")
    config.write_text("target: {mode: samples, samples: samples.jsonl}\n"
                      "params: {allow_code_execution: true, compare: exact}\n")
    samples_he = tmp_path / "he.jsonl"
    samples_he.write_text('{"task_id": "HumanEval/0", "completion": "    return True\\n"}\n')
    config.write_text(config.read_text().replace("samples.jsonl", "he.jsonl"))
    with pytest.raises(ConfigError, match=r"params\.compare: expected a dataset of standard-input problems "
                                          r"\(LiveCodeBench's rows\.\.\.\), found openai_humaneval, which has none$"):
        build_plan(load_config(config), expected=False)

    with Verifier(rows, workers=1) as plain_verifier, Verifier(rows, workers=1, compare="casefold") as verifier:
        assert plain_verifier.verify([("yes", "print('YES')\n")])[0].status is Status.ASSERTION_FAILED
        assert verifier.verify([("yes", "print('YES')\n")])[0].status is Status.PASSED
    with pytest.raises(VerifierError, match=r"^Verifier: params\.compare: expected a comparison rule"):
        Verifier(rows, compare="checker")

    assert main(["evaluate", "--dataset", str(rows), "--samples", str(samples), "--compare", "casefold",
                 "--workers", "1", "-q"]) == 0
    assert "pass@1 1.000" in capsys.readouterr().out


def test_the_checker_accepts_the_expected_output_outside_the_samples_memory(tmp_path):
    """The judge asks the checker about a test's expected output before the program's output is read and outside
    the address-space limit it judges a sample under: whether the checker accepts it is the dataset's matter, which
    neither what a program prints nor what it takes decides (a checker that mapped more address space than a sample's
    limit, 400 MiB here against memory_mb 128, failed there: a harness_error, which a reward function raises on).
    (Mapped, not touched: the sample's cgroup, which the judge shares while it judges, never sees it.)"""
    hungry = ("import mmap\n\n\ndef check(input, expected, got):\n    if got == expected:\n"
              "        mmap.mmap(-1, 400 << 20).close()\n        return True\n"
              "    return got.strip() == expected.strip()\n")
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(stdin_row("hungry", [("1\n", "7\n")], checker=hungry)) + "\n")
    with Verifier(path, workers=1, memory_mb=128) as verifier:
        right, wrong = verifier.verify([("hungry", "print(' 7 ')\n"), ("hungry", "print(8)\n")])
    assert right.status is Status.PASSED, right.detail
    assert wrong.status is Status.ASSERTION_FAILED and "the row's checker refused the output" in wrong.detail, \
        wrong.detail
