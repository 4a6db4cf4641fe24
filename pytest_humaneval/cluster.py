"""``RayVerifier``: the ``Verifier`` on a Ray cluster, one judging actor per node (the optional extra:
``pip install "pytest-humaneval[ray]"``; importing this module imports no ray, making a RayVerifier does).

    from pytest_humaneval.cluster import RayVerifier
    with RayVerifier("humanevalplus", address="auto") as verifier:
        verdicts = verifier.verify([(task_id, code), ...])   # the Verifier's verdicts, in the order given

How to run it and how it fails: docs/cluster.md. The engine behind it: engine/cluster.py.
"""

from __future__ import annotations

from .engine.cluster import RayVerifier
from .engine.verdict import Status, Verdict
from .engine.verifier import VerifierError

__all__ = ["RayVerifier", "Status", "Verdict", "VerifierError"]
