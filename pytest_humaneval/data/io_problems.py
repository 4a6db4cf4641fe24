"""Standard-input and functional problems (issue 52): one model, and the readers of the row shapes it comes in.

Nothing here runs a program: :class:`IOProblem` is what the rows say, and ``as_problem`` makes each the
``Problem`` the judge runs (the sandbox's standard-input judge, or a functional problem's check in the judge).

The shapes, as their own sources read them (commits read for this module):

- **LiveCodeBench** ``code_generation_lite`` (``lcb_runner/benchmarks/code_generation.py`` at LiveCodeBench
  28fef95ea8c9f7a547c8329f2cd3d32b92c1fa24): ``question_id`` (the task id), ``question_content``,
  ``starter_code``, ``public_test_cases`` and ``private_test_cases`` (JSON strings of lists of ``{"input",
  "output", "testtype"}``; the private ones, when not JSON, base64 of zlib of a pickle of that JSON string),
  ``metadata`` (a JSON string; ``func_name`` for functional problems), ``platform``, ``contest_date``,
  ``difficulty``. Its judge (``lcb_runner/evaluation/testing_util.py``) reads a functional test's input as one
  JSON value per line (the arguments) and its output as one JSON value, and calls ``Solution().<func_name>``.
- **APPS / TACO** (``eval/testing_util.py`` at hendrycks/apps 362aedc3c71cd7d9bd2fc96a6c80e11dbc38c7a5):
  ``input_output``, a JSON string (or a mapping) with ``inputs``, ``outputs`` and ``fn_name`` for call-based
  problems. A standard-input input or output given as a list of lines is joined with ``"\\n"``, as APPS's judge
  joins it. A call-based input is an argument list, written here one JSON value per line; a call-based output
  is APPS's singleton list around the return value (its judge accepts the list or its one item): the item is
  the expected value here. A call-based input or output given as a string is already JSON text, as verl's
  ``prime_code`` rows hold them. The task id is ``problem_id`` (APPS), else ``id``, else the row's index (its
  0-based position among the file's rows: TACO's rows have no id). No test is marked public: ``public`` is 0.
- **CodeContests** (``contest_problem.proto`` at google-deepmind/code_contests
  b71eef3d0e14490ff7f17f5b80851730a3fb05a2): ``name`` (the task id), ``description``, ``public_tests``,
  ``private_tests`` and ``generated_tests``, each ``{"input": [...], "output": [...]}``; ``source`` and
  ``difficulty`` are the proto's enums (numbers), named here.
- **verl** ``prime_code`` (``verl/utils/reward_score/prime_code/`` at volcengine/verl
  b178a3cd56f58b2d502255daba591e92833930a7): a row's ``reward_model.ground_truth`` is the APPS mapping as a
  JSON string; the task id is ``extra_info.index``, else the row's index.
- **DeepCoder** (``rllm/rewards/code_reward.py`` and ``cookbooks/deepcoder/prepare_deepcoder_data.py`` at
  rllm-org/rllm 9beb6e0f676a46d38858991fd79ac5f8e0b16d4c): ``problem``, ``tests`` (a JSON string or a value:
  a list of ``{"input", "output", "testtype"}``, ``testtype`` being ``stdin``, ``stdin_stdout`` or
  ``functional``, or the APPS mapping), ``metadata`` with ``func_name``, ``starter_code``; the task id is
  ``id``, else ``problem_id``, else the row's index.

Pickled private tests are decoded without unpickling arbitrary objects: :class:`_PlainUnpickler` refuses every
global (so no class, no function, no ``__reduce__``), and before it loads anything every opcode outside those that
build plain values (or fetch a global, which it refuses by name) is refused: what is left of the pickle protocol
builds only plain containers, strings, bytes and numbers. The zlib stream is inflated up to
:data:`MAX_DECOMPRESSED` bytes, no further.

Which shape a row is, and the HumanEval loader's one line about these files, live in ``io_shapes.py``: a leaf,
because ``dataset.py`` asks it and this module imports ``dataset.py``'s reader. Every error is one
:class:`DatasetError` line: where (file:line, or ``row N`` for rows given in memory), the key, what was expected,
what was found. No pytest import; the standard library only.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import pickle
import pickletools
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..sandbox.vocabulary import io_rule
from .dataset import DatasetError, LoadedDataset, Problem, array_hint, natural_key, read_jsonl
from .io_shapes import CODECONTESTS_GROUPS, SHAPE_NAMES, io_shape, not_judged_yet

__all__ = ["CALL_ENTRY", "ENVIRONMENT", "IOProblem", "IOTest", "MAX_DECOMPRESSED", "SHAPE_NAMES", "as_problem",
           "call_shim", "check_rule", "decode_lcb_tests", "io_shape", "load_io_dataset", "load_io_problems",
           "not_judged_yet", "problems_from_rows", "read_row", "tests_from_ground_truth", "with_rule"]

# 1 GiB: a real problem's tests are fed to a program in seconds, far below it; a forged row (a few KB of zlib can
# inflate to gigabytes) stops here instead of taking the machine's memory.
MAX_DECOMPRESSED = 1 << 30

KINDS = ("stdin", "functional")
# contest_problem.proto's enums: Source (4 and 5 are reserved) and Difficulty (18 is unused).
CODECONTESTS_SOURCES = {1: "codechef", 2: "codeforces", 3: "hackerearth", 4: "codejam", 6: "atcoder", 7: "aizu"}
CODECONTESTS_DIFFICULTIES = {1: "easy", 2: "medium", 3: "hard", 4: "harder", 5: "hardest", 6: "external",
                             **dict(zip([*range(7, 18), *range(19, 30)], "ABCDEFGHIJKLMNOPQRSTUV", strict=True))}
DEEPCODER_TESTTYPES = {"stdin": "stdin", "stdin_stdout": "stdin", "functional": "functional"}


@dataclass(frozen=True)
class IOTest:
    input: str  # stdin: the text fed to standard input; functional: one JSON value per line (the arguments)
    output: str  # stdin: the expected standard output; functional: the expected return value as JSON


@dataclass(frozen=True)
class IOProblem:
    task_id: str
    statement: str  # the problem's text (LiveCodeBench's question_content, APPS's question...)
    starter_code: str  # "" when none
    kind: str  # "stdin" or "functional"
    func_name: str | None  # functional: the method of `class Solution` (LeetCode style) or the function called
    tests: tuple[IOTest, ...]  # public tests first, then private/hidden/generated
    public: int  # how many of `tests` are public
    platform: str | None = None
    contest_date: str | None = None  # ISO date as in the row
    difficulty: str | None = None
    # How a standard-input test's output is compared, from the row's own top-level keys (any shape): ``compare``, a
    # rule in its one spelling (None: LiveCodeBench's, STDIN_RULE), or ``checker``, Python source that defines
    # ``check(input, expected, got) -> bool``, run in the judge (never beside a rule; never for functional tests)
    compare: str | None = None
    checker: str | None = None


def load_io_problems(path: Path) -> list[IOProblem]:
    """The problems of a JSONL(.gz) file of one shape (decided by its first row), in the file's order."""
    return _problems(((f"{path}:{number}", row) for number, row in read_jsonl(Path(path))), str(path))


