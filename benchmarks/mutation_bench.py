"""Mutation benchmark: how many one-place mutants of the reference answers the hidden checks kill.

Every mutant changes ONE answer cell of one lesson's reference solution (``solutions/NN_name.py``,
its ``### BEGIN SOLUTION ... ### END SOLUTION`` regions) in ONE place, with one operator of
ConMAn (Bradbury, Cordy and Dingel, *Mutation operators for concurrent Java*, 2006) carried to
Python and TensorFlow, or one of the course's own (their table:
``benchmarks/mutants/operators.json``). The answer cell is parsed with :mod:`ast`, the operator
rewrites one site, and the changed statements or expression are written back with
:func:`ast.unparse` in place of their original text (the rest of the cell is left as it was;
the result must parse back to the mutated tree, else the whole cell is unparsed). Each mutant
is one student of an nbgrader class (the release notebook filled with the reference answers,
one of them mutated) graded by the real grader (:func:`autograder.grading.grade.
grade_submissions`: sandboxed, parallel, resumable): *killed* when it scores below full marks,
*survived* at full marks. Each lesson's unmutated
reference is graded too, as a control: when it does not get full marks, that lesson's verdicts
mean nothing and the table says so.

Mutants listed in ``benchmarks/mutants/equivalent.txt`` (reviewed: no schedule and no input can
tell them from the reference, or, marked ``contract:``, they differ only where the exercise's
contract leaves the result unspecified) count as *equivalent*, not as survivors; *flaky* is a
mutant whose verdict differs between runs (``--repeat 2`` grades everything twice, into
``OUT/run-1`` and
``OUT/run-2``). Mutation score = killed / (mutants - equivalent).

A mutant's id is ``<lesson>.<grade_id>.<operator>.<site>``, the site numbered in the order of
the cell's source among that operator's sites in that cell, so ids stay put when a cap or a
lesson selection changes. There is no cap by default: every operator at every site (on 2 cores,
one run of the whole course took about 27 minutes, half of it four capstone mutants that
deadlock and wait out the cell timeout). ``--max-per-operator K`` keeps K sites per operator
per lesson, evenly spaced over that lesson's sites in source order (first and last included).

The grader is the working tree's: when others edit ``autograder/`` during a run, grade a
snapshot instead (``git archive HEAD | tar -x -C SNAP``, this script copied in, run with
``SNAP`` as the working folder, so that the grading processes import its ``autograder``).

Usage::

    .venv/bin/python benchmarks/mutation_bench.py --list [--lessons 00,02]
    .venv/bin/python benchmarks/mutation_bench.py --show 00_anatomy.ex_anatomy_counter.remove_lock.0
    .venv/bin/python benchmarks/mutation_bench.py --workers 2 --repeat 2 [--out DIR] [--json]

Writes ``OUT/submitted`` (one student per mutant), ``OUT/run-R`` (grades, feedback, each job's
result; re-running the same command grades only what changed) and ``OUT/results.json`` (every
mutant's verdict per run, and which test cells lost points).
"""

from __future__ import annotations

import argparse
import ast
import copy
import difflib
import json
import re
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DATA = REPO / "benchmarks" / "mutants"
TABLE = json.loads((DATA / "operators.json").read_text(encoding="utf-8"))
OPERATORS: tuple[str, ...] = tuple(TABLE["operators"])
EQUIVALENT_FILE = DATA / "equivalent.txt"
DEFAULT_OUT = REPO / "build" / "mutation-bench"

_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
_LOCK_NAME = re.compile(TABLE["lock_name"])
_INDENT = "    "


# --------------------------------------------------------------------------------------------
# Mutants


@dataclass(frozen=True)
class Mutant:
    """One answer cell of one lesson, changed in one place.

    Attributes:
        lesson: The lesson (``00_anatomy``).
        grade_id: The answer cell.
        operator: The operator's name (a key of ``operators.json``).
        site: The site's number among this operator's sites in this cell, in source order.
        line: The site's first line in the cell as submitted (markers removed).
        what: One line: what changed.
        original: The reference answer cell as submitted (solution markers removed).
        source: The mutated answer cell.
        rendered: ``"splice"`` when only the site's text was rewritten, ``"unparse"`` when the
            whole cell was unparsed (the splice did not parse back to the mutated tree).
    """

    lesson: str
    grade_id: str
    operator: str
    site: int
    line: int
    what: str
    original: str
    source: str
    rendered: str = "splice"

    @property
    def id(self) -> str:
        """``<lesson>.<grade_id>.<operator>.<site>``: stable while the solution is unchanged."""
        return f"{self.lesson}.{self.grade_id}.{self.operator}.{self.site}"

    def diff(self) -> str:
        """A unified diff of the answer cell, reference -> mutant."""
        where = f"solutions/{self.lesson}.py [{self.grade_id}]"
        return "".join(difflib.unified_diff(
            self.original.splitlines(keepends=True), self.source.splitlines(keepends=True),
            fromfile=f"{where} reference", tofile=f"{where} {self.operator} #{self.site}"))


@dataclass
class _StmtEdit:
    """Replace ``getattr(owner, field)[start:end]`` with ``new`` (statements)."""

    owner: ast.AST
    field: str
    start: int
    end: int
    new: list[ast.stmt]


@dataclass
class _ExprEdit:
    """Replace the expression ``node`` (found in ``owner.field``, at ``index`` in a list) by
    ``new``, a node of the same kind, so that its text can be spliced in place."""

    owner: ast.AST
    field: str
    index: int | None
    node: ast.expr
    new: ast.expr


@dataclass
class _Site:
    line: int
    col: int
    what: str
    edit: _StmtEdit | _ExprEdit


