"""pytest-humaneval: score a code-writing LLM on HumanEval by executing the code it writes, as pytest items, or
from Python with ``Verifier`` (imported on first use: importing this package imports no pytest and starts
nothing).

    from pytest_humaneval import Verifier
    with Verifier("humanevalplus") as verifier:
        verdicts = verifier.verify([(task_id, code), ...])
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Verdict, Verifier, VerifierError
    from .sandbox import Status

__all__ = ["Status", "Verdict", "Verifier", "VerifierError", "__version__"]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in ("Verdict", "Verifier", "VerifierError"):
        from . import engine

        return getattr(engine, name)
    if name == "Status":
        from .sandbox import Status

        return Status
    raise AttributeError(f"module 'pytest_humaneval' has no attribute {name!r}")
