"""Standard-input and functional problems (issue 52), the data layer: each row shape read into an IOProblem, every
error one line, the pickled private tests decoded without running anything, the HumanEval fronts' one error on
these files, and the bundled corpus checked (its reference programs pass, its wrong ones fail: plain processes,
not the judge, which is not built yet). Default tier: no sandbox."""

from __future__ import annotations

import base64
import gzip
import json
import os
import pickle
import pickletools
import subprocess
import sys
import zlib
from pathlib import Path

import pytest
from test_evaluate import evaluate

from pytest_humaneval.data import io_problems
from pytest_humaneval.data.dataset import DatasetError, load_dataset
from pytest_humaneval.data.io_problems import (
    IOProblem,
    IOTest,
    io_shape,
    load_io_problems,
    problems_from_rows,
)

FIXTURES = Path(io_problems.__file__).resolve().parents[1] / "fixtures"
CORPUS = FIXTURES / "io_corpus.jsonl"
PROGRAMS = FIXTURES / "io_corpus_programs.json"
DOCS = "docs/datasets.md#standard-input-and-functional-problems"
# (not imported by its own name, which pytest would collect as a test)
from_ground_truth = io_problems.tests_from_ground_truth


def packed(value: object, protocol: int = pickle.DEFAULT_PROTOCOL) -> str:
    """As LiveCodeBench publishes private tests: base64 of zlib of a pickle (of the tests' JSON string)."""
    return base64.b64encode(zlib.compress(pickle.dumps(value, protocol=protocol))).decode()


def packed_bytes(data: bytes) -> str:
    return base64.b64encode(zlib.compress(data)).decode()


def lcb_row(question_id: str = "q1", private: object = None, **overrides) -> dict:
    public = [{"input": "1 2\n", "output": "3\n", "testtype": "stdin"}]
    hidden = [{"input": "5 5\n", "output": "10\n", "testtype": "stdin"},
              {"input": "0 0\n", "output": "0\n", "testtype": "stdin"}]
    row = {"question_title": "Add", "question_content": "Print A + B.", "platform": "atcoder",
           "question_id": question_id, "contest_id": "c1", "contest_date": "2025-01-11T00:00:00",
           "starter_code": "", "difficulty": "easy", "public_test_cases": json.dumps(public),
           "private_test_cases": json.dumps(hidden) if private is None else private, "metadata": "{}"}
    row.update(overrides)
    return row


FUNCTIONAL_PUBLIC = [{"input": "[1, 2]\n3", "output": "[1, 2, 3]", "testtype": "functional"}]
FUNCTIONAL_PRIVATE = [{"input": "[]\n0", "output": "[0]", "testtype": "functional"}]


def functional_row(**overrides) -> dict:
    row = lcb_row("2001", platform="leetcode", starter_code="class Solution:\n    def put(self, a, x):\n        ",
                  public_test_cases=json.dumps(FUNCTIONAL_PUBLIC),
                  private_test_cases=packed(json.dumps(FUNCTIONAL_PRIVATE)), metadata='{"func_name": "put"}')
    row.update(overrides)
    return row


def write_jsonl(path: Path, rows: list) -> Path:
    text = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def one(rows: list) -> IOProblem:
    [problem] = problems_from_rows(rows)
    return problem


def refused(rows: list) -> str:
    with pytest.raises(DatasetError) as info:
        problems_from_rows(rows)
    return str(info.value)


# -- LiveCodeBench -------------------------------------------------------------------------------------------------

def test_livecodebench_stdin_row():
    """A code_generation_lite row: its fields, public tests first, the private ones after."""
    assert one([lcb_row()]) == IOProblem(
        "q1", "Print A + B.", "", "stdin", None,
        (IOTest("1 2\n", "3\n"), IOTest("5 5\n", "10\n"), IOTest("0 0\n", "0\n")), 1,
        "atcoder", "2025-01-11T00:00:00", "easy")


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_livecodebench_published_private_tests_decode(protocol):
    """Private tests as LiveCodeBench publishes them (base64 of zlib of a pickle of the JSON string) decode, under
    every pickle protocol, to what the JSON string says; a functional problem takes metadata's func_name."""
    row = functional_row(private_test_cases=packed(json.dumps(FUNCTIONAL_PRIVATE), protocol))
    assert one([row]) == IOProblem("2001", "Print A + B.", row["starter_code"], "functional", "put",
                                   (IOTest("[1, 2]\n3", "[1, 2, 3]"), IOTest("[]\n0", "[0]")), 1,
                                   "leetcode", "2025-01-11T00:00:00", "easy")
    # the JSON string pickled as bytes (protocol 3 on: before it, bytes pickle as a call of _codecs.encode, a
    # global, refused), and already decoded lists, are read too
    bytes_row = functional_row(private_test_cases=packed(json.dumps(FUNCTIONAL_PRIVATE).encode(), protocol))
    if protocol >= 3:
        assert one([bytes_row]).tests == one([row]).tests
    else:
        assert refused([bytes_row]).endswith("found one that asks for the global _codecs.encode: refused, nothing run")
    listed = functional_row(public_test_cases=FUNCTIONAL_PUBLIC, private_test_cases=FUNCTIONAL_PRIVATE)
    assert one([listed]).tests == one([row]).tests


