"""`racelab report`: what a graded class got wrong, grouped by mistake, for the instructor.

Reads a class graded by ``racelab grade`` or ``racelab demo`` (locally or with ``--cluster``:
both leave ``grades.csv`` and each job's result in ``OUT/jobs``) and writes:

- an HTML page readable offline (no script, style sheet, font or picture fetched from
  anywhere; figures are PNGs drawn by matplotlib and embedded as base64): first the notebooks
  that need a human look (their status), then per lesson the score distribution, and per
  exercise its pass rate, the share of students whose visible test passed while the hidden
  checks failed, and the failure clusters, largest first: the students whose failing check
  has the same failure signature (:mod:`~autograder.grading.signatures`), with the kind of
  failure, the steps that broke it, one student's explanation and the lines that replay it;
- ``clusters.csv``: ``lesson,exercise,cluster,size,signature,student``, one row per failing
  student and exercise;
- ``canvas_grades.csv``: the grades for an LMS gradebook, from the class's ``gradebook.db``
  through :class:`~autograder.course.lms.CanvasCsvExportPlugin`;
- with ``--compare OLD_OUT``, ``changes.csv`` and a section listing the students whose score
  or cluster changed between the two gradings.

Nothing here grades: it reads results as the grader wrote them.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, fields
from pathlib import Path

from autograder.grading.signatures import HUMAN_STATUSES, describe_steps, failure_signatures
from autograder.grading.spec import JobFolder, JobResult, Status
from autograder.harness.report import plural

#: Where the Validate-style replay advice starts in a check's message.
_REPLAY_MARK = "Run it again in a cell of your notebook"


@dataclass
class Entry:
    """One student's graded notebook for one lesson, as ``grades.csv`` and its result say.

    Attributes:
        student, lesson, score, max_score, status, detail: The ``grades.csv`` row.
        cells: Per test: ``[score, points, reason]`` (empty when no result was found).
        signatures: Per failing test: its failure signature.
        notes: The grader's notes.
    """

    student: str
    lesson: str
    score: float
    max_score: float
    status: str
    detail: str
    cells: dict = field(default_factory=dict)
    signatures: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


@dataclass
class Cluster:
    """Students of one exercise whose failures share one signature hash.

    Attributes:
        lesson, exercise: Where.
        number: 1 for the largest cluster of the exercise, then 2...
        signature: The representative's signature (kind, steps, story, replay, hash).
        students: Sorted student ids; the first is the representative.
        explanation: The representative's reason, as the student read it.
    """

    lesson: str
    exercise: str
    number: int
    signature: dict
    students: list[str]
    explanation: str

    @property
    def size(self) -> int:
        return len(self.students)


@dataclass
class Written:
    """What :func:`write_report` wrote, and what it found."""

    html: Path
    clusters_csv: Path
    grades_csv: Path | None
    changes_csv: Path | None
    clusters: list[Cluster]
    changes: list[dict]
    seconds: float


def load_class(out: Path) -> list[Entry]:
    """Every row of ``out/grades.csv`` with its job's result (``.done.json`` first, the job's
    ``result.json`` else), sorted by lesson then student."""
    grades = out / "grades.csv"
    if not grades.exists():
        raise FileNotFoundError(f"{grades} not found: is {out} the --out of `racelab grade`?")
    entries = []
    with grades.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            entry = Entry(row["student"], row["assignment"], float(row["score"] or 0),
                          float(row["max_score"] or 0), row["status"], row["detail"])
            result = _result(out, entry.student, entry.lesson)
            if result is not None:
                entry.cells, entry.notes = result.cells, result.notes
                entry.signatures = dict(result.signatures)
                # Results graded before signatures existed: made here from status and reasons
                # (without "visible": which part of the test failed is then unknown).
                missing = {gid for gid, (score, points, _) in result.cells.items()
                           if score < points} - set(entry.signatures)
                if missing:
                    made = failure_signatures(result)
                    for gid in missing:
                        made[gid].pop("visible", None)  # which part failed is unknown
                        entry.signatures[gid] = made[gid]
            entries.append(entry)
    return sorted(entries, key=lambda e: (e.lesson, e.student))


def _result(out: Path, student: str, lesson: str) -> JobResult | None:
    folder = JobFolder(out / "jobs" / student / lesson)
    for path, key in ((folder.done, "result"), (folder.result, None)):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        data = data.get(key) if key else data
        if isinstance(data, dict):
            known = {f.name for f in fields(JobResult)}
            try:
                return JobResult(**{k: v for k, v in data.items() if k in known})
            except TypeError:
                continue
    return None


def find_clusters(entries: list[Entry]) -> list[Cluster]:
    """The failure clusters of every exercise: students grouped by signature hash, largest
    first (ties by kind, then hash), numbered from 1 per exercise."""
    groups: dict[tuple[str, str], dict[str, list[Entry]]] = defaultdict(lambda: defaultdict(list))
    for entry in entries:
        for gid, signature in entry.signatures.items():
            groups[(entry.lesson, gid)][signature["hash"]].append(entry)
    clusters = []
    for (lesson, exercise), by_hash in sorted(groups.items()):
        ranked = sorted(by_hash.values(), key=lambda members: (
            -len(members), members[0].signatures[exercise]["kind"],
            members[0].signatures[exercise]["hash"]))
        for number, members in enumerate(ranked, 1):
            members = sorted(members, key=lambda e: e.student)
            first = members[0]
            reason = str((first.cells.get(exercise) or [0, 0, ""])[2])
            clusters.append(Cluster(lesson, exercise, number, first.signatures[exercise],
                                    [m.student for m in members], reason))
    return clusters


def compare(old: list[Entry], new: list[Entry]) -> list[dict]:
    """Per student, lesson and exercise: the score or failure cluster (signature hash) that
    changed between two gradings, sorted."""
    def table(entries: list[Entry]) -> dict[tuple, tuple]:
        found = {}
        for entry in entries:
            exercises = entry.cells or {"(notebook)": [entry.score, entry.max_score, ""]}
            for gid, (score, _, _) in exercises.items():
                signature = entry.signatures.get(gid)
                found[(entry.student, entry.lesson, gid)] = (
                    float(score), signature["hash"] if signature else "",
                    signature["kind"] if signature else "")
        return found

    before, after = table(old), table(new)
    changes = []
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key), after.get(key)
        if was is not None and now is not None and was[:2] == now[:2]:
            continue
        changes.append({"student": key[0], "lesson": key[1], "exercise": key[2],
                        "old_score": "" if was is None else f"{was[0]:g}",
                        "new_score": "" if now is None else f"{now[0]:g}",
                        "old_signature": "" if was is None else was[1],
                        "new_signature": "" if now is None else now[1],
                        "old_kind": "" if was is None else was[2],
                        "new_kind": "" if now is None else now[2]})
    return changes


def write_report(out: Path, *, html_path: Path | None = None, csv_dir: Path | None = None,
                 compare_with: Path | None = None) -> Written:
    """Write the report of the class graded into ``out`` (see the module's docstring).

    Args:
        out: The graded class (``racelab grade --out``).
        html_path: The page (default ``out/report/report.html``).
        csv_dir: Where ``clusters.csv``, ``canvas_grades.csv`` and ``changes.csv`` go
            (default ``out/report``).
        compare_with: An earlier grading of the class to compare with.
    """
    started = time.monotonic()
    html_path = html_path or out / "report" / "report.html"
    csv_dir = csv_dir or out / "report"
    entries = load_class(out)
    clusters = find_clusters(entries)
    changes = compare(load_class(compare_with), entries) if compare_with else []
    csv_dir.mkdir(parents=True, exist_ok=True)
    clusters_csv = csv_dir / "clusters.csv"
    write_clusters_csv(clusters, clusters_csv)
    grades_csv = None
    if (out / "gradebook.db").exists():
        from autograder.course.lms import export_canvas_csv

        grades_csv = export_canvas_csv(out / "gradebook.db", csv_dir / "canvas_grades.csv")
    changes_csv = None
    if compare_with:
        changes_csv = csv_dir / "changes.csv"
        with changes_csv.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(_CHANGE_FIELDS))
            writer.writeheader()
            writer.writerows(changes)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    page = render(entries, clusters, out=out, changes=changes if compare_with else None,
                  compared=compare_with, grades_csv=grades_csv)
    html_path.write_text(page, encoding="utf-8")
    return Written(html_path, clusters_csv, grades_csv, changes_csv, clusters, changes,
                   round(time.monotonic() - started, 2))


def print_summary(written: Written) -> None:
    """Where the report went, and its largest clusters, for a terminal."""
    print(f"report: {written.html}  ({len(written.clusters)} failure clusters, "
          f"{written.seconds:g} s)")
    print(f"clusters: {written.clusters_csv}")
    if written.grades_csv is not None:
        print(f"LMS grades (Canvas CSV): {written.grades_csv}")
    if written.changes_csv is not None:
        print(f"changes: {written.changes_csv} ({len(written.changes)} changed)")
    for cluster in sorted(written.clusters, key=lambda c: -c.size)[:5]:
        print(f"  {cluster.size:3} x {cluster.lesson} {cluster.exercise}: "
              f"{cluster.signature.get('kind')} [{cluster.signature.get('hash')}]")


_CHANGE_FIELDS = ("student", "lesson", "exercise", "old_score", "new_score", "old_signature",
                  "new_signature", "old_kind", "new_kind")


def write_clusters_csv(clusters: list[Cluster], path: Path) -> None:
    """``lesson,exercise,cluster,size,signature,student``: a row per failing student and
    exercise, in the clusters' order."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["lesson", "exercise", "cluster", "size", "signature", "student"])
        for cluster in clusters:
            for student in cluster.students:
                writer.writerow([cluster.lesson, cluster.exercise, cluster.number,
                                 cluster.size, cluster.signature["hash"], student])


# ---------------------------------------------------------------------------------- the page

_STYLE = """
body { font-family: sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1, h2, h3 { font-weight: 600; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f2f2f2; } td.num { text-align: right; }
pre { background: #f7f7f7; padding: 0.6em; white-space: pre-wrap; overflow-wrap: anywhere; }
.cluster { border: 1px solid #ddd; border-left: 4px solid #C44E52; padding: 0.3em 1em;
           margin: 1em 0; }
.human { border-left-color: #CCB974; } .muted { color: #666; } .kind { font-weight: 600; }
code { background: #f2f2f2; padding: 0 0.2em; }
"""


def render(entries: list[Entry], clusters: list[Cluster], *, out: Path,
           changes: list[dict] | None = None, compared: Path | None = None,
           grades_csv: Path | None = None) -> str:
    """The report page as one self-contained HTML document."""
    parts = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
             "<title>Race Lab class report</title>", f"<style>{_STYLE}</style></head><body>",
             "<h1>Race Lab class report</h1>",
             f"<p class='muted'>Graded class: <code>{_e(out)}</code>. "
             f"{plural(len({e.student for e in entries}), 'student')}, "
             f"{plural(len({e.lesson for e in entries}), 'lesson')}. A cluster is the "
             "students of one exercise whose failing check has the same failure signature: "
             "the same kind of failure and the same steps of their answers (attribute names as "
             "letters, lines left out), so the same mistake written differently lands in one "
             "cluster.</p>"]
    if grades_csv is not None:
        parts.append(f"<p>Grades for an LMS gradebook (Canvas CSV, also read by Moodle's CSV "
                     f"import): <code>{_e(grades_csv)}</code></p>")
    parts.append(_human_section(entries))
    if changes is not None:
        parts.append(_changes_section(changes, compared))
    by_lesson: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        by_lesson[entry.lesson].append(entry)
    for lesson, members in sorted(by_lesson.items()):
        parts.append(_lesson_section(lesson, members,
                                     [c for c in clusters if c.lesson == lesson]))
    parts.append("</body></html>")
    return "\n".join(parts)