@dataclass
class _Cell:
    """An answer cell parsed, with what the operators need to know about it."""

    source: str
    tree: ast.Module
    regions: list[tuple[int, int]]  # solution regions' first and last line (1-based)
    lesson_names: frozenset[str]  # names the lesson's other cells import
    parents: dict[int, tuple[ast.AST, str, int | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for owner in ast.walk(self.tree):
            for name, value in ast.iter_fields(owner):
                if isinstance(value, list):
                    for index, child in enumerate(value):
                        if isinstance(child, ast.AST):
                            self.parents[id(child)] = (owner, name, index)
                elif isinstance(value, ast.AST):
                    self.parents[id(value)] = (owner, name, None)

    def in_region(self, *nodes: ast.AST) -> bool:
        """Whether every node lies inside one solution region."""
        return all(any(first <= node.lineno and node.end_lineno <= last
                       for first, last in self.regions) for node in nodes)

    def bodies(self) -> Iterator[tuple[ast.AST, str, list[ast.stmt]]]:
        """Every statement list of the cell: (owner, field, list)."""
        for owner in ast.walk(self.tree):
            for name in ("body", "orelse", "finalbody"):
                value = getattr(owner, name, None)
                if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                    yield owner, name, value

    def expr_edit(self, node: ast.expr, new: ast.expr) -> _ExprEdit:
        owner, name, index = self.parents[id(node)]
        return _ExprEdit(owner, name, index, node, new)


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_lock(item: ast.withitem) -> bool:
    """A ``with`` item that takes a lock: a name or attribute (no call) named like one."""
    name = _dotted(item.context_expr)
    return (item.optional_vars is None and name is not None
            and bool(_LOCK_NAME.search(name.rsplit(".", 1)[-1])))


def _lock_withs(cell: _Cell) -> Iterator[tuple[ast.AST, str, int, ast.With]]:
    """Every ``with`` block of the cell whose items are all locks, inside a solution region."""
    for owner, name, body in cell.bodies():
        for index, stmt in enumerate(body):
            if (isinstance(stmt, ast.With) and all(_is_lock(i) for i in stmt.items)
                    and cell.in_region(stmt)):
                yield owner, name, index, stmt


def _with(items: list[ast.withitem], body: list[ast.stmt]) -> ast.With:
    return ast.With(items=list(items), body=list(body), type_comment=None, lineno=0,
                    col_offset=0)


def _locks_text(node: ast.With) -> str:
    return ", ".join(ast.unparse(i) for i in node.items)


def _body_or_pass(stmts: list[ast.stmt]) -> list[ast.stmt]:
    return stmts or [ast.Pass()]


def _statement_call(stmt: ast.stmt) -> ast.Call | None:
    """The call of an expression statement (its result discarded), else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return stmt.value
    return None


def _remove_stmt(owner: ast.AST, name: str, body: list[ast.stmt], index: int) -> _StmtEdit:
    """Remove ``body[index]`` (a ``pass`` in its place when it was the block's only one)."""
    return _StmtEdit(owner, name, index, index + 1, [] if len(body) > 1 else [ast.Pass()])


# --- operators: each returns the cell's sites for that operator, in any order ---------------


def op_remove_lock(cell: _Cell) -> list[_Site]:
    sites = []
    for owner, name, index, node in _lock_withs(cell):
        sites.append(_Site(node.lineno, node.col_offset, f"`with {_locks_text(node)}:` removed, "
                           "its body runs unlocked", _StmtEdit(owner, name, index, index + 1,
                                                               list(node.body))))
        if len(node.items) > 1:
            for k, item in enumerate(node.items):
                rest = node.items[:k] + node.items[k + 1:]
                sites.append(_Site(node.lineno, item.context_expr.col_offset,
                                   f"`{ast.unparse(item)}` dropped from "
                                   f"`with {_locks_text(node)}:`",
                                   _StmtEdit(owner, name, index, index + 1,
                                             [_with(rest, node.body)])))
    return sites


def op_remove_acquire_release(cell: _Cell) -> list[_Site]:
    def method_of(stmt: ast.stmt, method: str) -> str | None:
        call = _statement_call(stmt)
        if call and isinstance(call.func, ast.Attribute) and call.func.attr == method:
            return ast.unparse(call.func.value)
        return None

    sites = []
    for owner, name, body in cell.bodies():
        for i, stmt in enumerate(body):
            lock = method_of(stmt, "acquire")
            if lock is None:
                continue
            for j in range(i + 1, len(body)):
                later = body[j]
                if method_of(later, "release") == lock and cell.in_region(stmt, later):
                    new = _body_or_pass(body[i + 1:j]) if len(body) == j - i + 1 \
                        else body[i + 1:j]
                    sites.append(_Site(stmt.lineno, stmt.col_offset,
                                       f"`{lock}.acquire()` and its `release()` removed",
                                       _StmtEdit(owner, name, i, j + 1, new)))
                    break
                if (isinstance(later, ast.Try) and j == i + 1 and later.finalbody
                        and cell.in_region(stmt, later)):
                    kept = [s for s in later.finalbody if method_of(s, "release") != lock]
                    if len(kept) == len(later.finalbody):
                        continue
                    if kept or later.handlers or later.orelse:
                        tried = copy.copy(later)
                        tried.finalbody = kept
                        if not tried.handlers and not kept:
                            tried.finalbody = [ast.Pass()]
                        new = [tried]
                    else:
                        new = list(later.body)
                    sites.append(_Site(stmt.lineno, stmt.col_offset,
                                       f"`{lock}.acquire()` and the `release()` in its finally "
                                       "removed", _StmtEdit(owner, name, i, j + 1, new)))
                    break
    return sites


def op_shrink_region(cell: _Cell) -> list[_Site]:
    sites = []
    for owner, name, index, node in _lock_withs(cell):
        if len(node.body) >= 2:
            last = node.body[-1]
            sites.append(_Site(node.lineno, node.col_offset,
                               f"`{ast.unparse(last).splitlines()[0]}` moved out of "
                               f"`with {_locks_text(node)}:`, after it",
                               _StmtEdit(owner, name, index, index + 1,
                                         [_with(node.items, node.body[:-1]), last])))
    return sites


def op_shift_region(cell: _Cell) -> list[_Site]:
    sites = []
    for owner, name, index, node in _lock_withs(cell):
        body = getattr(owner, name)
        if index > 0 and cell.in_region(body[index - 1]):
            before = body[index - 1]
            inside = [before, *node.body[:-1]]
            sites.append(_Site(node.lineno, node.col_offset,
                               f"`with {_locks_text(node)}:` shifted up one statement",
                               _StmtEdit(owner, name, index - 1, index + 1,
                                         [_with(node.items, inside), node.body[-1]])))
        if index + 1 < len(body) and cell.in_region(body[index + 1]):
            after = body[index + 1]
            inside = [*node.body[1:], after]
            sites.append(_Site(node.lineno, node.col_offset + 1,
                               f"`with {_locks_text(node)}:` shifted down one statement",
                               _StmtEdit(owner, name, index, index + 2,
                                         [node.body[0], _with(node.items, inside)])))
    return sites


def op_split_region(cell: _Cell) -> list[_Site]:
    sites = []
    for owner, name, index, node in _lock_withs(cell):
        for k in range(1, len(node.body)):
            sites.append(_Site(node.lineno, k, f"`with {_locks_text(node)}:` split in two "
                               f"before `{ast.unparse(node.body[k]).splitlines()[0]}`",
                               _StmtEdit(owner, name, index, index + 1,
                                         [_with(node.items, node.body[:k]),
                                          _with(node.items, node.body[k:])])))
    return sites


def op_exchange_locks(cell: _Cell) -> list[_Site]:
    sites = []
    for owner, name, index, node in _lock_withs(cell):
        items = node.items
        for a in range(len(items)):
            for b in range(a + 1, len(items)):
                if ast.dump(items[a]) == ast.dump(items[b]):
                    continue
                swapped = list(items)
                swapped[a], swapped[b] = items[b], items[a]
                sites.append(_Site(node.lineno, items[a].context_expr.col_offset,
                                   f"`with {_locks_text(node)}:` takes "
                                   f"`{ast.unparse(items[b])}` and `{ast.unparse(items[a])}` "
                                   "in the other order",
                                   _StmtEdit(owner, name, index, index + 1,
                                             [_with(swapped, node.body)])))
        for k, inner in enumerate(node.body):
            if (isinstance(inner, ast.With) and all(_is_lock(i) for i in inner.items)
                    and _locks_text(inner) != _locks_text(node)):
                body = list(node.body)
                body[k] = _with(node.items, inner.body)
                sites.append(_Site(node.lineno, inner.lineno,
                                   f"nested `with {_locks_text(node)}:` and "
                                   f"`with {_locks_text(inner)}:` exchange their locks",
                                   _StmtEdit(owner, name, index, index + 1,
                                             [_with(inner.items, body)])))
    return sites


def op_non_atomic(cell: _Cell) -> list[_Site]:
    sites = []
    for node in ast.walk(cell.tree):
        if not isinstance(node, ast.Call) or not cell.in_region(node):
            continue
        func = node.func
        if (isinstance(func, ast.Attribute) and func.attr in TABLE["atomic"]
                and len(node.args) == 1):
            op = {"+": ast.Add(), "-": ast.Sub()}[TABLE["atomic"][func.attr]]
            target = func.value
            new = ast.Call(
                func=ast.Attribute(value=copy.deepcopy(target), attr="assign", ctx=ast.Load()),
                args=[ast.BinOp(left=copy.deepcopy(target), op=op,
                                right=copy.deepcopy(node.args[0]))],
                keywords=copy.deepcopy(node.keywords))
            sites.append(_Site(node.lineno, node.col_offset,
                               f"`{ast.unparse(node)}` -> `{ast.unparse(new)}`",
                               cell.expr_edit(node, new)))
        name = _dotted(func)
        if name is not None and name.rsplit(".", 1)[-1] in TABLE["queues"]:
            new = ast.parse(TABLE["list_queue"], mode="eval").body
            sites.append(_Site(node.lineno, node.col_offset,
                               f"`{ast.unparse(node)}` -> a list-based stand-in",
                               cell.expr_edit(node, new)))
    return sites


def _joins(cell: _Cell) -> Iterator[tuple[ast.AST, str, list[ast.stmt], int, ast.Call]]:
    for owner, name, body in cell.bodies():
        for index, stmt in enumerate(body):
            call = _statement_call(stmt)
            if (call and isinstance(call.func, ast.Attribute) and call.func.attr == "join"
                    and len(call.args) + len(call.keywords) <= 1
                    and all(k.arg == "timeout" for k in call.keywords)
                    and not isinstance(call.func.value, ast.Constant)
                    and cell.in_region(stmt)):
                yield owner, name, body, index, call


def op_drop_join(cell: _Cell) -> list[_Site]:
    return [_Site(call.lineno, call.col_offset, f"`{ast.unparse(call)}` removed",
                  _remove_stmt(owner, name, body, index))
            for owner, name, body, index, call in _joins(cell)]


def op_join_to_sleep(cell: _Cell) -> list[_Site]:
    clock = "time" if "time" in cell.lesson_names else '__import__("time")'
    sleep = ast.parse(f"{clock}.sleep({TABLE['join_sleep_s']})").body[0]
    return [_Site(call.lineno, call.col_offset,
                  f"`{ast.unparse(call)}` -> `{ast.unparse(sleep)}`",
                  _StmtEdit(owner, name, index, index + 1, [copy.deepcopy(sleep)]))
            for owner, name, body, index, call in _joins(cell)]


def _built_names(function: ast.AST) -> set[str]:
    """Names a function binds to the result of a call (``fresh = self._factory()``)."""
    return {target.id for node in ast.walk(function) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            for target in node.targets if isinstance(target, ast.Name)}


def op_drop_warmup(cell: _Cell) -> list[_Site]:
    sites = []
    functions = [n for n in ast.walk(cell.tree)
                 if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in functions:
        built = _built_names(function)
        for owner, name, body in cell.bodies():
            if owner is not function and not _directly_in(cell, owner, function):
                continue
            for index, stmt in enumerate(body):
                call = _statement_call(stmt)
                if call is None or not call.args or not cell.in_region(stmt):
                    continue
                func = call.func
                model_call = (
                    (isinstance(func, ast.Attribute) and func.attr in TABLE["warmup_methods"])
                    or (isinstance(func, ast.Name) and (func.id in built
                                                        or "model" in func.id.lower())))
                if model_call:
                    sites.append(_Site(stmt.lineno, stmt.col_offset,
                                       f"warm-up call `{ast.unparse(call)}` removed",
                                       _remove_stmt(owner, name, body, index)))
    return sites


def _directly_in(cell: _Cell, node: ast.AST, function: ast.AST) -> bool:
    """Whether ``node`` is inside ``function`` and not inside a function nested in it."""
    while id(node) in cell.parents:
        node = cell.parents[id(node)][0]
        if node is function:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
    return False


def op_nondeterministic(cell: _Cell) -> list[_Site]:
    return [_Site(node.value.lineno, node.value.col_offset,
                  "`deterministic=True` -> `deterministic=False`",
                  cell.expr_edit(node.value, ast.Constant(value=False)))
            for node in ast.walk(cell.tree)
            if isinstance(node, ast.keyword) and node.arg == "deterministic"
            and isinstance(node.value, ast.Constant) and node.value.value is True
            and cell.in_region(node.value)]


def op_stateful_random(cell: _Cell) -> list[_Site]:
    sites = []
    for node in ast.walk(cell.tree):
        if not isinstance(node, ast.Call) or not cell.in_region(node):
            continue
        name = _dotted(node.func) or ""
        key = next((k for k in TABLE["stateless"] if name.endswith("." + k)), None)
        if key is None or any(isinstance(a, ast.Starred) for a in node.args):
            continue
        stateful, params = TABLE["stateless"][key]
        prefix = name[:-len(key)]
        bound = dict(zip(params, node.args, strict=False))
        bound.update({k.arg: k.value for k in node.keywords if k.arg})
        kept = [(param, value) for param, value in bound.items()
                if param not in TABLE["dropped_keywords"]]
        first, *rest = kept
        new = ast.Call(func=ast.parse(prefix + stateful, mode="eval").body,
                       args=[copy.deepcopy(first[1])],
                       keywords=[ast.keyword(arg=p, value=copy.deepcopy(v)) for p, v in rest])
        sites.append(_Site(node.lineno, node.col_offset,
                           f"`{name}` -> `{prefix + stateful}` (seed dropped)",
                           cell.expr_edit(node, new)))
    return sites


def op_start_method(cell: _Cell) -> list[_Site]:
    sites = []
    for node in ast.walk(cell.tree):
        if isinstance(node, ast.Call) and cell.in_region(node):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(arg, ast.Constant) and arg.value in TABLE["start_methods"]:
                    new = TABLE["start_methods"][arg.value]
                    sites.append(_Site(arg.lineno, arg.col_offset,
                                       f"start method {arg.value!r} -> {new!r}",
                                       cell.expr_edit(arg, ast.Constant(value=new))))
    return sites


def op_boundary(cell: _Cell) -> list[_Site]:
    sites = []
    for node in ast.walk(cell.tree):
        if not isinstance(node, ast.Compare) or not cell.in_region(node):
            continue
        for k, op in enumerate(node.ops):
            replacement = TABLE["boundary"].get(type(op).__name__)
            if replacement is None:
                continue
            new = copy.deepcopy(node)
            new.ops[k] = getattr(ast, replacement)()
            sites.append(_Site(node.lineno, node.col_offset + k,
                               f"`{ast.unparse(node)}` -> `{ast.unparse(new)}`",
                               cell.expr_edit(node, new)))
    return sites


def op_median(cell: _Cell) -> list[_Site]:
    sites = []
    for node in ast.walk(cell.tree):
        if not isinstance(node, ast.Call) or not cell.in_region(node):
            continue
        name = _dotted(node.func)
        for replacement in TABLE["median"].get(name or "", []):
            new = copy.deepcopy(node)
            new.func = ast.parse(replacement, mode="eval").body
            sites.append(_Site(node.lineno, node.col_offset,
                               f"`{name}` -> `{replacement}`", cell.expr_edit(node, new)))
    return sites


def op_lock_per_call(cell: _Cell) -> list[_Site]:
    module = "threading" if "threading" in cell.lesson_names else '__import__("threading")'
    sites = []
    for owner, name, index, node in _lock_withs(cell):
        for k, item in enumerate(node.items):
            fresh = ast.withitem(context_expr=ast.parse(f"{module}.Lock()", mode="eval").body,
                                 optional_vars=None)
            items = [*node.items[:k], fresh, *node.items[k + 1:]]
            sites.append(_Site(node.lineno, item.context_expr.col_offset,
                               f"`{ast.unparse(item)}` -> `{ast.unparse(fresh)}` in "
                               f"`with {_locks_text(node)}:` (a new lock per call)",
                               _StmtEdit(owner, name, index, index + 1,
                                         [_with(items, node.body)])))
    return sites


def op_expand_region(cell: _Cell) -> list[_Site]:
    sites = []
    for owner, name, index, node in _lock_withs(cell):
        body = getattr(owner, name)
        if index + 1 < len(body) and cell.in_region(body[index + 1]):
            after = body[index + 1]
            sites.append(_Site(node.lineno, node.col_offset,
                               f"`with {_locks_text(node)}:` expanded over "
                               f"`{ast.unparse(after).splitlines()[0]}`",
                               _StmtEdit(owner, name, index, index + 2,
                                         [_with(node.items, [*node.body, after])])))
    return sites


def op_drop_wait(cell: _Cell) -> list[_Site]:
    sites = []
    for owner, name, body in cell.bodies():
        for index, stmt in enumerate(body):
            call = _statement_call(stmt)
            if (call and isinstance(call.func, ast.Attribute) and call.func.attr == "wait"
                    and len(call.args) + len(call.keywords) <= 1 and cell.in_region(stmt)):
                sites.append(_Site(call.lineno, call.col_offset,
                                   f"`{ast.unparse(call)}` removed",
                                   _remove_stmt(owner, name, body, index)))
    return sites


def op_wrong_warmup(cell: _Cell) -> list[_Site]:
    sites = []
    for site in op_drop_warmup(cell):
        edit = site.edit
        stmt = getattr(edit.owner, edit.field)[edit.start]
        call = _statement_call(stmt)
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in ("predict", "predict_on_batch"):
            new = ast.Call(func=copy.deepcopy(func.value), args=[copy.deepcopy(call.args[0])],
                           keywords=[])
        elif isinstance(func, ast.Attribute):  # __call__
            new = ast.Call(func=ast.Attribute(value=copy.deepcopy(func.value),
                                              attr="predict_on_batch", ctx=ast.Load()),
                           args=[copy.deepcopy(call.args[0])], keywords=[])
        else:
            new = ast.Call(func=ast.Attribute(value=copy.deepcopy(func), attr="predict_on_batch",
                                              ctx=ast.Load()),
                           args=[copy.deepcopy(call.args[0])], keywords=[])
        sites.append(_Site(site.line, site.col, f"warm-up `{ast.unparse(call)}` -> "
                           f"`{ast.unparse(new)}` (another entry point)",
                           _StmtEdit(edit.owner, edit.field, edit.start, edit.end,
                                     [ast.Expr(value=new)])))
    return sites


OPERATOR_SITES: dict[str, Callable[[_Cell], list[_Site]]] = {
    name: globals()[f"op_{name}"] for name in OPERATORS}


# --- applying one site ----------------------------------------------------------------------


def _char_col(line: str, byte_col: int) -> int:
    """``ast`` columns are UTF-8 byte offsets; this is the character offset."""
    return len(line.encode("utf-8")[:byte_col].decode("utf-8"))


def _reindent(lines: list[str], old: int, new: int) -> list[str]:
    out = []
    for line in lines:
        if not line.strip():
            out.append(line)
        elif new >= old:
            out.append(" " * (new - old) + line)
        else:
            cut = min(old - new, len(line) - len(line.lstrip(" ")))
            out.append(line[cut:])
    return out


class _Renderer:
    """Writes replacement statements: an original statement from its own text (comments
    kept), a new ``with`` block as its header and its body, anything else unparsed."""

    def __init__(self, lines: list[str], originals: set[int]) -> None:
        self.lines = lines
        self.originals = originals

    def statement(self, node: ast.stmt, indent: int) -> list[str]:
        if id(node) in self.originals:
            text = self.lines[node.lineno - 1:node.end_lineno]
            head = text[0]
            start = _char_col(head, node.col_offset)
            if head[:start].strip():
                raise ValueError("statement shares its first line")
            return _reindent(text, start, indent)
        if isinstance(node, ast.With):
            header = ast.unparse(_with(node.items, [ast.Pass()])).splitlines()[0]
            out = [" " * indent + header]
            for child in node.body:
                out += self.statement(child, indent + len(_INDENT))
            return out
        return [" " * indent + line for line in ast.unparse(node).splitlines()]


def _apply(cell: _Cell, site: _Site) -> tuple[str, str]:
    """The cell's source with ``site`` applied, and how it was written (splice or unparse)."""
    edit = site.edit
    lines = cell.source.splitlines()
    for node in edit.new if isinstance(edit, _StmtEdit) else [edit.new]:
        ast.fix_missing_locations(node)  # new nodes (unparse reads a statement's line)
    if isinstance(edit, _StmtEdit):
        body = getattr(edit.owner, edit.field)
        old = body[edit.start:edit.end]
        body[edit.start:edit.end] = edit.new
        restore: Callable[[], None] = lambda: body.__setitem__(  # noqa: E731
            slice(edit.start, edit.start + len(edit.new)), old)
    else:
        if edit.index is None:
            setattr(edit.owner, edit.field, edit.new)
            restore = lambda: setattr(edit.owner, edit.field, edit.node)  # noqa: E731
        else:
            getattr(edit.owner, edit.field)[edit.index] = edit.new
            restore = lambda: getattr(edit.owner, edit.field).__setitem__(  # noqa: E731
                edit.index, edit.node)
    try:
        unparsed = ast.unparse(cell.tree)
    finally:
        restore()
    expected = ast.dump(ast.parse(unparsed))
    try:
        spliced = _splice(cell, lines, edit)
        if ast.dump(ast.parse(spliced)) == expected:
            return spliced, "splice"
    except (ValueError, SyntaxError):
        pass
    return unparsed + "\n", "unparse"


def _splice(cell: _Cell, lines: list[str], edit: _StmtEdit | _ExprEdit) -> str:
    if isinstance(edit, _ExprEdit):
        node = edit.node
        first, last = lines[node.lineno - 1], lines[node.end_lineno - 1]
        start, end = _char_col(first, node.col_offset), _char_col(last, node.end_col_offset)
        text = first[:start] + ast.unparse(edit.new) + last[end:]
        return "\n".join([*lines[:node.lineno - 1], text, *lines[node.end_lineno:]]) + "\n"
    old = getattr(edit.owner, edit.field)[edit.start:edit.end]
    first, last = old[0], old[-1]
    indent = _char_col(lines[first.lineno - 1], first.col_offset)
    tail = lines[last.end_lineno - 1][_char_col(lines[last.end_lineno - 1],
                                                 last.end_col_offset):]
    if tail.strip() and not tail.strip().startswith("#"):
        raise ValueError("statement shares its last line")
    originals = {id(n) for n in ast.walk(cell.tree) if isinstance(n, ast.stmt)}
    renderer = _Renderer(lines, originals)
    new = [line for stmt in edit.new for line in renderer.statement(stmt, indent)]
    return "\n".join([*lines[:first.lineno - 1], *new, *lines[last.end_lineno:]]) + "\n"


def strip_markers(source: str) -> str:
    """An answer cell as a student submits it: the solution markers' lines removed."""
    return "".join(line for line in source.splitlines(keepends=True)
                   if line.strip() not in _MARKERS)


def _regions(source: str) -> list[tuple[int, int]]:
    regions, start = [], None
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip() == _MARKERS[0]:
            start = number
        elif line.strip() == _MARKERS[1] and start is not None:
            regions.append((start, number))
            start = None
    return regions


def mutants_of_cell(lesson: str, grade_id: str, source: str,
                    lesson_names: frozenset[str] = frozenset(),
                    operators: tuple[str, ...] = OPERATORS) -> list[Mutant]:
    """Every mutant of one answer cell (``source`` with its solution markers), all operators."""
    original = strip_markers(source)
    stripped_lines = _marker_free_line_numbers(source)
    found = []
    for operator in operators:
        cell = _Cell(source, ast.parse(source), _regions(source), lesson_names)
        sites = sorted(OPERATOR_SITES[operator](cell), key=lambda s: (s.line, s.col))  # stable
        for number, site in enumerate(sites):
            text, how = _apply(cell, site)
            found.append(Mutant(lesson, grade_id, operator, number,
                                stripped_lines.get(site.line, site.line), site.what, original,
                                strip_markers(text), how))
    return found


def _marker_free_line_numbers(source: str) -> dict[int, int]:
    """Line number in ``source`` -> its line number once the markers are removed."""
    out, kept = {}, 0
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip() not in _MARKERS:
            kept += 1
        out[number] = max(kept, 1)
    return out


# --------------------------------------------------------------------------------------------
# Lessons


def lessons(selection: str | None = None) -> list:
    """The course's lessons, or those whose number (``00``) or name a comma list names."""
    from autograder.course.source import find_lessons

    found = find_lessons(REPO / "solutions")
    if not selection:
        return found
    wanted = [w.strip() for w in selection.split(",") if w.strip()]
    chosen = [x for x in found if any(x.name == w or x.name.startswith(f"{w}_") for w in wanted)]
    unknown = [w for w in wanted if not any(x.name == w or x.name.startswith(f"{w}_")
                                            for x in found)]
    if unknown:
        raise SystemExit(f"no lesson {', '.join(unknown)}; lessons: "
                         f"{', '.join(x.name for x in found)}")
    return chosen


def answer_cells(lesson) -> dict[str, str]:
    """The reference answer cells of ``lesson`` by grade_id, markers included."""
    from autograder.course.answers import solution_answers

    return solution_answers(lesson)


def lesson_imports(lesson) -> frozenset[str]:
    """Names the lesson's non-answer code cells bind by a top-level import (its setup)."""
    from autograder.course.source import read_lesson

    names: set[str] = set()
    for cell in read_lesson(lesson).cells:
        if cell.cell_type != "code" or cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        lines = [("#" + line) if line.lstrip().startswith(("%", "!")) else line
                 for line in cell.source.splitlines()]  # IPython magics
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def lesson_mutants(lesson, operators: tuple[str, ...] = OPERATORS) -> list[Mutant]:
    """Every mutant of every answer cell of ``lesson``, in cell order, then operator order."""
    names = lesson_imports(lesson)
    return [m for grade_id, source in answer_cells(lesson).items()
            for m in mutants_of_cell(lesson.name, grade_id, source, names, operators)]


def cap(mutants: list[Mutant], per_operator: int | None) -> list[Mutant]:
    """At most ``per_operator`` mutants per (lesson, operator), evenly spaced in source order
    (first and last kept), so the choice never depends on anything but the sources."""
    if per_operator is None:
        return mutants
    groups: dict[tuple[str, str], list[Mutant]] = {}
    for m in mutants:
        groups.setdefault((m.lesson, m.operator), []).append(m)
    keep: set[str] = set()
    for group in groups.values():
        n = len(group)
        if n <= per_operator:
            keep.update(m.id for m in group)
        elif per_operator == 1:
            keep.add(group[0].id)
        elif per_operator > 1:
            keep.update(group[round(i * (n - 1) / (per_operator - 1))].id
                        for i in range(per_operator))
    return [m for m in mutants if m.id in keep]


def read_equivalent(path: Path = EQUIVALENT_FILE) -> dict[str, str]:
    """The reviewed equivalent mutants: id -> one-line reason (``#`` starts a comment line)."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            mutant_id, _, reason = line.strip().partition(" ")
            out[mutant_id] = reason.strip()
    return out


# --------------------------------------------------------------------------------------------
# Grading


def reference_id(lesson_name: str) -> str:
    """The control student: the lesson's reference answers, unmutated."""
    return f"{lesson_name}.reference"


def build_course(selected: list, out: Path):
    """The nbgrader course of the selected lessons at ``OUT/course``, rebuilt only when a
    lesson source or the pipeline changed (a job's resume fingerprint reads content, not the
    build, so a rebuild grades nothing again)."""
    import hashlib

    from autograder.course import course as course_module
    from autograder.course.course import Course, make_course
    from autograder.course.source import Lesson

    digest = hashlib.sha256()
    for path in [*(x.path for x in selected),
                 *sorted(Path(course_module.__file__).parent.glob("*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    key = digest.hexdigest()
    sources, root, stamp = out / "sources", out / "course", out / "course.key"
    kept = tuple(Lesson(x.name, sources / x.path.name) for x in selected)
    if (stamp.exists() and stamp.read_text() == key
            and all((root / "release" / x.name / f"{x.name}.ipynb").exists() for x in kept)):
        return Course(root, kept)
    shutil.rmtree(sources, ignore_errors=True)
    sources.mkdir(parents=True)
    for lesson in selected:
        shutil.copyfile(lesson.path, sources / lesson.path.name)
    course = make_course(sources, root)
    stamp.write_text(key)
    return course


def write_submissions(course, mutants: list[Mutant], submitted: Path) -> None:
    """One student per mutant (and one reference per lesson) in nbgrader's layout."""
    from autograder.course.answers import fill_answers

    if submitted.exists():
        shutil.rmtree(submitted)
    by_lesson = {lesson.name: lesson for lesson in course.lessons}
    answers = {name: {gid: strip_markers(src) for gid, src in answer_cells(lesson).items()}
               for name, lesson in by_lesson.items()}
    students = [(reference_id(name), name, answers[name]) for name in by_lesson]
    students += [(m.id, m.lesson, {**answers[m.lesson], m.grade_id: m.source}) for m in mutants]
    for student, lesson_name, filled in students:
        lesson = by_lesson[lesson_name]
        target = submitted / student / lesson_name / f"{lesson_name}.ipynb"
        fill_answers(course.release_notebook(lesson), filled, target)


def grade_run(course, submitted: Path, out: Path, workers: int, progress: bool
              ) -> dict[str, dict]:
    """Grade every student of ``submitted`` into ``out`` (resumable); per student: score,
    max_score, status, and the test cells that lost points."""
    from autograder.grading.grade import grade_submissions

    rows = grade_submissions(submitted, course, out, workers=workers, progress=progress)
    results = {}
    for row in rows:
        done = out / "jobs" / row.student / f"{row.assignment}.done.json"
        if not done.exists():
            continue  # another lesson's row (not submitted), or a job that never finished
        stored = json.loads(done.read_text(encoding="utf-8"))["result"]
        lost = {gid: f"{cell[0]:g}/{cell[1]:g} {_first_line(cell[2] if len(cell) > 2 else '')}"
                .rstrip() for gid, cell in stored.get("cells", {}).items() if cell[0] < cell[1]}
        results[row.student] = {"score": row.score, "max_score": row.max_score,
                                "status": row.status, "lost": lost,
                                "note": _first_line((stored.get("notes") or [""])[0]),
                                "seconds": stored.get("seconds", 0.0)}
    return results


def _first_line(text: object, limit: int = 240) -> str:
    line = str(text or "").strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[:limit - 3] + "..."


def verdict(result: dict | None) -> str:
    """``killed`` below full marks, ``survived`` at full marks, ``missing`` if not graded."""
    if result is None:
        return "missing"
    return "survived" if result["score"] >= result["max_score"] > 0 else "killed"


def classify(mutants: list[Mutant], runs: list[dict[str, dict]],
             equivalent: dict[str, str]) -> dict[str, str]:
    """One outcome per mutant: killed, survived, equivalent or flaky (verdicts that differ
    between runs; a listed equivalent mutant killed in every run is reported as killed)."""
    outcome = {}
    for m in mutants:
        verdicts = {verdict(run.get(m.id)) for run in runs}
        if len(verdicts) > 1:
            outcome[m.id] = "flaky"
        elif verdicts == {"survived"}:
            outcome[m.id] = "equivalent" if m.id in equivalent else "survived"
        else:
            outcome[m.id] = verdicts.pop()
    return outcome


COLUMNS = ("mutants", "killed", "survived", "equivalent", "flaky")


def tally(mutants: list[Mutant], outcome: dict[str, str], key: Callable[[Mutant], str]
          ) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for m in mutants:
        row = table.setdefault(key(m), dict.fromkeys(COLUMNS, 0))
        row["mutants"] += 1
        if outcome.get(m.id) in COLUMNS:
            row[outcome[m.id]] += 1
    return table


def score(row: dict[str, int]) -> str:
    alive = row["mutants"] - row["equivalent"]
    return f"{row['killed'] / alive:.0%}" if alive else "-"


def print_table(title: str, table: dict[str, dict[str, int]], order: list[str]) -> None:
    width = max([len(title), *(len(k) for k in order)])
    print(f"{title:{width}s} " + " ".join(f"{c:>10s}" for c in COLUMNS) + f" {'score':>6s}")
    total = dict.fromkeys(COLUMNS, 0)
    for name in order:
        row = table.get(name, dict.fromkeys(COLUMNS, 0))
        for c in COLUMNS:
            total[c] += row[c]
        print(f"{name:{width}s} " + " ".join(f"{row[c]:>10d}" for c in COLUMNS)
              + f" {score(row):>6s}")
    print(f"{'total':{width}s} " + " ".join(f"{total[c]:>10d}" for c in COLUMNS)
          + f" {score(total):>6s}")


def graded_by(lesson) -> dict[str, list[str]]:
    """Answer grade_id -> the test cells after it up to the next answer, with the checks
    their hidden tests call (what should kill a mutant of that answer)."""
    from autograder.course.source import read_lesson

    out: dict[str, list[str]] = {}
    current = None
    for cell in read_lesson(lesson).cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and cell.cell_type == "code":
            current = meta["grade_id"]
            out[current] = []
        elif meta.get("grade") and current is not None:
            hidden = cell.source.partition("### BEGIN HIDDEN TESTS")[2]
            calls = sorted(set(re.findall(r"\b([a-z_]+\.check_[a-z_]+|[a-z_]+\.check)\(",
                                          hidden)))
            out[current].append(f"{meta['grade_id']} ({', '.join(calls) or 'asserts'})")
    return out


# --------------------------------------------------------------------------------------------
# Command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lessons", help="comma list of lesson numbers or names (default all)")
    parser.add_argument("--workers", type=int, default=None,
                        help="parallel grading processes (default: the number of cores)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help=f"output folder, resumable (default {DEFAULT_OUT})")
    parser.add_argument("--max-per-operator", type=int, default=None, metavar="K",
                        help="at most K mutants per operator per lesson (evenly spaced sites; "
                        "0 grades only the references)")
    parser.add_argument("--operators", help="comma list of operators (default all)")
    parser.add_argument("--only", help="comma list of mutant ids to grade (with the references)")
    parser.add_argument("--list", action="store_true", help="print the mutants, grade nothing")
    parser.add_argument("--show", metavar="ID", action="append",
                        help="print the unified diff of mutant ID (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, metavar="R",
                        help="grade everything R times, into OUT/run-1 .. OUT/run-R")
    parser.add_argument("--diffs", action="store_true", help="print each survivor's diff")
    parser.add_argument("--json", action="store_true",
                        help="end with one line of JSON: {\"lessons\": {...}, ...}")
    args = parser.parse_args(argv)

    operators = OPERATORS
    if args.operators:
        operators = tuple(o.strip() for o in args.operators.split(","))
        unknown = set(operators) - set(OPERATORS)
        if unknown:
            parser.error(f"unknown operators {sorted(unknown)}; known: {', '.join(OPERATORS)}")
    selected = lessons(args.lessons)
    mutants = [m for lesson in selected for m in lesson_mutants(lesson, operators)]
    if args.show:
        by_id = {m.id: m for m in mutants}
        for wanted in args.show:
            if wanted not in by_id:
                parser.error(f"no mutant {wanted!r} (see --list)")
            print(f"# {wanted}: {by_id[wanted].what}")
            print(by_id[wanted].diff())
        return 0
    mutants = cap(mutants, args.max_per_operator)
    if args.only:
        wanted = {w.strip() for w in args.only.split(",")}
        unknown = wanted - {m.id for m in mutants}
        if unknown:
            parser.error(f"no mutant {sorted(unknown)} (see --list)")
        mutants = [m for m in mutants if m.id in wanted]
        selected = [x for x in selected if any(m.lesson == x.name for m in mutants)]
    equivalent = read_equivalent()
    if args.list:
        for m in mutants:
            mark = "  [equivalent]" if m.id in equivalent else ""
            print(f"{m.id}  line {m.line}: {m.what}{mark}")
        counts = Counter(m.lesson for m in mutants)
        print(f"\n{len(mutants)} mutants: "
              + ", ".join(f"{x.name} {counts[x.name]}" for x in selected))
        return 0

    started = time.monotonic()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    course = build_course(selected, out)
    write_submissions(course, mutants, out / "submitted")
    progress = sys.stderr.isatty()
    runs = []
    for run in range(1, args.repeat + 1):
        print(f"run {run} of {args.repeat}: grading {len(mutants)} mutants and "
              f"{len(selected)} references", file=sys.stderr, flush=True)
        runs.append(grade_run(course, out / "submitted", out / f"run-{run}", args.workers,
                              progress))
    wall = time.monotonic() - started
    outcome = classify(mutants, runs, equivalent)
    report(selected, mutants, runs, outcome, equivalent, out, wall, args)
    return 0


def report(selected: list, mutants: list[Mutant], runs: list[dict[str, dict]],
           outcome: dict[str, str], equivalent: dict[str, str], out: Path, wall: float,
           args: argparse.Namespace) -> None:
    names = [x.name for x in selected]
    by_lesson = tally(mutants, outcome, lambda m: m.lesson)
    by_operator = tally(mutants, outcome, lambda m: m.operator)
    by_both = tally(mutants, outcome, lambda m: f"{m.lesson} {m.operator}")
    references = {name: ["full marks" if verdict(run.get(reference_id(name))) == "survived"
                         else f"NOT full marks: {run.get(reference_id(name))}" for run in runs]
                  for name in names}
    print_table("lesson", by_lesson, names)
    print()
    print_table("operator", by_operator, [o for o in OPERATORS if o in by_operator]
                + [o for o in OPERATORS if o not in by_operator])
    print()
    print_table("lesson, operator", by_both,
                [f"{n} {o}" for n in names for o in OPERATORS if f"{n} {o}" in by_both])
    print(f"\nwall time {wall:.0f} s, {len(runs)} run(s) of {len(mutants)} mutants and "
          f"{len(names)} references, workers {args.workers or 'all cores'}")
    bad = {name: v for name, v in references.items() if set(v) != {"full marks"}}
    for name, verdicts in bad.items():
        print(f"WARNING: {name}'s reference did not get full marks ({', '.join(verdicts)}): "
              "its mutants' verdicts mean nothing")
    lesson_of = {x.name: x for x in selected}
    checks = {name: graded_by(lesson_of[name]) for name in names}
    for kind in ("survived", "flaky", "equivalent"):
        listed = [m for m in mutants if outcome[m.id] == kind]
        if listed:
            print(f"\n{kind} ({len(listed)}):")
        for m in listed:
            print(f"  {m.id}  line {m.line}: {m.what}")
            if kind == "equivalent":
                print(f"      why equivalent: {equivalent[m.id]}")
            else:
                print(f"      should have been caught by: "
                      f"{'; '.join(checks[m.lesson].get(m.grade_id, [])) or '?'}")
            if kind == "flaky":
                for k, run in enumerate(runs, start=1):
                    r = run.get(m.id) or {}
                    print(f"      run {k}: {verdict(r or None)} {r.get('status', '')} "
                          f"{r.get('lost', '')}")
            if args.diffs and kind != "equivalent":
                print("      " + m.diff().replace("\n", "\n      ").rstrip())
    contradicted = [i for i in equivalent if outcome.get(i) in ("killed", "flaky")]
    for mutant_id in contradicted:
        print(f"WARNING: {mutant_id} is listed as equivalent but was {outcome[mutant_id]}")
    stale = [i for i in equivalent if i not in {m.id for m in mutants}
             and i.split(".", 1)[0] in names]
    for mutant_id in stale:
        print(f"note: {mutant_id} in equivalent.txt names no mutant of this run")
    record = {
        "wall_s": round(wall, 1), "runs": len(runs), "references": references,
        "lessons": by_lesson, "operators": by_operator,
        "mutants": [{"id": m.id, "lesson": m.lesson, "grade_id": m.grade_id,
                     "operator": m.operator, "site": m.site, "line": m.line, "what": m.what,
                     "rendered": m.rendered, "outcome": outcome[m.id],
                     "runs": [run.get(m.id) for run in runs]} for m in mutants],
    }
    (out / "results.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
    print(f"\nresults: {out / 'results.json'}")
    if args.json:
        print(json.dumps({"lessons": {name: by_lesson.get(name, dict.fromkeys(COLUMNS, 0))
                                      for name in names},
                          "operators": by_operator}))


if __name__ == "__main__":
    sys.exit(main())