class RunsACommand:
    """What an attacker pickles: unpickling it calls os.system."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def attacks(marker: Path) -> dict[str, bytes]:
    """Pickles that would run ``touch marker`` if unpickled as pickle.loads does, by each route to a global."""
    command = f"touch {marker}"
    system = f"{os.system.__module__}\n{os.system.__name__}\n".encode()
    return {
        # __reduce__ -> STACK_GLOBAL + REDUCE (protocol 4) and GLOBAL + REDUCE (protocol 0)
        "reduce_protocol_4": pickle.dumps(RunsACommand(command), protocol=4),
        "reduce_protocol_0": pickle.dumps(RunsACommand(command), protocol=0),
        # INST: protocol 0's instance opcode calls the class it names with the arguments after MARK
        "inst": b"(S'" + command.encode() + b"'\ni" + system + b".",
        # OBJ: protocol 1's, with the "class" fetched by GLOBAL
        "obj": b"(c" + system + b"S'" + command.encode() + b"'\no.",
    }


@pytest.mark.parametrize("route", ["reduce_protocol_4", "reduce_protocol_0", "inst", "obj"])
def test_pickle_asking_for_a_global_is_refused_and_nothing_runs(tmp_path, route):
    """A pickle that asks for os.system is refused by the global's name, and the command never runs: the file it
    would create does not exist. (pickle.loads on the same bytes would create it: the attack is real.)"""
    marker = tmp_path / "pwned"
    data = attacks(marker)[route]
    row = lcb_row(private=packed_bytes(data))
    assert refused([row]) == (
        f"row 0: private_test_cases: expected a pickle of plain values (strings, bytes, numbers, containers), found "
        f"one that asks for the global {os.system.__module__}.{os.system.__name__}: refused, nothing run")
    assert not marker.exists()
    # the control: the same bytes through plain pickle (in a child process) do run the command
    subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                   input=data, check=True, timeout=60)
    assert marker.exists()


def test_pickle_asking_for_more_than_plain_values_is_refused(tmp_path):
    """A persistent id, an extension code (which the C unpickler may resolve from copyreg's cache without asking
    find_class) and an out-of-band buffer are refused by opcode before anything loads; a pickle of a list is not
    the JSON string LiveCodeBench publishes; a torn pickle is unreadable."""
    cases = {
        b"P1\n.": "found one that asks for the opcode PERSID: refused, nothing run",
        b"\x80\x02\x82\xf0.": "found one that asks for the opcode EXT1: refused, nothing run",
        b"\x80\x05\x97.": "found one that asks for the opcode NEXT_BUFFER: refused, nothing run",
    }
    for data, expected in cases.items():
        message = refused([lcb_row(private=packed_bytes(data))])
        assert message == ("row 0: private_test_cases: expected a pickle of plain values (strings, bytes, numbers, "
                           f"containers), {expected}")
    assert refused([lcb_row(private=packed([{"input": "1", "output": "1", "testtype": "stdin"}]))]) == (
        "row 0: private_test_cases: expected a pickled JSON string, found a pickled list")
    torn = pickle.dumps("[]")[:-3]
    assert refused([lcb_row(private=packed_bytes(torn))]).startswith(
        "row 0: private_test_cases: expected a pickle of a JSON string, found an unreadable one (")


def test_zlib_bomb_is_refused(monkeypatch):
    """The inflated size is capped (1 GiB): a stream that inflates past the cap is refused by name, and nothing is
    unpickled. (The cap is lowered here so that the bomb stays small: 2 MiB of zeros in 2 KB.)"""
    assert io_problems.MAX_DECOMPRESSED == 1 << 30
    monkeypatch.setattr(io_problems, "MAX_DECOMPRESSED", 1 << 20)
    bomb = base64.b64encode(zlib.compress(b"\0" * (2 << 20), 9)).decode()
    assert len(bomb) < 4000
    assert refused([lcb_row(private=bomb)]) == (
        "row 0: private_test_cases: expected at most 1048576 bytes once decompressed, found more: refused (a zlib "
        "bomb), nothing unpickled")
    fits = packed(json.dumps([]))
    assert one([lcb_row(private=fits)]).tests == (IOTest("1 2\n", "3\n"),)


def test_a_pickle_of_many_objects_is_refused_before_any_is_built():
    """A million empty lists from a megabyte (tens of bytes of memory each from one byte of input): refused by its
    opcodes' count before anything is unpickled; LiveCodeBench's own pickles, a few opcodes, load."""
    bomb = b"\x80\x04" + b"]" * 1_000_000 + b"."
    assert refused([lcb_row(private=packed_bytes(bomb))]) == (
        f"row 0: private_test_cases: expected the pickle of one JSON string (a few opcodes), found one of more than "
        f"{io_problems.MAX_OPCODES} opcodes: refused, nothing unpickled")
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert one([lcb_row(private=packed(json.dumps([]), protocol))]).tests == (IOTest("1 2\n", "3\n"),)


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"question_id": ""}, "question_id: expected a non-empty string, found \"\""),
    ({"question_id": 7}, "question_id: expected a non-empty string, found 7"),
    ({"question_content": 3}, "question_content: expected a string, found 3"),
    ({"platform": 1}, "platform: expected a string, found 1"),
    ({"public_test_cases": None}, "public_test_cases: expected a JSON string of a list of tests, found nothing"),
    ({"public_test_cases": "[{"}, "public_test_cases: expected a JSON list of tests, found invalid JSON (Expecting "
                                  "property name enclosed in double quotes: line 1 column 3 (char 2))"),
    ({"public_test_cases": '{"a": 1}'}, "public_test_cases: expected a JSON list of tests, found dict"),
    ({"public_test_cases": "[]", "private_test_cases": "[]"},
     "public_test_cases: expected at least one test, found none"),
    ({"public_test_cases": "[1]"}, "public_test_cases[0]: expected an object with input, output and testtype, "
                                   "found int"),
    ({"public_test_cases": '[{"input": "1", "output": "1", "testtype": "file"}]'},
     "public_test_cases[0].testtype: expected stdin or functional, found \"file\""),
    ({"public_test_cases": '[{"input": 1, "output": "1", "testtype": "stdin"}]'},
     "public_test_cases[0].input: expected a string, found int"),
    ({"private_test_cases": '[{"input": "1", "output": "1", "testtype": "functional"}]'},
     "private_test_cases[0].testtype: expected stdin like the problem's first test, found functional"),
    ({"private_test_cases": base64.b64encode(b"plain").decode()},
     "private_test_cases: expected zlib data inside the base64, found none (Error -3 while decompressing data: "
     "incorrect header check)"),
    ({"private_test_cases": "a"}, "private_test_cases: expected a JSON list, or base64 of zlib of a pickle of one, "
                                  "found neither"),
    ({"private_test_cases": base64.b64encode(zlib.compress(pickle.dumps("[]"))[:-6]).decode()},
     "private_test_cases: expected a whole zlib stream inside the base64, found a cut one"),
    ({"metadata": "{"}, "metadata: expected a JSON object, found invalid JSON (Expecting property name enclosed "
                        "in double quotes: line 1 column 2 (char 1))"),
    ({"metadata": '{"func_name": "f"}'}, "metadata.func_name: expected none beside stdin tests, found \"f\""),
])
def test_livecodebench_errors(overrides, expected):
    """Each bad LiveCodeBench row is one line naming the row, the key, what was expected and what was found."""
    assert refused([lcb_row(**overrides)]) == f"row 0: {expected}"


@pytest.mark.parametrize(("overrides", "expected"), [
    ({"metadata": "{}"}, "metadata.func_name: expected the name of the function called (an identifier) for "
                         "functional tests, found null"),
    ({"metadata": '{"func_name": "a b"}'}, "metadata.func_name: expected the name of the function called (an "
                                           "identifier) for functional tests, found \"a b\""),
    ({"public_test_cases": json.dumps([{"input": "[1\n2", "output": "1", "testtype": "functional"}])},
     "public_test_cases[0].input: expected one JSON value per line (the arguments), found line 1 not JSON: '[1'"),
    ({"public_test_cases": json.dumps([{"input": "1", "output": "nope", "testtype": "functional"}])},
     "public_test_cases[0].output: expected the return value as JSON, found 'nope'"),
])
def test_functional_errors(overrides, expected):
    """A functional problem needs func_name, and its tests are JSON: one value per input line, one output."""
    assert refused([functional_row(**overrides)]) == f"row 0: {expected}"


# -- APPS / TACO -----------------------------------------------------------------------------------------------

def test_apps_standard_input_rows():
    """APPS: input_output as a JSON string; a list of lines is joined with newlines as APPS's judge joins it;
    the task id is problem_id. TACO: input_output already a mapping, no id: the row's index; its source."""
    apps = {"problem_id": 4021, "question": "Sum.", "starter_code": "", "difficulty": "interview",
            "input_output": json.dumps({"inputs": ["1 2\n", ["3 4", "5"]], "outputs": ["3\n", ["7", "5"]]})}
    assert one([apps]) == IOProblem("4021", "Sum.", "", "stdin", None,
                                    (IOTest("1 2\n", "3\n"), IOTest("3 4\n5", "7\n5")), 0, None, None, "interview")
    taco = {"question": "Echo.", "input_output": {"inputs": ["a\n"], "outputs": ["a\n"]}, "source": "codeforces",
            "difficulty": "EASY"}
    assert problems_from_rows([dict(taco, id="t-9"), taco])[1] == IOProblem(
        "1", "Echo.", "", "stdin", None, (IOTest("a\n", "a\n"),), 0, "codeforces", None, "EASY")
    assert one([dict(taco, id="t-9")]).task_id == "t-9"


