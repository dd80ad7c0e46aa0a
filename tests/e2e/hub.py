"""The class's JupyterHub (``python -m autograder.hub``) for the hub test, stopped by PID."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from tests.e2e.lab import SERVER_START_S, free_port


@dataclass
class HubServer:
    """A running hub.

    Attributes:
        url: The proxy's public URL (``http://127.0.0.1:PORT``), where students log in.
        home: The hub's folder (``--home``).
        process: The hub process; the proxy and the students' servers are its children.
        log: The hub's combined stdout and stderr (the proxy's and the servers' too).
    """

    url: str
    home: Path
    process: subprocess.Popen
    log: Path

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of the hub's log, for failure messages."""
        if not self.log.exists():
            return "(no hub log)"
        return "\n".join(self.log.read_text(encoding="utf-8", errors="replace")
                         .splitlines()[-lines:])

    def answers(self, path: str) -> bool:
        """``path`` answers 200 through the proxy (bounded to 10 s)."""
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{self.url}{path}", timeout=10) as answer:
                return answer.status == 200
        return False

    def family(self) -> list[psutil.Process]:
        """The hub's live descendants: the proxy, students' servers, their kernels."""
        with contextlib.suppress(psutil.Error):
            return psutil.Process(self.process.pid).children(recursive=True)
        return []


@contextlib.contextmanager
def running_hub(home: Path, exchange: Path, solutions: Path, log: Path) -> Iterator[HubServer]:
    """``python -m autograder.hub`` on free loopback ports, for the ``with`` block.

    At the end the hub is asked to stop (SIGTERM: it stops the proxy and every student's
    server), then the hub and everything it started are killed by PID.

    Fails the test, quoting the hub's log, when it does not answer within
    :data:`~tests.e2e.lab.SERVER_START_S` seconds or exits.
    """
    port, hub_port, api_port = free_port(), free_port(), free_port()
    command = [sys.executable, "-m", "autograder.hub", "--home", str(home),
               "--exchange", str(exchange), "--solutions", str(solutions),
               "--port", str(port), "--hub-port", str(hub_port), "--api-port", str(api_port)]
    if os.geteuid() == 0:  # CI and containers: the test's students are the test's own code
        command.append("--students-as-root")
    with log.open("wb") as handle:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=handle,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    hub = HubServer(f"http://127.0.0.1:{port}", home, process, log)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while not hub.answers("/hub/api"):
            if process.poll() is not None:
                pytest.fail(f"JupyterHub did not start: it exited with code "
                            f"{process.returncode}.\n--- hub log {log} ---\n{hub.log_tail()}")
            if time.monotonic() > deadline:
                pytest.fail(f"JupyterHub did not start: no answer on {hub.url} within "
                            f"{SERVER_START_S} s.\n--- hub log {log} ---\n{hub.log_tail()}")
            time.sleep(0.5)
        yield hub
    finally:
        family = hub.family()
        if process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for child in family:
            with contextlib.suppress(psutil.Error):
                child.kill()
