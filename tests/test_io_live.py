"""A live model over standard-input and functional problems (issue 52, item 3): LiveCodeBench's prompts (the
stdin format instruction or the starter code), the code from the answer's last fenced block, the ``lcb``
preset's sampling. Pure rules first, then real pytest sessions against the loopback server over the bundled
corpus, each sample judged in the sandbox."""

from __future__ import annotations

import json
from importlib import resources

import pytest
from fake_openai import MODEL, FakeOpenAI, Reply, choices, completion, models
from sessions import NO_CACHE, read_report, read_rows

from pytest_humaneval import protocols
from pytest_humaneval.completions import lcb
from pytest_humaneval.completions.endpoint import NO_CODE, Client
from pytest_humaneval.completions.extract import extract
from pytest_humaneval.data.io_problems import CALL_ENTRY, load_io_dataset, load_io_problems

FIXTURES = resources.files("pytest_humaneval.fixtures")
CORPUS = str(FIXTURES.joinpath("io_corpus.jsonl"))
ROWS = {p.task_id: p for p in load_io_problems(CORPUS)}
PROGRAMS = json.loads(FIXTURES.joinpath("io_corpus_programs.json").read_text())
STDIN, FUNCTIONAL = "io/pair-sums", "io/alternating-sum"

# LiveCodeBench's own text (lcb_runner/prompts/code_generation.py at 28fef95), spelled out here apart from lcb.py
SYSTEM = ("You are an expert Python programmer. You will be given a question (problem specification) and will "
          "generate a correct Python program that matches the specification and passes all tests.")
WITH_STARTER = ("You will use the following starter code to write the solution to the problem and enclose your code "
                "within delimiters.")
WITHOUT_STARTER = ("Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test "
                   "on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python "
                   "program runs, it reads the inputs, runs the algorithm and writes output to STDOUT.")


def hidden_outputs(task_id: str) -> list[str]:
    """The outputs of a problem's private tests that its statement does not show (its examples may)."""
    row = ROWS[task_id]
    return [test.output.strip() for test in row.tests[row.public:] if test.output.strip() not in row.statement]


# -- the problem carries its question, never its tests ------------------------------------------------------------

def test_judged_problem_carries_the_question_not_the_tests():
    problems = {p.task_id: p for p in load_io_dataset(CORPUS).problems}
    for task_id, row in ROWS.items():
        problem = problems[task_id]
        assert (problem.statement, problem.starter_code) == (row.statement, row.starter_code)
        assert problem.prompt == ""  # nothing goes before the candidate's program
        assert lcb.asked(problem) == lcb.Question(row.statement, row.starter_code)
    assert problems[STDIN].starter_code == "" and problems[FUNCTIONAL].starter_code.startswith("class Solution:")


# -- LiveCodeBench's prompts, exactly -------------------------------------------------------------------------------

def test_chat_message_is_livecodebenchs():
    stdin, functional = ROWS[STDIN], ROWS[FUNCTIONAL]
    assert lcb.chat_message(lcb.Question(stdin.statement, "")) == (
        f"### Question:\n{stdin.statement}\n\n### Format: {WITHOUT_STARTER}\n```python\n# YOUR CODE HERE\n```\n\n"
        "### Answer: (use the provided format with backticks)\n\n")
    assert lcb.chat_message(lcb.Question(functional.statement, functional.starter_code)) == (
        f"### Question:\n{functional.statement}\n\n### Format: {WITH_STARTER}\n```python\n{functional.starter_code}"
        "\n```\n\n### Answer: (use the provided format with backticks)\n\n")
    assert lcb.SYSTEM_MESSAGE == SYSTEM


def test_base_prompt_is_livecodebenchs_question_alone():
    stdin, functional = ROWS[STDIN], ROWS[FUNCTIONAL]
    assert lcb.base_prompt(lcb.Question(stdin.statement, "")) == f"### Question\n{stdin.statement}\n\n### Answer\n\n"
    assert lcb.base_prompt(lcb.Question(functional.statement, functional.starter_code)) == (
        f"### Question\n{functional.statement}\n\n### Starter Code\n{functional.starter_code}\n\n### Answer\n\n")


def test_request_bodies():
    """Over chat: LiveCodeBench's system message (or params.system_prompt) and question; over completions: its
    base-model form, stopped at its '###' (or params.stop)."""
    question = lcb.Question(ROWS[STDIN].statement, "")
    user = {"role": "user", "content": lcb.chat_message(question)}
    path, body = Client("http://127.0.0.1:9/v1", MODEL, api_key=None).request_body(question)
    assert path == "/chat/completions" and "stop" not in body
    assert body["messages"] == [{"role": "system", "content": SYSTEM}, user]
    _, body = Client("http://127.0.0.1:9/v1", MODEL, api_key=None, system_prompt="").request_body(question)
    assert body["messages"] == [user]
    _, body = Client("http://127.0.0.1:9/v1", MODEL, api_key=None, system_prompt="Be brief.").request_body(question)
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, user]
    for protocol in (None, "lcb", "codex-pass1"):  # a HumanEval preset's stops are HumanEval's, not sent here
        path, body = Client("http://127.0.0.1:9/v1", MODEL, api_key=None, api="completions",
                            protocol=protocol).request_body(question)
        assert (path, body["prompt"], body["stop"]) == ("/completions", lcb.base_prompt(question), ["###"])
    _, body = Client("http://127.0.0.1:9/v1", MODEL, api_key=None, api="completions",
                     stop=("\n\n\n",)).request_body(question)
    assert body["stop"] == ["\n\n\n"]