def problems_from_rows(rows: Iterable[Any]) -> list[IOProblem]:
    """The problems of rows given in memory (a loaded dataset's rows); errors name ``row N`` (0-based)."""
    return _problems(((f"row {index}", row) for index, row in enumerate(rows)), "rows")


def _problems(rows: Iterable[tuple[str, Any]], source: str) -> list[IOProblem]:
    problems: list[IOProblem] = []
    seen: set[str] = set()
    first: str | None = None
    for index, (where, row) in enumerate(rows):
        if not isinstance(row, Mapping):
            raise DatasetError(f"{where}: expected a JSON object, found {type(row).__name__}{array_hint(row)}")
        shape = io_shape(row)
        if first is None:
            if shape is None:
                raise DatasetError(f"{where}: expected a row of {', '.join(SHAPE_NAMES.values())}, found keys "
                                   f"{', '.join(sorted(map(str, row)))[:120]}")
            first = shape
        elif shape != first:
            found = f"a {SHAPE_NAMES[shape]} row" if shape else "a row of none of these shapes"
            raise DatasetError(f"{where}: expected a {SHAPE_NAMES[first]} row like the first, found {found}")
        problem = read_row(row, where, index, first)
        if problem.task_id in seen:
            raise DatasetError(f"{where}: task id: expected each task id once, found {problem.task_id!r} again")
        seen.add(problem.task_id)
        problems.append(problem)
    if not problems:
        raise DatasetError(f"{source}: expected at least one problem, found none")
    return problems


def read_row(row: Mapping[str, Any], where: str, index: int, shape: str | None = None) -> IOProblem:
    """One row as an :class:`IOProblem`; ``index``: its 0-based position (the task id of a row without one)."""
    return _own_comparison(row, where, _shaped(row, where, index, shape or io_shape(row)))


def _shaped(row: Mapping[str, Any], where: str, index: int, shape: str | None) -> IOProblem:
    if shape == "livecodebench":
        return _livecodebench(row, where)
    if shape == "apps":
        return _apps(row, where, index)
    if shape == "codecontests":
        return _codecontests(row, where)
    if shape == "deepcoder":
        return _deepcoder(row, where, index)
    if shape == "verl":
        return _verl(row, where, index)
    raise DatasetError(f"{where}: expected a row of {', '.join(SHAPE_NAMES.values())}, found keys "
                       f"{', '.join(sorted(map(str, row)))[:120]}")


# -- LiveCodeBench ------------------------------------------------------------------------------------------------

