"""Helpers of the browser test: a JupyterLab server and Debian's Chromium, both bounded in time.

Failures say which part did not start (JupyterLab or the browser) and carry the server log.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
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
from typing import Any

import nbformat
import psutil
import pytest

from autograder.course.source import Lesson, read_lesson
from tests.conftest import REPO

#: Chromium flags: without the background-networking ones, Chromium's own connections are
#: refused many at a time on this kind of machine and slow every page.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SERVER_START_S = 120
#: Bound, in seconds, on a Validate: one grading job of lesson 01 takes 1-2 minutes on a loaded
#: machine.
VALIDATE_S = 420
PANEL = ".jp-NotebookPanel"
SHOTS = REPO / "build" / "e2e"
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


class Steps:
    """Named, timed test steps; a failing step leaves a screenshot and quotes the server log."""

    def __init__(self, page, server: LabServer):
        self.page, self.server = page, server
        self.started = time.monotonic()
        self.times: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def __call__(self, name: str):
        begun = time.monotonic()
        try:
            yield
        except Exception as exc:
            shot = SHOTS / f"failed-{re.sub(r'[^a-z0-9]+', '-', name.lower()).strip('-')}.png"
            with contextlib.suppress(Exception):
                self.page.screenshot(path=str(shot))
            pytest.fail(f"step '{name}' failed: {type(exc).__name__}: {exc}\n"
                        f"screenshot: {shot}\n--- server log ---\n{self.server.log_tail()}")
        self.times.append((name, time.monotonic() - begun))

    def report(self, path: Path) -> str:
        """Print and write the step times."""
        total = time.monotonic() - self.started
        lines = [f"{seconds:7.1f} s  {name}" for name, seconds in self.times]
        lines.append(f"{total:7.1f} s  total in the browser")
        text = "\n".join(lines)
        path.write_text(text + "\n", encoding="utf-8")
        print(text)
        return text


def one_lesson_solutions(tmp: Path, lesson: str) -> Path:
    """``tmp/solutions`` holding ``lesson``'s source alone: the sources of a one-lesson course."""
    solutions = tmp / "solutions"
    solutions.mkdir()
    shutil.copy(REPO / "solutions" / f"{lesson}.py", solutions)
    return solutions


def demo_answers(student: str, lesson: str) -> dict[str, str]:
    """A demo student's answer cells of ``lesson``, by grade_id.

    ``demo/<student>/<lesson>.py`` holds ``# %% <grade_id>`` headers, each followed by a whole
    answer cell (other ``# %% ...`` headers start blocks no answer uses).
    """
    path = REPO / "demo" / student / f"{lesson}.py"
    blocks = re.split(r"^# %%[ \t]*(.*?)[ \t]*$", path.read_text(encoding="utf-8"),
                      flags=re.MULTILINE)
    return {name: body.strip("\n") for name, body in zip(blocks[1::2], blocks[2::2], strict=True)}


