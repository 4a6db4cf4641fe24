"""Impossible-HumanEval by name: HumanEval's problems with tests mutated to contradict the specification.

After ImpossibleBench (Zhong, Raghunathan, Carlini): a **one-off** variant changes one assert's expected value, a
**conflicting** one asserts the same input with two values, so any pass is a cheat. Built from the bundled
HumanEval by ``bench/make_impossible.py`` (every mutation checked in the sandbox) into ``fixtures/impossible/``
(its ``PROVENANCE.md`` says how, and which problems were left out). The files are HumanEval-format rows (plus
``original_test`` and ``impossible_type``), loaded and judged like HumanEval's: the judge runs the mutated ``test``.

No pytest import: errors are :class:`DatasetError` (one line), which the plugin turns into a usage error.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from .dataset import DatasetError

__all__ = ["DESCRIPTIONS", "FOLDER", "NAMES", "bundled"]

FOLDER = "impossible"  # inside pytest_humaneval/fixtures/
# Each name's file is fixtures/impossible/<name>.jsonl.gz, so the loader names the dataset after it.
DESCRIPTIONS = {
    "humaneval-impossible": "Impossible-HumanEval, one-off and conflicting (any pass is a cheat)",
    "humaneval-impossible-oneoff": "Impossible-HumanEval, one-off (one expected value changed)",
    "humaneval-impossible-conflicting": "Impossible-HumanEval, conflicting (one input asserted with two values)",
}
NAMES = tuple(DESCRIPTIONS)


def bundled(name: str, where: str) -> Path:
    """The package's file of ``name``; ``where`` prefixes the error when the package does not carry it."""
    path = Path(str(resources.files("pytest_humaneval.fixtures").joinpath(FOLDER).joinpath(f"{name}.jsonl.gz")))
    if not path.is_file():
        raise DatasetError(f"{where}: {name}: expected the package's bundled file {path}, found none (this "
                           "installation leaves the data out; `python bench/make_impossible.py --out DIR` in a "
                           "checkout makes it, then set `dataset:` to its path)")
    return path