def _livecodebench(row: Mapping[str, Any], where: str) -> IOProblem:
    task_id = _text(row, where, "question_id", empty=False)
    public = decode_lcb_tests(row.get("public_test_cases"), where, "public_test_cases", packed=False)
    private = decode_lcb_tests(row.get("private_test_cases", "[]"), where, "private_test_cases", packed=True)
    metadata = _json_mapping(row.get("metadata", "{}"), where, "metadata")
    func_name = metadata.get("func_name")
    kinds: list[str] = []
    tests = []
    for key, cases in (("public_test_cases", public), ("private_test_cases", private)):
        for number, case in enumerate(cases):
            here = f"{key}[{number}]"
            if not isinstance(case, Mapping):
                raise DatasetError(f"{where}: {here}: expected an object with input, output and testtype, found "
                                   f"{type(case).__name__}")
            kind = case.get("testtype")
            if kind not in KINDS:
                raise DatasetError(f"{where}: {here}.testtype: expected stdin or functional, found "
                                   f"{json.dumps(kind)[:40]}")
            if kinds and kind != kinds[0]:
                raise DatasetError(f"{where}: {here}.testtype: expected {kinds[0]} like the problem's first test, "
                                   f"found {kind}")
            kinds.append(kind)
            tests.append(_test(case.get("input"), case.get("output"), kind, where, here))
    if not tests:
        raise DatasetError(f"{where}: public_test_cases: expected at least one test, found none")
    kind = kinds[0]
    if kind == "functional":
        func_name = _func_name(func_name, where, "metadata.func_name")
    elif func_name is not None:  # LiveCodeBench's judge calls func_name whenever it is set, whatever testtype says
        raise DatasetError(f"{where}: metadata.func_name: expected none beside stdin tests, found "
                           f"{json.dumps(func_name)[:40]}")
    return IOProblem(task_id, _text(row, where, "question_content"), _text(row, where, "starter_code"), kind,
                     func_name, tuple(tests), len(public), _optional_text(row, where, "platform"),
                     _optional_text(row, where, "contest_date"), _optional_text(row, where, "difficulty"))


def decode_lcb_tests(value: Any, where: str, key: str, packed: bool = True) -> list[Any]:
    """A LiveCodeBench test list: a JSON string, or (``packed``: private tests as published) base64 of zlib of a
    pickle of that JSON string, unpickled with plain values only. An already decoded list is taken as it is."""
    if isinstance(value, list):
        return value
    if not isinstance(value, str):
        raise DatasetError(f"{where}: {key}: expected a JSON string of a list of tests, found "
                           f"{'nothing' if value is None else type(value).__name__}")
    text = value
    if packed and not value.lstrip().startswith("["):
        text = _unpacked(value, where, key)
    try:
        tests = json.loads(text)
    except ValueError as exc:
        raise DatasetError(f"{where}: {key}: expected a JSON list of tests, found invalid JSON ({exc})") from None
    if not isinstance(tests, list):
        raise DatasetError(f"{where}: {key}: expected a JSON list of tests, found {type(tests).__name__}")
    return tests


class _Refused(Exception):
    """What a pickle asked for that plain values never need."""


# The opcodes a pickle of plain values is made of, and those that fetch or call a global: harmless while
# find_class refuses every global, and refused there by the global's name. Every other opcode (an extension code,
# which the C unpickler may take from copyreg's cache without asking find_class; a persistent id; an out-of-band
# buffer) is refused by name before anything is loaded.
_PLAIN_OPCODES = frozenset("""
    PROTO FRAME STOP MARK POP POP_MARK DUP INT BININT BININT1 BININT2 LONG LONG1 LONG4 STRING BINSTRING
    SHORT_BINSTRING BINBYTES SHORT_BINBYTES BINBYTES8 BYTEARRAY8 NONE NEWTRUE NEWFALSE UNICODE SHORT_BINUNICODE
    BINUNICODE BINUNICODE8 FLOAT BINFLOAT EMPTY_LIST APPEND APPENDS LIST EMPTY_TUPLE TUPLE TUPLE1 TUPLE2 TUPLE3
    EMPTY_DICT DICT SETITEM SETITEMS EMPTY_SET ADDITEMS FROZENSET GET BINGET LONG_BINGET PUT BINPUT LONG_BINPUT
    MEMOIZE""".split())
_GLOBAL_OPCODES = frozenset("GLOBAL STACK_GLOBAL INST OBJ REDUCE BUILD NEWOBJ NEWOBJ_EX".split())
# LiveCodeBench pickles one string: a handful of opcodes. A pickle of many more builds many objects, each tens of
# bytes from one byte of input (a million empty lists from a megabyte): refused by its count before any is built.
MAX_OPCODES = 64


