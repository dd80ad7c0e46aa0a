"""A submission's graded cells against the release, and the plan the runner executes.

The release notebook says which cells are graded (:class:`Structure`): answer cells, and test
cells with their points. :func:`check_cells` compares a submission with it (deleted, retyped,
duplicated, edited or re-pointed graded cells, cells that claim points the lesson never gave),
and :func:`make_plan` lists what the runner runs: the student's code cells in their order, and
each test cell as the gradebook's source notebook holds it, hidden tests included.
"""

from __future__ import annotations

import ast
import json
import symtable
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution

from autograder.course.source import grade_id, hidden_tests, without_hidden_tests
from autograder.grading.spec import JobResult, Status, set_status
from autograder.grading.untrusted import read_untrusted
from autograder.kernel import magics, protocol

#: Lesson imports the runner executes itself before any student code (the test cells' names).
PRELOADED_PACKAGES = ("autograder", "tensorflow", "keras", "numpy", "matplotlib")


@dataclass(frozen=True)
class Structure:
    """The release notebook's graded cells: tests with points, and which answers they grade.

    Attributes:
        tests: Test grade_id -> (source as released, points).
        answers: Answer grade_id -> the test grade_ids that grade it (the tests up to and
            including the next test cell after it).
    """

    tests: dict[str, tuple[str, float]]
    answers: dict[str, list[str]]


@dataclass
class Plan:
    """What the runner runs.

    Attributes:
        cells: Runner cells (``kind``, ``source``, ``label``, ``grade_id``; see
            :func:`autograder.grading.execute.run_cells`).
        positions: Runner cell -> index of that cell in the submitted notebook.
        tests: Test grade_id -> its runner cell.
    """

    cells: list[dict]
    positions: list[int]
    tests: dict[str, int]



_METADATA_TYPES = {"grade": (bool,), "solution": (bool,), "locked": (bool,), "task": (bool,),
                   "grade_id": (str,), "points": (int, float), "schema_version": (int,)}


def drop_malformed_metadata(notebook: nbformat.NotebookNode) -> list[str]:
    """Remove nbgrader metadata that nbgrader could not read (not a dict, a field of the wrong
    type) from ``notebook``'s cells; return a description of each cell it was removed from.

    A submitted notebook is data: such metadata is the student's edit, never a reason for the
    grader (or nbgrader's feedback step after it) to crash.
    """
    dropped = []
    for index, cell in enumerate(notebook.cells):
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            continue
        wrong = not isinstance(meta, dict) or any(
            key in meta and (type(meta[key]) is bool and bool not in kinds
                             or not isinstance(meta[key], kinds))
            for key, kinds in _METADATA_TYPES.items())
        if wrong:
            name = meta.get("grade_id") if isinstance(meta, dict) else None
            dropped.append(name if isinstance(name, str) else f"cell {index + 1}")
            del cell.metadata["nbgrader"]
    return dropped


def is_test(cell: nbformat.NotebookNode) -> bool:
    """A graded cell that is not an answer: a test cell."""
    return is_grade(cell) and not is_solution(cell)


def structure(release: nbformat.NotebookNode) -> Structure:
    """The graded cells of the release notebook."""
    tests: dict[str, tuple[str, float]] = {}
    answers: dict[str, list[str]] = {}
    pending: list[str] = []
    for cell in release.cells:
        if is_solution(cell) and cell.cell_type == "code":
            pending.append(grade_id(cell))
            answers[grade_id(cell)] = []
        elif is_test(cell):
            tests[grade_id(cell)] = (cell.source, float(cell.metadata["nbgrader"]["points"]))
            for answer in pending:
                answers[answer].append(grade_id(cell))
            pending = []
    return Structure(tests, answers)


def read_submission(path: Path) -> nbformat.NotebookNode:
    """The submitted notebook, or ValueError saying why it is not a readable notebook (read
    with :func:`~autograder.grading.untrusted.read_untrusted`: no link, FIFO or huge file)."""
    if path.parent.is_symlink():
        raise ValueError(f"{path.name} is in a folder that is a symbolic link")
    data = read_untrusted(path)  # UntrustedFileError is a ValueError naming what the file is
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path.name} is not a valid notebook (not UTF-8 text)") from None
    try:
        json.loads(text)
    except (ValueError, RecursionError):  # the file's content is never echoed
        raise ValueError(f"{path.name} is not a valid notebook (not JSON)") from None
    try:
        notebook = nbformat.reads(text, as_version=4)
        nbformat.validate(notebook)
    except Exception as exc:  # noqa: BLE001 - any unreadable notebook gets the same status
        raise ValueError(f"{path.name} is not a valid notebook ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0][:200] if str(exc) else ''})") from None
    return notebook


