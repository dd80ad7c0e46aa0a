"""JupyterLab for the course: a Jupyter config folder the project owns, per role.

Nothing is written to the user's ``~/.jupyter``. A lab is started with ``JUPYTER_CONFIG_DIR``,
``JUPYTERLAB_SETTINGS_DIR`` and ``JUPYTERLAB_WORKSPACES_DIR`` pointing into ``build/lab/<role>``
(see :meth:`LabSetup.environment`), where :func:`write_config` puts:

- ``jupyter_server_config.json``: which server extensions run. Both roles get nbgrader's
  assignment list and Race Lab's Validate (:mod:`autograder.lab.server`) in place of nbgrader's
  own validate handler; only the instructor gets formgrader and the course list.
- ``labconfig/page_config.json``: the per-user list of disabled lab plugins, as
  ``jupyter labextension disable --level=user`` writes it. Students do not get Formgrader,
  Create Assignment or the Course List.
- ``nbgrader_config.json``: course id ``racelab`` and the exchange root (class mode), and for
  the instructor the course directory and gradebook.
- lab settings: no news or update checks (the course machine may be offline).
- in class mode, a first workspace that opens on the Assignments panel (where a student fetches
  and submits lessons); a workspace the student already has is left as it is.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from jupyterlab_server.workspaces_handler import WorkspacesManager

from autograder.course.course import COURSE_ID

REPO = Path(__file__).resolve().parent.parent.parent
ROLES = ("student", "instructor")

#: nbgrader lab plugins students do not see (the instructor's tools).
STUDENT_DISABLED_PLUGINS = ("@jupyter/nbgrader:formgrader",
                            "@jupyter/nbgrader:create-assignment",
                            "@jupyter/nbgrader:course-list")
#: Hidden in self-study, where there is no exchange to list assignments from.
SELF_STUDY_DISABLED_PLUGINS = ("@jupyter/nbgrader:assignment-list",)
_NBGRADER_EXT = "nbgrader.server_extensions."


@dataclass(frozen=True)
class LabSetup:
    """Where and how one lab runs.

    Attributes:
        role: ``student`` or ``instructor``.
        home: The lab's own folder (config, settings, workspaces), e.g. ``build/lab/student``.
        root_dir: What the file browser shows: ``notebooks/`` for self-study, the student's
            work folder in class mode (fetched lessons land there), the repository for the
            instructor.
        solutions: Lesson sources; Validate grades against their hidden tests.
        exchange: nbgrader's exchange root (class mode, and the instructor's releases), or
            None for self-study.
        course: The nbgrader course directory (instructor only).
        gradebook_url: The class's gradebook on a server database (``racelab grade
            --gradebook-url``), where Formgrader reads it; None for the course's
            ``gradebook.db`` (instructor only).
        student: The student id used in class mode (default: the Unix login).
        sandbox: Validate runs the grading kernel in bubblewrap, as the grader does.
    """

    role: str
    home: Path
    root_dir: Path
    solutions: Path = REPO / "solutions"
    exchange: Path | None = None
    course: Path | None = None
    student: str | None = None
    sandbox: bool = True
    gradebook_url: str | None = None

    @property
    def config_dir(self) -> Path:
        """The ``JUPYTER_CONFIG_DIR`` of this lab."""
        return self.home / "config"

    def environment(self) -> dict[str, str]:
        """Environment variables that point Jupyter at this lab's own folders."""
        return {
            "JUPYTER_CONFIG_DIR": str(self.config_dir),
            "JUPYTERLAB_SETTINGS_DIR": str(self.home / "settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(self.home / "workspaces"),
            # Kernels inherit it: TensorFlow's C++ start-up lines stay out of the notebooks.
            "TF_CPP_MIN_LOG_LEVEL": "2",
        }

    def command(self, *extra: str) -> list[str]:
        """The ``jupyter lab`` command line (run it with :meth:`environment` set)."""
        root = ["--allow-root"] if os.geteuid() == 0 else []  # containers and CI run as root
        return [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={self.root_dir}",
                *root, *extra]


def server_config(setup: LabSetup) -> dict:
    """The ``jupyter_server_config.json`` of ``setup``."""
    instructor = setup.role == "instructor"
    return {
        "ServerApp": {"jpserver_extensions": {
            _NBGRADER_EXT + "assignment_list": instructor or setup.exchange is not None,
            _NBGRADER_EXT + "validate_assignment": False,  # replaced by autograder.lab.server
            _NBGRADER_EXT + "formgrader": instructor,
            _NBGRADER_EXT + "course_list": instructor,
            "autograder.lab.server": True,
        }},
        # No calls to PyPI from the Extension Manager: the course pins its extensions.
        "LabApp": {"extension_manager": "readonly"},
        "RaceLabValidate": {"solutions": str(setup.solutions.resolve()),
                            "sandbox": setup.sandbox},
    }


def page_config(setup: LabSetup) -> dict:
    """The per-user ``labconfig/page_config.json`` of ``setup``."""
    disabled: tuple[str, ...] = ()
    if setup.role == "student":
        disabled = STUDENT_DISABLED_PLUGINS
        if setup.exchange is None:
            disabled += SELF_STUDY_DISABLED_PLUGINS
    return {"disabledExtensions": {plugin: True for plugin in disabled}}


def nbgrader_config(setup: LabSetup) -> dict:
    """The ``nbgrader_config.json`` of ``setup``: course id, exchange, course directory."""
    config: dict = {"CourseDirectory": {"course_id": COURSE_ID}}
    exchange = setup.exchange or REPO / "build" / "exchange"
    # nbgrader remembers submissions in its cache: keep it with this lab, not in ~/.local.
    config["Exchange"] = {"root": str(exchange.resolve()),
                          "cache": str((setup.home / "nbgrader_cache").resolve())}
    if setup.role == "student":  # fetched lessons land in the lab's root, whatever the cwd
        config["Exchange"]["assignment_dir"] = str(setup.root_dir.resolve())
    if setup.student:
        config["CourseDirectory"]["student_id"] = setup.student
    if setup.course is not None:
        course = setup.course.resolve()
        config["CourseDirectory"].update(
            {"root": str(course),
             "db_url": setup.gradebook_url or f"sqlite:///{course / 'gradebook.db'}"})
    return config


#: Lab settings files (under JUPYTERLAB_SETTINGS_DIR) written when missing.
LAB_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        {"fetchNews": "false", "checkForUpdates": False},
}


