"""MBPP+ (EvalPlus v0.2.0): by name, its inputs rebuilt as EvalPlus rebuilds them, its oracles, its prompt form.

The whole release against EvalPlus 0.3.1 is bench/compare_evalplus_mbpp.py's (its expected outputs take minutes
and 1.4 GB); here a few tasks, each chosen for a rule.
"""

from __future__ import annotations

import json
import re

import pytest
from plus_data import release_file, write_jsonl
from sessions import NO_CACHE
from test_plus_judge import box, judged, suite  # noqa: F401 (box: the module's sandbox fixture)

from pytest_humaneval.completions.endpoint import CHAT_SYSTEM, CHAT_SYSTEM_WHOLE, WHOLE_STOP, Client
from pytest_humaneval.completions.extract import extract
from pytest_humaneval.data import mbpp, plus, releases
from pytest_humaneval.data.dataset import DatasetError, load_dataset
from pytest_humaneval.sandbox import SandboxError, Status
from pytest_humaneval.sandbox._supervisor import MAX_SUITES_BYTES


@pytest.fixture(scope="module")
def mbppplus():
    return {problem.task_id: problem for problem in load_dataset(release_file("mbppplus")).problems}


def test_the_names_resolve_to_the_bundled_release_files_of_v0_2_0():
    for name in ("mbppplus", "mbppplus-noextreme"):
        release = releases.RELEASES[name]
        assert releases.resolve(name, "here") == release_file(name) and release.version == "v0.2.0"
        loaded = load_dataset(release_file(name))
        assert len(loaded.problems) == 378 and loaded.evalplus
        assert releases.recognise(loaded.file_sha256, loaded.sha256) is release


def test_inputs_json_cannot_hold_are_rebuilt_as_evalplus_rebuilds_them(mbppplus):
    assert mbppplus["Mbpp/2"].base_input[0] == [(3, 4, 5, 6), (5, 7, 4, 10)]  # every argument a tuple
    assert mbppplus["Mbpp/63"].base_input[0] == [[(3, 5), (1, 7), (10, 3), (1, 2)]]  # a list of tuples
    assert mbppplus["Mbpp/124"].base_input[0] == (0.0, 1j) and type(mbppplus["Mbpp/124"].base_input[0]) is tuple
    assert mbppplus["Mbpp/252"].base_input[0] == [1 + 0j]
    assert mbppplus["Mbpp/580"].base_input[0] == ((4, 5, (7, 6, (2, 4)), 6, 8),)  # every list a tuple, at any depth
    assert type(mbppplus["Mbpp/722"].base_input[0][0]["Pierre Cox"]) is tuple
    assert mbppplus["Mbpp/793"].plus_input == ()  # `{}` in the release: no inputs, as EvalPlus iterates it
    assert mbppplus["Mbpp/3"].base_input[0] == [1]  # a task with no rule: as loaded


def test_mbpp_115_s_rule_makes_sets_and_an_empty_one_a_dict():
    rebuilt = mbpp.rebuild_inputs("Mbpp/115", [[[[1, 2], [], 3]]])
    assert rebuilt == ([[{1, 2}, {}, {}]],) and [type(item) for item in rebuilt[0][0]] == [set, dict, dict]


def test_the_rules_apply_to_any_file_of_mbpp_task_ids_and_a_misshapen_input_is_one_error(tmp_path):
    row = {"task_id": "Mbpp/2", "prompt": '"""\nShared.\n"""\n', "entry_point": "f",
           "canonical_solution": "def f(a, b):\n    return tuple(set(a) & set(b))\n",
           "base_input": [[[1, 2], [2]]], "plus_input": [], "atol": 0}
    loaded = load_dataset(write_jsonl(tmp_path / "mine.jsonl", [row]))
    assert loaded.problems[0].base_input == ([(1, 2), (2,)],)
    other = load_dataset(write_jsonl(tmp_path / "other.jsonl", [dict(row, task_id="Mine/2")]))
    assert other.problems[0].base_input == ([[1, 2], [2]],)  # not MBPP+ by its ids: as loaded
    with pytest.raises(DatasetError, match=r"mine2\.jsonl:1: Mbpp/2: expected inputs shaped as EvalPlus rebuilds "
                                           r"this MBPP\+ task's .*TypeError"):
        load_dataset(write_jsonl(tmp_path / "mine2.jsonl", [dict(row, base_input=[[1, 2]])]))


def test_the_oracles_are_named_by_entry_point_on_mbpp_only(mbppplus):
    assert plus.oracle(mbppplus["Mbpp/2"]) == "set_equal"
    assert plus.oracle(mbppplus["Mbpp/737"]) == "not_none"
    assert plus.oracle(mbppplus["Mbpp/581"]) == "surface_area"
    assert plus.oracle(mbppplus["Mbpp/558"]) == "digit_distance"
    assert plus.oracle(mbppplus["Mbpp/3"]) is None
    assert mbpp.oracle("sum_div") == "or_zero" and mbpp.oracle("are_equivalent") == "any_output"