def test_apps_call_based_rows():
    """Call-based: argument lists become one JSON value per line; APPS's singleton list around the expected value
    is taken off (a longer list is the value itself); strings are JSON text already (verl's form)."""
    row = {"problem_id": 7, "question": "Add.", "starter_code": "def add(a, b):\n\t",
           "input_output": {"fn_name": "add", "inputs": [[1, 2], [[1], "x"], "[3]\n4"], "outputs": [[3], [[1, 2]], "7"]}}
    problem = one([row])
    assert (problem.kind, problem.func_name) == ("functional", "add")
    assert problem.tests == (IOTest("1\n2", "3"), IOTest('[1]\n"x"', "[1, 2]"), IOTest("[3]\n4", "7"))
    assert one([{**row, "input_output": {**row["input_output"], "outputs": [[1, 2], [], "7"]}}]).tests[:2] == (
        IOTest("1\n2", "[1, 2]"), IOTest('[1]\n"x"', "[]"))


@pytest.mark.parametrize(("input_output", "expected"), [
    ("{", "input_output: expected a JSON object with inputs and outputs, found invalid JSON (Expecting property "
          "name enclosed in double quotes: line 1 column 2 (char 1))"),
    ("[]", "input_output: expected an object with inputs and outputs, found list"),
    ({"outputs": []}, "input_output: inputs: expected a list, found nothing"),
    ({"inputs": ["1"], "outputs": "1"}, "input_output: outputs: expected a list, found str"),
    ({"inputs": ["1"], "outputs": []}, "input_output: outputs: expected one per input (1), found 0"),
    ({"inputs": [], "outputs": []}, "input_output: inputs: expected at least one test, found none"),
    ({"inputs": [["1", 2]], "outputs": ["1"]}, "input_output: inputs[0]: expected a string or a list of lines "
                                               "(strings), found [\"1\", 2]"),
    ({"inputs": [[1]], "outputs": [[{1, 2}]], "fn_name": "f"},
     "input_output: outputs[0]: expected JSON values, found set (Object of type set is not JSON serializable)"),
    ({"inputs": ["not json"], "outputs": ["1"], "fn_name": "f"},
     "input_output: inputs[0]: expected one JSON value per line (the arguments), found line 1 not JSON: 'not json'"),
    ({"inputs": [[1]], "outputs": ["1"], "fn_name": 3},
     "input_output: fn_name: expected the name of the function called (an identifier) for functional tests, found 3"),
])
def test_apps_errors(input_output, expected):
    """Each bad APPS/TACO row is one line naming the key inside input_output."""
    assert refused([{"question": "Q", "input_output": input_output}]) == f"row 0: {expected}"