def _human_section(entries: list[Entry]) -> str:
    flagged = [e for e in entries if e.status in HUMAN_STATUSES]
    flagged.sort(key=lambda e: (HUMAN_STATUSES.index(e.status), e.lesson, e.student))
    noted = [e for e in entries if e.status not in HUMAN_STATUSES and any(
        str(n).startswith("Flagged for the instructor") for n in e.notes)]
    rows = "".join(
        f"<tr><td>{_e(e.status)}</td><td>{_e(e.student)}</td><td>{_e(e.lesson)}</td>"
        f"<td class='num'>{e.score:g}/{e.max_score:g}</td>"
        f"<td>{_e(e.notes[0] if e.notes else e.detail)}</td></tr>" for e in flagged + noted)
    if not rows:
        return ("<h2>Needs a human look</h2><p>No notebook was tampered, crashed the grader, "
                "timed out, lost a graded cell or hit a grader error.</p>")
    return ("<h2>Needs a human look</h2><p>Statuses whose scores should not be trusted before "
            "someone reads the notebook (see the README's status table), then graded notebooks "
            "the grader flagged.</p><table><tr><th>status</th><th>student</th><th>lesson</th>"
            f"<th>score</th><th>first note</th></tr>{rows}</table>")


def _changes_section(changes: list[dict], compared: Path | None) -> str:
    if not changes:
        return (f"<h2>Changes since {_e(compared)}</h2><p>No student's score or failure "
                "cluster changed.</p>")
    rows = "".join(
        f"<tr><td>{_e(c['student'])}</td><td>{_e(c['lesson'])}</td><td>{_e(c['exercise'])}</td>"
        f"<td class='num'>{_e(c['old_score'])}</td><td class='num'>{_e(c['new_score'])}</td>"
        f"<td>{_e(c['old_kind'])} <code>{_e(c['old_signature'])}</code></td>"
        f"<td>{_e(c['new_kind'])} <code>{_e(c['new_signature'])}</code></td></tr>"
        for c in changes)
    return (f"<h2>Changes since {_e(compared)}</h2><p>{len(changes)} exercise result(s) whose "
            "score or failure cluster changed.</p><table><tr><th>student</th><th>lesson</th>"
            "<th>exercise</th><th>old score</th><th>new score</th><th>old cluster</th>"
            f"<th>new cluster</th></tr>{rows}</table>")