class _PlainUnpickler(pickle.Unpickler):
    """Builds plain containers, strings, bytes and numbers, nothing else: every global (a class, a function,
    what ``__reduce__`` and ``INST``/``OBJ``/``NEWOBJ`` need, an extension code's target) is refused, so no code
    of anyone's runs."""

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"the global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused(f"a persistent id {str(pid)[:40]!r}")


def _unpacked(value: str, where: str, key: str) -> str:
    """The JSON string inside base64(zlib(pickle(json_string))), as LiveCodeBench publishes private tests."""
    try:
        packed = base64.b64decode(value.encode("utf-8"))
    except (binascii.Error, ValueError):
        raise DatasetError(f"{where}: {key}: expected a JSON list, or base64 of zlib of a pickle of one, found "
                           f"neither") from None
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(packed, MAX_DECOMPRESSED + 1)
    except zlib.error as exc:
        raise DatasetError(f"{where}: {key}: expected zlib data inside the base64, found none ({exc})") from None
    if len(data) > MAX_DECOMPRESSED:
        raise DatasetError(f"{where}: {key}: expected at most {MAX_DECOMPRESSED} bytes once decompressed, found "
                           f"more: refused (a zlib bomb), nothing unpickled")
    if not inflater.eof:
        raise DatasetError(f"{where}: {key}: expected a whole zlib stream inside the base64, found a cut one")
    try:
        for count, (opcode, _, _) in enumerate(pickletools.genops(data), 1):
            if opcode.name not in _PLAIN_OPCODES and opcode.name not in _GLOBAL_OPCODES:
                raise _Refused(f"the opcode {opcode.name}")
            if count > MAX_OPCODES:
                raise DatasetError(f"{where}: {key}: expected the pickle of one JSON string (a few opcodes), found "
                                   f"one of more than {MAX_OPCODES} opcodes: refused, nothing unpickled")
        loaded = _PlainUnpickler(io.BytesIO(data)).load()
    except _Refused as exc:
        raise DatasetError(f"{where}: {key}: expected a pickle of plain values (strings, bytes, numbers, "
                           f"containers), found one that asks for {exc}: refused, nothing run") from None
    except DatasetError:
        raise
    except Exception as exc:  # any failure to read forged bytes is the row's: pickle raises many kinds
        raise DatasetError(f"{where}: {key}: expected a pickle of a JSON string, found an unreadable one "
                           f"({type(exc).__name__}: {str(exc)[:80]})") from None
    if isinstance(loaded, bytes):
        try:
            loaded = loaded.decode("utf-8")
        except UnicodeDecodeError:
            raise DatasetError(f"{where}: {key}: expected a pickled JSON string, found bytes that are not "
                               f"UTF-8") from None
    if not isinstance(loaded, str):
        raise DatasetError(f"{where}: {key}: expected a pickled JSON string, found a pickled "
                           f"{type(loaded).__name__}")
    return loaded


# -- APPS / TACO, verl's prime_code, DeepCoder ----------------------------------------------------------------------

def tests_from_ground_truth(value: Any, where: str, *,
                            func_name: str | None = None) -> tuple[str, str | None, tuple[IOTest, ...]]:
    """(kind, func_name, tests) from an RL set's ground truth: the APPS mapping (``inputs``, ``outputs``,
    ``fn_name``; verl's ``prime_code``, TACO, DeepCoder's TACO rows) or a list of ``{"input", "output",
    "testtype"}`` (DeepCoder's LiveCodeBench and Codeforces rows), either as a JSON string. ``func_name``: the
    row's own (DeepCoder's ``metadata``), for tests that do not name it."""
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise DatasetError(f"{where}: expected tests as JSON, found invalid JSON ({exc})") from None
        except RecursionError:
            raise DatasetError(f"{where}: expected tests as JSON, found JSON nested deeper than Python's parser "
                               "reads") from None
    if isinstance(value, Mapping) and "functional" in value and "inputs" not in value:
        raise DatasetError(f"{where}: expected input/output tests, found a test program (functional): not a "
                           f"standard-input or functional problem's tests")
    if isinstance(value, Mapping):
        return _from_inputs_outputs(value, where, func_name)
    if isinstance(value, list):
        return _from_test_list(value, where, func_name)
    raise DatasetError(f"{where}: expected tests (a mapping with inputs and outputs, or a list of input/output "
                       f"objects), found {type(value).__name__}")