@pytest.mark.parametrize(("oracle", "base", "body", "status"), [
    ("set_equal", ([[(1, 2, 3), (3, 2)]], [(2, 3)]), "    return [3, 2]\n", Status.PASSED),
    ("set_equal", ([[(1, 2, 3), (3, 2)]], [(2, 3)]), "    return [3]\n", Status.ASSERTION_FAILED),
    ("set_equal", ([[(1, 2, 3), (3, 2)]], [(2, 3)]), "    return [[3]]\n", Status.ASSERTION_FAILED),  # unhashable
    # the canonical solution returns a re.Match, kept as "not None"; the candidate's is answered as that bool
    ("not_none", ([["ab"]], [True]), "    import re\n    return re.match('a', args[0])\n", Status.PASSED),
    ("not_none", ([["ab"]], [True]), "    return None\n", Status.ASSERTION_FAILED),
    ("not_none", ([["ab"]], [True]), "    return True\n", Status.PASSED),
    ("not_none", ([["ab"]], [False]), "    return 'no'\n", Status.ASSERTION_FAILED),
    ("surface_area", ([[3, 4]], [33]), "    return 3 ** 2 + 2 * 3 * (1.5 ** 2 + 16) ** 0.5\n",
     Status.ASSERTION_FAILED),
    ("surface_area", ([[3, 4]], [33]), "    return 35.0\n", Status.PASSED),  # the apex's height: round(35.0)
    ("surface_area", ([[3, 4]], [33]), "    return 'x'\n", Status.ASSERTION_FAILED),
    ("digit_distance", ([[1, 123]], [2]), "    return 5\n", Status.PASSED),  # 001 vs 123: 1 + 2 + 2
    ("or_zero", ([[12]], [16]), "    return 0\n", Status.PASSED),
    ("any_output", ([[1]], [2]), "    return 'anything'\n", Status.PASSED),
])
def test_each_special_oracle_judges_as_evalplus_does(box, oracle, base, body, status):  # noqa: F811
    assert judged(box, body, suite(base, oracle=oracle)).status is status


def test_a_chat_answer_that_writes_the_whole_function_runs_as_written(mbppplus):
    problem = mbppplus["Mbpp/3"]
    answer = ("Here is the function:\n```python\nimport math\n\ndef is_not_prime(n):\n    if n < 2:\n"
              "        return True\n    return any(n % i == 0 for i in range(2, math.isqrt(n) + 1))\n```\n"
              "It returns True for 1.\n")
    found = extract(answer, problem.entry_point, problem.prompt)
    assert found.program is not None and found.program.startswith("import math\n\ndef is_not_prime(n):")
    assert "Here is" not in found.program and '"""' not in found.program


def test_a_prompt_without_a_signature_asks_for_the_whole_function_in_evalplus_s_words(mbppplus):
    prompt = mbppplus["Mbpp/2"].prompt
    chat = Client("http://127.0.0.1:1/v1", "m", api_key=None)
    _, body = chat.request_body(prompt)
    assert body["messages"][0] == {"role": "system", "content": CHAT_SYSTEM_WHOLE}
    assert body["messages"][1]["content"] == (
        "Please provide a self-contained Python script that solves the following problem in a markdown code block:"
        f"\n```\n{prompt.strip()}\n```\n")
    completions = Client("http://127.0.0.1:1/v1", "m", api_key=None, api="completions")
    _, body = completions.request_body(prompt)
    assert body["prompt"] == prompt and tuple(body["stop"]) == WHOLE_STOP
    _, humaneval = chat.request_body("def f(x):\n    \"\"\"Twice x.\"\"\"\n")
    assert humaneval["messages"][0]["content"] == CHAT_SYSTEM  # HumanEval's request, unchanged
    assert chat.store_setting() == Client("http://127.0.0.1:1/v1", "m", api_key=None).store_setting()


def test_a_run_by_name_judges_base_and_plus_of_whole_programs(pytester, tmp_path, monkeypatch, mbppplus):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    canonical = {task: mbppplus[task].canonical_solution for task in ("Mbpp/2", "Mbpp/124", "Mbpp/737")}
    rows = [{"task_id": task, "solution": text} for task, text in canonical.items()]
    rows.append({"task_id": "Mbpp/2", "solution": "def similar_elements(a, b):\n    return list(set(a) & set(b))[:1]\n"})
    write_jsonl(pytester.path / "samples.jsonl", rows)
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\ndataset: mbppplus\n"
                                            "params: {allow_code_execution: true, plus: {min_time_limit_s: 1.0}}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-results", "results.jsonl",
                                "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=3, failed=1)
    found = [json.loads(line) for line in (pytester.path / "results.jsonl").read_text().splitlines()]
    statuses = {(row["task_id"], row["sample"]): (row["base_status"], row["plus_status"]) for row in found}
    assert statuses == {("Mbpp/2", 0): ("passed", "passed"), ("Mbpp/2", 1): ("assertion_failed", "assertion_failed"),
                        ("Mbpp/124", 0): ("passed", "passed"), ("Mbpp/737", 0): ("passed", "passed")}
    assert re.search(r"mbppplus v0\.2\.0 subset \(3/378 problems", result.stdout.str())


