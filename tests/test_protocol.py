"""Comparable numbers: the published protocols as presets, what a run's sampling matches, the warnings before a
number that cannot be compared, and a labelled samples file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_humaneval import protocol
from pytest_humaneval.config import ConfigError, load_config
from pytest_humaneval.dataset import load_problems
from pytest_humaneval.handoff import config_from_json, config_to_json

PROBLEMS = load_problems()[1]


# -- the presets and the rules, exactly ----------------------------------------------------------------------

def test_the_presets_are_their_sources_settings():
    table = {name: (p.n, p.temperature, p.top_p, p.k) for name, p in protocol.PRESETS.items()}
    assert table == {
        "greedy": (1, 0.0, None, (1,)),
        "codex-pass1": (200, 0.2, 0.95, (1,)),
        "codex-passk": (200, 0.8, 0.95, (10, 100)),
        "starcoder-pass1": (200, 0.2, 0.95, (1,)),
        "starcoder-passk": (200, 0.8, 0.95, (10, 100)),
    }
    for preset in protocol.PRESETS.values():  # a preset never warns about itself
        assert protocol.pitfalls(preset.n, preset.temperature, preset.k) == []
        assert preset.name in protocol.matches(preset.n, preset.temperature, preset.top_p, preset.k)


def test_matches_needs_every_setting():
    assert protocol.matches(1, 0.0, None, [1]) == ["greedy"]
    assert protocol.matches(200, 0.2, 0.95, [1]) == ["codex-pass1", "starcoder-pass1"]
    assert protocol.matches(200, 0.8, 0.95, [100, 10]) == ["codex-passk", "starcoder-passk"]
    assert protocol.matches(200, 0.2, None, [1]) == []  # no nucleus sampling
    assert protocol.matches(50, 0.2, 0.95, [1]) == []
    assert protocol.matches(200, 0.8, 0.95, [1, 10, 100]) == []  # pass@1 from the hot samples
    assert protocol.matches(1, 0.0, 0.95, [1]) == []


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
    found = protocol.pitfalls(n, temperature, k)
    assert len(found) == len(expected)
    for line, pattern in zip(found, expected):
        assert line == pattern or (pattern.endswith("*") and line.startswith(pattern[:-1])), line


def test_the_line_says_whether_the_run_matches_a_published_protocol():
    def line(mode, name, temperature, top_p, k, sizes):
        return protocol.line(protocol.describe(mode, name, temperature, top_p, k, sizes))

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
    assert protocol.describe("mock", None, 0.0, None, (1,), [1]) is None


def test_the_local_vllm_example_gets_the_one_warning_the_readme_says():
    config = load_config(Path(__file__).resolve().parent.parent / "examples" / "local-vllm.yaml")
    params = config.params
    found = protocol.pitfalls(params.n, params.temperature, params.k)
    assert len(found) == 1 and found[0].startswith("pass@1 at temperature 0.8 is not comparable")
    assert protocol.matches(params.n, params.temperature, params.top_p, params.k) == []


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


@pytest.mark.parametrize("name", sorted(protocol.PRESETS))
def test_a_preset_sets_n_temperature_top_p_and_k_and_crosses_to_workers(tmp_path, name):
    preset = protocol.PRESETS[name]
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
                        "starcoder-passk, found 'codex'"),
])
def test_a_preset_plus_a_contradicting_key_is_one_error_naming_both(tmp_path, params, expected):
    path = config_at(tmp_path, RUNTIME + f"params: {{allow_code_execution: true, {params}}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: {expected}") and "\n" not in str(info.value)


def test_a_key_that_agrees_with_the_preset_is_fine(tmp_path):
    config = load_config(config_at(tmp_path, RUNTIME + "params: {allow_code_execution: true, protocol: codex-passk, "
                                                       "n: 200, temperature: 0.8, top_p: 0.95, k: [100, 10]}\n"))
    assert config.params.k == (10, 100) and config.params.n == 200


def test_sampling_of_a_samples_file_is_unknown_unless_labelled_and_a_mock_run_has_no_protocol(tmp_path):
    samples = "target: {mode: samples, samples: s.jsonl}\nparams: {allow_code_execution: true"
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
