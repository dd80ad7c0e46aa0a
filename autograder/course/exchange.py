"""`racelab release`, `collect` and `release-feedback`: nbgrader's exchange, on the built course.

Release copies each lesson's student notebook into the exchange (``EXCHANGE/racelab/outbound``),
where students fetch it (JupyterLab's Assignments panel or ``nbgrader fetch_assignment``) and
submit it back to ``inbound``. Collect moves the newest submission of every student into the
course's ``submitted/<student>/<assignment>/``, ready for ``racelab grade``. Release-feedback
puts the feedback ``racelab grade --course`` wrote into the exchange, for each student's Fetch
Feedback.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

from autograder.course.course import COURSE_ID, Course, nbgrader_environment


class ExchangeError(RuntimeError):
    """nbgrader's exchange refused a release or collect; the message carries its log."""


def _run(course: Course, exchange: Path, action: str, assignments: list[str]) -> None:
    exchange.mkdir(parents=True, exist_ok=True)
    with nbgrader_environment():
        api = course.api(**{"Exchange.root": str(exchange.resolve())})
        for name in assignments:
            call = getattr(api, action)
            outcome = call(name, update=True) if action == "collect" else call(name)
            if not outcome["success"]:
                raise ExchangeError(f"nbgrader {action} {name} failed:\n"
                                    f"{outcome.get('error', '')}\n{outcome.get('log', '')}")


def release(course: Course, exchange: Path, assignments: list[str] | None = None) -> list[str]:
    """Release ``assignments`` (default: every lesson) to ``exchange``; returns the names released.

    A lesson already in the exchange stays as it is (students may have fetched it already).
    """
    names = [name for name in assignments or [lesson.name for lesson in course.lessons]
             if not (exchange / COURSE_ID / "outbound" / name).exists()]
    _run(course, exchange, "release_assignment", names)
    return names


def collect(course: Course, exchange: Path, assignments: list[str] | None = None) -> Path:
    """Collect submissions of ``assignments`` into the course; returns its ``submitted/``.

    nbgrader copies a submission by following links and reading every file, so first every
    link, FIFO, socket or device a student left in ``inbound`` is removed (and named on
    stderr): as root, a link to ``/etc/shadow`` or to another student's notebook would
    otherwise be copied in as that student's work, and a FIFO would block the collect forever.
    """
    names = assignments or [lesson.name for lesson in course.lessons]
    for removed in remove_special_files(exchange / COURSE_ID / "inbound"):
        print(f"collect: removed {removed} from the exchange (not a regular file)",
              file=sys.stderr)
    _run(course, exchange, "collect", names)
    return course.root / "submitted"


def remove_special_files(inbound: Path) -> list[Path]:
    """Remove every entry under ``inbound`` that is neither a folder nor a regular file
    (links included, whatever they point to); return what was removed."""
    removed = []
    if not inbound.is_dir() or inbound.is_symlink():
        return removed
    for folder, subfolders, files in os.walk(inbound):
        for name in [*subfolders, *files]:
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                path.unlink()
                removed.append(path)
        subfolders[:] = [n for n in subfolders if not (Path(folder) / n).is_symlink()]
    return removed


def release_feedback(course: Course, exchange: Path, assignments: list[str] | None = None
                     ) -> list[str]:
    """Put the course's feedback for ``assignments`` (default: every lesson) in the exchange,
    where each student's Fetch Feedback finds their own; returns the assignment names."""
    names = assignments or [lesson.name for lesson in course.lessons]
    _run(course, exchange, "release_feedback", names)
    return names
