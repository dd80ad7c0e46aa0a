"""Every lesson source runs top to bottom as a student would run it, with its hidden tests."""

import time

import nbclient
import pytest

from autograder.pipeline.source import find_lessons, read_lesson
from tests.conftest import REPO

LESSONS = find_lessons(REPO / "solutions")


def errors_in(notebook) -> list[str]:
    found = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append(f"cell {cell.id}: {output['ename']}: {output['evalue']}")
    return found


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_solution_runs_top_to_bottom_without_error(lesson, tmp_path, monkeypatch):
    monkeypatch.delenv("RACELAB_GRADING", raising=False)
    notebook = read_lesson(lesson)
    started = time.monotonic()
    client = nbclient.NotebookClient(notebook, timeout=300, allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    seconds = time.monotonic() - started
    print(f"{lesson.name}: ran top to bottom in {seconds:.1f} s")
    assert errors_in(notebook) == []
