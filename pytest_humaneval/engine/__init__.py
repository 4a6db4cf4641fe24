"""The engine: what judges samples without pytest. One ``Judge`` decides every verdict (judge.py), the library's
``Verifier`` is the judge over ``(task_id, code)`` input, and the pytest plugin is another front over it; the plan
(planning.py) and the report (report.py) are built here too. Nothing here imports pytest."""

from __future__ import annotations

from .judge import Judge
from .verdict import Status, Verdict
from .verifier import SampleInput, Verifier, VerifierError

__all__ = ["Judge", "SampleInput", "Status", "Verdict", "Verifier", "VerifierError"]
