"""Samples for the sandbox tests: a whole script (run while the candidate loads), or a completion and a test."""

from __future__ import annotations

from pytest_humaneval.sandbox import Program

# After a script: an entry point and a test that pass, so a script that runs to its end is `passed`.
_ENTRY = "\n\n\ndef entry():\n    return None\n"
_TEST = "def check(candidate):\n    assert candidate() is None\n"


def script(code: str) -> Program:
    """``code`` as a completion that does all its work at module level, in the candidate's process: its own
    asserts and exits decide how loading ends; a script that runs to its end passes."""
    return Program(prompt="", completion=code + _ENTRY, test=_TEST, entry_point="entry")


def sample(completion: str, test: str, entry_point: str = "f", prompt: str = "") -> Program:
    """A completion judged by a test, as the plugin runs every sample: ``check`` runs in the judge."""
    return Program(prompt=prompt, completion=completion, test=test, entry_point=entry_point)