def _solution(source: str) -> str:
    """An answer cell as a student writes it: the solution without nbgrader's markers."""
    return "\n".join(line for line in source.splitlines()
                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


def answers(lesson_source: Path) -> dict[str, str]:
    """The solution of every answer cell of the lesson, by grade_id."""
    notebook = read_lesson(Lesson(lesson_source.stem, lesson_source))
    return {cell.metadata["nbgrader"]["grade_id"]: _solution(cell.source)
            for cell in notebook.cells
            if cell.metadata.get("nbgrader", {}).get("solution") and cell.cell_type == "code"}


def run(*args: str) -> subprocess.Popen:
    """Start ``racelab ARGS`` (a console script of this venv)."""
    racelab = Path(sys.executable).parent / "racelab"
    return subprocess.Popen([str(racelab), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def finish(process: subprocess.Popen, timeout: int = 300) -> str:
    """Wait for a process started by :func:`run`; fail with its output unless it exits 0."""
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"{process.args} took over {timeout} s:\n{output}")
    assert process.returncode == 0, f"{process.args} exited {process.returncode}:\n{output}"
    return output


def open_lab(page, server: LabServer, *, reset: bool = True) -> None:
    """Open ``/lab`` with the token and wait for the file browser.

    Args:
        reset: Open ``/lab?reset`` (an empty layout) rather than the lab's own workspace.
    """
    query = "reset&" if reset else ""
    page.goto(f"{server.url}/lab?{query}token={server.token}", timeout=90_000)
    page.wait_for_selector(".jp-DirListing-item", timeout=90_000)


def opens_unmodified(page, panel_id: str) -> None:
    """Wait for the notebook's kernel to be idle; fail if the notebook is marked modified."""
    page.locator(f'#{panel_id} .jp-Notebook-ExecutionIndicator[data-status="idle"]').wait_for(
        timeout=90_000)
    page.wait_for_timeout(1000)
    tab = page.locator(f'.lm-TabBar-tab[data-id="{panel_id}"]')
    assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), \
        "the notebook is marked modified as soon as it opens"


def active_panel_id(page) -> str:
    """The DOM id of the notebook panel in front, once its cells are there."""
    panel = page.locator(f"{PANEL}:not(.lm-mod-hidden)")
    panel.locator(".jp-Cell").first.wait_for(timeout=60_000)
    return panel.get_attribute("id")


def show(page, panel_id: str) -> None:
    """Bring a main-area tab to the front by its widget id."""
    page.locator(f'.lm-TabBar-tab[data-id="{panel_id}"]').click()
    page.locator(f"#{panel_id}:not(.lm-mod-hidden)").wait_for(timeout=10_000)


def write_answers(page, panel_id: str, notebook: Path, new: dict[str, str]) -> None:
    """Type each answer into its cell (found by the cell's position in ``notebook``)."""
    cells = nbformat.read(notebook, as_version=4).cells
    index = {c.metadata.get("nbgrader", {}).get("grade_id"): n for n, c in enumerate(cells)}
    selector = f"#{panel_id} .jp-Cell"
    page.wait_for_function("([sel, n]) => document.querySelectorAll(sel).length === n",
                           arg=[selector, len(cells)], timeout=60_000)
    dom_cells = page.locator(selector)
    for grade_id, source in new.items():
        editor = dom_cells.nth(index[grade_id]).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(source)  # as pasted: no auto-indent, no auto-closed brackets
        page.keyboard.press("Escape")


def menu(page, top: str, item: str) -> None:
    """Click ``top`` in the menu bar, then ``item`` in its menu."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(f"^{re.escape(top)}$")).click()
    page.locator(".lm-Menu .lm-Menu-itemLabel",
                 has_text=re.compile(f"^{re.escape(item)}$")).click()


def press_validate(page, panel_id: str) -> None:
    """Press nbgrader's Validate button of a notebook; the dialog comes later."""
    page.locator(f"#{panel_id} .validate-button").click()


def validation_dialog(page) -> str:
    """Wait for the Validate dialog; returns its message's classes. A dialog that says the
    notebook could not be validated at all (no verdict: the request failed) fails at once,
    with its text, instead of waiting out :data:`VALIDATE_S` for a verdict that cannot come."""
    message = page.locator(".jp-Dialog #validation-message")
    unvalidated = page.locator(".jp-Dialog", has_text="Cannot validate")
    message.or_(unvalidated).first.wait_for(timeout=VALIDATE_S * 1000)
    if not message.is_visible():
        raise AssertionError(f"Validate gave no verdict: {unvalidated.first.inner_text()}")
    return message.get_attribute("class") or ""


def validate_passes(page, panel_id: str, shot: str) -> None:
    """Press Validate and see nbgrader's success (a screenshot ``shot`` in :data:`SHOTS`)."""
    press_validate(page, panel_id)  # saves the notebook, then grades the saved file
    kind = validation_dialog(page)
    text = page.locator(".jp-Dialog").inner_text()
    page.screenshot(path=str(SHOTS / shot))
    assert "validation-success" in kind, text
    assert "Success! Your notebook passes all the tests." in text
    close_dialog(page)


def open_offline(browser, page_file: Path, shot: str) -> tuple[Any, str]:
    """Open a file in a new page with every network request refused; fail if it asked for
    any. Returns the page and its text (a screenshot ``shot`` in :data:`SHOTS`)."""
    page = browser.new_page()
    asked: list[str] = []

    def refuse(route) -> None:
        asked.append(route.request.url)
        route.abort()

    page.route(re.compile(r"^(?!file:|data:)"), refuse)
    page.goto(page_file.as_uri(), timeout=60_000)
    page.wait_for_load_state("load")
    page.screenshot(path=str(SHOTS / shot), full_page=False)
    assert not asked, f"{page_file.name} fetched {asked} (it must open offline)"
    return page, page.inner_text("body")


def close_dialog(page) -> None:
    """Press the dialog's Ok button."""
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.locator(".jp-Dialog").wait_for(state="detached", timeout=10_000)
