"""Comparable numbers: the published protocols as presets, what a run's sampling matches, the warnings before a
number that cannot be compared, and a labelled samples file. Pure functions first, then real pytest sessions
against the loopback server (serial and with -n 2), with the report, Markdown, HTML and JUnit parsed."""

from __future__ import annotations

import fnmatch
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from fake_openai import MODEL, FakeOpenAI, Reply, choices, models
from sessions import NO_CACHE, read_report

from pytest_humaneval import protocols
from pytest_humaneval.completions.endpoint import CHAT_SYSTEM, DEFAULT_STOP
from pytest_humaneval.config import ConfigError, load_config
from pytest_humaneval.data.dataset import load_problems
from pytest_humaneval.session.handoff import config_from_json, config_to_json

PROBLEMS = load_problems()[1]
KEY = "sk-test-SECRET-protocol-5e1d"


# -- the presets and the rules, exactly ----------------------------------------------------------------------

def test_presets_are_sources_settings():
    """The presets are their sources' settings."""
    table = {name: (p.n, p.temperature, p.top_p, p.k) for name, p in protocols.PRESETS.items()}
    assert table == {
        "greedy": (1, 0.0, None, (1,)),
        "codex-pass1": (200, 0.2, 0.95, (1,)),
        "codex-passk": (200, 0.8, 0.95, (10, 100)),
        "starcoder-pass1": (200, 0.2, 0.95, (1,)),
        "starcoder-passk": (200, 0.8, 0.95, (10, 100)),
        "lcb": (10, 0.2, 0.95, (1, 5)),  # LiveCodeBench's runner (tests/test_io_live.py runs it)
    }
    for preset in protocols.PRESETS.values():  # a preset never warns about itself
        assert protocols.pitfalls(preset.n, preset.temperature, preset.k) == []
        assert preset.name in protocols.matches(preset.n, preset.temperature, preset.top_p, preset.k)


def test_presets_stops_and_prompts():
    """Each preset has its source's stop sequences and prompt: the sources' own lists, not the harness's default four
    (docs/live-models.md quotes where each is from)."""
    codex = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
    bigcode = ("\nclass", "\ndef", "\n#", "\n@", "\nprint", "\nif")
    evalplus = ("<|endoftext|>", "<|endofmask|>", "</s>", "\nif __name__", "\ndef main(", "\nprint(", "\ndef ",
                "\nclass ", "\nimport ", "\nfrom ", "\nassert ")
    assert {name: (p.setup.stop, p.setup.prompt) for name, p in protocols.PRESETS.items()} == {
        "greedy": (evalplus, "stripped + newline"),
        "codex-pass1": (codex, "as is"), "codex-passk": (codex, "as is"),
        "starcoder-pass1": (bigcode, "stripped"), "starcoder-passk": (bigcode, "stripped"),
        "lcb": (("###",), "as is"),  # its base-model form's stop; its question is sent, never HumanEval's prompt
    }
    prompt = PROBLEMS[0].prompt
    assert prompt.endswith('"""\n') and prompt != prompt.strip()
    assert protocols.sent_prompt("codex-pass1", "completions", prompt) == prompt
    assert protocols.sent_prompt("starcoder-pass1", "completions", prompt) == prompt.strip()
    assert protocols.sent_prompt("greedy", "completions", prompt) == prompt.strip() + "\n"
    assert protocols.sent_prompt(None, "completions", prompt) == prompt  # without a preset: as always
    assert protocols.sent_stop(None, "completions", None) is None  # the client's DEFAULT_STOP, as always
    assert protocols.sent_stop("codex-pass1", "completions", None) == codex
    assert protocols.sent_stop("codex-pass1", "completions", ("###",)) == ("###",)  # the config's wins
    assert protocols.sent_stop("codex-pass1", "chat", None) is None  # a chat answer's code block would be cut
    # codex-passk's label says whose choice pass@10 at 0.8 is
    assert protocols.PRESETS["codex-passk"].source == (
        "Codex, Chen et al. 2021, arXiv 2107.03374; pass@10 at 0.8 as StarCoder, arXiv 2305.06161")


