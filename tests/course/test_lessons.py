"""Every lesson source runs top to bottom as a student would run it, and every claim its
demonstrations record (``autograder.lesson.claim``) holds.

The hidden tests are left out here: each lesson's validity tests grade the solution's answers
with them (``tests/checks/test_*.py``), the demo class runs them in graded notebooks
(``test_demo_class.py``), and ``make bench-lessons`` times them against their budget.
"""

import contextlib
import json
import time

import nbclient
import pytest

from autograder import lesson as lesson_helpers
from autograder.course.source import find_lessons, read_lesson, without_hidden_tests
from tests.conftest import REPO, dev_shm_alone

LESSONS = find_lessons(REPO / "solutions")


def errors_in(notebook) -> list[str]:
    found = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append(f"cell {cell.id}: {output['ename']}: {output['evalue']}")
    return found


def printed_by_cells_whose_claim_failed(notebook) -> str:
    """What each cell that printed "NOT shown by this run" printed, so a failed claim names
    the numbers behind it."""
    printed = []
    for cell in notebook.cells:
        text = "".join(output.get("text", "") for output in cell.get("outputs", [])
                       if output.get("output_type") == "stream")
        if "NOT shown by this run" in text:
            printed.append(f"--- cell {cell.id}:\n{text}")
    return "\n".join(printed)


def read_claims(path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_claim_records_and_reports(tmp_path, monkeypatch, capsys):
    path = tmp_path / "claims.jsonl"
    monkeypatch.setenv(lesson_helpers.CLAIMS_ENV, str(path))
    lesson_helpers.claim("held", 3 > 2)
    lesson_helpers.claim("did not hold", [])
    assert read_claims(path) == [{"claim": "held", "held": True},
                                 {"claim": "did not hold", "held": False}]
    printed = capsys.readouterr().out
    assert "Shown: held" in printed and "NOT shown by this run: did not hold" in printed


def test_nothing_a_notebook_imports_says_it_is_being_graded():
    assert not [name for name in vars(lesson_helpers) if "grading" in name.lower()]
    from autograder.grading import sandbox

    assert not [key for key in sandbox.runner_environment() if "RACELAB" in key]


def test_lost_update_figure_labels_each_step_with_what_it_saw():
    from autograder.harness import timeline

    events = [(0, "read 0"), (1, "read 0"), (1, "write 1"), (0, "write 1")]
    drawn = timeline.from_events(["worker 0", "worker 1"], events, failure="1, not 2")
    assert [(s.lane, s.start, s.end, s.label) for s in drawn.segments] == [
        (0, 0, 1, "read 0"), (1, 1, 2, "read 0"), (1, 2, 3, "write 1"), (0, 3, 4, "write 1")]
    assert drawn.switches == [1, 3]
    assert [(m.lane, m.at, m.label) for m in drawn.marks] == [(0, 4, "1, not 2")]
    texts = {t.get_text() for t in timeline.draw(drawn).axes[0].texts}
    assert {"read 0", "write 1", "1, not 2"} <= texts


@pytest.mark.parametrize("lesson", LESSONS, ids=[lesson.name for lesson in LESSONS])
def test_solution_runs_top_to_bottom_and_its_claims_hold(lesson, tmp_path, monkeypatch):
    claims_file = tmp_path / "claims.jsonl"
    monkeypatch.setenv(lesson_helpers.CLAIMS_ENV, str(claims_file))
    notebook = read_lesson(lesson)
    for cell in notebook.cells:
        cell.source = without_hidden_tests(cell.source)
    started = time.monotonic()
    client = nbclient.NotebookClient(notebook, timeout=300, allow_errors=True,
                                     resources={"metadata": {"path": str(tmp_path)}})
    # Lesson 08 counts (and removes) every segment new in /dev/shm as its answers' leftovers.
    with dev_shm_alone() if lesson.name == "08_processes" else contextlib.nullcontext():
        client.execute()
    seconds = time.monotonic() - started
    claims = read_claims(claims_file)
    print(f"{lesson.name}: ran top to bottom in {seconds:.1f} s; {len(claims)} claims")
    assert errors_in(notebook) == []
    assert claims, f"{lesson.name} recorded no claim: each demonstration records what it shows"
    failed = [c["claim"] for c in claims if not c["held"]]
    assert not failed, (f"{lesson.name}: claims that did not hold in this run: {failed}\n"
                        f"{printed_by_cells_whose_claim_failed(notebook)}")