def _from_inputs_outputs(io_map: Mapping[str, Any], where: str,
                         func_name: str | None) -> tuple[str, str | None, tuple[IOTest, ...]]:
    inputs, outputs = io_map.get("inputs"), io_map.get("outputs")
    for key, found in (("inputs", inputs), ("outputs", outputs)):
        if not isinstance(found, list):
            what = type(found).__name__ if key in io_map else "nothing"
            raise DatasetError(f"{where}: {key}: expected a list, found {what}")
    assert isinstance(inputs, list) and isinstance(outputs, list)
    if len(inputs) != len(outputs):
        raise DatasetError(f"{where}: outputs: expected one per input ({len(inputs)}), found {len(outputs)}")
    if not inputs:
        raise DatasetError(f"{where}: inputs: expected at least one test, found none")
    name = io_map.get("fn_name", func_name)
    kind = "stdin" if name is None else "functional"
    if kind == "functional":
        name = _func_name(name, where, "fn_name")
    tests = []
    for number, (given, expected) in enumerate(zip(inputs, outputs, strict=True)):
        here = f"inputs[{number}]"
        if kind == "stdin":
            tests.append(IOTest(_lines(given, where, here), _lines(expected, where, f"outputs[{number}]")))
        else:
            tests.append(_call(given, expected, where, number))
    return kind, name, tuple(tests)


def _lines(value: Any, where: str, key: str) -> str:
    """A standard-input text: a string, or a list of lines joined as APPS's judge joins them."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "\n".join(value)
    raise DatasetError(f"{where}: {key}: expected a string or a list of lines (strings), found "
                       f"{json.dumps(value, default=repr)[:40]}")


def _call(given: Any, expected: Any, where: str, number: int) -> IOTest:
    """A call-based test: an argument list (or JSON lines already), and APPS's singleton list around the
    expected value (or its JSON text already)."""
    if isinstance(given, list):
        given = "\n".join(_dumps(argument, where, f"inputs[{number}]") for argument in given)
    if not isinstance(expected, str):
        if isinstance(expected, list) and len(expected) == 1:
            expected = expected[0]
        expected = _dumps(expected, where, f"outputs[{number}]")
    return _test(given, expected, "functional", where, f"inputs[{number}]", f"outputs[{number}]")


def _dumps(value: Any, where: str, key: str) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{where}: {key}: expected JSON values, found {type(value).__name__} ({exc})") from None


def _from_test_list(cases: list[Any], where: str,
                    func_name: str | None) -> tuple[str, str | None, tuple[IOTest, ...]]:
    if not cases:
        raise DatasetError(f"{where}: expected at least one test, found none")
    kinds: list[str] = []
    tests = []
    for number, case in enumerate(cases):
        here = f"[{number}]"
        if not isinstance(case, Mapping):
            raise DatasetError(f"{where}: {here}: expected an object with input and output, found "
                               f"{type(case).__name__}")
        metadata = case.get("metadata")
        named = case.get("fn_name") or (metadata.get("func_name") if isinstance(metadata, Mapping) else None)
        func_name = named or func_name
        testtype = case.get("testtype", "functional" if named else "stdin")
        kind = DEEPCODER_TESTTYPES.get(testtype) if isinstance(testtype, str) else None
        if kind is None:
            raise DatasetError(f"{where}: {here}.testtype: expected one of {', '.join(DEEPCODER_TESTTYPES)}, found "
                               f"{json.dumps(testtype)[:40]}")
        if kinds and kind != kinds[0]:
            raise DatasetError(f"{where}: {here}.testtype: expected {kinds[0]} like the first test, found {testtype}")
        kinds.append(kind)
        if kind == "stdin":
            tests.append(_test(_lines(case.get("input"), where, f"{here}.input"),
                               _lines(case.get("output"), where, f"{here}.output"), kind, where, here))
        else:
            tests.append(_test(case.get("input"), case.get("output"), kind, where, here))
    if kinds[0] == "functional":
        return "functional", _func_name(func_name, where, "func_name"), tuple(tests)
    return "stdin", None, tuple(tests)


def _apps(row: Mapping[str, Any], where: str, index: int) -> IOProblem:
    io_map = row["input_output"]
    if isinstance(io_map, str):
        try:
            io_map = json.loads(io_map)
        except ValueError as exc:
            raise DatasetError(f"{where}: input_output: expected a JSON object with inputs and outputs, found "
                               f"invalid JSON ({exc})") from None
    if not isinstance(io_map, Mapping):
        raise DatasetError(f"{where}: input_output: expected an object with inputs and outputs, found "
                           f"{type(io_map).__name__}")
    kind, func_name, tests = _from_inputs_outputs(io_map, f"{where}: input_output", None)
    source = row.get("source")
    return IOProblem(_task_id(row, where, ("problem_id", "id"), index), _text(row, where, "question"),
                     _text(row, where, "starter_code"), kind, func_name, tests, 0,
                     source if isinstance(source, str) else None, None, _optional_text(row, where, "difficulty"))


def _deepcoder(row: Mapping[str, Any], where: str, index: int) -> IOProblem:
    metadata = _json_mapping(row.get("metadata") or {}, where, "metadata")
    named = metadata.get("func_name")
    kind, func_name, tests = tests_from_ground_truth(row["tests"], f"{where}: tests",
                                                     func_name=named if isinstance(named, str) else None)
    return IOProblem(_task_id(row, where, ("id", "problem_id"), index), _text(row, where, "problem"),
                     _text(row, where, "starter_code"), kind, func_name, tests, 0)


def _verl(row: Mapping[str, Any], where: str, index: int) -> IOProblem:
    kind, func_name, tests = tests_from_ground_truth(row["reward_model"]["ground_truth"],
                                                     f"{where}: reward_model.ground_truth")
    extra = row.get("extra_info")
    task = extra.get("index") if isinstance(extra, Mapping) else None
    task_id = str(task) if isinstance(task, (str, int)) and not isinstance(task, bool) else str(index)
    source = row.get("data_source")
    return IOProblem(task_id, _prompt_text(row.get("prompt"), where), "", kind, func_name, tests, 0,
                     source if isinstance(source, str) else None)


def _prompt_text(prompt: Any, where: str) -> str:
    """verl's ``prompt``: chat messages (the last user message is the problem) or a string."""
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    if isinstance(prompt, list):
        users = [message.get("content") for message in prompt
                 if isinstance(message, Mapping) and message.get("role") == "user"]
        if users and isinstance(users[-1], str):
            return users[-1]
    raise DatasetError(f"{where}: prompt: expected a string or chat messages with a user message, found "
                       f"{json.dumps(prompt, default=repr)[:40]}")


