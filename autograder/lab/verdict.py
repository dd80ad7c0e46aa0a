"""The grader's verdict for JupyterLab's Validate button, in a process of its own per press.

The verdict itself is :func:`autograder.grading.validate.grade_notebook`, the one
``racelab validate`` prints. Run as
``python -m autograder.lab.verdict NOTEBOOK --solutions DIR --out VERDICT_JSON``; the JupyterLab
server extension (:mod:`autograder.lab.server`) reads the JSON.

``python -m autograder.lab.verdict --ready LESSON --solutions DIR`` is the same process made
ready before the press: it starts the lesson's sandboxed runner at once
(:func:`~autograder.grading.validate.ready_runner`: TensorFlow imported, no student code),
then reads one request line ``{"notebook": NOTEBOOK, "out": VERDICT_JSON}`` and grades it as
above; it exits without grading when its standard input closes first.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from autograder.grading.execute import ReadyRunner
from autograder.grading.validate import (  # noqa: F401 - this module's public names
    STUDENT,
    CellVerdict,
    NotALesson,
    Verdict,
    grade_notebook,
    ready_runner,
)


def main(argv: list[str] | None = None) -> int:
    """Entry point: grade one notebook and write the verdict as JSON; exit 1 unless it passed."""
    parser = argparse.ArgumentParser(prog="python -m autograder.lab.verdict", description=__doc__)
    parser.add_argument("notebook", type=Path, nargs="?")
    parser.add_argument("--solutions", type=Path, required=True)
    parser.add_argument("--out", type=Path, help="where the verdict JSON goes")
    parser.add_argument("--ready", metavar="LESSON", help="start LESSON's runner now, then "
                        "read the notebook and the verdict's path as one JSON line")
    parser.add_argument("--no-sandbox", action="store_true")
    args = parser.parse_args(argv)
    if args.ready:
        with tempfile.TemporaryDirectory(prefix="racelab-ready-") as scratch:
            return _when_asked(args, Path(scratch))
    if args.notebook is None or args.out is None:
        parser.error("NOTEBOOK and --out are required without --ready")
    return _verdict(args.notebook, args.out, args.solutions, not args.no_sandbox)


def _when_asked(args: argparse.Namespace, scratch: Path) -> int:
    """``--ready``: start the lesson's runner, wait for the request, grade it."""
    sandbox = not args.no_sandbox
    try:
        ready = ready_runner(args.solutions, args.ready, scratch, sandbox=sandbox)
    except Exception:  # noqa: BLE001 - the press builds the lesson again and says what is wrong
        ready = None
    line = sys.stdin.readline()
    if not line.strip():
        if ready is not None:
            ready.close()
        return 0
    request = json.loads(line)
    notebook = Path(request["notebook"])
    if ready is not None and notebook.stem != args.ready:
        ready.close()
        ready = None
    return _verdict(notebook, Path(request["out"]), args.solutions, sandbox, ready)


def _verdict(notebook: Path, out: Path, solutions: Path, sandbox: bool,
             ready: ReadyRunner | None = None) -> int:
    from autograder.course.course import BuildError
    from autograder.course.source import SourceError

    try:
        verdict = grade_notebook(notebook, solutions, sandbox=sandbox, ready=ready)
    except (NotALesson, SourceError, BuildError) as exc:
        out.write_text(json.dumps({"error": str(exc)}), encoding="utf-8")
        return 2
    out.write_text(verdict.to_json(), encoding="utf-8")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