def _lesson_section(lesson: str, entries: list[Entry], clusters: list[Cluster]) -> str:
    submitted = [e for e in entries if e.status != Status.NOT_SUBMITTED.value]
    exercises = sorted({gid for e in submitted for gid in e.cells},
                       key=lambda gid: _exercise_order(gid, submitted))
    full = sum(1 for e in submitted if e.max_score and e.score >= e.max_score)
    parts = [f"<h2>{_e(lesson)}</h2>",
             f"<p>{len(submitted)} submitted, {len(entries) - len(submitted)} not submitted; "
             f"{full} with full marks ({_percent(full, len(submitted))}).</p>"]
    stats = [_exercise_stats(gid, submitted) for gid in exercises]
    if submitted:
        parts.append(_figure_tag(_lesson_figure(lesson, submitted, stats)))
    rows = "".join(
        f"<tr><td>{_e(s['exercise'])}</td><td class='num'>{s['points']:g}</td>"
        f"<td class='num'>{_percent(s['passed'], s['n'])}</td>"
        f"<td>{_e(s['distribution'])}</td><td>{_e(s['hidden_only_text'])}</td>"
        f"<td class='num'>{s['clusters']}</td></tr>"
        for s in (dict(stat, clusters=sum(c.exercise == stat["exercise"] for c in clusters))
                  for stat in stats))
    parts.append("<table><tr><th>exercise</th><th>points</th><th>pass rate</th>"
                 "<th>score distribution (score: students)</th><th>visible test passed, "
                 "hidden checks failed</th><th>failure clusters</th></tr>" + rows + "</table>")
    for gid in exercises:
        mine = [c for c in clusters if c.exercise == gid]
        if not mine:
            continue
        failing = sum(c.size for c in mine)
        parts.append(f"<h3>{_e(gid)}: {len(mine)} failure cluster(s), {failing} failing "
                     "student(s)</h3>")
        human = [c for c in mine if c.signature.get("kind") in HUMAN_STATUSES]
        parts.extend(_cluster_block(c) for c in human + [c for c in mine if c not in human])
    return "\n".join(parts)


