"""Controller-side generation for runtime mode: the store, preflight, the generation loop, progress, Ctrl-C.

No pytest import: the plugin calls ``generate_completions`` from ``pytest_sessionstart`` and turns a
``PreflightFailed`` into a usage error.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from ..config import RunConfig
from ..plan import Plan
from .batching import generate, plan_requests
from .endpoint import Client, EndpointError, Extractor, Generation
from .extract import extract
from .sources import with_generation
from .store import GenerationStore

__all__ = ["GenerationInterrupted", "PreflightFailed", "generate_completions", "make_client"]

PROGRESS_EVERY_S = 5.0


class PreflightFailed(Exception):
    """The endpoint refused the preflight call: wrong URL, key or model. Nothing was generated."""


def make_client(config: RunConfig, extractor: Extractor = extract) -> Client:
    target, params = config.target, config.params
    # load_config requires an endpoint and a model in runtime mode, where the temperature is always known
    assert target.endpoint is not None and target.model is not None and params.temperature is not None
    ref = target.credentials_ref
    return Client(
        target.endpoint, target.model,
        api_key=os.environ.get(ref[4:]) if ref else None,
        api=target.api, temperature=params.temperature, top_p=params.top_p, max_tokens=params.max_tokens,
        stop=params.stop, request_timeout_s=params.request_timeout_s, retry=params.retry,
        concurrency=params.concurrency, system_prompt=params.system_prompt, extra_body=params.extra_body,
        protocol=params.protocol, extractor=extractor,
    )


class _Progress:
    """One line now and then on the terminal: cached, done/total, failures, rate."""

    def __init__(self, terminal: Any, total: int, cached: int) -> None:
        self.terminal, self.total, self.cached = terminal, total, cached
        self.started = self.last = time.monotonic()
        self.step = max(1, total // 10)

    def __call__(self, done: int, total: int, failed: int) -> None:
        now = time.monotonic()
        if done == total or done % self.step == 0 or now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            rate = done / max(now - self.started, 1e-9)
            # A request that failed is answered, not generated: counted apart, so "3/3" never hides "0 generated".
            counts = f"{self.cached} cached, requested {done}/{total}" if self.cached else f"requested {done}/{total}"
            self.write(f"humaneval: {counts}: {done - failed} generated, {failed} failed ({rate:.1f}/s)")

    def write(self, line: str) -> None:
        if self.terminal is not None:
            self.terminal.write_line(line)


def generate_completions(config: RunConfig, plan: Plan, terminal: Any, aggregator: Any,
                         store_folder: Path | None = None, regenerate: bool = False,
                         extractor: Extractor = extract) -> Plan:
    """Reuse what the store holds, request the rest (nothing at all when everything is stored)."""
    client = make_client(config, extractor)
    store = GenerationStore(store_folder, client.store_setting()) if store_folder is not None else None
    requests = plan_requests(plan, client, store, regenerate)
    progress = _Progress(terminal, len(requests.missing), len(requests.cached))
    if store is not None and store.ignored_lines:
        progress.write(f"humaneval: {store.ignored_lines} unreadable line(s) in {store.path} ignored (a run cut "
                       "off mid-write); those samples are generated again")
    if not requests.missing:
        progress.write(f"humaneval: all {len(requests.cached)} completions cached in {store_folder}, "
                       "nothing to generate (--humaneval-regenerate samples afresh)")
        return generate(plan, client, config.params.concurrency, requests=requests)
    done: dict[tuple[str, int], Generation] = {}
    try:
        try:
            warning = asyncio.run(_preflight(client, config))
        except EndpointError as exc:
            raise PreflightFailed(f"the endpoint failed the preflight check (GET /models): {exc}") from None
        if warning:
            progress.write(f"humaneval: warning: {warning}")
        reused = f"{len(requests.cached)} cached in {store_folder}; " if requests.cached else ""
        progress.write(f"humaneval: {reused}generating {len(requests.missing)} completions with "
                       f"{config.target.model} ({config.params.concurrency} requests at a time)")
        plan = generate(plan, make_client(config, extractor), config.params.concurrency, progress, done,
                        requests=requests, store=store, request_n=config.params.request_n,
                        notice=lambda line: progress.write(f"humaneval: warning: {line}"))
        if store is not None and store.error:
            progress.write(f"humaneval: warning: generation store: {store.error}; these completions will not "
                           "be reused")
        return plan
    except KeyboardInterrupt:
        # What finished is in the store already, for the rerun; the plan says which samples have a completion,
        # so the session that ends now reports every one of them (the rest: never generated).
        known = {**requests.cached, **done}
        samples = tuple(with_generation(s, known[s.key]) if s.key in known else
                        dataclasses.replace(s, completion=None, not_run=NEVER_GENERATED) for s in plan.samples)
        raise GenerationInterrupted(dataclasses.replace(plan, samples=samples)) from None


NEVER_GENERATED = "interrupted before it was generated"


class GenerationInterrupted(Exception):
    """Ctrl-C (SIGINT) while completions were being generated: ``plan`` holds what was generated."""

    def __init__(self, plan: Plan) -> None:
        super().__init__("interrupted during generation")
        self.plan = plan


async def _preflight(client: Client, config: RunConfig) -> str | None:
    async with client:
        return await client.preflight(config.target.retries)