def check_cells(submitted: nbformat.NotebookNode, release: nbformat.NotebookNode,
                 structure: Structure, result: JobResult) -> tuple[set[str], set[str]]:
    """Compare the submission's graded cells with the release.

    Returns:
        The graded cells that are missing (deleted, or no longer code cells) and the grade ids
        that appear more than once (their exercise scores 0).
    """
    malformed = drop_malformed_metadata(submitted)
    released = {grade_id(c): c for c in release.cells if grade_id(c)}
    seen: dict[str, int] = {}
    retyped, edited, changed, unknown = [], [], [], []
    for cell in submitted.cells:
        gid = grade_id(cell)
        if not gid:
            continue
        seen[gid] = seen.get(gid, 0) + 1
        if gid not in released:
            if cell.metadata.get("nbgrader", {}).get("grade"):
                unknown.append(gid)
            continue
        if cell.cell_type != released[gid].cell_type:
            retyped.append(gid)
        elif gid in structure.tests and cell.source != structure.tests[gid][0]:
            edited.append(gid)
        if _grading_metadata(cell) != _grading_metadata(released[gid]):
            changed.append(gid)
    duplicated = {gid for gid, n in seen.items() if n > 1 and gid in released}
    missing = {gid for gid in (*structure.tests, *structure.answers)
               if gid not in seen or gid in retyped}
    if missing:
        set_status(result, Status.MISSING_CELLS)
        result.notes.append(("These graded cells are missing (deleted, or their grading "
                             "metadata unreadable) and score 0: " if malformed else
                             "These graded cells were deleted and score 0: ")
                            + ", ".join(sorted(missing)))
    findings = [("were turned into another kind of cell (they score 0)", retyped),
                ("appear more than once (their exercise scores 0)", duplicated),
                ("were edited; the grader ran them as the gradebook holds them", edited),
                ("had their grading metadata changed (points, grade or solution flags); the "
                 "gradebook's metadata was used", changed),
                ("are not in the lesson but claim points (they were ignored)", unknown),
                ("had grading metadata nbgrader cannot read (it was ignored)", malformed)]
    for what, gids in findings:
        if gids:
            set_status(result, Status.TAMPERED)
            names = ", ".join(sorted(set(gids)))
            result.notes.append(f"These graded cells {what}: {names}")
    return missing, duplicated


def _grading_metadata(cell: nbformat.NotebookNode) -> dict:
    meta = cell.metadata.get("nbgrader", {})
    return {key: meta.get(key) for key in ("grade", "solution", "points", "grade_id", "locked",
                                           "task")}


def make_plan(submitted: nbformat.NotebookNode, graded: dict[str, str], structure: Structure,
              missing: set[str], release: nbformat.NotebookNode | None = None) -> Plan:
    """What the runner runs: the submission's code cells in order, each test cell as the
    gradebook holds it, less the lesson's own demonstrations that nothing graded depends on.

    Args:
        submitted: The submitted notebook.
        graded: Each test cell's source as the gradebook holds it (hidden tests included).
        structure: The release's graded cells.
        missing: Graded cells deleted from the submission (they are not run).
        release: The release notebook; when given, its ungraded cells that the submission
            holds unchanged are left out when no cell run after them reads a name they bind
            (see :func:`demonstrations`).
    """
    plan = Plan([], [], {})
    count = 0
    entries = []
    for position, cell in enumerate(submitted.cells):
        if cell.cell_type != "code":
            continue
        count += 1
        gid = grade_id(cell)
        if gid in structure.tests:
            if gid in missing or any(e[1]["grade_id"] == gid and e[1]["kind"] == "test"
                                     for e in entries):
                continue
            visible, hidden, expected = split_test(graded[gid])
            entry = {"kind": "test", "source": visible, "hidden": hidden, "label": gid,
                     "grade_id": gid, "graded": graded[gid], "expected": expected}
        else:
            kind = "answer" if gid in structure.answers else "code"
            entry = {"kind": kind, "source": cell.source, "label": f"In [{count}]",
                     "grade_id": gid}
        entries.append((position, entry))
    skipped = demonstrations([entry for _, entry in entries], release) if release else set()
    for index, (position, entry) in enumerate(entries):
        if index in skipped:
            continue
        if entry["kind"] == "test":
            plan.tests[entry["grade_id"]] = len(plan.cells)
        plan.cells.append(entry)
        plan.positions.append(position)
    return plan


#: Keys of a plan cell the runner is given; the rest (the test's graded source, the values the
#: judge expects) stays with the grader on the host.
RUNNER_KEYS = protocol.PLAN_CELL_KEYS