# -- the code: the last fenced block --------------------------------------------------------------------------------

@pytest.mark.parametrize("entry_point", ["", CALL_ENTRY])
def test_last_fenced_block_is_the_code(entry_point):
    """LiveCodeBench's rule: the lines between the last two lines holding a fence, for a standard-input problem
    (no entry point) and a functional one alike; a draft in the reasoning is never the code."""
    answer = "First:\n```python\nprint(1)\n```\nBetter:\n```python\nprint(2)\nprint(3)\n```\nDone."
    found = extract(answer, entry_point, "")
    assert (found.completion, found.program) == ("print(2)\nprint(3)", None)
    assert found.note == "took the last code block (the lines between the last two of 4 fence lines, " \
                         "LiveCodeBench's rule)"
    only = extract("```py\nprint(4)\n```", entry_point, "")
    assert (only.completion, only.note) == ("print(4)", None)
    thought = extract("<think>\n```python\nprint('draft')\n```\n</think>\nAll done: no code.", entry_point, "")
    assert (thought.completion, thought.reasoning) == ("", "```python\nprint('draft')\n```")


def test_answer_without_a_block():
    """Fewer than two fence lines: no code, unless the answer compiles as it is (a base model's answer is the code,
    as LiveCodeBench takes it)."""
    assert extract("I cannot solve this problem.", "", "").completion == ""
    assert extract("Here:\n```python\nprint(1)", "", "").completion == ""  # one fence line, cut off
    base = extract("\nn = int(input())\nprint(n * 2)\n\n", "", "")
    assert (base.completion, base.note) == ("n = int(input())\nprint(n * 2)",
                                            "no fenced code block: the answer taken whole (it compiles)")


# -- the lcb preset --------------------------------------------------------------------------------------------------

def test_lcb_preset():
    """LiveCodeBench's runner: n 10, temperature 0.2, top_p 0.95; pass@1 and pass@5; a preset never warns about
    itself, and over chat (its own form) it warns of nothing but a system prompt of the config's."""
    preset = protocols.PRESETS["lcb"]
    assert (preset.n, preset.temperature, preset.top_p, preset.k) == (10, 0.2, 0.95, (1, 5))
    assert preset.setup.stop == ("###",)
    assert protocols.pitfalls(10, 0.2, (1, 5)) == []
    assert protocols.matches(10, 0.2, 0.95, (5, 1)) == ["lcb"]
    assert protocols.setup_warnings("lcb", "chat", None, None) == []
    assert protocols.setup_warnings("lcb", "chat", "", None) == [
        "params.protocol lcb with params.system_prompt: LiveCodeBench sends a chat model its own system message; this "
        "run sends no system prompt, so its pass@1, pass@5 are not measured as LiveCodeBench's (remove "
        "params.system_prompt)"]
    completions = protocols.setup_warnings("lcb", "completions", None, None)
    assert len(completions) == 1 and completions[0].startswith(
        "params.protocol lcb over target.api completions: LiveCodeBench prompts a base model with a solved example "
        "before the question; this run sends the question alone")


# -- live runs over the bundled corpus -------------------------------------------------------------------------------

def corpus_task(text: str) -> str:
    """The corpus problem whose statement a prompt holds."""
    return next(task_id for task_id, row in ROWS.items() if row.statement in text)


def markdown_answer(task_id: str) -> str:
    """A chat answer: the wrong program in a first block (a decoy), the reference program in the last."""
    programs = PROGRAMS[task_id]
    return (f"A first attempt:\n\n```python\n{programs['wrong']}```\n\nOn second thought, this one is right:\n\n"
            f"```python\n{programs['reference']}```\n\nIt reads the input and prints the answer.")


def answering(request, index):
    if request.method == "GET":
        return models()
    text = markdown_answer(corpus_task(request.prompt_text))
    return choices([text] * request.body.get("n", 1), usage={"prompt_tokens": 10, "completion_tokens": 5})


def live_config(pytester, server, api: str = "chat", params: str = "") -> str:
    path = pytester.path / "live.yaml"
    path.write_text(f"dataset: '{CORPUS}'\n"
                    f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, api: {api}}}\n"
                    f"params: {{allow_code_execution: true, timeout_s: 6{params}}}\n")
    return str(path)


@pytest.mark.parametrize("dist", [("-p", "no:xdist"), pytest.param(("-n", "2"), marks=pytest.mark.slow)],
                         ids=["serial", "xdist"])
