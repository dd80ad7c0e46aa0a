"""The grader's verdict for JupyterLab's Validate button, in a process of its own per press.

The verdict itself is :func:`autograder.grading.validate.grade_notebook`, the one
``racelab validate`` prints. Run as
``python -m autograder.lab.verdict NOTEBOOK --solutions DIR --out VERDICT_JSON``; the JupyterLab
server extension (:mod:`autograder.lab.server`) reads the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from autograder.grading.validate import (  # noqa: F401 - this module's public names
    STUDENT,
    CellVerdict,
    NotALesson,
    Verdict,
    grade_notebook,
)


def main(argv: list[str] | None = None) -> int:
    """Entry point: grade one notebook and write the verdict as JSON; exit 1 unless it passed."""
    parser = argparse.ArgumentParser(prog="python -m autograder.lab.verdict", description=__doc__)
    parser.add_argument("notebook", type=Path)
    parser.add_argument("--solutions", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True, help="where the verdict JSON goes")
    parser.add_argument("--no-sandbox", action="store_true")
    args = parser.parse_args(argv)
    from autograder.course.course import BuildError
    from autograder.course.source import SourceError

    try:
        verdict = grade_notebook(args.notebook, args.solutions, sandbox=not args.no_sandbox)
    except (NotALesson, SourceError, BuildError) as exc:
        args.out.write_text(json.dumps({"error": str(exc)}), encoding="utf-8")
        return 2
    args.out.write_text(verdict.to_json(), encoding="utf-8")
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main())