# -- CodeContests -----------------------------------------------------------------------------------------------

def _codecontests(row: Mapping[str, Any], where: str) -> IOProblem:
    task_id = _text(row, where, "name", empty=False)
    groups = []
    for key in CODECONTESTS_GROUPS:
        group = row.get(key) or {"input": [], "output": []}
        if not isinstance(group, Mapping):
            raise DatasetError(f"{where}: {key}: expected an object with input and output lists, found "
                               f"{type(group).__name__}")
        given, expected = group.get("input"), group.get("output")
        if not isinstance(given, list) or not isinstance(expected, list) or len(given) != len(expected):
            raise DatasetError(f"{where}: {key}: expected input and output lists of one length, found "
                               f"{json.dumps({'input': given, 'output': expected}, default=repr)[:60]}")
        groups.append([IOTest(_lines(text, where, f"{key}.input[{n}]"), _lines(out, where, f"{key}.output[{n}]"))
                       for n, (text, out) in enumerate(zip(given, expected, strict=True))])
    tests = tuple(test for group in groups for test in group)
    if not tests:
        raise DatasetError(f"{where}: public_tests: expected at least one test in the three groups, found none")
    return IOProblem(task_id, _text(row, where, "description"), "", "stdin", None, tests, len(groups[0]),
                     _enum(row.get("source"), CODECONTESTS_SOURCES, where, "source"), None,
                     _enum(row.get("difficulty"), CODECONTESTS_DIFFICULTIES, where, "difficulty"))


def _enum(value: Any, names: Mapping[int, str], where: str, key: str) -> str | None:
    """A proto enum's name (a number; 0 is unknown), or a name already given."""
    if value is None or value == 0 or isinstance(value, str):
        return value or None
    if isinstance(value, int) and not isinstance(value, bool) and value in names:
        return names[value]
    raise DatasetError(f"{where}: {key}: expected one of CodeContests' numbers ({', '.join(map(str, names))}) or "
                       f"a name, found {json.dumps(value)[:40]}")


# -- a row's own comparison ---------------------------------------------------------------------------------------

CHECKER_SAID = "expected Python source that defines check(input, expected, got)"


def _own_comparison(row: Mapping[str, Any], where: str, problem: IOProblem) -> IOProblem:
    """``problem`` with the row's own ``compare`` rule or ``checker`` (top-level keys, in a row of any shape),
    checked: one of them at most, and only for standard-input tests."""
    compare, checker = row.get("compare"), row.get("checker")
    if compare is None and checker is None:
        return problem
    if problem.kind != "stdin":
        key, value = ("compare", compare) if compare is not None else ("checker", checker)
        found = repr(value[:40]) if isinstance(value, str) else type(value).__name__
        raise DatasetError(f"{where}: {key}: expected none for functional tests (their answers are compared as "
                           f"values), found {found}")
    if checker is None:
        return replace(problem, compare=check_rule(compare, f"{where}: compare"))
    if compare is not None:
        raise DatasetError(f"{where}: compare: expected none beside a checker (the checker decides), found "
                           f"{compare!r}")
    return replace(problem, checker=_checker(checker, f"{where}: checker"))


