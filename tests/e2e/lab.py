"""Helpers of the browser test: a JupyterLab server and Debian's Chromium, both bounded in time.

Failures say which part did not start (JupyterLab or the browser) and carry the server log.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

#: Chromium flags: without the background-networking ones, Chromium's own connections are
#: refused many at a time on this kind of machine and slow every page.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SERVER_START_S = 120
VIEWPORT = {"width": 1400, "height": 900}


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LabServer:
    """A running ``python -m autograder.lab`` server.

    Attributes:
        url: Base URL (``http://127.0.0.1:PORT``).
        token: The server's token.
        process: The server process.
        log: Its combined stdout and stderr.
    """

    url: str
    token: str
    process: subprocess.Popen
    log: Path
    _family: set[int] = field(default_factory=set)

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the server log, for failure messages."""
        if not self.log.exists():
            return "(no server log)"
        text = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def get(self, path: str) -> tuple[int, str]:
        """GET ``path`` with the token; returns (status, body). Bounded to 20 s."""
        sep = "&" if "?" in path else "?"
        try:
            with urllib.request.urlopen(f"{self.url}{path}{sep}token={self.token}",
                                        timeout=20) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, ""

    def remember_children(self) -> None:
        """Note the server's child processes (kernels, grading jobs) to end them at stop."""
        with contextlib.suppress(psutil.Error):
            self._family |= {p.pid for p in psutil.Process(self.process.pid).children(True)}

    def stop(self) -> None:
        """Shut the server down (kernels too), then kill whatever of it is left, by pid."""
        self.remember_children()
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                request = urllib.request.Request(f"{self.url}/api/shutdown?token={self.token}",
                                                 method="POST")
                urllib.request.urlopen(request, timeout=10).close()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        for pid in self._family:
            with contextlib.suppress(psutil.Error):
                psutil.Process(pid).kill()


def start_lab(args: list[str], log: Path, cwd: Path) -> LabServer:
    """Start ``python -m autograder.lab ARGS`` on a free loopback port with a fresh token.

    Fails the test, naming JupyterLab and quoting its log, when the server does not answer
    ``/api/status`` within :data:`SERVER_START_S` seconds or exits.
    """
    port = free_port()
    token = os.urandom(16).hex()
    command = [sys.executable, "-m", "autograder.lab", *args, "--no-browser",
               "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
               "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}"]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    handle = log.open("wb")
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                               stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    handle.close()
    server = LabServer(f"http://127.0.0.1:{port}", token, process, log)
    deadline = time.monotonic() + SERVER_START_S
    while True:
        if process.poll() is not None:
            pytest.fail(f"JupyterLab did not start: the server exited with code "
                        f"{process.returncode}.\n--- server log {log} ---\n{server.log_tail()}")
        with contextlib.suppress(OSError):
            status, body = server.get("/api/status")
            if status == 200 and "started" in json.loads(body):
                return server
        if time.monotonic() > deadline:
            server.stop()
            pytest.fail(f"JupyterLab did not start: no answer on {server.url} within "
                        f"{SERVER_START_S} s.\n--- server log {log} ---\n{server.log_tail()}")
        time.sleep(1)


@contextlib.contextmanager
def chromium(server: LabServer) -> Iterator:
    """A headless Debian Chromium (Playwright context) with a fresh profile.

    Fails the test, naming the browser and quoting the server log, when it cannot start.
    """
    from playwright.sync_api import Error, sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("The browser did not start: Debian's chromium is not installed "
                    "(`make test` installs it; or apt-get install chromium).\n"
                    f"--- server log ---\n{server.log_tail(20)}")
    with tempfile.TemporaryDirectory(prefix="racelab-chromium-") as profile:
        with sync_playwright() as playwright:
            try:
                context = playwright.chromium.launch_persistent_context(
                    profile, executable_path=executable, headless=True, args=CHROMIUM_ARGS,
                    viewport=VIEWPORT, timeout=60_000)
            except Error as exc:
                pytest.fail(f"The browser did not start: {executable}: {exc}\n"
                            f"--- server log ---\n{server.log_tail(20)}")
            context.set_default_timeout(30_000)
            try:
                yield context
            finally:
                context.close()
