"""The class's grades as a file an LMS gradebook imports: an nbgrader export plugin.

:class:`CanvasCsvExportPlugin` is an ``nbgrader.plugins.ExportPlugin``, so it works both ways
nbgrader's own CSV exporter does: ``racelab report`` calls it on the graded class's
``gradebook.db``, and an instructor can run it on any nbgrader gradebook::

    nbgrader export --exporter=autograder.course.lms.CanvasCsvExportPlugin --to grades.csv

It writes the layout of Canvas's gradebook CSV (*Grades > Import*, the same file *Export*
gives): the columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then
one column per assignment, and a ``Points Possible`` row under the header. Canvas matches a
row to a student by ``SIS User ID`` or ``SIS Login ID`` (both the nbgrader student id here,
which is the hub or exchange login); ``ID`` is Canvas's own number, unknown here, so it is
empty. Moodle's *Import > CSV file* reads the same file: map ``SIS Login ID`` to the user's
username and each assignment column to its grade item. A missing submission scores 0, as in
nbgrader's own exporter.
"""

from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import ExportPlugin

#: Canvas's identity columns, in its own order (the assignment columns follow).
IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_ROW = "Points Possible"


class CanvasCsvExportPlugin(ExportPlugin):
    """Export every student's score per assignment as a Canvas gradebook CSV (default file
    ``canvas_grades.csv``; ``--to`` names another). ``--assignment`` and ``--student`` limit
    it as for nbgrader's CSV exporter."""

    def export(self, gradebook: Gradebook) -> None:
        """Write the CSV to ``self.to`` from ``gradebook``."""
        dest = Path(self.to or "canvas_grades.csv")
        wanted_assignments = {str(a) for a in self.assignment}
        wanted_students = {str(s) for s in self.student}
        assignments = [a for a in gradebook.assignments
                       if not wanted_assignments or a.name in wanted_assignments]
        students = sorted((s for s in gradebook.students
                           if not wanted_students or s.id in wanted_students),
                          key=lambda s: s.id)
        self.log.info("Exporting grades for Canvas to %s", dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with dest.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow([*IDENTITY, *(a.name for a in assignments)])
            writer.writerow([POINTS_ROW, "", "", "", "",
                             *(_number(a.max_score) for a in assignments)])
            for student in students:
                scores = []
                for assignment in assignments:
                    try:
                        submission = gradebook.find_submission(assignment.name, student.id)
                    except MissingEntry:
                        scores.append(_number(0.0))
                        continue
                    penalty = submission.late_submission_penalty or 0.0
                    scores.append(_number(max(0.0, submission.score - penalty)))
                writer.writerow([_name(student), "", student.id, student.id, "", *scores])


def export_canvas_csv(gradebook_db: Path, dest: Path) -> Path:
    """Run :class:`CanvasCsvExportPlugin` on the nbgrader gradebook ``gradebook_db``."""
    from autograder.course.course import nbgrader_environment

    with nbgrader_environment(), Gradebook(f"sqlite:///{gradebook_db.resolve()}") as gb:
        CanvasCsvExportPlugin(to=str(dest)).export(gb)
    return dest


def _name(student) -> str:
    """Canvas's ``Last, First``; the id when the gradebook knows no real name (``racelab
    grade`` records the id as the last name)."""
    last, first = (student.last_name or "").strip(), (student.first_name or "").strip()
    if first and last:
        return f"{last}, {first}"
    return last or first or student.id


def _number(value: float | None) -> str:
    return f"{(value or 0.0):g}"