def _exercise_order(gid: str, entries: list[Entry]) -> int:
    for entry in entries:
        if gid in entry.cells:
            return list(entry.cells).index(gid)
    return 0


def _exercise_stats(gid: str, entries: list[Entry]) -> dict:
    scores = [float(e.cells[gid][0]) for e in entries if gid in e.cells]
    points = max((float(e.cells[gid][1]) for e in entries if gid in e.cells), default=0.0)
    failing = [e for e in entries if gid in e.cells and e.cells[gid][0] < e.cells[gid][1]]
    known = [e for e in failing if "visible" in e.signatures.get(gid, {})]
    hidden_only = sum(1 for e in known if e.signatures[gid].get("visible") is True)
    unknown = len(failing) - len(known)
    text = f"{hidden_only} of {len(scores)} ({_percent(hidden_only, len(scores))})"
    if unknown:
        text += (f"; cannot tell for {unknown} failing student(s) whose result was graded "
                 "before the grader recorded which part of the test failed")
    distribution = ", ".join(f"{score:g}: {count}"
                             for score, count in sorted(Counter(scores).items()))
    return {"exercise": gid, "points": points, "n": len(scores),
            "passed": sum(1 for e in entries if gid in e.cells
                          and e.cells[gid][0] >= e.cells[gid][1]),
            "hidden_only": hidden_only, "unknown": unknown, "hidden_only_text": text,
            "distribution": distribution, "scores": scores}