def for_runner(cell: dict) -> dict:
    """What the sandboxed runner is told about a plan cell: never a hidden test's source or
    what its calls must return."""
    return {key: cell[key] for key in RUNNER_KEYS if key in cell}


def split_test(source: str) -> tuple[str, list[dict], list]:
    """A test cell's graded source as (the visible part, the hidden tests as calls for the
    runner, the value each call must return (None: it must only return without raising)).

    The runner never sees a hidden test's source: only which check (or answer) to call with
    which of the notebook's names and which constants, in the way PrairieLearn's
    ``names_from_user`` hands tests only named values. Two statement forms are hidden tests:
    ``face.check_name(Name, ..., key=constant)`` (a lesson's check, called through the
    runner's own reference to the face) and ``assert answer(constant, ...) == constant`` (the
    answer's result, compared on the host). Comments are dropped.

    Raises:
        ValueError: a hidden test in any other form (the lesson source must be fixed).
    """
    blocks = hidden_tests(source)
    visible = without_hidden_tests(source)
    hidden: list[dict] = []
    expected: list = []
    for block in blocks:
        for statement in ast.parse(block).body:
            try:
                call, want = _hidden_call(statement)
            except (ValueError, TypeError, SyntaxError):
                raise ValueError(f"a hidden test must be face.check(Name, ...) or assert "
                                 f"answer(...) == constant, not: {ast.unparse(statement)}"
                                 ) from None
            hidden.append(call)
            expected.append(want)
    return visible, hidden, expected


def _argument(node: ast.expr) -> list:
    if isinstance(node, ast.Name):
        return ["name", node.id]
    return ["value", ast.literal_eval(node)]


def _hidden_call(statement: ast.stmt) -> tuple[dict, object]:
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        face = call.func
        if isinstance(face, ast.Attribute) and isinstance(face.value, ast.Name):
            return {"face": face.value.id, "check": face.attr,
                    "args": [_argument(a) for a in call.args],
                    "kwargs": {k.arg: ast.literal_eval(k.value) for k in call.keywords}}, None
    if isinstance(statement, ast.Assert) and isinstance(statement.test, ast.Compare):
        test = statement.test
        if (isinstance(test.left, ast.Call) and isinstance(test.left.func, ast.Name)
                and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
                and not test.left.keywords):
            return {"answer": test.left.func.id,
                    "args": [["value", ast.literal_eval(a)] for a in test.left.args]}, \
                ["equals", ast.literal_eval(test.comparators[0])]
    raise ValueError(f"a hidden test must be face.check(Name, ...) or assert answer(...) == "
                     f"constant, not: {ast.unparse(statement)}")


def demonstrations(entries: list[dict], release: nbformat.NotebookNode) -> set[int]:
    """The plan entries that are the lesson's own demonstrations and need not run.

    An entry qualifies when it is an ungraded code cell whose source is exactly one of the
    release's ungraded code cells (a "see it break" or "measure it" cell the student did not
    change) and no entry that runs after it reads a name it binds. Names are read off the
    cells' symbol tables, generously (every global name a cell or its functions may load
    counts as read, every global name it may assign as bound, and nothing a later cell binds
    stops an earlier binding from counting), so a cell is kept whenever it might matter; a
    cell that cannot be parsed or imports ``*`` keeps every cell before it. One exception,
    for the lesson's own cells only (test cells as the gradebook holds them, and code cells
    unchanged from the release): a name such a cell assigns before it can read it
    (:func:`_assigned_first`) is not read from earlier cells, so a test that starts with
    ``m = ...`` does not keep every demonstration that also binds ``m``. The grader never
    runs these cells, so the lessons need no "fewer trials while grading" switch that an
    answer could read.
    """
    lesson_cells = {c.source for c in release.cells
                    if c.cell_type == "code" and not is_grade(c) and not is_solution(c)}
    read: set[str] = set()
    skipped: set[int] = set()
    for index in range(len(entries) - 1, -1, -1):
        entry = entries[index]
        names = _names(entry["source"])
        lesson_cell = entry["kind"] == "code" and entry["source"] in lesson_cells
        if lesson_cell and names is not None and not names[1] & read:
            skipped.add(index)
            continue
        if names is None:
            read.add("*")
        elif lesson_cell or entry["kind"] == "test":
            read |= names[0] - _assigned_first(entry["source"])
        else:
            read |= names[0]
    if "*" in read:
        return set()
    return skipped


