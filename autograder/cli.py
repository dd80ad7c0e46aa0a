"""`racelab`: the course's command line (build, demo, grade, report)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from autograder.course.source import SourceError
from autograder.grading.spec import Limits

_DEFAULT_LIMITS = Limits()

REPO = Path(__file__).resolve().parent.parent


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``racelab``; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="racelab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p_build = sub.add_parser("build", help="regenerate notebooks/ from solutions/")
    p_build.add_argument("--check", action="store_true",
                         help="change nothing; exit 1 naming each notebook a build would change")
    _paths(p_build)

    p_demo = sub.add_parser("demo", help="build the course and grade the bundled demo class")
    p_demo.add_argument("--out", type=Path, default=REPO / "build" / "demo",
                        help="where grades.csv, feedback and the gradebook go")
    p_demo.add_argument("--demo-dir", type=Path, default=REPO / "demo")
    p_demo.add_argument("--solutions", type=Path, default=REPO / "solutions")

    p_grade = sub.add_parser("grade", help="autograde submissions in nbgrader's layout")
    p_grade.add_argument("submitted", type=Path,
                         help="folder of <student>/<assignment>/<notebook>.ipynb")
    p_grade.add_argument("--out", type=Path, required=True)
    p_grade.add_argument("--solutions", type=Path, default=REPO / "solutions")
    p_grade.add_argument("--course", type=Path, default=None,
                         help="the instructor's course (e.g. build/course, as `racelab collect` "
                              "and `make instructor-lab` use it): record the grades in its "
                              "gradebook, autograded/ and feedback/, where Formgrader and "
                              "`racelab release-feedback` find them (default: a new course "
                              "in OUT/course)")
    _gradebook_option(p_grade)
    _grading_options(p_grade)
    _grading_options(p_demo)

    p_report = sub.add_parser("report", help="a graded class's report: scores, pass rates, "
                                             "failure clusters, grades for an LMS")
    p_report.add_argument("out", type=Path, help="the --out of `racelab grade` or `racelab demo`")
    p_report.add_argument("--html", type=Path, default=None, metavar="FILE",
                          help="the page to write (default: OUT/report/report.html)")
    p_report.add_argument("--csv", type=Path, default=None, metavar="DIR",
                          help="where clusters.csv, canvas_grades.csv and changes.csv go "
                               "(default: OUT/report)")
    p_report.add_argument("--compare", type=Path, default=None, metavar="OLD_OUT",
                          help="an earlier grading of the class: list the students whose score "
                               "or failure cluster changed")

    p_validate = sub.add_parser("validate", help="the grader's verdict on one notebook")
    p_validate.add_argument("notebook", type=Path, help="a lesson notebook, e.g. 01_warmup.ipynb")
    p_validate.add_argument("--solutions", type=Path, default=REPO / "solutions")
    p_validate.add_argument("--no-sandbox", action="store_true",
                            help="run the kernel without bubblewrap (trusted notebooks only)")

    for name, what in (("release", "release lessons to nbgrader's exchange"),
                       ("collect", "collect submissions from the exchange into the course"),
                       ("release-feedback", "put the course's feedback in the exchange for "
                                            "the students' Fetch Feedback")):
        p_x = sub.add_parser(name, help=what)
        p_x.add_argument("assignments", nargs="*", help="lesson names (default: all)")
        p_x.add_argument("--exchange", type=Path, default=REPO / "build" / "exchange",
                         help="nbgrader exchange root shared with the students")
        p_x.add_argument("--course", type=Path, default=REPO / "build" / "course")
        p_x.add_argument("--solutions", type=Path, default=REPO / "solutions")
        if name == "collect":
            _gradebook_option(p_x)

    p_new = sub.add_parser("new-lesson", help="scaffold a new lesson (NN_name) that builds "
                                              "and grades; see the README's Add a lesson")
    p_new.add_argument("lesson", help="two digits and a name, e.g. 10_queues")
    p_new.add_argument("--repo", type=Path, default=REPO, help=argparse.SUPPRESS)

    args = parser.parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except SourceError as exc:
        print(f"racelab: broken lesson source: {exc}", file=sys.stderr)
        return 2


def _grading_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=int, default=None,
                   help="parallel grading processes (default: number of CPU cores)")
    p.add_argument("--cell-timeout", type=int, default=_DEFAULT_LIMITS.cell_timeout_s,
                   help="seconds one cell may run")
    p.add_argument("--memory-mb", type=int, default=_DEFAULT_LIMITS.memory_mb,
                   help="memory cap of one notebook's sandbox (its processes and /tmp)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run notebooks without bubblewrap (trusted notebooks only)")
    p.add_argument("--cluster", default=None, metavar="ADDRESS|local:N",
                   help="grade every notebook on a Dask cluster: a running scheduler's address "
                        "(started with DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES=0), or "
                        "local:N for N single-threaded local workers (needs .[cluster])")


def _gradebook_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gradebook-url", default=None, metavar="URL",
                   help="the class's gradebook on a server database, e.g. "
                        "postgresql+psycopg://USER@HOST/DB (one database per course; needs "
                        ".[gradebook]); default: the course's gradebook.db")


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(cell_timeout_s=args.cell_timeout, memory_mb=args.memory_mb,
                  sandbox=not args.no_sandbox)


def _paths(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solutions", type=Path, default=REPO / "solutions")
    p.add_argument("--notebooks", type=Path, default=REPO / "notebooks")
    p.add_argument("--course", type=Path, default=REPO / "build" / "course",
                   help="the nbgrader course directory to write")


def _build(args: argparse.Namespace) -> int:
    from autograder.course.build import build, stale_notebooks

    if args.check:
        problems = stale_notebooks(args.solutions, args.notebooks)
        for line in problems:
            print(line, file=sys.stderr)
        if problems:
            print("racelab build --check: notebooks/ is out of date; run `make build`",
                  file=sys.stderr)
            return 1
        print("racelab build --check: notebooks/ matches solutions/")
        return 0
    course = build(args.solutions, args.notebooks, args.course)
    for lesson in course.lessons:
        print(f"built {args.notebooks / (lesson.name + '.ipynb')}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from autograder.grading.demo import run_demo

    return run_demo(args.demo_dir, args.solutions, args.out, workers=args.workers,
                    limits=_limits(args), cluster=args.cluster)


def _grade(args: argparse.Namespace) -> int:
    from autograder.course.course import make_course
    from autograder.grading.cluster import ClusterError
    from autograder.grading.grade import grade_submissions, print_table

    if args.course is not None and (args.course / "gradebook.db").exists():
        course = _existing_course(args)
    else:
        course = replace(make_course(args.solutions, args.course or args.out / "course"),
                         gradebook_url=args.gradebook_url)
    try:
        rows = grade_submissions(args.submitted, course, args.out, workers=args.workers,
                                 limits=_limits(args), record_in_course=args.course is not None,
                                 cluster=args.cluster)
    except ClusterError as exc:
        print(f"racelab grade: {exc}", file=sys.stderr)
        return 2
    print_table(rows)
    print(f"\ngrades: {args.out / 'grades.csv'}  feedback: {args.out / 'feedback'}")
    return 0


def _report(args: argparse.Namespace) -> int:
    from autograder.grading.report import print_summary, write_report

    for folder in (args.out, args.compare):
        if folder is not None and not (folder / "grades.csv").exists():
            print(f"racelab report: no grades.csv in {folder} (grade the class with "
                  "`racelab grade ... --out` first)", file=sys.stderr)
            return 2
    print_summary(write_report(args.out, html_path=args.html, csv_dir=args.csv,
                               compare_with=args.compare))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from autograder.grading.validate import validate_notebook

    return validate_notebook(args.notebook, args.solutions, sandbox=not args.no_sandbox)


def _release(args: argparse.Namespace) -> int:
    from autograder.course.course import make_course
    from autograder.course.exchange import release

    if (args.course / "gradebook.db").exists():  # never rebuilt: its gradebook holds grades
        course = _existing_course(args)
        print(f"releasing the course built in {args.course} (delete it to rebuild it from "
              f"{args.solutions})")
    else:
        course = make_course(args.solutions, args.course)
    released = release(course, args.exchange, args.assignments or None)
    for name in released:
        print(f"released {name} to {args.exchange}")
    if not released:
        print(f"nothing new to release: every lesson asked for is already in {args.exchange}")
    return 0


def _existing_course(args: argparse.Namespace):
    """The course already built at ``args.course`` (never rebuilt: its gradebook holds grades)."""
    from autograder.course.course import Course
    from autograder.course.source import find_lessons

    return Course(args.course, tuple(find_lessons(args.solutions)),
                  gradebook_url=getattr(args, "gradebook_url", None))


def _release_feedback(args: argparse.Namespace) -> int:
    from autograder.course.exchange import release_feedback

    for name in release_feedback(_existing_course(args), args.exchange,
                                 args.assignments or None):
        print(f"released feedback on {name} to {args.exchange}")
    return 0


def _new_lesson(args: argparse.Namespace) -> int:
    from autograder.course.scaffold import LessonExists, new_lesson

    try:
        written = new_lesson(args.repo, args.lesson)
    except LessonExists as exc:
        print(f"racelab new-lesson: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"wrote {path.relative_to(args.repo)}")
    print("next: racelab build, then see the README's 'Add a lesson'")
    return 0


def _collect(args: argparse.Namespace) -> int:
    from autograder.course.exchange import collect

    course = _existing_course(args)
    submitted = collect(course, args.exchange, args.assignments or None)
    print(f"collected into {submitted}; grade with: racelab grade {submitted} --out OUT "
          f"--course {args.course}")
    return 0


_COMMANDS = {"build": _build, "demo": _demo, "grade": _grade, "report": _report,
             "validate": _validate,
             "release": _release, "collect": _collect, "release-feedback": _release_feedback,
             "new-lesson": _new_lesson}

if __name__ == "__main__":
    sys.exit(main())
