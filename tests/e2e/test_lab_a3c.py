"""Lesson 09 (A3C on one shared network) in JupyterLab, driven in Debian's Chromium.

Self-study: the student opens the lesson from ``notebooks/``, types the demo class's racy
answers and presses Validate: the failing exercises come back with the checks' explanations
and no hidden source. Then the solution's answers: the grader's success. The racy answers are
graded failure by failure in ``tests/checks/test_a3c.py`` and the demo class; here the browser
proves the newest lesson reaches a student the way lesson 01 does.
"""

from __future__ import annotations

import pytest

from tests.e2e.lab import (
    SHOTS,
    Steps,
    active_panel_id,
    answers,
    chromium,
    close_dialog,
    demo_answers,
    finish,
    one_lesson_solutions,
    open_lab,
    opens_unmodified,
    press_validate,
    run,
    start_lab,
    validate_passes,
    validation_dialog,
    write_answers,
)

LESSON = "09_a3c"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def test_lesson_09_solution_validates_in_the_lab(tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    solutions = one_lesson_solutions(tmp_path, LESSON)
    home = tmp_path / "student-home"
    finish(run("build", "--solutions", str(solutions), "--notebooks", str(home / "notebooks"),
               "--course", str(tmp_path / "course")))
    notebook = home / "notebooks" / f"{LESSON}.ipynb"
    solution = answers(solutions / f"{LESSON}.py")
    assert len(solution) >= 4, solution.keys()
    server = start_lab(["student", "--home", str(tmp_path / "lab"), "--root", str(home),
                        "--solutions", str(solutions)], tmp_path / "server.log", tmp_path)
    try:
        with chromium(server) as browser:
            page = browser.new_page()
            step = Steps(page, server)
            with step("self-study: open lesson 09 from notebooks/ and write the answers"):
                open_lab(page, server)
                page.locator(".jp-DirListing-item", has_text="notebooks").dblclick()
                page.locator(".jp-DirListing-item", has_text=f"{LESSON}.ipynb").dblclick()
                panel = active_panel_id(page)
                opens_unmodified(page, panel)
            with step("self-study: the racy answers fail Validate, each failure explained"):
                racy = {gid: body for gid, body in demo_answers("racy", LESSON).items()
                        if gid in solution}
                assert racy, "demo/racy has no answer of lesson 09"
                write_answers(page, panel, notebook, {**solution, **racy})
                press_validate(page, panel)
                kind = validation_dialog(page)
                text = page.locator(".jp-Dialog").inner_text()
                page.screenshot(path=str(SHOTS / "11-validate-lesson-09-racy-fails.png"))
                assert "validation-failed" in kind, text
                assert "Score 7/14" in text, text  # as demo/README.md states for racy
                assert "✗ Exercise" in text and "AssertionError: " in text, text
                assert "HIDDEN" not in text and "a3c.check_" not in text, text
                close_dialog(page)
            with step("self-study: write the solution's answers"):
                write_answers(page, panel, notebook, solution)
            with step("self-study: Validate the solution of lesson 09"):
                validate_passes(page, panel, "12-validate-lesson-09-passes.png")
            step.report(SHOTS / "timings-lesson-09.txt")
    finally:
        server.stop()
