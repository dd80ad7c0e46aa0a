"""``python -m autograder.lab student|instructor``: JupyterLab on the course (``make lab``).

- ``student`` (self-study): the lessons in ``notebooks/``; Validate gives the grader's verdict.
- ``student --exchange DIR`` (class mode): the student's work folder (default
  ``build/lab/student-work``); the Assignments panel fetches from and submits to the exchange
  that ``racelab release --exchange DIR`` filled, course id ``racelab``.
- ``instructor``: the repository, with Formgrader on the course in ``build/course`` (built
  first if it is missing; never rebuilt here, since that would reset its gradebook).

Any further arguments go to ``jupyter lab`` (``--port 8899``, ``--no-browser``, ...).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from autograder.lab.config import REPO, LabSetup, write_config


def setup_from_args(args: argparse.Namespace) -> LabSetup:
    """The lab the command line asks for."""
    home = args.home or REPO / "build" / "lab" / args.role
    if args.role == "instructor":
        return LabSetup("instructor", home, args.root or REPO, args.solutions,
                        exchange=args.exchange, course=args.course, sandbox=not args.no_sandbox,
                        gradebook_url=args.gradebook_url)
    if args.exchange is not None:
        root = args.root or REPO / "build" / "lab" / "student-work"
    else:
        root = args.root or REPO / "notebooks"
    return LabSetup("student", home, root, args.solutions, exchange=args.exchange,
                    student=args.student, sandbox=not args.no_sandbox)


def main(argv: list[str] | None = None) -> int:
    """Write the lab's config and replace this process with ``jupyter lab``."""
    parser = argparse.ArgumentParser(prog="python -m autograder.lab", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("role", choices=("student", "instructor"))
    parser.add_argument("--exchange", type=Path, default=None,
                        help="nbgrader exchange root (class mode; default for the instructor: "
                             "build/exchange)")
    parser.add_argument("--student", default=None, help="student id in class mode "
                        "(default: the Unix login)")
    parser.add_argument("--root", type=Path, default=None, help="folder the lab shows")
    parser.add_argument("--home", type=Path, default=None,
                        help="the lab's config folder (default: build/lab/ROLE)")
    parser.add_argument("--solutions", type=Path, default=REPO / "solutions")
    parser.add_argument("--course", type=Path, default=REPO / "build" / "course")
    parser.add_argument("--gradebook-url", default=None, metavar="URL",
                        help="instructor: Formgrader on the class's gradebook on a server "
                             "database (as racelab grade --gradebook-url wrote it)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="Validate without bubblewrap (the grader itself uses it)")
    parser.add_argument("--print-config", action="store_true",
                        help="write the config, print the environment, do not start the lab")
    args, extra = parser.parse_known_args(argv)
    setup = setup_from_args(args)
    if setup.role == "instructor" and setup.exchange is None:
        setup = replace(setup, exchange=REPO / "build" / "exchange")
    write_config(setup)
    if setup.exchange is not None and not setup.exchange.exists():
        setup.exchange.mkdir(parents=True)
        setup.exchange.chmod(0o777)  # nbgrader's exchange: every student writes submissions
    env = setup.environment()
    if args.print_config:
        for name, value in env.items():
            print(f"{name}={value}")
        return 0
    if setup.role == "instructor" and not (setup.course / "gradebook.db").exists():
        from autograder.course.course import make_course

        print(f"Building the course into {setup.course}", flush=True)
        make_course(setup.solutions, setup.course)
    mode = ("class mode, exchange " + str(setup.exchange)) if setup.exchange else "self-study"
    print(f"Race Lab {setup.role} lab ({mode}) on {setup.root_dir}; config in "
          f"{setup.config_dir}", flush=True)
    command = setup.command(*extra)
    os.chdir(setup.root_dir)  # nbgrader's lab handlers read nbgrader_config.py from here
    os.execve(command[0], command, {**os.environ, **env})
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
