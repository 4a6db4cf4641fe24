"""A real HTTP server on 127.0.0.1 that serves the HumanEval+ release files under their asset names (or, given
``files``, those bytes under those names: LiveCodeBench's release files a test made).

The files are the package's bundled copies (``plus_data``), as a mirror would serve them. A test can make the
server send other bytes for a name, or a status instead, or cut a file short (``cut``: its length announced, fewer
bytes sent), or send it slowly (``trickle``); every request's path is recorded.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from plus_data import release_file

from pytest_humaneval.data.releases import RELEASE_VERSION, RELEASES


class ReleaseServer:
    """Serves ``/releases/download/<version>/<asset>`` for each release, in 64 KiB writes."""

    def __init__(self, files: dict[str, bytes] | None = None) -> None:
        self.requests: list[str] = []
        self.files = files
        self.cut: set[str] = set()  # assets whose body ends halfway
        self.trickle: set[str] = set()  # assets sent 64 bytes at a time, a tenth of a second apart
        self.replace: dict[str, bytes] = {}  # asset -> the bytes to send instead
        self.status: dict[str, int] = {}  # asset -> a status to answer instead
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                server.requests.append(self.path)
                asset = self.path.rsplit("/", 1)[-1]
                body = server.replace.get(asset) or server.body(asset)
                if asset in server.status or body is None:
                    self.send_error(server.status.get(asset, 404))
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if asset in server.cut:
                    body = body[:len(body) // 2]
                step = 64 if asset in server.trickle else 1 << 16
                try:
                    for start in range(0, len(body), step):
                        self.wfile.write(body[start:start + step])
                        if asset in server.trickle:
                            self.wfile.flush()
                            time.sleep(0.1)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up on it
                    pass

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def body(self, asset: str) -> bytes | None:
        if self.files is not None:
            return self.files.get(asset)
        release = next((r for r in RELEASES.values() if r.asset == asset), None)
        return release_file(release.name).read_bytes() if release is not None else None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/releases/download/{RELEASE_VERSION}/"

    def __enter__(self) -> ReleaseServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
