"""Jupyter server extension: nbgrader's Validate button, answered by the Race Lab grader.

nbgrader's JupyterLab extension draws the Validate button. Pressing it saves the notebook, asks
``GET /nbgrader_version``, then ``POST /assignments/validate`` with the notebook's ``path``, and
shows the JSON answer in a dialog: ``{"success": true, "value": {}}`` reads "Success! Your
notebook passes all the tests", ``{"success": true, "value": {"failed": [{"source", "error"}]}}``
lists failing cells (``error`` is HTML), and ``{"success": false, "value": text}`` reads "There
was an error running the validate command".

nbgrader's own handler for that URL (``nbgrader.server_extensions.validate_assignment``) runs
the notebook's visible tests only, in an unsandboxed kernel, and would pass a racy answer that
the hidden tests fail. This extension serves the same two URLs instead (the lab config switches
nbgrader's validate extension off) and answers with the grader's own verdict: it runs
:mod:`autograder.lab.verdict` in a process of its own, which grades the saved notebook exactly as
``racelab validate`` does. A verdict that does not arrive within ``RaceLabValidate.timeout``
seconds is reported as a failure, never as a pass. After each press the extension starts the
next verdict process for the same lesson (``RaceLabValidate.keep_ready``), whose sandboxed
runner imports the lesson's libraries while the student reads the verdict; it serves one press
and never holds student code before it.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import html
import json
import os
import signal
import sys
import tempfile
from pathlib import Path

from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web
from traitlets import Bool, Int, Unicode, default
from traitlets.config import LoggingConfigurable

from autograder.grading.spec import Status
from autograder.lab.verdict import Verdict

REPO = Path(__file__).resolve().parent.parent.parent
#: Variables of the lab's own environment that the grading process must not see, so that its
#: verdict is the one ``racelab validate`` gives from a plain shell.
_LAB_ONLY_ENV = ("JUPYTER_CONFIG_DIR", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR",
                 "JUPYTER_SERVER_ROOT")


class RaceLabValidate(LoggingConfigurable):
    """Settings of the Validate button (``c.RaceLabValidate.*`` in jupyter_server_config)."""

    solutions = Unicode(help="The lesson sources holding the hidden tests.").tag(config=True)
    sandbox = Bool(True, help="Run the grading kernel in bubblewrap, as the grader does."
                   ).tag(config=True)
    timeout = Int(1500, help="Seconds a verdict may take (course build plus the grading job, "
                  "whose own limit is 1200 s) before Validate reports a failure."
                  ).tag(config=True)

    keep_ready = Bool(True, help="After each press, start the next verdict process for the "
                      "same lesson (its sandbox made, TensorFlow imported, no student code): "
                      "the next press of that lesson skips their 3-4 s. Costs one idle runner's "
                      "memory (about 600 MB for a TensorFlow lesson).").tag(config=True)

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        #: The verdict process made ready for the next press, and its lesson.
        self._ready: tuple[str, asyncio.subprocess.Process] | None = None

    @default("solutions")
    def _default_solutions(self) -> str:
        return str(REPO / "solutions")

    async def validate(self, notebook: Path) -> dict:
        """Grade ``notebook`` in a child process; returns nbgrader's validate response."""
        with tempfile.TemporaryDirectory(prefix="racelab-lab-") as tmp:
            out = Path(tmp) / "verdict.json"
            self.log.info("Race Lab: validating %s with the grader", notebook)
            process = await self._take_ready(notebook.stem)
            request = None
            if process is None:
                process = await self._start([str(notebook), "--out", str(out)], cwd=tmp,
                                            stdin=asyncio.subprocess.DEVNULL)
            else:
                request = json.dumps({"notebook": str(notebook), "out": str(out)}).encode()
            try:
                log, _ = await asyncio.wait_for(process.communicate(request and request + b"\n"),
                                                self.timeout)
            except TimeoutError:
                os.killpg(process.pid, signal.SIGKILL)
                await process.wait()
                return _error(f"The grader did not reach a verdict within {self.timeout} s, "
                              "so this notebook would not pass. Look for a cell that never "
                              "finishes (a deadlock, an endless loop).")
            finally:
                if self.keep_ready:
                    await self._make_ready(notebook.stem)
            text = out.read_text(encoding="utf-8") if out.exists() else ""
        if not text:
            tail = "\n".join(log.decode(errors="replace").strip().splitlines()[-15:])
            self.log.error("Race Lab validate failed (exit %s):\n%s", process.returncode, tail)
            return _error(f"The grader crashed (exit {process.returncode}):\n{tail}")
        data = json.loads(text)
        if "error" in data:
            return _error(data["error"])
        verdict = Verdict.from_json(text)
        self.log.info("Race Lab: %s: %s %g/%g", notebook.name, verdict.status, verdict.score,
                      verdict.max_score)
        return dialog_response(verdict)

    async def _start(self, args: list[str], cwd: str, stdin: int) -> asyncio.subprocess.Process:
        argv = [sys.executable, "-m", "autograder.lab.verdict", *args,
                "--solutions", self.solutions, *([] if self.sandbox else ["--no-sandbox"])]
        env = {k: v for k, v in os.environ.items() if k not in _LAB_ONLY_ENV}
        return await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=stdin, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, start_new_session=True)

    async def _take_ready(self, lesson: str) -> asyncio.subprocess.Process | None:
        """The verdict process made ready for ``lesson``, if it is still waiting; any other
        ready process is ended."""
        ready, self._ready = self._ready, None
        if ready is None:
            return None
        ready_lesson, process = ready
        if ready_lesson == lesson and process.returncode is None:
            return process
        await _end(process)
        return None

    async def _make_ready(self, lesson: str) -> None:
        await _end(await self._take_ready(lesson))
        if not (Path(self.solutions) / f"{lesson}.py").exists():
            return
        self._ready = (lesson, await self._start(["--ready", lesson], cwd=tempfile.gettempdir(),
                                                 stdin=asyncio.subprocess.PIPE))


