"""Generation throughput against a loopback OpenAI-compatible server that answers every request in 500 ms.

    python bench/generation_throughput.py [--samples 1640] [--concurrency 32] [--latency 0.5]

The ideal is samples x latency / concurrency (1,640 x 0.5 s / 32 = 25.6 s); the figure to quote is
elapsed / ideal. The server runs in this process on 127.0.0.1 and stops by itself at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from pytest_humaneval.dataset import load_problems, select
from pytest_humaneval.endpoint import Client
from pytest_humaneval.sources import Plan, Sample, generate


def serve(latency_s: float) -> ThreadingHTTPServer:
    answer = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": "    return 0\n"}}],
                         "usage": {"prompt_tokens": 100, "completion_tokens": 5}}).encode()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once, as a real server sends them

        def log_message(self, *args) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            time.sleep(latency_s)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256  # the default 5 resets connections when the client opens 32 at once

    server = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1640)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    problems = load_problems()[1]
    per_problem = -(-args.samples // len(problems))
    samples = [Sample(p.task_id, i, None, "not generated") for p in problems for i in range(per_problem)]
    plan = Plan(select("bench", problems, len(problems), {}), tuple(samples[: args.samples]))
    server = serve(args.latency)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        client = Client(url, "bench-model", api_key=None, concurrency=args.concurrency)
        started = time.monotonic()
        done = generate(plan, client, args.concurrency)
        elapsed = time.monotonic() - started
    finally:
        server.shutdown()
        server.server_close()
    failed = sum(1 for s in done.samples if s.completion is None)
    for reason in sorted({s.not_run for s in done.samples if s.completion is None}):
        print(f"failed: {reason}")
    ideal = len(plan.samples) * args.latency / args.concurrency
    print(f"{len(plan.samples)} completions, concurrency {args.concurrency}, server latency {args.latency:g} s: "
          f"{elapsed:.1f} s (ideal {ideal:.1f} s, ratio {elapsed / ideal:.3f}), {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
