"""Generation throughput against a loopback OpenAI-compatible server that answers every request in 500 ms.

    python bench/generation_throughput.py [--samples 1640] [--concurrency 32] [--latency 0.5]

Three measurements, each against the same server (in this process, on 127.0.0.1, stopped at the end):

1. **Fresh**: ``--samples`` completions, one request each (``request_n: 1``). The ideal is
   samples x latency / concurrency (1,640 x 0.5 s / 32 = 25.6 s); the figure to quote is elapsed / ideal.
2. **Rerun from the store**: the same completions again with the generation store the first run filled: the
   seconds it takes to read and re-extract them, and the requests sent (expected: zero).
3. **n per request**: the same samples per problem asked with ``request_n: auto`` (the server honours ``n``,
   one request per problem, answering after the same latency) against one request per sample: the speed-up
   and the prompt tokens billed.

The timings depend on the machine being otherwise idle: a run while others work is indicative only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from pytest_humaneval.completions.batching import generate, plan_requests
from pytest_humaneval.completions.endpoint import Client
from pytest_humaneval.completions.store import GenerationStore
from pytest_humaneval.data.dataset import load_problems, select
from pytest_humaneval.plan import Plan, Sample

PROMPT_TOKENS = 100


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default 5 resets connections when the client opens 32 at once
    posts = 0


def serve(latency_s: float) -> Server:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once, as a real server sends them

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            with lock:
                self.server.posts += 1
            n = body.get("n", 1)
            answer = json.dumps({
                "choices": [{"index": i, "message": {"role": "assistant", "content": "    return 0\n"},
                             "finish_reason": "stop"} for i in range(n)],
                "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": 5 * n}}).encode()
            time.sleep(latency_s)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def make_plan(samples: int) -> Plan:
    problems = load_problems()[1]
    per_problem = -(-samples // len(problems))
    planned = [Sample(p.task_id, i, None, "not generated") for p in problems for i in range(per_problem)]
    return Plan(select("bench", problems, len(problems), {}), tuple(planned[:samples]))


def timed_run(server: Server, plan: Plan, concurrency: int, request_n: int | None,
              store_folder: Path | None = None) -> tuple[float, int, Plan, int]:
    """(seconds, requests sent, the plan with completions, completions reused)."""
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    client = Client(url, "bench-model", api_key=None, concurrency=concurrency)
    store = GenerationStore(store_folder, client.store_setting()) if store_folder is not None else None
    before = server.posts
    started = time.monotonic()
    requests = plan_requests(plan, client, store, regenerate=False)
    done = generate(plan, client, concurrency, requests=requests, store=store, request_n=request_n)
    return time.monotonic() - started, server.posts - before, done, len(requests.cached)


def failures(plan: Plan) -> int:
    for reason in sorted({s.not_run for s in plan.samples if s.completion is None}):
        print(f"failed: {reason}")
    return sum(1 for s in plan.samples if s.completion is None)


def prompt_tokens(plan: Plan) -> int:
    return sum(s.generation["prompt_tokens"] or 0 for s in plan.samples if s.generation)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1640)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    plan = make_plan(args.samples)
    server = serve(args.latency)
    failed = 0
    try:
        with tempfile.TemporaryDirectory() as folder:
            elapsed, sent, done, _ = timed_run(server, plan, args.concurrency, 1, Path(folder))
            failed += failures(done)
            ideal = len(plan.samples) * args.latency / args.concurrency
            print(f"fresh: {len(plan.samples)} completions, concurrency {args.concurrency}, server latency "
                  f"{args.latency:g} s: {elapsed:.1f} s (ideal {ideal:.1f} s, ratio {elapsed / ideal:.3f}), "
                  f"{sent} requests, {failed} failed")
            elapsed, sent, done, cached = timed_run(server, plan, args.concurrency, 1, Path(folder))
            failed += failures(done)
            print(f"rerun from the store: {cached} cached completions in {elapsed:.2f} s, {sent} requests")
            if sent != 0 or cached != len(plan.samples):
                failed += 1
        single, single_sent, single_done, _ = timed_run(server, plan, args.concurrency, 1)
        batched, batched_sent, batched_done, _ = timed_run(server, plan, args.concurrency, None)
        failed += failures(single_done) + failures(batched_done)
        per_problem = -(-args.samples // len(plan.problems))
        print(f"n = {per_problem} per problem: one request per sample {single:.1f} s ({single_sent} requests, "
              f"{prompt_tokens(single_done)} prompt tokens); request_n auto {batched:.1f} s ({batched_sent} "
              f"requests, {prompt_tokens(batched_done)} prompt tokens): {single / batched:.1f}x faster")
    finally:
        server.shutdown()
        server.server_close()
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