@pytest.mark.parametrize(("name", "api", "system_prompt", "stop", "expected"), [
    ("codex-pass1", "chat", None, None,
     "params.protocol codex-pass1 over target.api chat: Codex sampled HumanEval's prompt as a plain completion, with "
     "no chat template and no system prompt; this run sends the harness's chat message with the harness's system "
     "prompt, so its pass@1 is not measured as Codex's (target.api completions sends its prompt and stop "
     "sequences)"),
    ("starcoder-passk", "chat", "", None,
     "params.protocol starcoder-passk over target.api chat: StarCoder sampled HumanEval's prompt as a plain "
     "completion, with no chat template and no system prompt; this run sends the harness's chat message with no "
     "system prompt, so its pass@10, pass@100 are not measured as StarCoder's (*"),
    ("greedy", "chat", "Be brief.", None,
     "params.protocol greedy over target.api chat: the EvalPlus leaderboard sent a chat model its own instruction as "
     "one user message and no system prompt; this run sends the harness's chat message with params.system_prompt, "
     "so its pass@1 is not measured as the EvalPlus leaderboard's (its direct completions of base models are what "
     "target.api completions sends)"),
    ("codex-pass1", "completions", None, ("\nclass", "\ndef", "\n#", "\nif"),
     "params.protocol codex-pass1 with params.stop: Codex stops at '\\nclass', '\\ndef', '\\n#', '\\nif', "
     "'\\nprint'; this run stops at '\\nclass', '\\ndef', '\\n#', '\\nif', so its pass@1 is not measured as "
     "Codex's (remove params.stop to send them all; OpenAI's own API accepts at most 4)"),
    ("codex-pass1", "completions", None, None, None),
    (None, "chat", None, None, None),  # no preset: nothing claimed, nothing to warn about
])
def test_other_setup_warns_in_one_line(name, api, system_prompt, stop, expected):
    """A preset over another set-up than its source's warns in one line."""
    found = protocols.setup_warnings(name, api, system_prompt, stop)
    if expected is None:
        assert found == []
        return
    assert len(found) == 1 and "\n" not in found[0]
    assert found[0] == expected or (expected.endswith("*") and found[0].startswith(expected[:-1])), found[0]
    # only a generated run: a samples file was sampled elsewhere, over whatever API
    assert protocols.describe("samples", name, 0.2, 0.95, (1,), [200], api=api, system_prompt=system_prompt,
                             stop=stop)["warnings"] == []


def test_matches_needs_every_setting():
    assert protocols.matches(1, 0.0, None, [1]) == ["greedy"]
    assert protocols.matches(200, 0.2, 0.95, [1]) == ["codex-pass1", "starcoder-pass1"]
    assert protocols.matches(200, 0.8, 0.95, [100, 10]) == ["codex-passk", "starcoder-passk"]
    assert protocols.matches(200, 0.2, None, [1]) == []  # no nucleus sampling
    assert protocols.matches(50, 0.2, 0.95, [1]) == []
    assert protocols.matches(200, 0.8, 0.95, [1, 10, 100]) == []  # pass@1 from the hot samples
    assert protocols.matches(1, 0.0, 0.95, [1]) == []


