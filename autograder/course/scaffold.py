"""`racelab new-lesson NN_name`: a new lesson's files, from one template, ready to build.

The template (``lesson_template/``) is a small working lesson: a setup cell, a demonstration
that ends with a checked claim, one exercise (answer cell, visible test, hidden test calling
the lesson's face) and a summary; its checks package (face, settings, exercise module,
graders that report what they observed, the notebook's toolbox) and its judge on the host
(``autograder/judges/<face>.py``, which decides); its validity tests over the shared scaffold
(``tests/checks/grading_runs.py``: wrong answers fail every run, correct ones pass, the
unfilled answer fails at once); and the demo class's ``correct`` and ``racy`` answers. The
README's "Add a lesson" section says what to change next.
"""

from __future__ import annotations

import re
from pathlib import Path

TEMPLATE = Path(__file__).parent / "lesson_template"
LESSON_NAME = re.compile(r"^(?P<number>\d\d)_(?P<face>[a-z][a-z0-9_]*)$")

#: Template file -> where it goes in the repository (``{lesson}`` and ``{face}`` filled in).
FILES = {
    "solution.py.tmpl": "solutions/{lesson}.py",
    "checks/__init__.py.tmpl": "autograder/checks/{face}/__init__.py",
    "checks/settings.py.tmpl": "autograder/checks/{face}/settings.py",
    "checks/tally.py.tmpl": "autograder/checks/{face}/tally.py",
    "checks/grading.py.tmpl": "autograder/checks/{face}/grading.py",
    "checks/lab.py.tmpl": "autograder/checks/{face}/lab.py",
    "judges.py.tmpl": "autograder/judges/{face}.py",
    "test.py.tmpl": "tests/checks/test_{face}.py",
    "demo/correct.py.tmpl": "demo/correct/{lesson}.py",
    "demo/racy.py.tmpl": "demo/racy/{lesson}.py",
}


class LessonExists(ValueError):
    """The lesson's name is not ``NN_name``, or one of its files exists already."""


def new_lesson(repo: Path, lesson: str) -> list[Path]:
    """Write lesson ``lesson`` (``NN_name``) into ``repo``; return the files written.

    Raises:
        LessonExists: a malformed name, a lesson number or face already taken, or a file
            already there (nothing is written then).
    """
    match = LESSON_NAME.match(lesson)
    if match is None:
        raise LessonExists(f"{lesson!r} is not a lesson name: two digits, an underscore and a "
                           "lower-case name (09_a3c)")
    number, face = match["number"], match["face"]
    taken = sorted(p.name for p in (repo / "solutions").glob(f"{number}_*.py"))
    if taken:
        raise LessonExists(f"lesson number {number} is taken by {', '.join(taken)}")
    targets = {name: repo / target.format(lesson=lesson, face=face)
               for name, target in FILES.items()}
    present = [str(path.relative_to(repo)) for path in targets.values() if path.exists()]
    if present:
        raise LessonExists(f"these files exist already: {', '.join(present)}")
    title = face.replace("_", " ").capitalize()
    for name, target in targets.items():
        text = (TEMPLATE / name).read_text(encoding="utf-8")
        for token, value in (("__LESSON__", lesson), ("__NUMBER__", number),
                             ("__FACE__", face), ("__TITLE__", title)):
            text = text.replace(token, value)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return list(targets.values())