def _assigned_first(source: str) -> set[str]:
    """Global names the cell assigns before anything in it can read them: the first top-level
    statement that mentions the name is a plain assignment to it (``m = ...``, ``a, b = ...``)
    whose value does not mention it."""
    python = magics.to_python(source)
    tree = ast.parse(python)
    mentioned: set[str] = set()
    first: set[str] = set()
    for statement in tree.body:
        names = {node.id for node in ast.walk(statement) if isinstance(node, ast.Name)}
        if isinstance(statement, ast.Assign):
            value = {node.id for node in ast.walk(statement.value) if isinstance(node, ast.Name)}
            first |= {name for target in statement.targets for name in _plain_targets(target)
                      if name not in mentioned and name not in value}
        mentioned |= names
    return first


def _plain_targets(target: ast.expr) -> list[str]:
    """The names an assignment target binds without reading anything (none for ``a.b`` or
    ``a[i]``, which read ``a``)."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _plain_targets(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _plain_targets(element)]
    return []


def _names(source: str) -> tuple[set[str], set[str]] | None:
    """(global names the cell may read, global names it may bind), or None when it cannot be
    told. Read off Python's own symbol tables (``symtable``), so a function's or a
    comprehension's local names are not the notebook's."""
    try:
        python = magics.to_python(source)
        table = symtable.symtable(python, "<cell>", "exec")
        if any(isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names)
               for node in ast.walk(ast.parse(python))):
            return None
    except (SyntaxError, ValueError):
        return None
    read: set[str] = set()
    bound: set[str] = set()
    tables = [table]
    while tables:
        scope = tables.pop()
        tables.extend(scope.get_children())
        top = scope is table
        for symbol in scope.get_symbols():
            name = symbol.get_name()
            if not (top or symbol.is_global()):
                continue
            if symbol.is_referenced() or symbol.is_declared_global():
                read.add(name)
            if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace() \
                    and top or symbol.is_declared_global():
                bound.add(name)
    return read, bound


#: Names an answer would read to tell a grading run from the lab (the sandbox's user, folder,
#: network, environment, or a demonstration the grader skipped): flagged, never scored.
ENVIRONMENT_PROBES = frozenset({
    "environ", "getenv", "getuid", "geteuid", "getgid", "getlogin", "gethostname", "getcwd",
    "uname", "node", "getpwuid", "argv", "globals", "is_grading", "RACELAB_GRADING",
    "if_nameindex", "getfqdn", "gethostbyname"})


def environment_probes(submitted: nbformat.NotebookNode, structure: Structure) -> list[str]:
    """The environment facts the submission's answer cells read (``os.getuid``...), sorted.

    A program that recognises its test can lie about itself; the sandbox differs from the lab
    in facts no grader can hide (its user id, its folder, no network). Answers that read them
    are flagged for the instructor (``grades.csv`` and the feedback), never scored differently.
    """
    found: set[str] = set()
    for cell in submitted.cells:
        if cell.cell_type != "code" or grade_id(cell) not in structure.answers:
            continue
        try:
            tree = ast.parse(magics.to_python(cell.source))
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            name = (node.attr if isinstance(node, ast.Attribute)
                    else node.id if isinstance(node, ast.Name)
                    else node.value if isinstance(node, ast.Constant)
                    and isinstance(node.value, str) else None)
            if name in ENVIRONMENT_PROBES or (isinstance(name, str) and name.startswith(
                    ("/proc", "/tmp/work", "RACELAB"))):
                found.add(name)
    return sorted(found)


def graded_sources(course: Path, assignment: str, notebook: str) -> dict[str, str]:
    """Each test cell's source as the gradebook's source notebook holds it (hidden tests too)."""
    source = nbformat.read(course / "source" / assignment / f"{notebook}.ipynb", as_version=4)
    return {grade_id(c): c.source for c in source.cells if is_test(c)}


def exercise_titles(release: nbformat.NotebookNode) -> dict[str, str]:
    """Each test cell's exercise title: the last markdown heading above it (``#`` removed)."""
    titles, heading = {}, ""
    for cell in release.cells:
        if cell.cell_type == "markdown":
            lines = [line for line in cell.source.splitlines() if line.startswith("#")]
            if lines:
                heading = lines[-1].lstrip("#").strip()
        elif is_test(cell) and heading:
            titles[grade_id(cell)] = heading
    return titles


def preload(release: nbformat.NotebookNode) -> list[str]:
    """The import statements of the lesson's own cells that name the grader or TensorFlow."""
    statements = []
    for cell in release.cells:
        if cell.cell_type != "code" or is_grade(cell) or is_solution(cell):
            continue
        try:
            tree = ast.parse(magics.to_python(cell.source))
        except SyntaxError:
            continue
        for node in tree.body:
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if names and all(n.split(".")[0] in PRELOADED_PACKAGES for n in names):
                statements.append(ast.unparse(node))
    return list(dict.fromkeys(statements))