def test_apps_task_id_errors():
    assert refused([{"question": "Q", "input_output": {"inputs": ["1"], "outputs": ["1"]}, "problem_id": [1]}]) == (
        "row 0: problem_id: expected a task id (a string or a number), found [1]")


# -- CodeContests ----------------------------------------------------------------------------------------------

def test_codecontests_rows():
    """name is the task id; public, private, generated tests in that order (public counted); the proto's source
    and difficulty numbers named."""
    row = {"name": "1234_A. Tiles", "description": "Tile it.", "source": 2, "difficulty": 7,
           "public_tests": {"input": ["1\n"], "output": ["1\n"]},
           "private_tests": {"input": ["2\n", "3\n"], "output": ["4\n", "9\n"]},
           "generated_tests": {"input": ["4\n"], "output": ["16\n"]}}
    assert one([row]) == IOProblem("1234_A. Tiles", "Tile it.", "", "stdin", None,
                                   (IOTest("1\n", "1\n"), IOTest("2\n", "4\n"), IOTest("3\n", "9\n"),
                                    IOTest("4\n", "16\n")), 1, "codeforces", None, "A")
    sparse = {"name": "p", "source": 6, "difficulty": 0, "private_tests": {"input": ["x"], "output": ["y"]}}
    assert one([sparse]) == IOProblem("p", "", "", "stdin", None, (IOTest("x", "y"),), 0, "atcoder", None, None)
    assert refused([{**row, "source": 5}]) == ("row 0: source: expected one of CodeContests' numbers (1, 2, 3, 4, "
                                              "6, 7) or a name, found 5")
    assert refused([{**row, "private_tests": {"input": ["1"], "output": []}}]) == (
        'row 0: private_tests: expected input and output lists of one length, found {"input": ["1"], "output": []}')
    assert refused([{**row, "public_tests": None, "private_tests": None, "generated_tests": None}]) == (
        "row 0: public_tests: expected at least one test in the three groups, found none")