def _cluster_block(cluster: Cluster) -> str:
    signature = cluster.signature
    kind = str(signature.get("kind", ""))
    steps = signature.get("steps") or []
    explanation, _, replay_text = cluster.explanation.partition(_REPLAY_MARK)
    replay = list(signature.get("replay") or [])
    if not replay and replay_text:
        replay = [line.strip() for line in replay_text.splitlines()[1:] if line.strip()]
    schedule = signature.get("schedule")
    human = " human" if kind in HUMAN_STATUSES else ""
    parts = [f"<div class='cluster{human}'>",
             f"<p><b>Cluster {cluster.number}</b>: {cluster.size} student(s), "
             f"<span class='kind'>{_e(kind)}</span>"
             + (f" in <code>{_e(signature['check'])}</code>" if signature.get("check") else "")
             + f", signature <code>{_e(signature.get('hash', ''))}</code></p>",
             f"<p>Students: {_e(', '.join(cluster.students))}</p>"]
    if steps:
        parts.append(f"<p>Steps that broke it: <code>{_e(describe_steps(steps))}</code></p>")
    elif signature.get("text"):
        parts.append(f"<p>Message: <code>{_e(signature['text'])}</code></p>")
    if not steps and signature.get("check") == "visible test":
        parts.append("<p class='muted'>Caught by the test cell's visible part, before any "
                     "hidden check ran: no interleaving was recorded, so this cluster groups "
                     "students by the message, and different mistakes with the same symptom "
                     "land in it together.</p>")
    story = signature.get("story") or []
    if story:
        parts.append(f"<p>In {_e(cluster.students[0])}'s answer:</p><ol>"
                     + "".join(f"<li>{_e(line)}</li>" for line in story) + "</ol>")
    parts.append(f"<p>What {_e(cluster.students[0])} read:</p><pre>{_e(explanation.strip())}</pre>")
    if replay:
        lines = [*replay, *([f"# the interleaving: schedule {schedule}"] if schedule else [])]
        parts.append("<p>Replay it in the student's notebook (the grader's runs are seeded, so "
                     "it fails the same way):</p><pre>" + _e("\n".join(lines)) + "</pre>")
    elif schedule:
        parts.append(f"<p>The failing run's schedule: <code>{_e(schedule)}</code> (running the "
                     "test cell again repeats it).</p>")
    parts.append("</div>")
    return "\n".join(parts)


def _lesson_figure(lesson: str, entries: list[Entry], stats: list[dict]):
    """Score distribution of the lesson, and each exercise's pass rate and hidden-only share."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(10, 3.2), layout="constrained")
    left, right = figure.subplots(1, 2, width_ratios=[1, 1.3])
    top = max((e.max_score for e in entries), default=1.0) or 1.0
    scores = [e.score for e in entries]
    bins = [x - 0.5 for x in range(int(top) + 2)] if float(top).is_integer() and top <= 40 \
        else 10
    left.hist(scores, bins=bins, color="#4C72B0", edgecolor="white")
    left.set_xlabel(f"score (of {top:g})")
    left.set_ylabel("students")
    left.set_title(f"{lesson}: scores", fontsize=10)
    names = [s["exercise"] for s in stats]
    passed = [100 * s["passed"] / s["n"] if s["n"] else 0 for s in stats]
    hidden = [100 * s["hidden_only"] / s["n"] if s["n"] else 0 for s in stats]
    positions = range(len(names))
    other = [max(0.0, 100 - p - h) if s["n"] else 0 for p, h, s in zip(passed, hidden, stats,
                                                                         strict=True)]
    right.barh(positions, passed, color="#55A868", label="passed")
    right.barh(positions, hidden, left=passed, color="#C44E52",
               label="visible test passed, hidden checks failed")
    right.barh(positions, other, left=[p + h for p, h in zip(passed, hidden, strict=True)],
               color="#BBBBBB", label="failed otherwise")
    right.set_yticks(list(positions), names, fontsize=8)
    right.set_xlim(0, 100)
    right.invert_yaxis()
    right.set_xlabel("% of submitted students")
    right.set_title("per exercise", fontsize=10)
    right.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=3,
                 frameon=False)
    return figure


def _figure_tag(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<p><img alt='scores and pass rates' src='data:image/png;base64,{data}'></p>"


def _percent(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f} %" if whole else "-"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)
