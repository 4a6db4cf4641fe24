"""A pool of warm sandboxes started beside a first one, for whoever feeds it samples (the pytest session's
items, ``Verifier``). No pytest import."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from .. import sandbox
from ..sandbox.pool import VerdictPool, pool_size, spare_size, window_size

__all__ = ["pool_size", "start_pool"]

# What each further sandbox is asked for, by what the first one applied: each isolates as the first did or fails
# its samples (harness_error), so no sample is reported under an isolation it did not run in.
SAME_AS = {"namespaces": "namespaces", "namespaces-userns": "namespaces", "landlock": "landlock"}


def start_pool(first: sandbox.Sandbox, size: int, limits: sandbox.Limits,
               program: Callable[[Hashable], sandbox.Program],
               cost: Callable[[Hashable], float] | None = None, forget: bool = False) -> VerdictPool:
    """``size`` sandboxes running samples (``first``, started now if it is not, and ``size - 1`` fresh ones whose
    start-up overlaps the first samples, in the pool's threads, never within a sample's time), and spares, started
    the same way when first needed, each of which runs a sample only
    while another's has stalled (``pool.VerdictPool``; ``forget``: for a pool that outlives one run). In the basic
    sandbox, ``first`` alone, whatever ``size`` (``harness.BASIC_ALONE``, which its ``limits`` say): a candidate there
    runs as this user and could kill or stop another sandbox's processes, or use up the user's process count under
    another's sample. Raises ``SandboxError`` when ``first`` cannot start."""
    first.start()  # ready, so its isolation is known
    if first.isolation == "basic":
        return VerdictPool([first], limits, program, window_size(1), active=1, cost=cost, forget=forget).start()
    isolation = SAME_AS.get(first.isolation, "basic")
    boxes = [first, *(sandbox.Sandbox(isolation).start(wait=False) for _ in range(size - 1))]
    spares = [sandbox.Sandbox(isolation) for _ in range(spare_size(size))]
    return VerdictPool(boxes + spares, limits, program, window_size(size), active=size, cost=cost,
                       forget=forget).start()