# -- the RL sets ---------------------------------------------------------------------------------------------------

def test_ground_truth_of_verl_prime_code():
    """verl's prime_code ground truth: the APPS mapping as a JSON string; call-based inputs already JSON lines."""
    truth = json.dumps({"inputs": ["[1, 2]\n3"], "outputs": ["[1, 2, 3]"], "fn_name": "put"})
    assert from_ground_truth(truth, "gt") == ("functional", "put", (IOTest("[1, 2]\n3", "[1, 2, 3]"),))
    stdin = json.dumps({"inputs": ["1\n"], "outputs": ["2\n"]})
    assert from_ground_truth(stdin, "gt") == ("stdin", None, (IOTest("1\n", "2\n"),))
    row = {"data_source": "codecontests", "prompt": [{"role": "system", "content": "S"},
                                                     {"role": "user", "content": "Double it."}],
           "reward_model": {"style": "rule", "ground_truth": stdin}, "extra_info": {"split": "train", "index": 12}}
    assert io_shape(row) == "verl"
    assert one([row]) == IOProblem("12", "Double it.", "", "stdin", None, (IOTest("1\n", "2\n"),), 0, "codecontests")
    assert io_shape({"reward_model": {"ground_truth": "42"}, "prompt": "2 x 21?"}) is None  # a math answer


def test_ground_truth_of_deepcoder():
    """DeepCoder's tests: a list of {input, output, testtype} (stdin, stdin_stdout, functional with the row's
    metadata func_name), or the APPS mapping; a LeetCode test program is not input/output tests."""
    listed = [{"input": "1\n", "output": "1\n", "testtype": "stdin"},
              {"input": ["2", "3"], "output": "5\n", "testtype": "stdin_stdout"}]
    assert from_ground_truth(json.dumps(listed), "t") == (
        "stdin", None, (IOTest("1\n", "1\n"), IOTest("2\n3", "5\n")))
    functional = [{"input": "[1]", "output": "1", "testtype": "functional", "metadata": {"func_name": "first"}}]
    assert from_ground_truth(functional, "t") == ("functional", "first", (IOTest("[1]", "1"),))
    bare = [{"input": "[1]", "output": "1", "testtype": "functional"}]
    assert from_ground_truth(bare, "t", func_name="first") == ("functional", "first", (IOTest("[1]", "1"),))
    row = {"problem": "First.", "tests": json.dumps(bare), "metadata": {"func_name": "first"},
           "starter_code": "class Solution:\n"}
    assert one([row]) == IOProblem("0", "First.", "class Solution:\n", "functional", "first",
                                   (IOTest("[1]", "1"),), 0)
    with pytest.raises(DatasetError) as info:
        from_ground_truth({"functional": "assert f(1) == 1"}, "t")
    assert str(info.value) == ("t: expected input/output tests, found a test program (functional): not a "
                               "standard-input or functional problem's tests")
    with pytest.raises(DatasetError) as info:
        from_ground_truth([{"input": "1", "output": "1", "testtype": "file"}], "t")
    assert str(info.value) == "t: [0].testtype: expected one of stdin, stdin_stdout, functional, found \"file\""
    with pytest.raises(DatasetError) as info:
        from_ground_truth(bare, "t")
    assert str(info.value) == ("t: func_name: expected the name of the function called (an identifier) for "
                               "functional tests, found null")
    with pytest.raises(DatasetError) as info:
        from_ground_truth(3, "t")
    assert str(info.value) == ("t: expected tests (a mapping with inputs and outputs, or a list of input/output "
                               "objects), found int")