def test_a_task_whose_expected_outputs_are_too_large_for_the_judge_is_a_harness_error(box):  # noqa: F811
    the_suite = suite(([[1]], [2]))
    with open(the_suite.path, "r+b") as handle:  # a sparse tail: over the limit by its size, not by its bytes
        handle.truncate(MAX_SUITES_BYTES + (1 << 20))
    with pytest.raises(SandboxError, match=r"base: the task's expected outputs are 513 MiB, more than a judge holds "
                                           r"\(512 MiB"):  # an item turns it into a harness_error
        judged(box, "    return args[0] * 2\n", the_suite)
    assert judged(box, "    return args[0] * 2\n", suite(([[1]], [2]))).status is Status.PASSED


# Mbpp/98 (the product of a list over its length; the task's atol 1e-4) answered with numpy's float64, close to
# the expected output but not equal: EvalPlus 0.3.1 checks the type before its tolerance and fails it; the same
# value as a float passes. On 2b2788d both passed (the float64 crossed as a float).
_PRODUCT = ("import numpy\nfrom functools import reduce\n\n\ndef multiply_num(numbers):\n"
            "    return {}(numpy.float64(reduce(lambda x, y: x * y, numbers) / len(numbers)) * (1 + 1e-12))\n")


def test_numpy_answers_get_evalplus_s_verdicts(pytester, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    write_jsonl(pytester.path / "samples.jsonl", [{"task_id": "Mbpp/98", "solution": _PRODUCT.format("")},
                                                  {"task_id": "Mbpp/98", "solution": _PRODUCT.format("float")}])
    (pytester.path / "run.yaml").write_text("target: {mode: samples, samples: samples.jsonl, allow_subset: true}\n"
                                            "dataset: mbppplus\nparams: {allow_code_execution: true}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-results", "results.jsonl",
                                "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=1, failed=1)
    rows = {r["sample"]: r for r in map(json.loads, (pytester.path / "results.jsonl").read_text().splitlines())}
    assert {sample: (r["base_status"], r["plus_status"]) for sample, r in rows.items()} == \
        {0: ("assertion_failed", "assertion_failed"), 1: ("passed", "passed")}


def test_a_run_is_titled_by_its_dataset_and_keeps_the_measurement_keys(pytester, tmp_path, monkeypatch):
    """An MBPP+ run is titled MBPP+ (it was "HumanEval") in the terminal section, the gate's block, the last
    score line, the Markdown heading and the HTML page; the report's and JUnit's measurement keys, which scripts
    read, stay human-eval.*."""
    import xml.etree.ElementTree as ET

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (pytester.path / "run.yaml").write_text("target: {mode: mock}\ndataset: mbppplus\nparams: {execute: true, "
                                            "limit: 1, plus: {min_time_limit_s: 1.0}}\n")
    result = pytester.runpytest("--humaneval-config", "run.yaml", "--humaneval-min-pass-at-1", "0.5",
                                "--humaneval-report", "r.json", "--humaneval-markdown", "r.md", "--humaneval-html",
                                "r.html", "--junitxml", "j.xml", "-p", "no:xdist", *NO_CACHE)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["=* MBPP+ =*", "-* MBPP+ gate: PASS -*",
                                 "MBPP+ pass@1 1.000 (plus)  base 1.000  coverage 1/1  [[]mbppplus v0.2.0 *"])
    assert "HumanEval" not in result.stdout.str()
    assert (pytester.path / "r.md").read_text().startswith("## MBPP+: mock-execute")
    page = (pytester.path / "r.html").read_text()
    assert "<title>MBPP+: mock-execute on mbppplus v0.2.0" in page and '<span class="muted">MBPP+</span>' in page
    assert 'placeholder="task id, e.g. Mbpp/2"' in page and "HumanEval" not in page
    report = json.loads((pytester.path / "r.json").read_text())
    assert {"human-eval.pass_at_1", "human-eval.base_pass_at_1", "human-eval.coverage"} <= set(report["measurements"])
    names = {p.get("name") for p in ET.parse(pytester.path / "j.xml").getroot().iter("property")}
    assert {"human-eval.pass_at_1", "human-eval.coverage", "human-eval.dataset_label"} <= names
