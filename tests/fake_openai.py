"""A real OpenAI-compatible HTTP server on 127.0.0.1 for the endpoint tests, scripted per request.

A script is a function (request, index among that path's requests) -> Reply. Replies can be JSON, raw text,
any status and headers, a delay before answering, or a reset connection. The server counts every request,
keeps its headers and body, and tracks the largest number of requests in flight at once.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "test-model"


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def prompt_text(self) -> str:
        if "messages" in self.body:
            return self.body["messages"][-1]["content"]
        return self.body.get("prompt", "")


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list: JSON; str: sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    reset: bool = False


def chat(text: str | None, usage: dict | None = None, *, finish_reason: str = "stop", **message: Any) -> Reply:
    """A chat reply; ``message`` adds fields to the message (``reasoning_content="..."``)."""
    body: dict[str, Any] = {"id": "x", "object": "chat.completion", "model": MODEL,
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": text, **message},
                                         "finish_reason": finish_reason}]}
    if usage is not None:
        body["usage"] = usage
    return Reply(body=body)


def choices(texts: list[str], usage: dict | None = None, *, finish_reason: str = "stop") -> Reply:
    """A chat reply with several choices, as a server that honours ``n`` sends."""
    body: dict[str, Any] = {"id": "x", "object": "chat.completion", "model": MODEL, "choices": [
        {"index": i, "message": {"role": "assistant", "content": text}, "finish_reason": finish_reason}
        for i, text in enumerate(texts)]}
    if usage is not None:
        body["usage"] = usage
    return Reply(body=body)


def completion(text: str, usage: dict | None = None) -> Reply:
    body: dict[str, Any] = {"id": "x", "object": "text_completion", "model": MODEL,
                            "choices": [{"index": 0, "text": text, "finish_reason": "stop"}]}
    if usage is not None:
        body["usage"] = usage
    return Reply(body=body)


def models(*names: str) -> Reply:
    return Reply(body={"object": "list", "data": [{"id": name, "object": "model"} for name in names or (MODEL,)]})


Script = Callable[[Request, int], Reply]

# A stand-in for llama-server's refusal (its wording is not copied): what matters is the status.
SLOTS_REFUSAL = "n is above the number of slots ({slots})"


def server_like(kind: str, answer: Callable[[Request], str], *, slots: int = 8, tokens: int = 32) -> Script:
    """A chat server that honours ``n`` the way a real one does (bench/vllm_server.py and issue 31): every choice
    is ``answer(request)``, cut at max_tokens after ``tokens`` tokens (finish_reason length), usage 10 prompt
    tokens and

    - ``"vllm"``: completion tokens summed over the choices;
    - ``"llama-server"``: the completion tokens of one choice only, whatever n, and a 400 for an n above
      ``slots`` (llama.cpp's server, one slot per choice).
    """

    def script(request: Request, index: int) -> Reply:
        if request.method == "GET":
            return models()
        n = request.body.get("n", 1)
        if kind == "llama-server" and n > slots:
            return Reply(400, {"error": {"code": 400, "message": SLOTS_REFUSAL.format(slots=slots),
                                         "type": "invalid_request_error"}})
        counted = tokens * (n if kind == "vllm" else 1)
        return choices([answer(request)] * n, {"prompt_tokens": 10, "completion_tokens": counted,
                                               "total_tokens": 10 + counted}, finish_reason="length")

    return script


class FakeOpenAI:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[Request] = []
        self.active = 0
        self.max_active = 0
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                request = Request(self.command, self.path, dict(self.headers.items()),
                                  json.loads(raw) if raw else None)
                with server._lock:
                    server.requests.append(request)
                    index = server._counts.get(self.path, 0)
                    server._counts[self.path] = index + 1
                    server.active += 1
                    server.max_active = max(server.max_active, server.active)
                try:
                    reply = server.script(request, index)
                    if reply.delay_s:
                        time.sleep(reply.delay_s)
                    if reply.reset:
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.connection.close()
                        self.close_connection = True
                        return
                    body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                    data = body.encode()
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError, OSError):
                    self.close_connection = True
                finally:
                    with server._lock:
                        server.active -= 1

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def posts(self) -> list[Request]:
        return [r for r in self.requests if r.method == "POST"]

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