@pytest.mark.parametrize(("n", "temperature", "k", "expected"), [
    (10, 0.8, [1], ["pass@1 at temperature 0.8 is not comparable with a published pass@1 (Codex and StarCoder "
                    "sample it at 0.2, the EvalPlus leaderboard decodes greedily): params.protocol codex-pass1 (or "
                    "greedy) makes it comparable"]),
    (20, 0.2, [1, 10], ["pass@10 at temperature 0.2 is not comparable with a published pass@k for k > 1 (Codex and "
                        "StarCoder sample it at 0.8): params.protocol codex-passk makes it comparable"]),
    (5, 0.2, [1], ["pass@1 from 5 samples per problem at temperature 0.2 is not comparable with a published pass@1 "
                   "(Codex and StarCoder average 200 samples at 0.2): params.protocol codex-pass1 (or greedy: one "
                   "sample at temperature 0) makes it comparable"]),
    (1, 0.5, [1], ["pass@1 at temperature 0.5 *", "pass@1 from 1 sample per problem at temperature 0.5 *"]),
    (2, 0.0, [1, 2], ["pass@2 at temperature 0 is not comparable*"]),
    (9, 0.49, [1], ["pass@1 from 9 samples *"]),
    (10, 0.49, [1], []),
    (50, 0.2, [1], []),  # the bigcode leaderboard's protocol: unpublished here, but no pitfall
    (3, None, [1, 2], []),  # not known: nothing to say
])
def test_pitfalls(n, temperature, k, expected):
    found = protocols.pitfalls(n, temperature, k)
    assert len(found) == len(expected)
    for line, pattern in zip(found, expected, strict=False):
        assert line == pattern or (pattern.endswith("*") and line.startswith(pattern[:-1])), line


def test_line_says_if_protocol_matches():
    """The line says whether the run matches a published protocol."""
    def line(mode, name, temperature, top_p, k, sizes):
        return protocols.line(protocols.describe(mode, name, temperature, top_p, k, sizes))

    assert line("runtime", "codex-pass1", 0.2, 0.95, (1,), [200, 200]) == (
        "codex-pass1 (Codex, Chen et al. 2021, arXiv 2107.03374): n 200, temperature 0.2, top_p 0.95, k [1]")
    assert line("runtime", None, 0.0, None, (1,), [1]) == (
        "n 1, temperature 0, top_p unset, k [1]: matches greedy")
    assert line("runtime", None, 0.8, None, (1,), [5]) == (
        "n 5, temperature 0.8, top_p unset, k [1]: matches no published protocol")
    assert line("samples", None, None, None, (1, 2), [2, 3]) == (
        "n varies, temperature unknown, k [1, 2]: a samples file says nothing of how it was sampled (label it with "
        "params.protocol or params.temperature)")
    assert line("samples", None, 0.2, 0.95, (1, 5), [2]) == (  # k the file cannot support is not reported
        "n 2, temperature 0.2, top_p 0.95, k [1] (declared for the samples file): matches no published protocol")
    assert protocols.describe("mock", None, 0.0, None, (1,), [1]) is None


def test_local_vllm_example_warning():
    """The local vLLM example gets the one warning the README says."""
    config = load_config(Path(__file__).resolve().parent.parent / "examples" / "local-vllm.yaml")
    params = config.params
    found = protocols.pitfalls(params.n, params.temperature, params.k)
    assert len(found) == 1 and found[0].startswith("pass@1 at temperature 0.8 is not comparable")
    assert protocols.matches(params.n, params.temperature, params.top_p, params.k) == []


# -- the config ----------------------------------------------------------------------------------------------

RUNTIME = "target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m}\n"


def config_at(tmp_path: Path, text: str, samples: int | None = None) -> Path:
    if samples is not None:
        problem = PROBLEMS[0]
        (tmp_path / "s.jsonl").write_text("".join(json.dumps({"task_id": problem.task_id, "completion": "x"}) + "\n"
                                                  for _ in range(samples)))
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("name", sorted(protocols.PRESETS))
def test_preset_sets_sampling(tmp_path, name):
    """A preset sets n, temperature, top_p and k, and crosses to workers."""
    preset = protocols.PRESETS[name]
    config = load_config(config_at(tmp_path, RUNTIME + f"params: {{allow_code_execution: true, protocol: {name}}}\n"))
    params = config.params
    assert (params.protocol, params.n, params.temperature, params.top_p, params.k) == (
        name, preset.n, preset.temperature, preset.top_p, preset.k)
    assert config_from_json(config_to_json(config)) == config