async def _end(process: asyncio.subprocess.Process | None) -> None:
    """End a ready verdict process that will not be used (its sandbox dies with it)."""
    if process is None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def _error(message: str) -> dict:
    return {"success": False, "value": message}


def dialog_response(verdict: Verdict) -> dict:
    """nbgrader's validate response for ``verdict``: success only when the grader passes it.

    A failing verdict reads as a scored report: first the score and every exercise with ✓ or
    ✗, then one entry per failing exercise with its one explanation and its figure.
    """
    if verdict.ok:
        return {"success": True, "value": {}}
    listed = "\n".join(f"{'✓' if t.passed else '✗'} {t.name}: {t.score:g}/{t.points:g}"
                       for t in verdict.tests)
    failed = [{"source": verdict.score_line(),
               "error": f'<span style="white-space: pre-wrap">{html.escape(listed)}</span>'}]
    for test in verdict.tests:
        if test.passed:
            continue
        body = f'<span style="white-space: pre-wrap">{html.escape(test.why())}</span>'
        for png in test.figures:
            png = "".join(png.split())  # nbformat may wrap base64 lines
            try:
                base64.b64decode(png, validate=True)  # only base64 data goes into the page
            except binascii.Error:
                continue
            body += (f'<br><img class="racelab-figure" alt="the interleaving" '
                     f'style="max-width: 100%; height: auto" src="data:image/png;base64,{png}">')
        failed.append({"source": f"✗ {test.name}: {test.score:g} of {test.points:g} points",
                       "error": body})
    if verdict.status != Status.GRADED or len(failed) == 1:
        notes = "\n".join(verdict.notes) or f"grading status: {verdict.status}"
        failed.append({"source": f"the whole notebook: {verdict.status}, "
                                 f"{verdict.score:g} of {verdict.max_score:g} points",
                       "error": html.escape(notes)})
    return {"success": True, "value": {"failed": failed}}


class ValidateHandler(JupyterHandler):
    """``POST /assignments/validate``: the grader's verdict on a notebook under the root dir."""

    @web.authenticated
    async def post(self) -> None:
        """Answer nbgrader's Validate button."""
        path = self.get_argument("path", None)
        if path is None:
            path = (self.get_json_body() or {}).get("path")
        if not path:
            raise web.HTTPError(400, "missing path")
        root = Path(self.settings["racelab_root_dir"]).resolve()
        target = (root / path).resolve()
        if not target.is_relative_to(root):
            raise web.HTTPError(403, "Access denied: path outside allowed directory")
        if not target.is_file():
            raise web.HTTPError(404, f"no notebook at {path}")
        validator: RaceLabValidate = self.settings["racelab_validate"]
        self.finish(json.dumps(await validator.validate(target)))


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "autograder.lab.server"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Serve Validate (and the version check it makes first) from the Race Lab grader."""
    from nbgrader.server_extensions.validate_assignment.handlers import NbGraderVersionHandler

    validator = RaceLabValidate(parent=serverapp)
    webapp = serverapp.web_app
    webapp.settings["racelab_validate"] = validator
    webapp.settings["racelab_root_dir"] = serverapp.root_dir
    base_url = webapp.settings["base_url"]
    webapp.add_handlers(".*$", [
        (url_path_join(base_url, "/assignments/validate"), ValidateHandler),
        (url_path_join(base_url, "/nbgrader_version"), NbGraderVersionHandler),
    ])
    enabled = serverapp.jpserver_extensions
    if enabled.get("nbgrader.server_extensions.validate_assignment"):
        serverapp.log.warning("Race Lab: nbgrader's own validate extension is on too; switch it "
                              "off so that Validate gives the grader's verdict")
    serverapp.log.info("Race Lab: Validate runs the grader (solutions %s, sandbox %s)",
                       validator.solutions, validator.sandbox)