# -- shapes and files ------------------------------------------------------------------------------------------

def test_shapes_recognized():
    """io_shape names each shape by its keys; a HumanEval or EvalPlus row (entry_point) is never one."""
    assert io_shape(lcb_row()) == "livecodebench"
    assert io_shape({"question": "Q", "input_output": "{}"}) == "apps"
    assert io_shape({"name": "n", "public_tests": {}}) == "codecontests"
    assert io_shape({"problem": "P", "tests": "[]"}) == "deepcoder"
    assert io_shape({"task_id": "T/0", "prompt": "", "entry_point": "f", "test": "", "input_output": "{}"}) is None
    assert io_shape({"task_id": "T/0"}) is None and io_shape([1]) is None


def test_load_io_problems_reads_a_file_in_its_order(tmp_path):
    """A JSONL or JSONL.gz file of one shape, in the file's order; the line is the error's place."""
    rows = [lcb_row("b"), "", lcb_row("a")]
    for name in ("rows.jsonl", "rows.jsonl.gz"):
        problems = load_io_problems(write_jsonl(tmp_path / name, rows))
        assert [p.task_id for p in problems] == ["b", "a"]
    path = write_jsonl(tmp_path / "bad.jsonl", [lcb_row("b"), "", lcb_row("a", question_content=1)])
    with pytest.raises(DatasetError) as info:
        load_io_problems(path)
    assert str(info.value) == f"{path}:3: question_content: expected a string, found 1"


@pytest.mark.parametrize(("rows", "expected"), [
    ([lcb_row("a"), {"question": "Q", "input_output": "{}"}],
     ":2: expected a LiveCodeBench row like the first, found a APPS/TACO row"),
    ([lcb_row("a"), {"x": 1}], ":2: expected a LiveCodeBench row like the first, found a row of none of these shapes"),
    ([{"x": 1, "a": 2}], ":1: expected a row of LiveCodeBench, APPS/TACO, CodeContests, DeepCoder, verl prime_code, "
                         "found keys a, x"),
    ([lcb_row("a"), [1]], ":2: expected a JSON object, found list"),
    ([lcb_row("a"), lcb_row("a")], ":2: task id: expected each task id once, found 'a' again"),
])
def test_file_errors(tmp_path, rows, expected):
    path = write_jsonl(tmp_path / "rows.jsonl", rows)
    with pytest.raises(DatasetError) as info:
        load_io_problems(path)
    assert str(info.value) == f"{path}{expected}"


def test_empty_file(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [])
    with pytest.raises(DatasetError) as info:
        load_io_problems(path)
    assert str(info.value) == f"{path}: expected at least one problem, found none"


# -- a row's own rule or checker --------------------------------------------------------------------------------

CHECKER = "def check(input, expected, got):\n    return got.split() == expected.split()\n"
RULES_SAID = "lcb, exact, tokens, casefold, float:TOL, float:abs=A,rel=R"


def test_a_rows_rule_and_checker_are_read_in_every_shape():
    """``compare`` (a rule, in its one spelling) and ``checker`` (Python source defining ``check``): top-level keys
    of a row of any shape, kept in the IOProblem and made the judge's rule; a checker travels with the tests (the
    judge's text, never the program's)."""
    problem = one([lcb_row(compare="float:1e-6")])
    assert problem.compare == "float:abs=1e-06,rel=1e-06" and problem.checker is None
    assert io_problems.as_problem(problem).io == "float:abs=1e-06,rel=1e-06"
    assert io_problems.as_problem(one([lcb_row()])).io == "lcb"
    problem = one([lcb_row(checker=CHECKER)])
    assert problem.checker == CHECKER and problem.compare is None
    judged = io_problems.as_problem(problem)
    assert (judged.io, judged.io_tests) == ("checker", 3)
    assert json.loads(judged.test) == {"checker": CHECKER, "tests": [["1 2\n", "3\n"], ["5 5\n", "10\n"],
                                                                     ["0 0\n", "0\n"]]}
    for name, row in SHAPE_ROWS.items():
        assert one([{**row, "compare": "exact"}]).compare == "exact", name
        assert one([{**row, "checker": CHECKER}]).checker == CHECKER, name


