"""A real headless Chromium driven through chromedriver's WebDriver protocol (HTTP + JSON, standard library only).

Debian's `chromium` and `chromium-driver` packages provide the two programs (`.ci/run` installs them). The
browser runs with a fresh profile in a temporary folder and every background connection turned off: the page
under test is a local file and needs no network.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["Browser", "missing"]

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--hide-scrollbars"]
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver key of an element reference
INSTALL_HINT = "apt-get install -y chromium chromium-driver (.ci/run installs them when missing)"


def _programs() -> tuple[str | None, str | None]:
    return (shutil.which("chromium") or shutil.which("chromium-browser"), shutil.which("chromedriver"))


def missing() -> str | None:
    """Why no browser test can run here, or None when chromium and chromedriver are both installed."""
    chromium, driver = _programs()
    absent = [name for name, path in (("chromium", chromium), ("chromedriver", driver)) if path is None]
    return f"{' and '.join(absent)} not installed: {INSTALL_HINT}" if absent else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class WebDriverError(RuntimeError):
    pass


class Browser:
    """One chromedriver process and one browser session; use as a context manager."""

    def __init__(self, width: int = 1360, height: int = 1000, start_timeout_s: float = 30.0) -> None:
        chromium, driver = _programs()
        if chromium is None or driver is None:
            raise WebDriverError(missing())
        self._profile = tempfile.mkdtemp(prefix="humaneval-chromium-")
        self._port = _free_port()
        self._log = open(os.path.join(self._profile, "chromedriver.log"), "wb")
        self._driver = subprocess.Popen([driver, f"--port={self._port}"], stdout=self._log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._session: str | None = None
        try:
            self._wait_ready(start_timeout_s)
            args = [*CHROMIUM_ARGS, f"--user-data-dir={self._profile}/profile", f"--window-size={width},{height}"]
            reply = self._call("POST", "/session", {"capabilities": {"alwaysMatch": {
                "browserName": "chrome", "goog:chromeOptions": {"binary": chromium, "args": args}}}})
            self._session = reply["sessionId"]
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._driver.poll() is not None:
                raise WebDriverError(f"chromedriver exited with {self._driver.returncode}")
            try:
                if self._call("GET", "/status").get("ready"):
                    return
            except (OSError, WebDriverError):
                pass
            time.sleep(0.05)
        raise WebDriverError(f"chromedriver not ready after {timeout_s:g} s")

    def _call(self, method: str, path: str, body: Any = None, timeout_s: float = 60.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self._port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return json.loads(response.read())["value"]
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")[:500]
            raise WebDriverError(f"{method} {path}: HTTP {exc.code}: {detail}") from None

    def _session_call(self, method: str, path: str, body: Any = None) -> Any:
        return self._call(method, f"/session/{self._session}{path}", body)

    # -- what the tests use
    def get(self, url: str) -> None:
        self._session_call("POST", "/url", {"url": url})

    def run(self, script: str, *args: Any) -> Any:
        """Run ``script`` (a function body; ``arguments`` holds ``args``) in the page, return its value."""
        return self._session_call("POST", "/execute/sync", {"script": script, "args": list(args)})

    def run_async(self, script: str, *args: Any) -> Any:
        """Like run, for a script that calls its last argument (a callback) with the value when it is done."""
        return self._session_call("POST", "/execute/async", {"script": script, "args": list(args)})

    def wait_for(self, script: str, *args: Any, timeout_s: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.run(script, *args)
            if value:
                return value
            if time.monotonic() > deadline:
                raise WebDriverError(f"timed out after {timeout_s:g} s waiting for: {script}")
            time.sleep(0.05)

    def find(self, css: str) -> str:
        return self._session_call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]

    def click(self, css: str) -> None:
        """A real pointer click (scrolled into view), as a person would make it."""
        self._session_call("POST", f"/element/{self.find(css)}/click", {})

    def type(self, css: str, text: str) -> None:
        self._session_call("POST", f"/element/{self.find(css)}/value", {"text": text})

    def clear(self, css: str) -> None:
        self._session_call("POST", f"/element/{self.find(css)}/clear", {})

    def screenshot(self, path: Path) -> Path:
        Path(path).write_bytes(base64.b64decode(self._session_call("GET", "/screenshot")))
        return Path(path)

    def close(self) -> None:
        try:
            if self._session is not None:
                self._call("DELETE", f"/session/{self._session}", timeout_s=20)
        except (OSError, WebDriverError):
            pass
        self._session = None
        if self._driver.poll() is None:
            self._driver.terminate()
            try:
                self._driver.wait(10)
            except subprocess.TimeoutExpired:
                self._driver.kill()
                self._driver.wait()
        self._log.close()
        shutil.rmtree(self._profile, ignore_errors=True)
