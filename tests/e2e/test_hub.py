"""Two students on the class's JupyterHub, in Debian's Chromium; the instructor grades both.

``python -m autograder.hub`` (what ``make hub`` runs) starts on free ports with lesson 00
released to a temporary exchange. ``alice`` and ``bob`` log in on the hub's login page, each in
a browser of their own, land on the Assignments panel, fetch lesson 00, write their answers
(alice the solution, bob the demo class's racy counter), press Validate and submit; bob cannot
reach alice's server. Then ``racelab collect`` brings both submissions, each under its hub user
name, and ``racelab grade --gradebook-url`` grades both into a real PostgreSQL gradebook, where
the instructor's Formgrader shows both grades. The hub, the proxy, every student's server and
the database server are stopped by PID.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.e2e.hub import HubServer, running_hub
from tests.e2e.lab import (
    SHOTS,
    VALIDATE_S,
    Steps,
    active_panel_id,
    answers,
    chromium,
    close_dialog,
    demo_answers,
    finish,
    one_lesson_solutions,
    press_validate,
    run,
    show,
    start_lab,
    validation_dialog,
    write_answers,
)
from tests.grading.engines import gradebook_rows, postgres_server

pytest.importorskip("jupyterhub")

LESSON = "00_anatomy"
RACY_EXERCISE = "ex_anatomy_counter"
RACY_EXERCISE_TITLE = "Exercise 2: a counter whose increments are never lost"

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> dict[str, Path]:
    """Lesson 00 released with ``racelab release`` to a temporary exchange."""
    tmp = tmp_path_factory.mktemp("hub")
    solutions = one_lesson_solutions(tmp, LESSON)
    paths = {"tmp": tmp, "solutions": solutions, "course": tmp / "course",
             "exchange": tmp / "exchange", "hub": tmp / "hub"}
    finish(run("release", LESSON, "--solutions", str(solutions), "--course",
               str(paths["course"]), "--exchange", str(paths["exchange"])))
    return paths


def _student(hub: HubServer, name: str, their_answers: dict[str, str], passes: bool,
             classmate: str | None = None) -> None:
    """One student's session: log in, fetch, answer, Validate, submit; then try to reach the
    server of ``classmate`` (logged in before)."""
    fetched = hub.home / "users" / name / "work" / LESSON / f"{LESSON}.ipynb"
    with chromium(hub) as browser:
        page = browser.pages[0] if browser.pages else browser.new_page()
        step = Steps(page, hub)
        with step(f"{name}: log in through the hub and land on the Assignments panel"):
            page.goto(f"{hub.url}/hub/login", timeout=60_000)
            page.fill("#username_input", name)
            page.fill("#password_input", "any")
            page.click("#login_submit")
            page.wait_for_url(f"**/user/{name}/lab**", timeout=120_000)
            page.locator("#nbgrader-assignment-list:not(.lm-mod-hidden)").wait_for(
                timeout=90_000)
        with step(f"{name}: fetch lesson 00 and write the answers"):
            page.locator("#released_assignments_list .list_item", has_text=LESSON).locator(
                "button", has_text="Fetch").click()
            page.locator("#fetched_assignments_list .list_item", has_text=LESSON).first.wait_for(
                timeout=60_000)
            assert fetched.exists(), f"Fetch did not bring {LESSON} into {name}'s own folder"
            assignments = page.locator(".lm-TabBar-tab", has_text="Assignments").get_attribute(
                "data-id")
            page.locator("#fetched_assignments_list a.assignment-notebooks-link").click()
            page.locator(f"#nbgrader-racelab-{LESSON} a", has_text=LESSON).click()
            panel = active_panel_id(page)
            write_answers(page, panel, fetched, their_answers)
        with step(f"{name}: Validate gives the grader's verdict"):
            press_validate(page, panel)
            kind = validation_dialog(page)
            text = page.locator(".jp-Dialog").inner_text()
            page.screenshot(path=str(SHOTS / f"hub-{name}-validate.png"))
            if passes:
                assert "validation-success" in kind, text
            else:
                assert "validation-failed" in kind, text
                assert f"✗ {RACY_EXERCISE_TITLE}: 0 of" in text, text
            close_dialog(page)
        with step(f"{name}: submit from the Assignments panel"):
            show(page, assignments)
            page.locator("#fetched_assignments_list .list_item", has_text=LESSON).locator(
                "button", has_text="Submit").first.click()
            page.locator("#submitted_assignments_list .list_item", has_text=LESSON).first.wait_for(
                timeout=60_000)
            page.screenshot(path=str(SHOTS / f"hub-{name}-submitted.png"))
        if classmate:
            with step(f"{name} cannot reach {classmate}'s server"):
                answer = page.request.get(f"{hub.url}/user/{classmate}/api/contents",
                                          max_redirects=0)
                assert answer.status in (302, 403, 404) and LESSON not in answer.text(), \
                    (answer.status, answer.text()[:300])
        step.report(SHOTS / f"hub-{name}-timings.txt")


def test_two_students_work_through_the_hub_and_the_instructor_grades_both(course, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    solution = answers(course["solutions"] / f"{LESSON}.py")
    racy = {**solution, RACY_EXERCISE: demo_answers("racy", LESSON)[RACY_EXERCISE]}
    with running_hub(course["hub"], course["exchange"], course["solutions"],
                     tmp_path / "hub.log") as hub:
        _student(hub, "alice", solution, passes=True)
        _student(hub, "bob", racy, passes=False, classmate="alice")

    inbound = sorted(p.name.split("+")[0] for p in
                     (course["exchange"] / "racelab" / "inbound").iterdir())
    assert inbound == ["alice", "bob"], f"the exchange holds {inbound}: ids are the hub users"
    where = ["--solutions", str(course["solutions"]), "--course", str(course["course"])]
    output = finish(run("collect", LESSON, *where, "--exchange", str(course["exchange"])))
    submitted = course["course"] / "submitted"
    for name in ("alice", "bob"):
        assert (submitted / name / LESSON / f"{LESSON}.ipynb").exists(), output

    grades = tmp_path / "grades"
    with postgres_server() as database:
        url = database("racelab_hub_class")
        finish(run("grade", str(submitted), "--out", str(grades), *where,
                   "--gradebook-url", url), timeout=VALIDATE_S)
        with (grades / "grades.csv").open(encoding="utf-8") as table:
            rows = {r["student"]: r for r in csv.DictReader(table)}
        assert set(rows) == {"alice", "bob"}, rows
        assert rows["alice"]["score"] == rows["alice"]["max_score"], rows["alice"]
        assert rows["bob"]["status"] == "graded", rows["bob"]
        assert 0 < float(rows["bob"]["score"]) < float(rows["bob"]["max_score"]), rows["bob"]
        in_csv = {(s, LESSON, float(r["score"]), float(r["max_score"])) for s, r in rows.items()}
        assert gradebook_rows(url) == in_csv
        _formgrader_shows(rows, url, course, tmp_path)


def _formgrader_shows(rows: dict[str, dict], url: str, course: dict[str, Path],
                      tmp_path: Path) -> None:
    """The instructor's lab on the PostgreSQL gradebook: Formgrader lists each grade."""
    instructor = start_lab(
        ["instructor", "--home", str(tmp_path / "instructor"), "--root", str(course["tmp"]),
         "--solutions", str(course["solutions"]), "--course", str(course["course"]),
         "--exchange", str(course["exchange"]), "--gradebook-url", url],
        tmp_path / "instructor.log", tmp_path)
    try:
        with chromium(instructor) as browser:
            page = browser.new_page()  # Formgrader's pages ask its API with the login
            page.set_extra_http_headers({"Authorization": f"token {instructor.token}"})
            page.goto(f"{instructor.url}/formgrader/manage_submissions/{LESSON}",
                      timeout=60_000)
            for name, row in rows.items():
                listed = page.locator("tr", has_text=name)
                listed.first.wait_for(timeout=60_000)
                shown = " ".join(listed.first.inner_text().split())
                assert f"{float(row['score']):g} / {float(row['max_score']):g}" in shown, shown
            page.screenshot(path=str(SHOTS / "hub-formgrader-on-postgres.png"))
    finally:
        instructor.stop()