def _checker(source: Any, where: str) -> str:
    """A checker's source, compiled here (not run: that is the judge's) to refuse one that cannot load or defines
    no ``check`` (a function, an assignment or an import of that name, anywhere in it)."""
    import ast

    if not isinstance(source, str):
        raise DatasetError(f"{where}: {CHECKER_SAID}, found {type(source).__name__}")
    try:
        tree = compile(source, "<checker>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        raise DatasetError(f"{where}: {CHECKER_SAID}, found a SyntaxError at line {exc.lineno}: {exc.msg}") from None
    except ValueError as exc:  # (a null byte)
        raise DatasetError(f"{where}: {CHECKER_SAID}, found source that does not compile ({exc})") from None
    for node in ast.walk(tree):
        if (isinstance(node, ast.FunctionDef) and node.name == "check" or
                isinstance(node, ast.Name) and node.id == "check" and isinstance(node.ctx, ast.Store) or
                isinstance(node, ast.alias) and (node.asname or node.name) == "check"):
            return source
    raise DatasetError(f"{where}: {CHECKER_SAID}, found no check defined")


def check_rule(rule: object, where: str) -> str:
    """``rule`` (a row's ``compare``, or a run's: ``with_rule``) in its one spelling (``float:1e-6`` is
    ``float:abs=1e-06,rel=1e-06``), or one :class:`DatasetError` line that starts with ``where``. ``checker`` is
    never a rule to name: a row's checker is its ``checker`` key."""
    try:
        return io_rule(rule, checker=False)
    except ValueError as exc:
        hint = " (a row's own checker is its checker key)" if rule == "checker" else ""
        raise DatasetError(f"{where}: {exc}{hint}") from None


def with_rule(problems: Iterable[Problem], rule: object, where: str = "compare") -> list[Problem]:
    """``problems`` with ``rule`` (checked: ``check_rule``) comparing every standard-input test's output, a run's
    choice over the rows' own rules; a problem its row's checker judges keeps it (the checker is what its answers
    mean), and a functional problem is compared as values, as before."""
    chosen = check_rule(rule, where)
    return [replace(problem, io=chosen) if problem.io is not None and problem.io != CHECKER_RULE else problem
            for problem in problems]


# -- the pieces ---------------------------------------------------------------------------------------------------

def _test(given: Any, expected: Any, kind: str, where: str, key: str, output_key: str | None = None) -> IOTest:
    """One test, checked: strings, and for a functional test one JSON value per input line and a JSON output.
    ``key``: the test's (its parts ``key.input``, ``key.output``), or its input's when ``output_key`` is given."""
    input_key, output_key = (key, output_key) if output_key else (f"{key}.input", f"{key}.output")
    for part, value in ((input_key, given), (output_key, expected)):
        if not isinstance(value, str):
            raise DatasetError(f"{where}: {part}: expected a string, found {type(value).__name__}")
    assert isinstance(given, str) and isinstance(expected, str)
    if kind == "functional":
        for number, line in enumerate(given.split("\n") if given else [], 1):
            try:
                json.loads(line)
            except ValueError:
                raise DatasetError(f"{where}: {input_key}: expected one JSON value per line (the arguments), "
                                   f"found line {number} not JSON: {line[:40]!r}") from None
        try:
            json.loads(expected)
        except ValueError:
            raise DatasetError(f"{where}: {output_key}: expected the return value as JSON, found "
                               f"{expected[:40]!r}") from None
    return IOTest(given, expected)


def _func_name(value: Any, where: str, key: str) -> str:
    if not isinstance(value, str) or not value.isidentifier():
        raise DatasetError(f"{where}: {key}: expected the name of the function called (an identifier) for "
                           f"functional tests, found {json.dumps(value)[:40]}")
    return value


def _text(row: Mapping[str, Any], where: str, key: str, empty: bool = True) -> str:
    """A string field; an absent (or null) optional text is ""."""
    value = row.get(key)
    if value is None and empty:
        return ""
    if not isinstance(value, str) or not (empty or value.strip()):
        found = "nothing" if key not in row else json.dumps(value, default=repr)[:40]
        raise DatasetError(f"{where}: {key}: expected a {'' if empty else 'non-empty '}string, found {found}")
    return value


def _optional_text(row: Mapping[str, Any], where: str, key: str) -> str | None:
    value = row.get(key)
    if value is not None and not isinstance(value, str):
        raise DatasetError(f"{where}: {key}: expected a string, found {json.dumps(value, default=repr)[:40]}")
    return value


def _task_id(row: Mapping[str, Any], where: str, keys: tuple[str, ...], index: int) -> str:
    for key in keys:
        value = row.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise DatasetError(f"{where}: {key}: expected a task id (a string or a number), found "
                               f"{json.dumps(value, default=repr)[:40]}")
        return str(value)
    return str(index)


def _json_mapping(value: Any, where: str, key: str) -> Mapping[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise DatasetError(f"{where}: {key}: expected a JSON object, found invalid JSON ({exc})") from None
    if not isinstance(value, Mapping):
        raise DatasetError(f"{where}: {key}: expected a JSON object, found {type(value).__name__}")
    return value


# ------------------------------------------------------------------------------------- as the judge takes them
STDIN_RULE = "lcb"  # the comparison of a standard-input test's output: LiveCodeBench's (sandbox/_judge.py)
CHECKER_RULE = "checker"  # the judge's rule for a problem its row's checker judges (the checker with the tests)
# The environment LiveCodeBench's judge gives every program, stdin or functional (the header of
# lcb_runner/evaluation/testing_util.py at 28fef95): the standard modules a contest program or a LeetCode answer
# uses without importing them (typing's List, collections' defaultdict and deque, math's gcd and inf...),
# star-imported and imported by name, and a recursion limit of 50,000. It runs in the candidate only, before the
# program and apart from it (its lines are not the program's).
_MODULES = ("string", "re", "datetime", "collections", "heapq", "bisect", "copy", "math", "random", "statistics",
            "itertools", "functools", "operator", "io", "sys", "json")
ENVIRONMENT = ("".join(f"from {name} import *\n" for name in (*_MODULES, "builtins", "typing"))
               + "".join(f"import {name}\n" for name in _MODULES) + "sys.setrecursionlimit(50000)\n")
CALL_ENTRY = "__humaneval_call__"  # what the judge calls in a functional problem's program (``call_shim``)


def load_io_dataset(path: Path) -> LoadedDataset:
    """A file of standard-input or functional problems as a dataset the judge runs: its problems (``as_problem``)
    in natural task-id order, and what identifies its content, as ``dataset.load_dataset`` gives a HumanEval file."""
    import gzip
    import hashlib

    source = Path(path)
    try:
        data = source.read_bytes()
        content = gzip.decompress(data) if source.name.endswith(".gz") else data
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetError(f"{source}: cannot read: {exc}") from exc
    problems = [as_problem(problem) for problem in load_io_problems(source)]
    return LoadedDataset(source.name.split(".")[0], sorted(problems, key=lambda p: natural_key(p.task_id)),
                         hashlib.sha256(content).hexdigest(), hashlib.sha256(data).hexdigest(), False)


def as_problem(problem: IOProblem) -> Problem:
    """``problem`` as the judge takes it: a whole program each sample brings (no prompt before it). What a live
    model reads rides beside it, the statement and the starter code (``Problem.statement``, ``starter_code``),
    never the tests. A standard-input problem: its tests' [input, output] pairs
    as JSON, each test a fresh candidate whose output the judge compares by the row's rule (LiveCodeBench's when it
    names none), or by its checker, which then travels with the pairs (``{"tests": pairs, "checker": source}``).
    A functional one: a test, run in the
    judge, that calls ``Solution().<func_name>`` (or the function of that name) with each test's arguments and
    compares the answer with the expected value, both plain values."""
    if problem.kind == "stdin":
        pairs = [[test.input, test.output] for test in problem.tests]
        if problem.checker is not None:  # (the judge's text, as the expected outputs are: never the program's)
            tests, rule = json.dumps({"checker": problem.checker, "tests": pairs}), CHECKER_RULE
        else:
            tests, rule = json.dumps(pairs), problem.compare or STDIN_RULE
        judged = Problem(problem.task_id, "", "", tests, io=rule, io_tests=len(problem.tests))
    else:
        assert problem.func_name is not None  # read_row requires it of a functional problem
        judged = Problem(problem.task_id, "", CALL_ENTRY, _functional_test(problem.tests), call=problem.func_name,
                         io_tests=len(problem.tests))
    return replace(judged, platform=problem.platform, difficulty=problem.difficulty,
                   contest_date=problem.contest_date, statement=problem.statement,
                   starter_code=problem.starter_code)


def call_shim(method: str) -> str:
    """What a functional problem's program gets at its end, in the candidate's own process: the entry the judge
    calls, ``Solution().<method>(*args)`` when the program has that class and method, else its function ``method``
    (the candidate's own code: nothing of the test is in it)."""
    return (f"\n\n\ndef {CALL_ENTRY}(*args):\n"
            f"    found = globals().get('Solution')\n"
            f"    if isinstance(found, type) and hasattr(found, {method!r}):\n"
            f"        return getattr(found(), {method!r})(*args)\n"
            f"    return globals()[{method!r}](*args)\n")


def _functional_test(tests: tuple[IOTest, ...]) -> str:
    """The judge's test of a functional problem (trusted text, run in the judge only): LiveCodeBench's rule, each
    test's arguments one JSON value a line, the answer equal to the expected JSON value once a tuple is a list."""
    cases = json.dumps([[test.input, test.output] for test in tests])
    return (
        "import json as _json\n\n"
        f"_CASES = _json.loads({cases!r})\n\n\n"
        "def check(candidate):\n"
        "    for number, (given, expected) in enumerate(_CASES, 1):\n"
        "        arguments = [_json.loads(line) for line in given.split('\\n') if line.strip()]\n"
        "        got = candidate(*arguments)\n"
        "        if isinstance(got, tuple):\n"
        "            got = list(got)\n"
        "        assert got == _json.loads(expected), (f'test {number} of {len(_CASES)}: wrong answer: expected '\n"
        "                                               f'{expected[:80]}, got {repr(got)[:80]}')\n"
    )
