from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from pytest_humaneval.config import ConfigError, load_config


@pytest.fixture
def write(tmp_path: Path):
    def write(text: str, name: str = "run.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message, "config errors are one line"
    assert str(path) in message, "config errors name the file"
    return message


def test_minimal_mock_config_defaults(write):
    """A minimal mock config has the contract's defaults."""
    config = load_config(write("target: {mode: mock}\n"))
    assert config.target.mode == "mock"
    assert config.params.timeout_s == 3.0 and config.params.k == (1,) and config.params.n == 1
    assert config.params.allow_code_execution is False and config.params.retry is None
    assert config.dataset is None and config.gate is None and not config.executes


def test_config_is_frozen(write):
    config = load_config(write("target: {mode: mock}\n"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.params.timeout_s = 1.0  # type: ignore[misc]


def test_paths_relative_to_config_folder(write, tmp_path, monkeypatch):
    """Relative paths resolve against the config's folder."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "s.jsonl").write_text('{"task_id": "HumanEval/0", "completion": "x"}\n')
    monkeypatch.chdir("/")
    config = load_config(write("""
        target: {mode: samples, samples: data/s.jsonl}
        params: {allow_code_execution: true}
    """))
    assert config.target.samples == tmp_path / "data" / "s.jsonl"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("target: {mode: mock}\nparms: {}\n", "parms: unknown key"),
        ("target: {mode: mock}\nparams: {timeout: 3}\n", "params.timeout: unknown key"),
        ("target: {mode: mock, modle: x}\n", "target.modle: unknown key"),
        ("target: {mode: mock}\nparams: {timeout_s: fast}\n", "params.timeout_s: expected a number > 0 and <= 3600, found 'fast'"),
        ("target: {mode: mock}\nparams: {timeout_s: 0}\n", "params.timeout_s: expected a number > 0"),
        ("target: {mode: mock}\nparams: {limit: 0}\n", "params.limit: expected an integer >= 1, found 0"),
        ("target: {mode: mock}\nparams: {limit: 2.5}\n", "params.limit: expected an integer >= 1, found 2.5"),
        ("target: {mode: mock}\nparams: {execute: yes please}\n", "params.execute: expected true or false"),
        ("target: {mode: mock}\nparams: {k: 1}\n", "params.k: expected a non-empty list of integers >= 1, found 1"),
        ("target: {mode: mock}\nparams: {execute: true, n: 2, k: [1, 5]}\n",
         "params.k: expected every k <= params.n (2), found k = 5"),
        ("target: {mode: mock}\nparams: {n: 3}\n", "params.n: expected only with mode runtime"),
        ("target: {mode: mock}\nparams: {temperature: 3}\n", "params.temperature: expected a number >= 0 and <= 2"),
        ("target: {mode: local}\n", "target.mode: expected mock | runtime | samples, found 'local'"),
        ("target: {mode: mock, allow_subset: true}\n",
         "target.allow_subset: expected only with mode samples (it qualifies target.samples), found true with mode mock"),
        ("target: {mode: mock, extract: true}\n",
         "target.extract: expected only with mode samples (it qualifies target.samples), found true with mode mock"),
        ("target: {mode: mock, allow_subset: 1}\n", "target.allow_subset: expected true or false, found 1"),
        ("target: {}\n", "target.mode: expected mock | runtime | samples, found None"),
        ("params: {}\n", "target: expected a mapping with at least `mode`"),
        ("- just\n- a list\n", "(top level): expected a mapping"),
        ("target: [mock]\n", "target: expected a mapping, found a list"),
        ("target: {mode: samples}\nparams: {allow_code_execution: true}\n", "target.samples: expected a samples"),
        ("target: {mode: samples, samples: nowhere.jsonl}\nparams: {allow_code_execution: true}\n",
         "target.samples: expected an existing file, found 'nowhere.jsonl'"),
        ("target: {mode: mock}\ndataset: missing.jsonl\n",
         "dataset: expected one of humaneval, humanevalplus, humanevalplus-mini, humanevalplus-noextreme, mbppplus, mbppplus-noextreme, humaneval-impossible, humaneval-impossible-oneoff, humaneval-impossible-conflicting, livecodebench, or the "
         "path of an existing JSONL(.gz) file, found 'missing.jsonl' (resolved to "),
        ("target: {mode: mock}\ndataset: humanevalplus-mni\n", "dataset: expected one of humaneval, humanevalplus,"),
        ("target: {mode: mock}\ndataset: .\n", "dataset: expected one of humaneval, humanevalplus, humanevalplus-mini, "
         "humanevalplus-noextreme, mbppplus, mbppplus-noextreme, humaneval-impossible, humaneval-impossible-oneoff, humaneval-impossible-conflicting, livecodebench, or the path of an existing JSONL(.gz) file, found '.' (resolved to *, which is a "
         "folder, not a file)"),
        ("target: {mode: samples, samples: ./}\nparams: {allow_code_execution: true}\n",
         "target.samples: expected an existing file, found './' (resolved to *, which is a folder, not a file)"),
        ("target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m}\n",
         "params.allow_code_execution: expected true for mode runtime (model output is untrusted code that this run "
         "executes on this machine; opt in explicitly), found nothing (the key is not set)"),
        ("target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m}\nparams: {allow_code_execution: false}\n",
         "params.allow_code_execution: expected true for mode runtime (model output is untrusted code that this run "
         "executes on this machine; opt in explicitly), found false"),
        ("target: {mode: mock}\ndataset: [humanevalplus]\n", "dataset: expected one of humaneval, humanevalplus, "
         "humanevalplus-mini, humanevalplus-noextreme, mbppplus, mbppplus-noextreme, humaneval-impossible, humaneval-impossible-oneoff, humaneval-impossible-conflicting, livecodebench, or the path of a JSONL(.gz) file, found a list"),
        ("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, plus: {min_time_limit_s: 0}}\n",
         "params.plus.min_time_limit_s: expected a number > 0 and <= 3600, found 0"),
        ("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, plus: {time_limit_factor: -4}}\n",
         "params.plus.time_limit_factor: expected a number > 0 and <= 1000, found -4"),
        ("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, plus: {time_limit_factor: x}}\n",
         "params.plus.time_limit_factor: expected a number > 0 and <= 1000, found 'x'"),
        ("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, plus: {min_time_limit: 1}}\n",
         "params.plus.min_time_limit: unknown key (expected one of: min_time_limit_s, time_limit_factor)"),
        ("target: {mode: mock}\ndataset: humanevalplus\nparams: {execute: true, plus: 4}\n",
         "params.plus: expected a mapping, found 4"),
        ("target: {mode: mock}\nparams: {execute: true, plus: {min_time_limit_s: 1}}\n",
         "params.plus: expected only with an EvalPlus dataset (dataset: humanevalplus, humanevalplus-mini, "
         "humanevalplus-noextreme, mbppplus, mbppplus-noextreme, or a file in EvalPlus format), found it set with the bundled HumanEval"),
        ("target: {mode: mock}\ndataset: humanevalplus-mini\n",
         "target.mode: mock replays the pre-scored fixture of the bundled HumanEval, not humanevalplus-mini; set "
         "params.execute: true (runs its canonical solutions) or use mode: samples"),
        ("target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m, credentials_ref: KEY}\n"
         "params: {allow_code_execution: true}\n", "target.credentials_ref: expected env:VARIABLE_NAME, found 'KEY'"),
        ("target: {mode: mock}\nparams: {retry: {backoff_base_s: 1}}\n", "params.retry.max_attempts: expected an integer"),
        ("target: {mode: mock}\npricing: {input_usd_per_mtok: 1}\n", "pricing.output_usd_per_mtok: expected a number"),
        ("target: {mode: mock}\nparams: {execute: true}\n: bad\n  - [\n", "not valid YAML at line"),
        ("target: {mode: mock}\nparams: {extra_body: [seed]}\n",
         "params.extra_body: expected a mapping of provider options (e.g. {seed: 7}), found a list ['seed']"),
        ("target: {mode: mock}\nparams: {extra_body: {model: other}}\n",
         "params.extra_body.model: expected a provider option the harness does not set itself (not model, "
         "messages, prompt, n, stream), found 'model'"),
        ("target: {mode: mock}\nparams: {extra_body: {n: 4}}\n", "params.extra_body.n: expected a provider option"),
        ("target: {mode: mock}\nparams: {extra_body: {messages: []}}\n", "params.extra_body.messages: expected a"),
        ("target: {mode: mock}\nparams: {extra_body: {prompt: x}}\n", "params.extra_body.prompt: expected a"),
        ("target: {mode: mock}\nparams: {extra_body: {stream: true}}\n", "params.extra_body.stream: expected a"),
        ("target: {mode: mock}\nparams: {extra_body: {opts: {when: !!binary aGk=}}}\n",
         "params.extra_body.opts.when: expected JSON values (strings, numbers, true/false, null, lists, mappings "
         "with string keys), found b'hi'"),
        ("target: {mode: mock}\nparams: {extra_body: {seeds: [1, .inf]}}\n",
         "params.extra_body.seeds[1]: expected JSON values"),
        ("target: {mode: mock}\nparams: {extra_body: {1: x}}\n", "params.extra_body.1: expected a non-empty string key"),
        ("target: {mode: mock}\nparams: {request_n: 0}\n",
         "params.request_n: expected auto or an integer >= 1 and <= 128 (choices per request), found 0"),
        ("target: {mode: mock}\nparams: {request_n: always}\n", "params.request_n: expected auto or an integer"),
        ("target: {mode: mock}\nparams: {request_n: 500}\n", "params.request_n: expected auto or an integer"),
        ("target: {mode: mock}\nparams: {workers: 0}\n",
         "params.workers: expected an integer >= 1 and <= 1024 (sandboxes per pytest process), found 0"),
        ("target: {mode: mock}\nparams: {workers: all}\n", "params.workers: expected an integer >= 1"),
        ("target: {mode: mock}\nparams: {workers: true}\n", "params.workers: expected an integer >= 1"),
        ("target: {mode: mock}\nparams: {workers: 2.5}\n", "params.workers: expected an integer >= 1"),
        ("target: {mode: mock}\nparams: {system_prompt: [a]}\n",
         "params.system_prompt: expected a string (the chat instruction; '' sends none), found a list ['a']"),
        ("target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m, api: completions}\n"
         "params: {allow_code_execution: true, system_prompt: Be brief.}\n",
         "params.system_prompt: expected only with target.api chat (the completions API sends the raw prompt)"),
    ],
)
def test_bad_value_is_one_line_error(write, text, expected):
    """Each bad value is one line naming the key, what was expected and what was found."""
    message = error_of(write(text))
    for part in expected.split("*"):  # "*": the resolved path, which is the test's temporary folder
        assert part in message, message
        message = message[message.index(part) + len(part):]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("target: {mode: samples, samples: s.jsonl}\nparams: {allow_code_execution: true}\ntarget: {mode: mock}\n",
         "target: expected each key once, found it at line 1 and again at line 3 (YAML would keep the last one "
         "without a word): keep one"),
        ("target: {mode: mock}\nparams:\n  limit: 2\n  k: [1]\n  limit: 3\n",
         "params.limit: expected each key once, found it at line 3 and again at line 5"),
        ("target: {mode: mock}\ngate:\n  min_pass_at: {10: 0.9, 10: 0.8}\n",
         "gate.min_pass_at.10: expected each key once, found it at line 3 and again at line 3"),
        ("target: {mode: mock, mode: mock}\nparams: {limit: 2}\nparams: {limit: 2}\n",  # the first repeat in the file
         "target.mode: expected each key once, found it at line 1 and again at line 1"),
    ],
)
def test_repeated_key_is_an_error(write, text, expected):
    """A key given twice is one error naming the file, the key's path and the line of its repeat (YAML keeps the
    last silently: a second `target:` measured the mock replay instead of the user's samples file)."""
    assert expected in error_of(write(text))


def test_same_key_of_two_kinds_and_anchors_are_not_repeats(write):
    """`10` and `"10"` are two keys; a mapping reached twice through an anchor repeats nothing."""
    path = write("""\
        target: {mode: mock}
        params: &p {limit: 2}
        gate: {min_pass_at_1: 0.1}
        x-copy: {a: *p, b: *p}
    """)
    assert "x-copy: unknown key" in error_of(path)  # the file's own error: not a repeat
    path = write("target: {mode: mock}\ngate: {min_pass_at: {1: 0.1, '1': 0.2}}\n")
    assert "gate.min_pass_at" in error_of(path) and "expected each key once" not in error_of(path)


def test_dataset_is_release_or_path(write, tmp_path):
    """The dataset is a release name or a path, and the HumanEval+ time limits default to EvalPlus master's."""
    from pytest_humaneval.config import PlusParams

    config = load_config(write("target: {mode: mock}\ndataset: humaneval\n"))
    assert config.dataset is None and config.dataset_release is None  # the bundled default, by name
    config = load_config(write("target: {mode: mock}\ndataset: humanevalplus-noextreme\nparams: {execute: true}\n"))
    assert config.dataset is None and config.dataset_release == "humanevalplus-noextreme"
    assert config.params.plus is None and PlusParams() == PlusParams(4.0, 4.0)
    (tmp_path / "mine.jsonl.gz").write_bytes(b"")
    config = load_config(write("target: {mode: mock}\ndataset: mine.jsonl.gz\n"
                               "params: {execute: true, plus: {min_time_limit_s: 1, time_limit_factor: 2.5}}\n"))
    assert config.dataset == tmp_path / "mine.jsonl.gz" and config.dataset_release is None
    assert config.params.plus == PlusParams(min_time_limit_s=1.0, time_limit_factor=2.5)
    assert type(config.params.plus.min_time_limit_s) is float


def test_execution_needs_explicit_opt_in(write, tmp_path):
    """The samples and runtime modes require an explicit opt-in to code execution."""
    (tmp_path / "s.jsonl").write_text("")
    message = error_of(write("target: {mode: samples, samples: s.jsonl}\n"))
    assert "params.allow_code_execution: expected true for mode samples" in message
    assert "untrusted code" in message
    message = error_of(write("target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m}\n"))
    assert "params.allow_code_execution: expected true for mode runtime" in message


def test_runtime_needs_endpoint_and_model(write):
    """The runtime mode needs an http(s) endpoint and a model."""
    config = load_config(write("""
        target: {mode: runtime, endpoint: 'http://127.0.0.1:8000/v1', model: m, credentials_ref: env:KEY}
        params: {allow_code_execution: true, n: 2, k: [1, 2], retry: {max_attempts: 3}}
    """))
    assert config.target.api == "chat" and config.params.retry.max_attempts == 3
    assert config.params.retry.backoff_base_s == 0.2 and config.params.retry.backoff_max_s == 5.0
    assert "env:KEY" in repr(config)  # the reference to the key, never a key
    message = error_of(write("""
        target: {mode: runtime, endpoint: 'ftp://host/v1', model: m}
        params: {allow_code_execution: true}
    """))
    assert "target.endpoint: expected an http:// or https:// URL, found 'ftp://host/v1'" in message
    assert "target.model: expected a model" in error_of(write("""
        target: {mode: runtime, endpoint: 'http://127.0.0.1:8000/v1'}
        params: {allow_code_execution: true}
    """))


def test_provider_options_read_as_given(write):
    """The provider options and the system prompt are read as given."""
    config = load_config(write("""
        target: {mode: runtime, endpoint: 'http://127.0.0.1:8000/v1', model: m}
        params:
          allow_code_execution: true
          system_prompt: Reply with code only.
          extra_body: {chat_template_kwargs: {enable_thinking: false}, seed: 7, max_tokens: null}
    """))
    assert config.params.system_prompt == "Reply with code only."
    assert config.params.extra_body == {"chat_template_kwargs": {"enable_thinking": False}, "seed": 7,
                                        "max_tokens": None}
    defaults = load_config(write("target: {mode: mock}\nparams: {extra_body: {}}\n")).params
    assert defaults.system_prompt is None and defaults.extra_body is None
    assert load_config(write("target: {mode: mock}\nparams: {system_prompt: ''}\n")).params.system_prompt == ""
    assert defaults.request_n is None  # auto
    assert load_config(write("target: {mode: mock}\nparams: {request_n: auto}\n")).params.request_n is None
    assert load_config(write("target: {mode: mock}\nparams: {request_n: 4}\n")).params.request_n == 4


def test_gate_section_defaults_and_errors(write, tmp_path):
    (tmp_path / "prod.json").write_text("{}")
    config = load_config(write("""
        target: {mode: mock}
        params: {execute: true, n: 10, k: [1, 10]}
        gate: {min_pass_at_1: 0.8, min_pass_at: {10: 0.9}, baseline: prod.json, confidence: 0.95}
    """))
    gate = config.gate
    assert gate.min_coverage == 1.0 and gate.max_drop == 0.0 and gate.confidence == 0.95
    assert gate.min_pass_at == ((10, 0.9),) and gate.baseline == tmp_path / "prod.json"
    for text, expected in [
        ("gate: {min_pass_at_1: 1.5}", "gate.min_pass_at_1: expected a number >= 0 and <= 1, found 1.5"),
        ("gate: {min_pass_at: {5: 0.9}}", "gate.min_pass_at.5: expected a k that params.k reports ([1])"),
        ("gate: {max_drop: 0.1}", "gate.max_drop: expected only together with gate.baseline"),
        ("gate: {baseline: prod.json, confidence: 1}", "gate.confidence: expected a number > 0 and < 1"),
        ("gate: {min_pass: 0.5}", "gate.min_pass: unknown key"),
        ("gate: {baseline: nope.json}", "gate.baseline: expected an existing file, found 'nope.json'"),
    ]:
        assert expected in error_of(write("target: {mode: mock}\n" + text + "\n")), text


def test_missing_config_file_names_it(tmp_path):
    assert "cannot read the config file" in error_of(tmp_path / "absent.yaml")


@pytest.mark.parametrize("name", sorted(p.name for p in (Path(__file__).parent.parent / "examples").glob("*.yaml")))
def test_shipped_examples_are_valid(name):
    """Every shipped example config is valid."""
    config = load_config(Path(__file__).parent.parent / "examples" / name)
    assert config.target.mode in ("mock", "samples", "runtime")


def test_workers_none_or_a_count(write):
    """The workers default to none and take a count."""
    assert load_config(write("target: {mode: mock}\n")).params.workers is None  # resolved per process
    assert load_config(write("target: {mode: mock}\nparams: {execute: true, workers: 8}\n")).params.workers == 8


# -- the schema: one declaration per key -------------------------------------------------------------------

def test_reference_page_is_schema_table():
    """The reference page is the schema's table."""
    from pytest_humaneval.config import reference_table
    page = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    assert reference_table() in page


def test_every_field_is_a_schema_key():
    """Every field of the config is a declared key of the schema, with its default."""
    import dataclasses

    from pytest_humaneval.config import KEYS, Gate, Params, PlusParams, Pricing, RetryPolicy, Target, keys_of
    for section, kind in (("target", Target), ("params", Params), ("params.plus", PlusParams),
                          ("retry", RetryPolicy), ("pricing", Pricing), ("gate", Gate)):
        fields = {f.name: f for f in dataclasses.fields(kind)}
        assert set(keys_of(section)) == set(fields), section
        for name, declared in fields.items():
            if declared.default is not dataclasses.MISSING:
                assert declared.default == KEYS[f"{section}.{name}"].default, (section, name)
    assert keys_of("") == ("target", "dataset", "params", "pricing", "gate")


def test_new_schema_key_is_bounded(tmp_path, monkeypatch):
    """A key added to the schema is accepted, and bounded from it."""
    from pytest_humaneval import config
    key = config.Key("params.timeout_s", 3.0, "`3.0`", "wall-clock limit", 0, 7, lo_open=True)
    monkeypatch.setitem(config.KEYS, "params.timeout_s", key)
    path = tmp_path / "c.yaml"
    path.write_text("target: {mode: mock}\nparams: {timeout_s: 9}\n")
    with pytest.raises(ConfigError, match=r"params\.timeout_s: expected a number > 0 and <= 7, found 9"):
        load_config(path)


@pytest.mark.parametrize(("params", "k"), [
    ("", (1,)),
    (", n: 5", (1,)),
    (", n: 10", (1, 10)),
    (", n: 99", (1, 10)),
    (", n: 200", (1, 10, 100)),
    (", n: 20, k: [1, 5]", (1, 5)),  # params.k as given
    (", n: 20, k: null", (1, 10)),
    (", protocol: codex-passk", (10, 100)),  # the protocol's own
])
def test_k_unset_reports_each_of_1_10_100_that_n_allows(write, params, k):
    """params.k unset: pass@1, @10 and @100 as n allows (EvalPlus's habit), in runtime mode as in mock-execute."""
    runtime = write("target: {mode: runtime, endpoint: 'http://127.0.0.1:1/v1', model: m}\n"
                    f"params: {{allow_code_execution: true{params}}}\n")
    assert load_config(runtime).params.k == k
    if "protocol" not in params:
        mock = write(f"target: {{mode: mock}}\nparams: {{execute: true{params}}}\n", "mock.yaml")
        assert load_config(mock).params.k == k


def test_k_unset_in_samples_mode_comes_from_the_file():
    """A samples file's k, params.k unset: from the fewest samples any problem has, once the file is read."""
    from pytest_humaneval.config import RunConfig, Target, with_k
    config = RunConfig(path=Path("run.yaml"), target=Target(mode="samples", samples=Path("s.jsonl")),
                       k_from_plan=True)
    assert with_k(config, [200, 150]).params.k == (1, 10, 100)
    assert with_k(config, [200, 12]).params.k == (1, 10)
    assert with_k(config, [1, 12]).params.k == (1,)
    given = dataclasses.replace(config, k_from_plan=False, params=dataclasses.replace(config.params, k=(2,)))
    assert with_k(given, [200]).params.k == (2,)


def test_samples_mode_marks_k_for_the_plan(write, tmp_path):
    (tmp_path / "s.jsonl").write_text("")
    loaded = load_config(write("target: {mode: samples, samples: s.jsonl}\nparams: {allow_code_execution: true}\n"))
    assert loaded.k_from_plan and loaded.params.k == (1,)
    given = load_config(write("target: {mode: samples, samples: s.jsonl}\n"
                              "params: {allow_code_execution: true, k: [1, 2]}\n"))
    assert not given.k_from_plan and given.params.k == (1, 2)
