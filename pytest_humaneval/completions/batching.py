"""Which requests a run sends: stored answers are reused, several choices are asked per request where the
server honours ``n``, and only what is still missing is requested.

No pytest import. ``plan_requests`` splits a plan into reused and missing samples; ``generate`` sends the
missing ones, ``concurrency`` requests at a time over one connection pool, appending every answer to the store
the moment it arrives (so Ctrl-C or a crash loses nothing that was paid for).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..plan import Plan, Sample
from .endpoint import USAGE_SHORT
from .lcb import asked
from .sources import with_generation
from .store import GenerationStore, request_key

if TYPE_CHECKING:
    from .endpoint import Client, Generation

__all__ = ["AUTO_MAX_CHOICES", "Requests", "generate", "plan_requests"]

# The most choices asked at once with request_n: auto (OpenAI's documented maximum of n).
AUTO_MAX_CHOICES = 128
# A fixed request_n falls back to one choice per request when a request of several choices is refused with one
# of these (llama.cpp's server answers 400 to an n above its slots; validating servers say 422). A timeout or a
# 5xx says nothing about n: those samples fail as they would alone.
REFUSED_STATUS = frozenset({400, 422})


@dataclass
class Requests:
    """The samples of a plan by what they need: reused from the store, or still to be generated."""

    keys: dict[tuple[str, int], str]  # (task_id, sample) -> store key
    cached: dict[tuple[str, int], Generation] = field(default_factory=dict)
    missing: list[Sample] = field(default_factory=list)


def plan_requests(plan: Plan, client: Client, store: GenerationStore | None, regenerate: bool) -> Requests:
    from .endpoint import stored_generation

    setting = client.store_setting()
    stored = store.load() if store is not None and not regenerate else {}
    requests = Requests(keys={})
    for sample in plan.samples:
        problem = plan.problems[sample.task_id]
        path, body = client.request_body(asked(problem))
        key = requests.keys[sample.key] = request_key(setting, {"path": path, "body": body}, sample.task_id,
                                                      sample.index)
        if key in stored:
            requests.cached[sample.key] = stored_generation(stored[key], problem.entry_point, problem.prompt,
                                                           client.extractor)
        else:
            requests.missing.append(sample)
    return requests


def generate(plan: Plan, client: Client, concurrency: int,
             progress: Callable[[int, int, int], None] | None = None,
             done: dict[tuple[str, int], Generation] | None = None, *,
             requests: Requests | None = None, store: GenerationStore | None = None,
             request_n: int | None = 1, notice: Callable[[str], None] | None = None) -> Plan:
    """The plan with every sample's generation: reused (``requests.cached``) or requested now.

    ``request_n``: choices per request (None: auto, i.e. all of a problem's missing samples in one request
    once a first reply shows the server honours ``n``; fewer choices than asked fall back to one request per
    missing sample; so does a request of several choices that the server refuses). ``done`` fills up as
    generations finish, so a caller interrupted by Ctrl-C keeps them. A sample whose generation failed stays
    ``not_run`` with the reason, and is not stored. ``notice`` gets a line when the run stops asking several
    choices at once, and one when replies counted fewer tokens than their choices take (``USAGE_SHORT``)."""
    requests = requests or Requests(keys={}, missing=list(plan.samples))
    finished: dict[tuple[str, int], Generation] = {} if done is None else done
    if requests.missing:
        sender = _Sender(plan, client, concurrency, requests, store, finished, progress, request_n, notice)
        try:
            asyncio.run(sender.run())
        finally:
            if store is not None:
                store.close()
    generations = {**requests.cached, **finished}
    return Plan(plan.selection, tuple(with_generation(s, generations.get(s.key)) for s in plan.samples))


class _Sender:
    def __init__(self, plan: Plan, client: Client, concurrency: int, requests: Requests,
                 store: GenerationStore | None, finished: dict[tuple[str, int], Generation],
                 progress: Callable[[int, int, int], None] | None, request_n: int | None,
                 notice: Callable[[str], None] | None = None) -> None:
        self.plan, self.client, self.concurrency = plan, client, concurrency
        self.requests, self.store, self.finished, self.progress = requests, store, finished, progress
        self.auto = request_n is None
        self.per_request = AUTO_MAX_CHOICES if request_n is None else request_n
        self.honoured: bool | None = None if request_n is None else request_n > 1
        self.failed = 0
        self.gate: asyncio.Semaphore | None = None
        self.notice = notice or (lambda line: None)
        self.batched = 0  # replies with several choices
        self.short: list[str] = []  # the usage notes of those whose usage cannot cover their choices

    async def run(self) -> None:
        self.gate = asyncio.Semaphore(self.concurrency)
        by_problem: dict[str, list[Sample]] = {}
        for sample in self.requests.missing:
            by_problem.setdefault(sample.task_id, []).append(sample)
        groups = list(by_problem.values())
        async with self.client:
            if self.auto and self.per_request > 1:
                # The first problem that needs several samples finds out whether the server honours n, before
                # every other problem is asked the same way.
                probe = next((g for g in groups if len(g) > 1), None)
                if probe is not None:
                    groups.remove(probe)
                    await self.fill(probe)
            await asyncio.gather(*(self.fill(group) for group in groups))
        if self.short:
            self.notice(f"{len(self.short)} of {self.batched} replies with several choices counted fewer completion "
                        f"tokens than their choices take (first: {self.short[0].split(': ', 1)[1]}); each such "
                        "request's first sample says so in its detail")

    async def fill(self, samples: list[Sample]) -> None:
        """Every sample of one problem: batches of choices while the server honours n, then one by one."""
        while samples:
            if len(samples) == 1 or self.honoured is False:
                await self.one_by_one(samples)
                return
            batch, samples = samples[: self.per_request], samples[self.per_request:]
            await self.one_by_one(await self.ask(batch))  # fewer choices than asked: the rest one by one

    async def one_by_one(self, samples: list[Sample]) -> None:
        await asyncio.gather(*(self.ask([sample]) for sample in samples))

    async def ask(self, batch: list[Sample]) -> list[Sample]:
        """One request for ``batch``; returns the samples it did not answer (to be asked again, one by one)."""
        problem = self.plan.problems[batch[0].task_id]
        assert self.gate is not None
        async with self.gate:
            generations = await self.client.generate_choices(asked(problem), problem.entry_point, len(batch))
        if generations[0].completion is None and len(batch) > 1 and (self.auto or _refused(generations[0].error)):
            # The server refused n (llama.cpp's server: a 400 above its slots): one request per sample from now on.
            if self.honoured is not False:
                self.notice(f"a request for {len(batch)} choices failed ({generations[0].error}); asking one choice "
                            "per request from now on")
            self.honoured = False
            return batch
        if generations[0].completion is None:
            for sample in batch:
                self.record(sample, generations[0])
            return []
        if self.auto and len(batch) > 1:
            self.honoured = len(generations) > 1
        if len(generations) > 1:
            self.batched += 1
            self.short += [note for note in generations[0].notes if note.startswith(USAGE_SHORT)]
        for sample, generation in zip(batch, generations, strict=False):
            self.record(sample, generation)
        if len(generations) < len(batch) and not self.auto:
            self.honoured = False
        return batch[len(generations):]

    def record(self, sample: Sample, generation: Generation) -> None:
        self.finished[sample.key] = generation
        if generation.completion is None:
            self.failed += 1
        elif self.store is not None:
            self.store.append(self.requests.keys[sample.key], sample.task_id, sample.index, {
                "raw": generation.raw, "reasoning": generation.reasoning, "finish_reason": generation.finish_reason,
                "prompt_tokens": generation.prompt_tokens, "completion_tokens": generation.completion_tokens,
                "reasoning_tokens": generation.reasoning_tokens, "generation_ms": round(generation.generation_ms, 3),
                "attempts": generation.attempts})
        if self.progress is not None:
            self.progress(len(self.finished), len(self.requests.missing), self.failed)


def _refused(error: str | None) -> bool:
    status = re.match(r"HTTP (\d{3}) ", error or "")
    return status is not None and int(status.group(1)) in REFUSED_STATUS