@pytest.mark.parametrize(("keys", "expected"), [
    ({"compare": "exactly"}, f"compare: expected a comparison rule ({RULES_SAID}), found 'exactly'"),
    ({"compare": 3}, f"compare: expected a comparison rule ({RULES_SAID}), found 3"),
    ({"compare": "float:abs=x"}, "compare: expected a tolerance that is a finite number >= 0 (float:TOL or "
                                 "float:abs=A,rel=R), found 'float:abs=x'"),
    ({"compare": "checker"}, f"compare: expected a comparison rule ({RULES_SAID}), found 'checker' (a row's own "
                             f"checker is its checker key)"),
    ({"checker": 3}, "checker: expected Python source that defines check(input, expected, got), found int"),
    ({"checker": "def check(input, expected, got)\n    return True\n"},
     "checker: expected Python source that defines check(input, expected, got), found a SyntaxError at line 1: "
     "expected ':'"),
    ({"checker": "def judge(input, expected, got):\n    return True\n"},
     "checker: expected Python source that defines check(input, expected, got), found no check defined"),
    ({"checker": CHECKER, "compare": "tokens"},
     "compare: expected none beside a checker (the checker decides), found 'tokens'"),
])
def test_a_rows_bad_rule_or_checker_is_one_line(keys, expected):
    assert refused([lcb_row(**keys)]) == f"row 0: {expected}"


@pytest.mark.parametrize("key", ["compare", "checker"])
def test_a_functional_row_takes_no_rule_or_checker(key):
    """A functional problem's answers are compared as values, in the judge: a rule or checker there is refused."""
    value = "exact" if key == "compare" else CHECKER
    assert refused([functional_row(**{key: value})]) == (
        f"row 0: {key}: expected none for functional tests (their answers are compared as values), found "
        f"{value[:40]!r}")


# -- the HumanEval fronts: one error, not judged yet -----------------------------------------------------------

SHAPE_ROWS = {
    "LiveCodeBench": lcb_row(),
    "APPS/TACO": {"problem_id": 1, "question": "Q", "input_output": {"inputs": ["1"], "outputs": ["1"]}},
    "CodeContests": {"name": "n", "public_tests": {"input": ["1"], "output": ["1"]}},
    "DeepCoder": {"problem": "P", "tests": [{"input": "1", "output": "1", "testtype": "stdin"}]},
    "verl prime_code": {"prompt": "P", "reward_model": {"ground_truth": '{"inputs": ["1"], "outputs": ["1"]}'}},
}


def not_judged(path: Path, name: str) -> str:
    return (f"{path}:1: expected HumanEval or EvalPlus rows, found {name} rows (standard-input and functional "
            f"problems), which pytest_humaneval.data.io_problems.load_io_dataset reads; see {DOCS}")


@pytest.mark.parametrize("name", sorted(SHAPE_ROWS))
def test_dataset_loader_says_not_judged_yet(tmp_path, name):
    """A dataset file of these rows is one error from the HumanEval loader, naming the shape; the rows it refuses
    are ones io_problems reads."""
    path = write_jsonl(tmp_path / "rows.jsonl", [SHAPE_ROWS[name]])
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == not_judged(path, name)
    assert len(load_io_problems(path)) == 1


def test_humaneval_and_evalplus_files_still_load(tmp_path):
    """A HumanEval row, and an EvalPlus row, with keys of these shapes beside theirs still load as before."""
    humaneval = {"task_id": "T/0", "prompt": "def f(x):\n", "entry_point": "f", "canonical_solution": "    return x\n",
                 "test": "def check(candidate):\n    assert candidate(1) == 1\n", "input_output": "{}", "tests": []}
    assert [p.task_id for p in load_dataset(write_jsonl(tmp_path / "he.jsonl", [humaneval])).problems] == ["T/0"]
    plus = {**humaneval, "base_input": [[1]], "plus_input": [], "question_id": "q", "public_test_cases": "[]"}
    assert load_dataset(write_jsonl(tmp_path / "plus.jsonl", [plus])).evalplus