def test_live_run_passes_with_lcb_prompts(pytester, dist):
    """The lcb preset over chat: every problem asked LiveCodeBench's question (the stdin instruction or the starter
    code), with its sampling, never a hidden test's output; the last block of each answer judged whole, and
    every reference program passes (a decoy block before it is passed over), in one process or on workers."""
    with FakeOpenAI(answering) as server:
        result = pytester.runpytest("--humaneval-config", live_config(pytester, server, params=", protocol: lcb"),
                                    *dist, "--humaneval-results", "results.jsonl",
                                    "--humaneval-report", "r.json", *NO_CACHE)
    result.assert_outcomes(passed=10 * len(ROWS))
    asked: dict[str, int] = {}
    for post in server.posts():
        assert post.path.endswith("/chat/completions")
        assert (post.body["temperature"], post.body["top_p"]) == (0.2, 0.95) and "stop" not in post.body
        system, user = post.body["messages"]
        assert system == {"role": "system", "content": SYSTEM}
        task_id = corpus_task(user["content"])
        row = ROWS[task_id]
        assert user["content"] == lcb.chat_message(lcb.Question(row.statement, row.starter_code))
        if row.kind == "stdin":
            assert WITHOUT_STARTER in user["content"] and WITH_STARTER not in user["content"]
        else:
            assert f"{WITH_STARTER}\n```python\n{row.starter_code}\n```" in user["content"]
        assert not [output for output in hidden_outputs(task_id) if output in json.dumps(post.body)]
        asked[task_id] = asked.get(task_id, 0) + post.body.get("n", 1)
    assert asked == dict.fromkeys(ROWS, 10)
    rows = read_rows(pytester.path / "results.jsonl")
    assert {row["completion"] for row in rows if row["task_id"] == STDIN} == {PROGRAMS[STDIN]["reference"].rstrip("\n")}
    assert all(row["status"] == "passed" and "took the last code block" in row["detail"] for row in rows)
    described = read_report(pytester.path / "r.json")["run"]["protocol"]
    assert (described["name"], described["n"], described["k"], described["warnings"]) == ("lcb", 10, [1, 5], [])
    result.stdout.fnmatch_lines([f"protocol  {protocols.line(described)}"])
    assert "pytest-humaneval: pass@" not in result.stdout.str()


def test_live_run_over_completions_and_an_answer_without_code(pytester):
    """Over completions: LiveCodeBench's base-model form, stopped at '###', its continuation the program; an
    answer with no code fails, saying the model returned no code."""
    silent = "io/bracket-check"

    def script(request, index):
        if request.method == "GET":
            return models()
        task_id = corpus_task(request.prompt_text)
        return completion("I am not able to solve this." if task_id == silent else
                          "\n" + PROGRAMS[task_id]["reference"])

    with FakeOpenAI(script) as server:
        result = pytester.runpytest("--humaneval-config", live_config(pytester, server, "completions"),
                                    "-p", "no:xdist", "--humaneval-results", "results.jsonl", *NO_CACHE)
    result.assert_outcomes(passed=len(ROWS) - 1, failed=1)
    for post in server.posts():
        row = ROWS[corpus_task(post.body["prompt"])]
        assert post.body["prompt"] == lcb.base_prompt(lcb.Question(row.statement, row.starter_code))
        assert post.body["stop"] == ["###"]
    failed = [row for row in read_rows(pytester.path / "results.jsonl") if row["status"] != "passed"]
    assert [(row["task_id"], row["completion"]) for row in failed] == [(silent, "")]
    assert NO_CODE in failed[0]["detail"]


def test_mock_replay_of_these_problems_is_refused(pytester):
    config = pytester.makefile(".yaml", mock=f"dataset: '{CORPUS}'\ntarget: {{mode: mock}}\n")
    result = pytester.runpytest("--humaneval-config", str(config), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*target.mode: expected samples or runtime with io_corpus (standard-input and "
                                 "functional problems), found mock: *"])


def test_lcb_preset_with_humaneval_is_refused(pytester):
    with FakeOpenAI(lambda request, index: Reply(500)) as server:
        path = pytester.path / "he.yaml"
        path.write_text(f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}}}\n"
                        "params: {allow_code_execution: true, protocol: lcb, limit: 1}\n")
        result = pytester.runpytest("--humaneval-config", str(path), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*params.protocol: expected lcb only with standard-input and functional problems*"
                                 "found openai_humaneval*"])
    assert server.posts() == []


def test_functional_problem_without_starter_code_is_refused(pytester):
    """LiveCodeBench's prompt gives a functional problem its starter code (the method the judge calls): a live run
    of one without it is one error naming it, before any request."""
    rows = [json.loads(line) for line in FIXTURES.joinpath("io_corpus.jsonl").read_text().splitlines()]
    bare = next(row for row in rows if row["question_id"] == FUNCTIONAL)
    bare["starter_code"] = ""
    (pytester.path / "rows.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    with FakeOpenAI(answering) as server:
        path = pytester.path / "live.yaml"
        path.write_text(f"dataset: rows.jsonl\ntarget: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}}}\n"
                        "params: {allow_code_execution: true}\n")
        result = pytester.runpytest("--humaneval-config", str(path), *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*dataset: expected starter code for every functional problem of rows in a live run "
                                 f"*found none for {FUNCTIONAL} (1 of 3 functional problems)*"])
    assert server.posts() == []
