"""The class report: failure clusters from failure signatures, an offline page, the CSVs.

A class of lesson 00 (pure Python, the cheapest lesson to grade) is generated from planted
mistakes, each written five ways (renamed attributes and locals, ``with`` or acquire/release,
``+=`` or ``x = x + by``, methods and ``__init__`` lines in another order, other comments), is
graded once for the module (two workers) and reported; each test reads that one grading.

What the grader cannot tell apart is left out of the planted class on purpose: the cache's
visible test (four real threads, a 10 ms loader) catches every cache whose race window spans
the load (no lock, the check outside the lock, a new lock per call) with one message, before
any hidden check runs; with no interleaving recorded, those students share one cluster (the
page says such a cluster may mix mistakes). So only one of them is planted (``check_outside``),
beside a cache race the visible test misses and the hidden check finds (``racy_key_locks``).
"""

import base64
import csv
import json
import random
import re
import shutil
import threading

import pytest

from autograder import cli
from autograder.checks import anatomy
from autograder.course.answers import fill_answers, read_answers
from autograder.course.course import make_course
from autograder.grading.grade import grade_submissions
from autograder.grading.report import load_class, write_report
from autograder.grading.spec import JobFolder, JobResult, Limits
from tests.conftest import REPO

LESSON = "00_anatomy"
LIMITS = Limits(cell_timeout_s=60, memory_mb=1500, job_timeout_s=300)
VARIANTS = 5

# ------------------------------------------------------------------ the planted mistakes

#: Per variant: (count attribute, lock attribute, local, dict attribute, loader attribute).
NAMES = [("value", "lock", "value", "values", "load"),
         ("_count", "_lock", "current", "_cache", "_load"),
         ("total", "guard", "seen", "store", "loader"),
         ("n", "mutex", "got", "_memo", "fn"),
         ("_tally", "_mu", "snapshot", "table", "_fetch")]
COMMENTS = ["", "    # thread safe?\n", "    # TODO: ask the TA about locks\n",
            "    # counts requests\n", '    """Shared between the request threads."""\n']


