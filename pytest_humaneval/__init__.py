"""pytest-humaneval: score a code-writing LLM on HumanEval by executing the code it writes, as pytest items."""

from __future__ import annotations

__all__ = ["__version__"]

__version__ = "0.1.0"
