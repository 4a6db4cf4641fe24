"""Where the tests find the HumanEval+ and MBPP+ release files, and a warm cache of their expected outputs.

The files are the package's own bundled copies (``pytest_humaneval/fixtures/humanevalplus/``), so the suite runs
in any clone, with nothing beside it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest_humaneval

FIXTURES = Path(pytest_humaneval.__file__).resolve().parent / "fixtures"
DATA = FIXTURES / "humanevalplus"
FILES = {"humanevalplus": "HumanEvalPlus.jsonl.gz", "humanevalplus-mini": "HumanEvalPlus-Mini.jsonl.gz",
         "humanevalplus-noextreme": "HumanEvalPlus-NoExtreme.jsonl.gz",
         "mbppplus": "../mbppplus/MbppPlus.jsonl.gz", "mbppplus-noextreme": "../mbppplus/MbppPlus-NoExtreme.jsonl.gz"}
# An XDG_CACHE_HOME shared by the test sessions of this machine: the expected outputs of the full HumanEval+
# take tens of seconds to compute, so a session that needs them all computes them once, and later ones read
# them (a torn or corrupt file there is computed again). Outside the user's own cache on purpose.
WARM_XDG = Path(tempfile.gettempdir()) / f"pytest-humaneval-tests-{os.getuid()}" / "xdg"


def release_file(name: str) -> Path:
    """The bundled release file of ``name``."""
    return (DATA / FILES[name]).resolve()


def evalplus_row(task_id: str = "T/0", solution: str = "    return x * 2\n", **overrides) -> dict:
    row = {"task_id": task_id, "prompt": "def f(x):\n", "entry_point": "f", "canonical_solution": solution,
           "contract": "    assert isinstance(x, int)  # $_CONTRACT_$\n", "base_input": [[1], [2]],
           "plus_input": [[3], [4], [5]], "atol": 0}
    row.update(overrides)
    return row


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path