def _class(name: str, init: list[str], methods: list[str], variant: int) -> str:
    """A class with its ``__init__`` lines and its methods each in one of two orders."""
    init = init if variant % 2 == 0 else list(reversed(init))
    methods = methods if (variant // 2) % 2 == 0 else list(reversed(methods))
    arguments = ", load" if name == "OnceCache" else ""
    body = f"    def __init__(self{arguments}):\n" + "".join(f"        {x}\n" for x in init)
    return f"class {name}:\n{COMMENTS[variant]}\n{body}\n" + "\n".join(methods)


def _locked(lock: str, lines: list[str], variant: int, indent: str = "        ") -> str:
    """``lines`` under ``self.<lock>``: a ``with`` block, or acquire, try, finally release."""
    inner = "".join(f"{indent}    {line}\n" for line in lines)
    if variant % 2 == 0:
        return f"{indent}with self.{lock}:\n{inner}"
    return (f"{indent}self.{lock}.acquire()\n{indent}try:\n{inner}"
            f"{indent}finally:\n{indent}    self.{lock}.release()\n")


def counter(mistake: str, variant: int) -> str:
    count, lock, local, _, _ = NAMES[variant]
    add = f"self.{count} += by" if variant % 2 == 0 else f"self.{count} = self.{count} + by"
    init = [f"self.{count} = 0", f"self.{lock} = threading.Lock()"]
    locked_add = _locked(lock, [add], variant)
    locked_take = _locked(lock, [f"{local} = self.{count}", f"self.{count} = 0"], variant) \
        + f"        return {local}\n"
    if mistake == "take_unlocked":  # "take() only reads and resets, that's quick"
        increment = locked_add
        take = (f"        {local} = self.{count}\n        self.{count} = 0\n"
                f"        return {local}\n") if variant < 3 else \
            f"        {local}, self.{count} = self.{count}, 0\n        return {local}\n"
    elif mistake == "increment_unlocked":  # "one line is atomic"
        increment, take = f"        {add}\n", locked_take
    elif mistake == "read_outside":  # the lock covers the write, not the read
        increment = f"        {local} = self.{count}\n" + \
            _locked(lock, [f"self.{count} = {local} + by"], variant)
        take = locked_take
    elif mistake == "no_reset":  # take() forgets to start again from zero
        increment = locked_add
        take = _locked(lock, [f"{local} = self.{count}"], variant) + f"        return {local}\n"
    elif mistake == "self_deadlock":  # take() holds the lock and calls increment()
        increment = locked_add
        take = _locked(lock, [f"{local} = self.{count}", f"self.increment(-{local})"],
                       variant) + f"        return {local}\n"
    else:
        raise ValueError(mistake)
    return _class("SafeCounter", init, [f"    def increment(self, by=1):\n{increment}",
                                        f"    def take(self):\n{take}"], variant)


def cache(mistake: str, variant: int) -> str:
    _, lock, local, values, loader = NAMES[variant]
    init = [f"self.{loader} = load", f"self.{values} = {{}}"]
    store = f"self.{values}[key] = self.{loader}(key)"
    if mistake == "check_outside":  # the check outside the lock, not repeated inside
        init.append(f"self.{lock} = threading.Lock()")
        get = (f"        if key not in self.{values}:\n"
               + _locked(lock, [store], variant, indent="            ")
               + f"        return self.{values}[key]\n")
    elif mistake == "racy_key_locks":  # one lock per key, the lock table itself unguarded
        init.append(f"self.{lock}s = {{}}")
        make = (f"        if key not in self.{lock}s:\n"
                f"            self.{lock}s[key] = threading.Lock()\n")
        body = [f"if key not in self.{values}:", f"    {store}", f"return self.{values}[key]"]
        inner = "".join(f"            {line}\n" for line in body)
        get = make + (f"        with self.{lock}s[key]:\n{inner}" if variant % 2 == 0 else
                      f"        {local} = self.{lock}s[key]\n        with {local}:\n{inner}")
    else:
        raise ValueError(mistake)
    return _class("OnceCache", init, [f"    def get(self, key):\n{get}"], variant)


SWAPPED = ['OVERDRAFT = "v1:1>0,4>1,7>0,10>1"\nDOUBLE_PAY = "v1:1>0,3>1,9>0"',
           '# found them with explore\nDOUBLE_PAY = "v1:1>0,3>1,9>0"\n'
           'OVERDRAFT = "v1:1>0,4>1,7>0,10>1"',
           'OVERDRAFT = "v1: 1>0, 4>1, 7>0, 10>1"\nDOUBLE_PAY = "v1: 1>0, 3>1, 9>0"',
           'OVERDRAFT = "v1:1>0,4>1,7>0,10>1"  # both paid\nDOUBLE_PAY = "v1:1>0,3>1,9>0"',
           'DOUBLE_PAY = "v1:1>0,3>1,9>0"  # balance 40\nOVERDRAFT = "v1:1>0,4>1,7>0,10>1"']

#: Planted mistake -> (the answer cell it is in, its test, variant number -> the cell).
MISTAKES = {
    "take_unlocked": ("ex_anatomy_counter", "test_anatomy_counter",
                      lambda i: counter("take_unlocked", i)),
    "increment_unlocked": ("ex_anatomy_counter", "test_anatomy_counter",
                           lambda i: counter("increment_unlocked", i)),
    "read_outside": ("ex_anatomy_counter", "test_anatomy_counter",
                     lambda i: counter("read_outside", i)),
    "no_reset": ("ex_anatomy_counter", "test_anatomy_counter", lambda i: counter("no_reset", i)),
    "self_deadlock": ("ex_anatomy_counter", "test_anatomy_counter",
                      lambda i: counter("self_deadlock", i)),
    "check_outside": ("ex_anatomy_cache", "test_anatomy_cache",
                      lambda i: cache("check_outside", i)),
    "racy_key_locks": ("ex_anatomy_cache", "test_anatomy_cache",
                       lambda i: cache("racy_key_locks", i)),
    "swapped_tokens": ("ex_anatomy_schedules", "test_anatomy_schedules", lambda i: SWAPPED[i]),
}
TWIN = "twin"
"""A student who submits exactly the answers of another (the first take_unlocked variant)."""
TAMPERED = "tamperer"
"""A student who edited a read-only test cell: the page lists them first."""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("report-class")
    course = make_course(REPO / "solutions", root / "course", only=LESSON)
    release = course.release_notebook(course.lessons[0])
    correct = read_answers(REPO / "demo" / "correct" / f"{LESSON}.py").answers
    plants = [(mistake, i) for mistake in MISTAKES for i in range(VARIANTS)]
    random.Random(35).shuffle(plants)  # the students' names say nothing of their mistakes
    planted, sources = {}, {}
    for number, (mistake, variant) in enumerate(plants, 1):
        student = f"student{number:02}"
        answer, _, make = MISTAKES[mistake]
        sources[student] = make(variant)
        planted[student] = mistake
        fill_answers(release, {**correct, answer: sources[student]},
                     root / "submitted" / student / LESSON / f"{LESSON}.ipynb")
    original = next(s for s, m in planted.items() if m == "take_unlocked"
                    and sources[s] == counter("take_unlocked", 0))
    shutil.copytree(root / "submitted" / original, root / "submitted" / TWIN)
    planted[TWIN] = "take_unlocked"
    tamper = read_answers(REPO / "demo" / "edited" / f"{LESSON}.py")
    tamper.answers = {**correct, **tamper.answers}
    fill_answers(release, tamper, root / "submitted" / TAMPERED / LESSON / f"{LESSON}.ipynb")
    out = root / "out"
    grade_submissions(root / "submitted", course, out, workers=2, limits=LIMITS,
                      progress=False)
    written = write_report(out)
    print(f"\nclass of {len(planted) + 1} students; report written in {written.seconds} s")
    return {"out": out, "written": written, "planted": planted, "original": original,
            "sources": sources, "root": root}


def _clusters_csv(path):
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def test_each_planted_mistake_is_one_cluster_and_no_cluster_mixes_two(graded):
    planted = graded["planted"]
    rows = [r for r in _clusters_csv(graded["written"].clusters_csv) if r["student"] in planted]
    failing = {(r["student"], r["exercise"]) for r in rows}
    assert failing == {(s, MISTAKES[m][1]) for s, m in planted.items()}, (
        "every planted student fails exactly the exercise of their mistake")
    members: dict[tuple, list[str]] = {}
    for row in rows:
        members.setdefault((row["exercise"], row["cluster"]), []).append(planted[row["student"]])
    biggest = sum(max(m.count(x) for x in set(m)) for m in members.values())
    purity = biggest / len(rows)
    print(f"\npurity {purity:.3f} over {len(rows)} failing students in {len(members)} clusters")
    for (exercise, number), mistakes in sorted(members.items()):
        print(f"  {exercise} cluster {number}: {len(mistakes)} x {sorted(set(mistakes))}")
    assert purity >= 0.9
    assert all(len(set(m)) == 1 for m in members.values()), "a cluster mixes two mistakes"
    clusters_of = {}
    for (exercise, number), mistakes in members.items():
        clusters_of.setdefault(mistakes[0], set()).add((exercise, number))
    assert all(len(c) == 1 for c in clusters_of.values()), f"a mistake split: {clusters_of}"


def test_the_same_answer_gets_the_same_signature_in_the_runner_and_here(graded):
    entries = {e.student: e for e in load_class(graded["out"])}
    twin = entries[TWIN].signatures["test_anatomy_counter"]
    original = entries[graded["original"]].signatures["test_anatomy_counter"]
    assert twin["hash"] == original["hash"]
    assert twin["kind"] == "lost update"
    scope = {"threading": threading}
    exec(compile(graded["sources"][graded["original"]], "<answer>", "exec"), scope)  # noqa: S102
    with pytest.raises(AssertionError) as failed:
        anatomy.check_counter(scope["SafeCounter"])
    here = failed.value.racelab_signature
    assert (here["kind"], here["steps"], here["schedule"]) == (
        twin["kind"], twin["steps"], twin["schedule"])


def test_kinds_steps_and_explanations_read_as_the_students_code(graded):
    planted = graded["planted"]
    clusters = {planted[c.students[0]]: c for c in graded["written"].clusters
                if c.students[0] in planted}
    kinds = {mistake: c.signature["kind"] for mistake, c in clusters.items()}
    assert kinds["take_unlocked"] == kinds["increment_unlocked"] == "lost update"
    assert kinds["read_outside"] == "lost update"
    assert kinds["racy_key_locks"] == "check-then-act"
    assert kinds["self_deadlock"] == "deadlock"
    assert kinds["no_reset"] == kinds["swapped_tokens"] == kinds["check_outside"] == \
        "wrong result"
    take = clusters["take_unlocked"]
    assert take.signature["check"] == "anatomy.check_counter"
    assert take.signature["steps"] == [[0, "read", "A", True], [2, "read", "A", False],
                                       [2, "write", "A", False], [0, "write", "A", True]]
    assert "replay" in take.signature and take.signature["replay"][0] == \
        "result = anatomy.run_counter(SafeCounter)"
    assert re.search(r"line \d+ of your answer cell ex_anatomy_counter \(In \[\d+\]\)",
                     take.explanation), take.explanation
    assert any("`self." in line for line in take.signature["story"])
    for cluster in graded["written"].clusters:
        assert "0x" not in cluster.explanation, cluster.explanation
        assert "<cell" not in cluster.explanation


#: Mistakes the test cell's visible part catches (a one-thread contract, real threads, the
#: replayed bank); the others pass it and fail a hidden check.
CAUGHT_BY_VISIBLE = {"no_reset", "self_deadlock", "check_outside", "swapped_tokens"}


def test_visible_passed_but_hidden_failed_is_told_from_the_test_cell(graded):
    entries = {e.student: e for e in load_class(graded["out"])}
    for student, mistake in graded["planted"].items():
        signature = entries[student].signatures[MISTAKES[mistake][1]]
        assert signature["visible"] is (mistake not in CAUGHT_BY_VISIBLE), (student, mistake)
        assert (signature["check"] == "visible test") is (mistake in CAUGHT_BY_VISIBLE)


def test_the_page_is_offline_embeds_its_figures_and_lists_humans_first(graded):
    page = graded["written"].html.read_text(encoding="utf-8")
    assert not re.search(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:)?//""", page, re.I)
    assert not re.search(r"url\(|@import|<script|<link|<iframe", page, re.I)
    assert "http://" not in page and "https://" not in page
    images = re.findall(r"<img [^>]*src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert images and all(base64.b64decode(x).startswith(b"\x89PNG") for x in images)
    assert page.index("Needs a human look") < page.index(TAMPERED) < page.index("Cluster 1")
    assert "visible test passed, hidden checks failed" in page


def test_lms_grades_and_the_cli(graded, tmp_path, capsys):
    out = graded["out"]
    assert cli.main(["report", str(out), "--html", str(tmp_path / "r.html"),
                     "--csv", str(tmp_path / "csv")]) == 0
    assert "report:" in capsys.readouterr().out
    rows = list(csv.reader((tmp_path / "csv" / "canvas_grades.csv").open(encoding="utf-8")))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", LESSON]
    assert rows[1][0] == "Points Possible" and rows[1][-1] == "8"
    grades = {r["student"]: r["score"] for r in csv.DictReader((out / "grades.csv").open())}
    assert {r[3]: r[5] for r in rows[2:]} == grades
    assert (tmp_path / "r.html").exists() and (tmp_path / "csv" / "clusters.csv").exists()


def test_compare_names_the_students_whose_score_or_cluster_changed(graded, tmp_path):
    out = graded["out"]
    unchanged = write_report(out, html_path=tmp_path / "same.html", csv_dir=tmp_path / "same",
                             compare_with=out)
    assert unchanged.changes == []
    old = tmp_path / "old"
    shutil.copytree(out, old, ignore=shutil.ignore_patterns("course", "feedback", "report"))
    student = graded["original"]
    done = JobFolder(old / "jobs" / student / LESSON).done
    stored = json.loads(done.read_text())
    stored["result"]["cells"]["test_anatomy_counter"][0] = 3.0
    del stored["result"]["signatures"]["test_anatomy_counter"]
    done.write_text(json.dumps(stored))
    written = write_report(out, html_path=tmp_path / "r.html", csv_dir=tmp_path / "csv",
                           compare_with=old)
    assert [(c["student"], c["exercise"], c["old_score"], c["new_score"])
            for c in written.changes] == [(student, "test_anatomy_counter", "3", "0")]
    assert student in (tmp_path / "r.html").read_text()


def test_results_from_before_signatures_still_load_and_say_what_is_unknown(graded, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(graded["out"], old, ignore=shutil.ignore_patterns("course", "feedback"))
    for done in (old / "jobs").glob(f"*/{LESSON}.done.json"):
        stored = json.loads(done.read_text())
        stored["result"].pop("signatures")
        assert JobResult(**stored["result"]).signatures == {}
        done.write_text(json.dumps(stored))
    written = write_report(old)
    assert "cannot tell for" in written.html.read_text()
    assert written.clusters, "clusters are still made, from the messages"