@pytest.mark.parametrize(("params", "expected"), [
    ("protocol: codex-pass1, temperature: 0.8",
     "params.temperature: expected 0.2, as params.protocol codex-pass1 sets it (remove params.temperature or choose "
     "another protocol), found 0.8"),
    ("protocol: starcoder-passk, n: 20", "params.n: expected 200, as params.protocol starcoder-passk sets it (remove "
                                         "params.n or choose another protocol), found 20"),
    ("protocol: codex-pass1, top_p: 0.9", "params.top_p: expected 0.95, as params.protocol codex-pass1 sets it"),
    ("protocol: greedy, top_p: 0.95", "params.top_p: expected unset (greedy decoding has no top_p), as "
                                      "params.protocol greedy sets it (remove params.top_p or choose another "
                                      "protocol), found 0.95"),
    ("protocol: codex-passk, k: [1, 10, 100]", "params.k: expected a list [10, 100], as params.protocol codex-passk "
                                               "sets it (remove params.k or choose another protocol), found a list "
                                               "[1, 10, 100]"),
    ("protocol: codex", "params.protocol: expected greedy | codex-pass1 | codex-passk | starcoder-pass1 | "
                        "starcoder-passk | lcb, found 'codex'"),
])
def test_contradicting_key_names_both(tmp_path, params, expected):
    """A preset plus a contradicting key is one error naming both."""
    path = config_at(tmp_path, RUNTIME + f"params: {{allow_code_execution: true, {params}}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: {expected}") and "\n" not in str(info.value)


def test_agreeing_key_is_fine(tmp_path):
    """A key that agrees with the preset is fine."""
    config = load_config(config_at(tmp_path, RUNTIME + "params: {allow_code_execution: true, protocol: codex-passk, "
                                                       "n: 200, temperature: 0.8, top_p: 0.95, k: [100, 10]}\n"))
    assert config.params.k == (10, 100) and config.params.n == 200


def test_samples_sampling_is_unknown(tmp_path):
    """The sampling of a samples file is unknown unless labelled, and a mock run has no protocol."""
    samples = "target: {mode: samples, samples: s.jsonl, allow_subset: true}\nparams: {allow_code_execution: true"
    assert load_config(config_at(tmp_path, samples + "}\n", samples=1)).params.temperature is None
    labelled = load_config(config_at(tmp_path, samples + ", temperature: 0.2, top_p: 0.95}\n", samples=1))
    assert (labelled.params.temperature, labelled.params.top_p) == (0.2, 0.95)
    preset = load_config(config_at(tmp_path, samples + ", protocol: codex-pass1}\n", samples=1))
    assert (preset.params.temperature, preset.params.top_p, preset.params.k) == (0.2, 0.95, (1,))
    for text, expected in (
        (samples + ", top_p: 0.95}\n", "params.top_p: expected together with params.temperature (or params.protocol) "
                                       "in mode samples, where they say how the file was sampled, found top_p 0.95 "
                                       "alone"),
        ("target: {mode: mock}\nparams: {execute: true, protocol: greedy}\n",
         "params.protocol: expected only with mode runtime or samples (a mock run samples no model), found greedy "
         "with mode mock"),
    ):
        path = config_at(tmp_path, text, samples=1)
        with pytest.raises(ConfigError) as info:
            load_config(path)
        assert str(info.value) == f"{path}: {expected}"


# -- real sessions: each preset against the loopback server --------------------------------------------------

def honouring_n(request, index):
    """Each problem's canonical solution, as many choices as the request's n."""
    if request.method == "GET":
        return models()
    problem = next(p for p in PROBLEMS if p.prompt.strip() in request.prompt_text)
    text = f"```python\n{problem.prompt}{problem.canonical_solution}```"
    return choices([text] * request.body.get("n", 1), usage={"prompt_tokens": 10, "completion_tokens": 5})


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("TEST_LLM_KEY", KEY)


def runtime_config(pytester, server, params: str, api: str = "chat") -> str:
    path = pytester.path / "live.yaml"
    path.write_text(f"target: {{mode: runtime, endpoint: '{server.url}', model: {MODEL}, api: {api}, "
                    "credentials_ref: env:TEST_LLM_KEY}\n"
                    f"params: {{allow_code_execution: true{params}}}\n")
    return str(path)