#: The state key nbgrader's lab extension restores its Assignments panel from.
ASSIGNMENT_LIST = "nbgrader-assignment-list:nbgrader-assignment-list"


def class_workspace() -> dict:
    """JupyterLab's default workspace for class mode: the Assignments panel open in front,
    the file browser beside it."""
    left = {"collapsed": False, "visible": True, "current": "filebrowser",
            "widgets": ["filebrowser", "running-sessions", "@jupyterlab/toc:plugin",
                        "extensionmanager.main-view"]}
    main = {"dock": {"type": "tab-area", "currentIndex": 0, "widgets": [ASSIGNMENT_LIST]},
            "current": ASSIGNMENT_LIST}
    return {"data": {"layout-restorer:data": {"main": main, "left": left},
                     ASSIGNMENT_LIST: {"data": {}}},
            "metadata": {"id": "default"}}


def write_config(setup: LabSetup) -> None:
    """Write ``setup``'s Jupyter config folder (config files always, lab settings when missing).

    Raises:
        ValueError: An unknown role.
    """
    if setup.role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, not {setup.role!r}")
    files = {
        setup.config_dir / "jupyter_server_config.json": server_config(setup),
        setup.config_dir / "labconfig" / "page_config.json": page_config(setup),
        setup.config_dir / "nbgrader_config.json": nbgrader_config(setup),
    }
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    for name, content in LAB_SETTINGS.items():
        path = setup.home / "settings" / name
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(content, indent=1) + "\n", encoding="utf-8")
    workspaces = setup.home / "workspaces"
    workspaces.mkdir(parents=True, exist_ok=True)
    if setup.role == "student" and setup.exchange is not None:
        manager = WorkspacesManager(str(workspaces))
        if not manager.list_workspaces():
            manager.save("default", json.dumps(class_workspace(), indent=1))
    setup.root_dir.mkdir(parents=True, exist_ok=True)
