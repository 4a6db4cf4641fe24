"""The engine: what judges samples without pytest (the library's ``Verifier``, the rules of a sample, the pool of
sandboxes fed by samples). The pytest plugin is one front over it; nothing here imports pytest."""

from __future__ import annotations

from .verifier import SampleInput, Verdict, Verifier, VerifierError

__all__ = ["SampleInput", "Verdict", "Verifier", "VerifierError"]