def junit_properties(path: Path) -> dict[str, str]:
    suite = ET.parse(path).getroot().find("testsuite")
    return {p.get("name"): p.get("value") for p in suite.find("properties")}


def honouring_n_completions(request, index):
    """Each problem's canonical body, as many choices as the request's n, in the completions API's shape."""
    if request.method == "GET":
        return models()
    problem = next(p for p in PROBLEMS if p.prompt.strip() in request.prompt_text)
    return Reply(body={"id": "x", "object": "text_completion", "model": MODEL, "usage": {"prompt_tokens": 10,
                       "completion_tokens": 5}, "choices": [
        {"index": i, "text": problem.canonical_solution, "finish_reason": "stop"}
        for i in range(request.body.get("n", 1))]})


@pytest.mark.slow
@pytest.mark.parametrize(("name", "limit", "dist"), [
    ("greedy", 3, ("-p", "no:xdist")),
    ("codex-pass1", 1, ("-n", "2")),
    ("codex-passk", 1, ("-p", "no:xdist")),
    ("starcoder-pass1", 1, ("-p", "no:xdist")),
    ("starcoder-passk", 1, ("-n", "2")),
])
def test_each_preset_sends_its_settings(pytester, name, limit, dist):
    """Each preset sends its source's settings and labels every output. Over the completions API, what the source sent:
    the sampling, its stop sequences (all of them) and its prompt (stripped or as is); the recorded request bodies
    show it, and no warning is printed."""
    preset = protocols.PRESETS[name]
    with FakeOpenAI(honouring_n_completions) as server:
        cfg = runtime_config(pytester, server, f", protocol: {name}, limit: {limit}", api="completions")
        result = pytester.runpytest("--humaneval-config", cfg, *dist, "--humaneval-report", "r.json",
                                    "--humaneval-markdown", "r.md", "--humaneval-html", "r.html",
                                    "--junitxml", "junit.xml", *NO_CACHE)
    result.assert_outcomes(passed=preset.n * limit)
    posts = server.posts()
    asked: dict[str, int] = {}
    for post in posts:
        problem = next(p for p in PROBLEMS[:limit] if p.prompt.strip() in post.prompt_text)
        asked[problem.task_id] = asked.get(problem.task_id, 0) + post.body.get("n", 1)
        assert post.path.endswith("/completions") and not post.path.endswith("/chat/completions")
        assert post.body["temperature"] == preset.temperature
        assert post.body.get("top_p") == preset.top_p and ("top_p" in post.body) == (preset.top_p is not None)
        assert post.body["stop"] == list(preset.setup.stop) and len(post.body["stop"]) > len(DEFAULT_STOP)
        assert post.body["prompt"] == protocols.sent_prompt(name, "completions", problem.prompt)
    assert asked == {p.task_id: preset.n for p in PROBLEMS[:limit]}
    assert len(posts) == limit * (1 if preset.n == 1 else 2)  # choices per request (at most 128 each)

    report = read_report(pytester.path / "r.json")
    described = report["run"]["protocol"]
    assert described == {"name": name, "source": preset.source, "sampling": "generated", "n": preset.n,
                         "temperature": preset.temperature, "top_p": preset.top_p, "k": list(preset.k),
                         "matches": protocols.matches(preset.n, preset.temperature, preset.top_p, preset.k),
                         "warnings": []}
    generation = report["dataset"]["settings"]["generation"]  # what was sent is what the digest covers
    assert generation["stop"] == list(preset.setup.stop)
    assert generation.get("prompt", "as is") == preset.setup.prompt
    text = protocols.line(described)
    assert text.startswith(f"{name} ({preset.source}): n {preset.n}, temperature {preset.temperature:g}")
    result.stdout.fnmatch_lines([f"protocol  {text}"])
    assert "pytest-humaneval: pass@" not in result.stdout.str()  # no pitfall warning
    assert "pytest-humaneval: params.protocol" not in result.stdout.str()  # nor a setup one
    assert f"Protocol: {text}\n" in (pytester.path / "r.md").read_text()
    assert f'<dd data-fact="protocol">{text}</dd>' in (pytester.path / "r.html").read_text()
    assert junit_properties(pytester.path / "junit.xml")["human-eval.protocol"] == text


