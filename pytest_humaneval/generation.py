"""Controller-side generation for runtime mode: preflight, the async generation loop, progress, Ctrl-C.

No pytest import: the plugin calls ``generate_completions`` from ``pytest_sessionstart`` and turns a
``PreflightFailed`` into a usage error.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from .endpoint import Client, EndpointError, Generation
from .items import Run
from .sources import Plan, generate, with_generation

__all__ = ["PreflightFailed", "generate_completions", "make_client"]

PROGRESS_EVERY_S = 5.0


class PreflightFailed(Exception):
    """The endpoint refused the preflight call: wrong URL, key or model. Nothing was generated."""


def make_client(run: Run) -> Client:
    target, params = run.config.target, run.config.params
    ref = target.credentials_ref
    return Client(
        target.endpoint, target.model,
        api_key=os.environ.get(ref[4:]) if ref else None,
        api=target.api, temperature=params.temperature, top_p=params.top_p, max_tokens=params.max_tokens,
        stop=params.stop, request_timeout_s=params.request_timeout_s, retry=params.retry,
        concurrency=params.concurrency, system_prompt=params.system_prompt, extra_body=params.extra_body,
    )


class _Progress:
    """One line now and then on the terminal: done/total, failures, rate."""

    def __init__(self, terminal: Any, total: int) -> None:
        self.terminal, self.total = terminal, total
        self.started = self.last = time.monotonic()
        self.step = max(1, total // 10)

    def __call__(self, done: int, total: int, failed: int) -> None:
        now = time.monotonic()
        if done == total or done % self.step == 0 or now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            rate = done / max(now - self.started, 1e-9)
            self.write(f"humaneval: generated {done}/{total} ({failed} failed, {rate:.1f}/s)")

    def write(self, line: str) -> None:
        if self.terminal is not None:
            self.terminal.write_line(line)


def generate_completions(run: Run, terminal: Any, aggregator: Any) -> Plan:
    client = make_client(run)
    progress = _Progress(terminal, len(run.plan.samples))
    try:
        warning = asyncio.run(_preflight(client, run))
    except EndpointError as exc:
        raise PreflightFailed(f"the endpoint failed the preflight check (GET /models): {exc}") from None
    if warning:
        progress.write(f"humaneval: warning: {warning}")
    progress.write(f"humaneval: generating {len(run.plan.samples)} completions with {run.config.target.model} "
                   f"({run.config.params.concurrency} at a time)")
    done: dict[tuple[str, int], Generation] = {}
    try:
        return generate(run.plan, make_client(run), run.config.params.concurrency, progress, done)
    except KeyboardInterrupt:
        # pytest will not call sessionfinish for an interrupted sessionstart: keep what finished now.
        if aggregator is not None:
            finished = [with_generation(s, done[s.key]) for s in run.plan.samples if s.key in done]
            aggregator.record_interrupted_generation(finished)
        raise


async def _preflight(client: Client, run: Run) -> str | None:
    async with client:
        return await client.preflight(run.config.target.retries)