@pytest.mark.slow
def test_config_verifier_and_evaluate_judge_the_rows(pytester):
    """``dataset: rows.jsonl`` in a config (samples mode), ``Verifier("rows.jsonl")`` and ``evaluate --dataset
    rows.jsonl`` judge these rows (a right and a wrong program); a mock replay of them is one error."""
    from pytest_humaneval import Verifier

    path = write_jsonl(pytester.path / "rows.jsonl", [lcb_row()])
    right, wrong = "a, b = map(int, input().split())\nprint(a + b)\n", "print(3)\n"
    (pytester.path / "samples.jsonl").write_text("".join(json.dumps({"task_id": "q1", "solution": code}) + "\n"
                                                         for code in (right, wrong)))
    config = pytester.makefile(".yaml", run="target: {mode: samples, samples: samples.jsonl}\ndataset: rows.jsonl\n"
                                            "params: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", str(config), "-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test 2 of 3: wrong answer: line 1: expected '10', got '3'*",
                                 "rows pass@1 0.500  coverage 2/2*"])
    with Verifier(str(path)) as verifier:
        assert [v.status.value for v in verifier.verify([("q1", right), ("q1", wrong)])] == ["passed",
                                                                                          "assertion_failed"]
    done = evaluate(pytester.path, "--dataset", "rows.jsonl", "--samples", "samples.jsonl")
    assert done.returncode == 0 and "rows pass@1 0.500  coverage 2/2" in done.stdout, done.stderr[-2000:]
    replay = pytester.makefile(".yaml", replay="target: {mode: mock}\ndataset: rows.jsonl\n")
    result = pytester.runpytest("--humaneval-config", str(replay), "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*target.mode: expected samples or runtime with rows (standard-input and functional "
                                 "problems), found mock: *"])  # live runs: tests/test_io_live.py


# -- the corpus (written by the project), checked with plain processes: not the judge ------------------------------

DRIVER = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("candidate", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
text = sys.stdin.read()
args = [json.loads(line) for line in text.split("\\n")] if text else []
print(json.dumps(getattr(module.Solution(), sys.argv[2])(*args)))
"""


def corpus_test_passes(problem: IOProblem, program: Path, test: IOTest) -> bool:
    """One test of the corpus against one program, in a plain subprocess (10 s): stdin fed and the output's lines
    compared stripped (LiveCodeBench's rule without its decimals, which the corpus does not need); functional: the
    method called with the JSON arguments, the return value compared as JSON."""
    if problem.kind == "stdin":
        command = [sys.executable, "-I", str(program)]
    else:
        command = [sys.executable, "-I", "-c", DRIVER, str(program), str(problem.func_name)]
    try:
        done = subprocess.run(command, input=test.input, capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return False
    if done.returncode != 0:
        return False
    if problem.kind == "functional":
        return json.loads(done.stdout) == json.loads(test.output)
    return [line.strip() for line in done.stdout.strip().split("\n")] == \
        [line.strip() for line in test.output.strip().split("\n")]


def test_corpus_is_read():
    """The bundled corpus: about 8 problems in LiveCodeBench's schema, both kinds, public and private tests, the
    private tests of at least two as LiveCodeBench publishes them (packed), and two programs for each."""
    problems = load_io_problems(CORPUS)
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines()]
    programs = json.loads(PROGRAMS.read_text())
    assert len(problems) == 8 and sorted(programs) == sorted(p.task_id for p in problems)
    assert {p.kind for p in problems} == {"stdin", "functional"}
    assert {p.difficulty for p in problems} == {"easy", "medium"}
    assert all(0 < p.public < len(p.tests) for p in problems)
    assert sum(not row["private_test_cases"].startswith("[") for row in rows) >= 2
    assert all(set(pair) == {"reference", "wrong"} for pair in programs.values())


def test_corpus_reference_programs_pass_and_wrong_ones_fail(tmp_path):
    """A check of the corpus, not the judge: each reference program passes every test, each wrong program fails
    at least one, run in plain subprocesses."""
    programs = json.loads(PROGRAMS.read_text())
    failed = {}
    for problem in load_io_problems(CORPUS):
        for role in ("reference", "wrong"):
            path = tmp_path / f"{problem.task_id.replace('/', '_')}_{role}.py"
            path.write_text(programs[problem.task_id][role])
            failed[problem.task_id, role] = [n for n, test in enumerate(problem.tests)
                                             if not corpus_test_passes(problem, path, test)]
    assert {key: tests for key, tests in failed.items() if key[1] == "reference" and tests} == {}
    assert [key for key, tests in failed.items() if key[1] == "wrong" and not tests] == []


def test_attack_pickles_take_each_route(tmp_path):
    """The opcode lists the attacks rely on are the ones the pickles hold (so each route is tested)."""
    names = {route: {op.name for op, _, _ in pickletools.genops(data)} for route, data in attacks(tmp_path).items()}
    assert {"STACK_GLOBAL", "REDUCE"} <= names["reduce_protocol_4"] and {"GLOBAL", "REDUCE"} <= names[
        "reduce_protocol_0"]
    assert "INST" in names["inst"] and "OBJ" in names["obj"]