@pytest.mark.slow
@pytest.mark.parametrize(("name", "params", "system", "warning"), [
    ("codex-pass1", "", CHAT_SYSTEM, "*pytest-humaneval: params.protocol codex-pass1 over target.api chat: Codex "
                                     "sampled HumanEval's prompt as a plain completion*the harness's system prompt*"),
    ("greedy", ", system_prompt: ''", None, "*pytest-humaneval: params.protocol greedy over target.api chat: the "
                                            "EvalPlus leaderboard sent a chat model its own instruction*"),
])
def test_preset_over_chat(pytester, name, params, system, warning):
    """A preset over chat sends the harness's message, and warns once. Over chat the source's stop sequences are not
    sent (they would cut the answer's code block at its first '\ndef'), the sampling still is, and one warning line
    says the number is not measured as the source's."""
    preset = protocols.PRESETS[name]
    with FakeOpenAI(honouring_n) as server:
        cfg = runtime_config(pytester, server, f", protocol: {name}, limit: 1{params}")
        result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "r.json",
                                    *NO_CACHE)
    result.assert_outcomes(passed=preset.n)
    for post in server.posts():
        assert post.path.endswith("/chat/completions") and "stop" not in post.body
        assert post.body["temperature"] == preset.temperature
        roles = [m["role"] for m in post.body["messages"]]
        assert roles == (["system", "user"] if system else ["user"])
        if system:
            assert post.body["messages"][0]["content"] == system
    result.stdout.fnmatch_lines([warning])
    assert result.stdout.str().count("pytest-humaneval: params.protocol") == 1
    described = read_report(pytester.path / "r.json")["run"]["protocol"]
    assert len(described["warnings"]) == 1
    assert fnmatch.fnmatch(f"pytest-humaneval: {described['warnings'][0]}", warning.lstrip("*"))


def test_preset_with_configs_stop(pytester):
    """A server that caps stop at 4 (OpenAI's own API) needs params.stop: it is sent as set, and the run says the
    number is not measured as the source's."""
    with FakeOpenAI(honouring_n_completions) as server:
        cfg = runtime_config(pytester, server, ', protocol: starcoder-pass1, limit: 1, stop: ["\\nclass", '
                                               '"\\ndef", "\\n#", "\\nif"]', api="completions")
        result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "r.json",
                                    *NO_CACHE)
    result.assert_outcomes(passed=200)
    assert {tuple(post.body["stop"]) for post in server.posts()} == {("\nclass", "\ndef", "\n#", "\nif")}
    assert {post.body["prompt"] for post in server.posts()} == {PROBLEMS[0].prompt.strip()}  # still stripped
    result.stdout.fnmatch_lines(["*pytest-humaneval: params.protocol starcoder-pass1 with params.stop: StarCoder "
                                 "stops at *; this run stops at *OpenAI's own API accepts at most 4)"])
    assert result.stdout.str().count("pytest-humaneval: params.protocol") == 1
    assert len(read_report(pytester.path / "r.json")["run"]["protocol"]["warnings"]) == 1


def test_no_preset_sends_default_stops(pytester):
    """Without a preset, the completions API sends what it always did: the default stop sequences and the prompt as is,
    with no protocol warning."""
    with FakeOpenAI(honouring_n_completions) as server:
        cfg = runtime_config(pytester, server, ", limit: 1", api="completions")
        result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=1)
    (post,) = server.posts()
    assert post.body["stop"] == list(DEFAULT_STOP) and post.body["prompt"] == PROBLEMS[0].prompt
    assert "pytest-humaneval: params.protocol" not in result.stdout.str()


