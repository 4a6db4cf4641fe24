from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest

from pytest_humaneval.data.dataset import DatasetError, bundled_path, load_problems, select

BUNDLED_SHA256 = "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"


def row(task_id: str = "T/0", **overrides) -> dict:
    data = {"task_id": task_id, "prompt": "def f(x):\n", "entry_point": "f",
            "canonical_solution": "    return x\n", "test": "def check(candidate):\n    assert candidate(1) == 1\n"}
    data.update(overrides)
    return data


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_bundled_dataset_is_unedited():
    """The bundled dataset is the unedited HumanEval file."""
    assert hashlib.sha256(bundled_path().read_bytes()).hexdigest() == BUNDLED_SHA256
    name, problems = load_problems()
    assert name == "openai_humaneval"
    assert len(problems) == 164
    assert [p.task_id for p in problems[:3]] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert problems[-1].task_id == "HumanEval/163"  # natural order, not "HumanEval/99" last


def test_custom_dataset_plain_and_gzipped(tmp_path):
    rows = [row("T/10"), row("T/2")]
    name, problems = load_problems(write_jsonl(tmp_path / "mine.jsonl", rows))
    assert name == "mine" and [p.task_id for p in problems] == ["T/2", "T/10"]
    gz = tmp_path / "mine.jsonl.gz"
    with gzip.open(gz, "wt") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows))
    assert load_problems(gz)[1] == problems


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ([row(), "{not json"], ":2: expected one JSON object per line (JSONL), found invalid JSON"),
        ([row(), [1, 2]], ":2: expected a JSON object, found list"),
        ([{k: v for k, v in row().items() if k != "test"}], ":1: test: expected a non-empty string, found nothing"),
        ([row(entry_point="not valid")], ":1: entry_point: expected a Python identifier, found 'not valid'"),
        ([row(task_id=7)], ":1: task_id: expected a non-empty string, found 7"),
        ([row(test="assert True\n")], ":1: test: expected code defining check(candidate)"),
        ([row("T/0"), row("T/1"), row("T/0")], ":3: task_id: expected each task_id once, found 'T/0' again"),
        ([], "expected at least one problem, found none"),
    ],
)
def test_rows_validated_with_file_and_line(tmp_path, rows, expected):
    """Dataset rows are validated, with the file and line."""
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DatasetError) as info:
        load_problems(path)
    assert str(path) in str(info.value)
    assert expected in str(info.value)


def test_digest_and_label():
    """The digest covers the problems and the measurement settings, and the label says full or sample."""
    _, problems = load_problems()
    full = select("openai_humaneval", problems, 164, {"timeout_s": 3.0, "retry": False})
    assert full.full and full.label == "openai_humaneval full (164/164 problems)"
    assert full.digest.startswith("sha256:") and len(full.digest) == 71
    again = select("openai_humaneval", problems, 164, {"retry": False, "timeout_s": 3.0})
    assert again.digest == full.digest
    assert select("openai_humaneval", problems, 164, {"timeout_s": 5.0, "retry": False}).digest != full.digest
    retried = select("openai_humaneval", problems, 164, {"timeout_s": 3.0, "retry": True})
    assert retried.digest != full.digest and "retried" in retried.label
    part = select("openai_humaneval", problems[:10], 164, {"timeout_s": 3.0, "retry": False})
    assert not part.full and part.label == "openai_humaneval sample (10/164 problems)"
    assert part.digest != full.digest


def test_default_runtime_digest_is_pinned(tmp_path):
    """A default runtime run's digest is the one pinned before the provider options existed."""
    # Pinned from the code before system_prompt and extra_body: baselines made then still compare.
    from pytest_humaneval.config import load_config
    from pytest_humaneval.engine.planning import build_plan

    path = tmp_path / "run.yaml"
    path.write_text("target: {mode: runtime, endpoint: 'http://127.0.0.1:8000/v1', model: m}\n"
                    "params: {allow_code_execution: true, limit: 3}\n")
    plan = build_plan(load_config(path))
    assert plan.selection.digest == "sha256:0cdafb8bdd6a71f2e23a11243e9c974b4f4bc6663b1d823fc9608fc45d6e63bc"
    path.write_text(path.read_text().replace("limit: 3", "limit: 3, extra_body: {seed: 1}"))
    assert build_plan(load_config(path)).selection.digest != plan.selection.digest


@pytest.mark.parametrize("name", ["mine.jsonl", "mine.jsonl.gz"])
def test_non_utf8_byte_names_line_and_column(tmp_path, name):
    """A byte that is not UTF-8 is one error naming its line and column."""
    content = (json.dumps(row("T/0")) + "\n" + json.dumps(row("T/1")).replace("T/1", "T/\\u00e9") + "\n").encode()
    content = content.replace(b"T/\\u00e9", b"T/\xe9")  # the task id as Latin-1, not UTF-8
    path = tmp_path / name
    path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
    column = content.split(b"\n")[1].index(b"\xe9") + 1
    with pytest.raises(DatasetError) as info:
        load_problems(path)
    assert str(info.value) == f"{path}:2: expected UTF-8 text, found byte 0xe9 at column {column}"
