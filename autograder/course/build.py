"""`racelab build`: regenerate the student notebooks in ``notebooks/`` from ``solutions/``."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from autograder.course.course import Course, make_course


def build(solutions_dir: Path, notebooks_dir: Path, course_root: Path) -> Course:
    """Make the nbgrader course in ``course_root`` and copy its student notebooks out.

    ``notebooks_dir`` ends up holding exactly one ``NN_name.ipynb`` per lesson source; stale
    notebooks whose source is gone are removed.
    """
    course = make_course(solutions_dir, course_root)
    notebooks_dir.mkdir(parents=True, exist_ok=True)
    wanted = {f"{lesson.name}.ipynb" for lesson in course.lessons}
    for stale in notebooks_dir.glob("*.ipynb"):
        if stale.name not in wanted:
            stale.unlink()
    for lesson in course.lessons:
        shutil.copyfile(course.release_notebook(lesson), notebooks_dir / f"{lesson.name}.ipynb")
    return course


def stale_notebooks(solutions_dir: Path, notebooks_dir: Path) -> list[str]:
    """Say which files in ``notebooks_dir`` regenerating would change, add or remove.

    Returns:
        One line per differing file (``notebooks/01_warmup.ipynb: differs``); empty when the
        committed notebooks are what ``build`` writes (but for the Python version in
        ``language_info``, which is the machine's).
    """
    with tempfile.TemporaryDirectory(prefix="racelab-check-") as tmp:
        fresh = Path(tmp) / "notebooks"
        build(solutions_dir, fresh, Path(tmp) / "course")
        problems = []
        names = {p.name for p in fresh.glob("*.ipynb")} | {
            p.name for p in notebooks_dir.glob("*.ipynb")
        }
        for name in sorted(names):
            new, old = fresh / name, notebooks_dir / name
            if not old.exists():
                problems.append(f"{old}: missing (run `make build`)")
            elif not new.exists():
                problems.append(f"{old}: has no source in {solutions_dir}")
            elif _comparable(new) != _comparable(old):
                problems.append(f"{old}: differs from what {solutions_dir} generates")
        return problems


def _comparable(notebook: Path) -> dict | bytes:
    """A notebook's content without the Python version, which depends on the machine."""
    try:
        content = json.loads(notebook.read_bytes())
        content["metadata"].get("language_info", {}).pop("version", None)
    except (ValueError, KeyError, TypeError, AttributeError):
        return notebook.read_bytes()
    return content