@pytest.mark.slow
def test_no_preset_described_by_use(pytester):
    """Without a preset, the run is described by what it used."""
    with FakeOpenAI(honouring_n) as server:
        default = runtime_config(pytester, server, ", limit: 2")
        result = pytester.runpytest("--humaneval-config", default, "-p", "no:xdist", "--junitxml", "junit.xml",
                                    "--humaneval-report", "r.json", *NO_CACHE)
        result.stdout.fnmatch_lines(["protocol  n 1, temperature 0, top_p unset, k [[]1[]]: matches greedy"])
        assert read_report(pytester.path / "r.json")["run"]["protocol"]["matches"] == ["greedy"]
        quiet = pytester.runpytest("--humaneval-config", default, "-p", "no:xdist", "-q", *NO_CACHE)
        quiet.stdout.fnmatch_lines(["pass@1 1.000  coverage 2/2  [[]*[]]  protocol greedy"])
        custom = runtime_config(pytester, server, ", limit: 2, n: 20, temperature: 0.5, top_p: 0.9")
        result = pytester.runpytest("--humaneval-config", custom, "-n", "2", "--junitxml", "junit.xml", *NO_CACHE)
    # (params.k unset: pass@1 and pass@10, which n 20 allows)
    result.stdout.fnmatch_lines(["protocol  n 20, temperature 0.5, top_p 0.9, k [[]1, 10[]]: matches no published "
                                 "protocol"])
    assert junit_properties(pytester.path / "junit.xml")["human-eval.protocol"] == (
        "n 20, temperature 0.5, top_p 0.9, k [1, 10]: matches no published protocol")


# -- the three pitfalls: one warning line each ---------------------------------------------------------------

def samples_config(pytester, samples: int, params: str, rows=None) -> str:
    problem = PROBLEMS[2]
    rows = rows or [{"task_id": problem.task_id, "completion": problem.canonical_solution}] * samples
    (pytester.path / "s.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    path = pytester.path / "labelled.yaml"
    path.write_text(f"target: {{mode: samples, samples: s.jsonl, allow_subset: true}}\nparams: {{allow_code_execution: true{params}}}\n")
    return str(path)


@pytest.mark.slow
@pytest.mark.parametrize(("samples", "params", "warning"), [
    (10, ", temperature: 0.8", "*pytest-humaneval: pass@1 at temperature 0.8 is not comparable with a published "
                               "pass@1 *: params.protocol codex-pass1 (or greedy) makes it comparable"),
    (2, ", temperature: 0, k: [1, 2]", "*pytest-humaneval: pass@2 at temperature 0 is not comparable with a published "
                                       "pass@k for k > 1 *: params.protocol codex-passk makes it comparable"),
    (5, ", temperature: 0.2, top_p: 0.95", "*pytest-humaneval: pass@1 from 5 samples per problem at temperature 0.2 "
                                           "is not comparable * params.protocol codex-pass1 (or greedy*"),
])
def test_each_pitfall_prints_its_warning(pytester, samples, params, warning):
    cfg = samples_config(pytester, samples, params)
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "r.json",
                                *NO_CACHE)
    result.assert_outcomes(passed=samples)
    result.stdout.fnmatch_lines([warning])
    assert result.stdout.str().count("pytest-humaneval: pass@") == 1  # that one, and no other
    described = read_report(pytester.path / "r.json")["run"]["protocol"]
    assert len(described["warnings"]) == 1
    assert fnmatch.fnmatch(f"pytest-humaneval: {described['warnings'][0]}", warning.lstrip("*"))


def test_hot_runtime_run_warns(pytester):
    """A hot runtime run warns before its pass@1 is read."""
    with FakeOpenAI(honouring_n) as server:
        cfg = runtime_config(pytester, server, ", limit: 1, n: 2, temperature: 0.8")
        result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE)
    result.assert_outcomes(passed=2)
    assert result.stdout.str().count("pytest-humaneval: pass@") == 2
    result.stdout.fnmatch_lines(["*pytest-humaneval: pass@1 at temperature 0.8 is not comparable*",
                                 "*pytest-humaneval: pass@1 from 2 samples per problem at temperature 0.8*"])
    result.stdout.fnmatch_lines(["protocol  n 2, temperature 0.8, top_p unset, k [[]1[]]: matches no published "
                                 "protocol"])


