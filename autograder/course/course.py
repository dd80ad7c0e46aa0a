"""An nbgrader course directory made from the lesson sources.

The course directory is a build product (``build/course`` by default): ``source/`` holds the
nbgrader source notebooks converted from ``solutions/``, ``release/`` the student versions that
``nbgrader generate_assignment`` writes, and ``gradebook.db`` the gradebook it fills with every
graded cell, which autograding needs.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.course.source import Lesson, find_lessons, read_lesson

COURSE_ID = "racelab"


class BuildError(RuntimeError):
    """nbgrader could not generate a lesson; the message names the lesson and nbgrader's log."""


@dataclass(frozen=True)
class Course:
    """An nbgrader course directory.

    Attributes:
        root: The course directory.
        lessons: The lessons it holds, in order.
        gradebook_url: The class's gradebook on a server database (an SQLAlchemy URL such as
            ``postgresql+psycopg://host/racelab``, one database per course), or None for the
            course's own ``gradebook.db``.
    """

    root: Path
    lessons: tuple[Lesson, ...]
    gradebook_url: str | None = None

    @property
    def template_url(self) -> str:
        """SQLAlchemy URL of the course's ``gradebook.db``, which nbgrader fills with every
        lesson's cells and every grading job copies."""
        return f"sqlite:///{(self.root / 'gradebook.db').resolve()}"

    @property
    def db_url(self) -> str:
        """SQLAlchemy URL of the class's gradebook: ``gradebook_url``, else ``gradebook.db``."""
        return self.gradebook_url or self.template_url

    def release_notebook(self, lesson: Lesson) -> Path:
        """The student notebook nbgrader generated for ``lesson``."""
        return self.root / "release" / lesson.name / f"{lesson.name}.ipynb"

    def api(self, **config: object):
        """An in-process ``NbGraderAPI`` on this course, with extra ``Class.trait`` config."""
        from nbgrader.apps import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory
        from traitlets.config import Config

        cfg = Config()
        cfg.CourseDirectory.root = str(self.root.resolve())
        cfg.CourseDirectory.course_id = COURSE_ID
        cfg.CourseDirectory.db_url = self.db_url
        cfg.Exchange.root = str((self.root / "exchange").resolve())
        for dotted, value in config.items():
            section, trait = dotted.split(".", 1)
            cfg[section][trait] = value
        return NbGraderAPI(coursedir=CourseDirectory(config=cfg), config=cfg)


def make_course(solutions_dir: Path, root: Path, *, only: str | None = None) -> Course:
    """Convert every lesson source and generate its student version with nbgrader.

    Args:
        solutions_dir: Folder of ``NN_name.py`` lesson sources.
        root: Course directory to (re)write; its gradebook is recreated.
        only: Build just this lesson (by name).

    Returns:
        The course, with ``release/`` and the gradebook filled.

    Raises:
        SourceError: A lesson source is malformed (file and cell named).
        BuildError: nbgrader failed on a lesson.
    """
    lessons = tuple(x for x in find_lessons(solutions_dir) if only in (None, x.name))
    notebooks = {lesson: read_lesson(lesson) for lesson in lessons}  # validate all before writing
    root.mkdir(parents=True, exist_ok=True)
    (root / "gradebook.db").unlink(missing_ok=True)
    course = Course(root, lessons)
    (root / "nbgrader_config.py").write_text(_config_text(course), encoding="utf-8")
    for lesson, notebook in notebooks.items():
        target = root / "source" / lesson.name / f"{lesson.name}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, target)
    with nbgrader_environment():
        api = course.api()
        for lesson in lessons:
            outcome = api.generate_assignment(lesson.name, force=True, create=True)
            if not outcome["success"]:
                raise BuildError(
                    f"nbgrader generate_assignment failed for {lesson.path}:\n"
                    f"{outcome.get('error', '')}\n{outcome.get('log', '')}"
                )
    return course


def lesson_course(solutions_dir: Path, name: str, root: Path, *,
                  cache: Path | None = None) -> Course:
    """The course of one lesson at ``root``, as ``make_course(..., only=name)`` builds it.

    nbgrader takes seconds to generate a lesson, on every Validate. The course built for a
    lesson is kept in ``cache`` (``~/.cache/racelab/courses`` unless ``$XDG_CACHE_HOME`` says
    otherwise), under a digest of the lesson source, the pipeline's code and nbgrader's
    version, and copied from there while none of them changes. Without a usable cache folder
    the course is built at ``root`` as before.

    Args:
        solutions_dir: Folder of ``NN_name.py`` lesson sources.
        name: The lesson's name.
        root: Course directory to write (it must not exist yet).
        cache: Where built courses are kept.
    """
    lessons = tuple(x for x in find_lessons(solutions_dir) if x.name == name)
    if not lessons:
        return make_course(solutions_dir, root, only=name)
    cache = cache or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / \
        "racelab" / "courses"
    kept = cache / _course_key(lessons[0])
    if not (kept / "gradebook.db").exists():
        try:
            cache.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=cache))
        except OSError:
            return make_course(solutions_dir, root, only=name)
        make_course(solutions_dir, staging / "course", only=name)
        try:
            (staging / "course").rename(kept)  # atomic: a concurrent build keeps its own
        except OSError:
            pass
        shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(kept, root)
    course = Course(root, lessons)
    (root / "nbgrader_config.py").write_text(_config_text(course), encoding="utf-8")
    return course


def _course_key(lesson: Lesson) -> str:
    """A digest of everything a lesson's built course depends on."""
    import nbgrader

    digest = hashlib.sha256()
    for path in [lesson.path, *sorted(Path(__file__).parent.glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(f"nbgrader {nbgrader.__version__} python {sys.version}".encode())
    return f"{lesson.name}-{digest.hexdigest()[:24]}"


def _config_text(course: Course) -> str:
    return (
        "c = get_config()  # noqa: F821\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.CourseDirectory.db_url = {course.db_url!r}\n"
    )


@contextlib.contextmanager
def nbgrader_environment() -> Iterator[None]:
    """Let nbgrader find its helper programs (``alembic``) and keep its logging quiet."""
    bin_dir = str(Path(sys.executable).parent)
    old_path = os.environ.get("PATH", "")
    os.environ["PATH"] = bin_dir + os.pathsep + old_path
    logging.getLogger("traitlets").setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            # nbgrader 0.9.6's gradebook trips SQLAlchemy 2 autoflush warnings; they are noise.
            warnings.filterwarnings("ignore", module="nbgrader")
            warnings.filterwarnings("ignore", message=".*not in session.*")
            yield
    finally:
        os.environ["PATH"] = old_path