@pytest.mark.parametrize(("samples", "k"), [(10, [1, 10]), (9, [1]), (1, [1])])
def test_samples_file_without_k_reports_what_n_allows(pytester, samples, k):
    """A samples file with n samples a problem and no params.k reports each of pass@1/10/100 that n allows (it
    reported pass@1 alone), with no warning of a k left out."""
    cfg = samples_config(pytester, samples, ", temperature: 0.2")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "r.json",
                                "--junitxml", "junit.xml", *NO_CACHE)
    result.assert_outcomes(passed=samples)
    report = read_report(pytester.path / "r.json")
    assert report["run"]["k"] == k and report["run"]["protocol"]["k"] == k
    assert [name for name in report["measurements"] if name.startswith("human-eval.pass_at_")] == \
        [f"human-eval.pass_at_{i}" for i in k]
    assert {f"human-eval.pass_at_{i}" for i in k} <= set(junit_properties(pytester.path / "junit.xml"))
    result.stdout.fnmatch_lines(["HumanEval " + "  ".join(f"pass@{i} 1.000" for i in k) + "  coverage *"])
    assert "will not be reported" not in result.stdout.str()


# -- a samples file labelled without generating anything ------------------------------------------------------

def test_samples_file_labelled_by_preset(pytester):
    """A samples file is labelled by its preset, and nothing is generated."""
    cfg = samples_config(pytester, 200, ", protocol: codex-pass1")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "r.json",
                                "--junitxml", "junit.xml", *NO_CACHE)
    result.assert_outcomes(passed=200)
    described = read_report(pytester.path / "r.json")["run"]["protocol"]
    assert (described["name"], described["sampling"], described["n"], described["matches"]) == (
        "codex-pass1", "declared", 200, ["codex-pass1", "starcoder-pass1"])
    assert read_report(pytester.path / "r.json")["run"]["temperature"] == 0.2
    assert junit_properties(pytester.path / "junit.xml")["human-eval.protocol"] == (
        "codex-pass1 (Codex, Chen et al. 2021, arXiv 2107.03374; declared for the samples file): n 200, "
        "temperature 0.2, top_p 0.95, k [1]")


def test_samples_without_presets_n_refused(pytester):
    """A samples file that does not have the preset's n is refused."""
    cfg = samples_config(pytester, 20, ", protocol: starcoder-pass1")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {cfg}: params.protocol: expected 200 samples per problem in "
                                 f"{pytester.path / 's.jsonl'}, as starcoder-pass1 samples (label the file with "
                                 "params.temperature and params.top_p instead), found 20 for HumanEval/2"])


def test_unlabelled_samples_temperature(pytester):
    """An unlabelled samples file says its temperature is unknown."""
    cfg = samples_config(pytester, 2, "")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", "--humaneval-report", "r.json",
                                *NO_CACHE)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["protocol  n 2, temperature unknown, k [[]1[]]: a samples file says nothing of how "
                                 "it was sampled (label it with params.protocol or params.temperature)"])
    report = read_report(pytester.path / "r.json")
    assert report["run"]["protocol"]["sampling"] == "unknown" and report["run"]["temperature"] is None
    assert "declared" not in report["dataset"]["settings"]


def test_contradicting_key_is_usage_error(pytester):
    """A preset plus a contradicting key is one usage error."""
    cfg = samples_config(pytester, 200, ", protocol: codex-pass1, temperature: 0.8")
    result = pytester.runpytest("--humaneval-config", cfg, "-p", "no:xdist", *NO_CACHE)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR")]
    assert errors == [f"ERROR: {cfg}: params.temperature: expected 0.2, as params.protocol codex-pass1 sets it "
                      "(remove params.temperature or choose another protocol), found 0.8"]
