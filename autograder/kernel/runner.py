"""Run one submitted notebook inside the grading sandbox and report each cell, signed.

Started by :mod:`autograder.grading.execute` as ``python -m autograder.kernel.runner
[IMPORT ...]`` inside bubblewrap; a ready runner (Validate's) imports the lesson's trusted
imports given as arguments while it waits for its plan. Standard input carries the plan
(JSON): the run's key, the cells to run in order (the student's cells, and each test cell as
the gradebook holds it, hidden tests included) and the lesson's trusted imports. Standard
output carries signed events (:mod:`autograder.kernel.channel`): ``ready``, then ``start`` and
``end`` for each cell, then ``done``.

Before any student code runs, the runner imports the lesson's checks, compiles every cell,
remembers the grader's names (:func:`~autograder.kernel.seal.integrity_check`), hides signal
handlers and the race detector's trace function, makes itself unreadable to other processes and
adds the audit hook
(:func:`~autograder.kernel.audit.make_audit_hook`). Test cells run with the lesson's imports
bound again from the runner's own references, so a notebook that rebinds ``anatomy`` or
``check_counter`` in its globals grades the real check; a test passes only when it raised
nothing, the grader's names were intact before and after it, and no escape hatch was tried
since the previous test. This is plain Python, not an IPython kernel: no input or AST
transformers exist for a cell to install.
"""

from __future__ import annotations

import ast
import builtins
import io
import json
import os
import sys
import types

from autograder.kernel import magics

WORKDIR = "/tmp/work"
MAX_TEXT = 100_000
"""Characters of stdout, stderr or a result kept per cell (the rest is cut)."""
MAX_FIGURES = 4
"""Figures kept per cell."""
SIGNATURE_ATTRIBUTE = "racelab_signature"
"""The attribute of a check's AssertionError holding its failure signature
(``autograder.checks.kit.verdict.SIGNATURE_ATTRIBUTE``): copied into the error as plain data."""


def _compile_cell(source: str, filename: str):
    """(body code, last-expression code or None, syntax error text or None)."""
    try:
        tree = ast.parse(magics.to_python(source), filename, "exec")
    except SyntaxError as exc:
        return None, None, f"SyntaxError: {exc.msg} (line {exc.lineno})"
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = compile(ast.Expression(tree.body.pop().value), filename, "eval")
    return compile(tree, filename, "exec"), last, None


def _where(tb, cell_names: dict, _getattr=getattr) -> str:
    """The student's cell and line a traceback passed through last, as ``In [N], line L``."""
    found = ""
    while tb is not None:
        name = cell_names.get(tb.tb_frame.f_code.co_filename)
        if name:
            found = f"{name}, line {tb.tb_lineno}"
        tb = tb.tb_next
    return found


def _describe(exc: BaseException, cell_names: dict, _type=type, _str=str,
              _where=None, _signature=None) -> dict:
    try:
        value = _str(exc)
    except BaseException:  # noqa: BLE001 - a student's __str__ may raise anything
        value = "(the error's message could not be shown)"
    try:
        where = _where(exc.__traceback__, cell_names)
    except BaseException:  # noqa: BLE001
        where = ""
    exc.__traceback__ = None
    described = {"ename": _type(exc).__name__, "evalue": value[:MAX_TEXT], "where": where}
    signature = _signature(exc)
    if signature is not None:
        described["signature"] = signature
    return described


def make_signature_reader():
    """``signature(exc)``: the failure signature a check's AssertionError carries
    (:data:`SIGNATURE_ATTRIBUTE`), copied as plain data (exact str, int, float, bool, None,
    and lists and str-keyed dicts of them, bounded in depth, size and 2,000 values in all,
    however often a list is shared), or None when it is
    missing or anything else. Read from the exception's own ``__dict__`` through the built-in
    descriptor, so no code of the exception's class runs. Information for the host's class
    report only: never read for a score. Built with every reference it uses in its closure."""
    scalars = (int, float, bool, type(None))
    _type, _len, _list, _dict, _str, _slice = type, len, list, dict, str, slice
    instance_dict = BaseException.__dict__["__dict__"].__get__
    not_plain, attribute = ValueError, SIGNATURE_ATTRIBUTE

    def copy(value, depth, budget):
        budget[0] -= 1
        if budget[0] < 0:  # shared sublists must not multiply the work
            raise not_plain
        kind = _type(value)
        if kind is _str:
            return _str.__getitem__(value, _slice(0, 2000))
        for scalar in scalars:
            if kind is scalar:
                return value
        if depth < 6 and kind is _list and _len(value) <= 400:
            return [copy(v, depth + 1, budget) for v in _list.__iter__(value)]
        if depth < 6 and kind is _dict and _len(value) <= 40:
            copied = {}
            for key, item in _dict.items(value):
                if _type(key) is not _str:
                    raise not_plain
                copied[key] = copy(item, depth + 1, budget)
            return copied
        raise not_plain

    def signature(exc):
        try:
            names = instance_dict(exc)
            if _type(names) is not _dict:
                return None
            found = _dict.get(names, attribute)
            if _type(found) is not _dict:
                return None
            return copy(found, 0, [2000])
        except BaseException:  # noqa: BLE001 - information only: anything odd is left out
            return None

    return signature


def main() -> None:  # noqa: PLR0915 - one straight sequence, kept together on purpose
    """Import the lesson's imports given as arguments (a runner made ready before the plan
    arrives), read the plan, seal the grader, run every cell and report; never returns."""
    devnull = os.open(os.devnull, os.O_RDWR)
    channel_fd = os.dup(1)
    os.dup2(devnull, 1)
    os.makedirs(WORKDIR, exist_ok=True)
    os.chdir(WORKDIR)
    # The notebook may import its own files, but never in place of a module the grader imports.
    sys.path[:] = [p for p in sys.path if p not in ("", ".", WORKDIR, "/tmp")] + [WORKDIR]
    import matplotlib

    matplotlib.use("Agg")
    preload: dict = {}
    for statement in sys.argv[1:]:
        exec(compile(statement, "<grader imports>", "exec"), preload)  # noqa: S102
    raw = sys.stdin.buffer.read()
    os.dup2(devnull, 0)
    plan = json.loads(raw)
    del raw
    from autograder.kernel import channel

    send = channel.make_sender(channel_fd, bytes.fromhex(plan.pop("key")))
    for statement in plan["preload"]:
        exec(compile(statement, "<grader imports>", "exec"), preload)  # noqa: S102
    preload = {k: v for k, v in preload.items() if not k.startswith("__")}

    from autograder.kernel import audit, kernel_guard, seal

    seal.import_kernel_modules(preload)
    from autograder.checks.kit import verdict
    from autograder.harness import tamper

    figures: list[bytes] = []
    verdict.FIGURE_SINK = figures.append
    observations: list[dict] = []
    # Opaque: a bound method would hand the notebook this list through ``__self__``.
    verdict.OBSERVATION_SINK = tamper.opaque(observations.append)
    kernel_guard.install()

    cells = plan["cells"]
    cell_names: dict[str, str] = {}
    test_files: list[str] = []
    compiled = []
    count = 0
    for index, cell in enumerate(cells):
        if cell["kind"] == "test":
            filename = f"<grader test {index}>"
            test_files.append(filename)
        else:
            count += 1
            filename = f"<cell {index}>"
            cell_names[filename] = cell.get("label") or f"In [{count}]"
        compiled.append(_compile_cell(cell["source"], filename))

    seal.make_undumpable()
    seal.hide_signal_handlers()
    attempts: list[str] = []
    audit_hook = audit.make_audit_hook(audit.trusted_roots(), test_files, attempts)
    seal.hide_trace_function(attempts)
    seal.seal_grader_modules()
    protected = seal.protected_modules()
    seal.seal_library_names(protected)
    harness_attempts = tamper.attempts_since
    seal.fill_library_caches()
    seal.print_thread_exceptions_in_python()
    integrity = seal.integrity_check(protected)
    builtins_written = audit.watch_builtins()
    sys.addaudithook(audit_hook)
    unsealed = seal.unsealed_grader_modules()
    if unsealed:  # fail closed: a grader that cannot seal itself grades nothing
        send({"t": "grader-error", "what": f"grader modules left unsealed: {unsealed[:5]}"})
        os._exit(0)

    notebook = types.ModuleType("__main__")
    notebook.__dict__["__builtins__"] = builtins
    shell = magics.GradingShell(notebook.__dict__)
    notebook.__dict__["get_ipython"] = lambda: shell
    sys.modules["__main__"] = notebook
    namespace = notebook.__dict__
    integrity = _with_rebound_names(integrity, seal.grader_names(preload), namespace,
                                    builtins_written)
    try:
        _run(cells, compiled, namespace, preload, integrity, attempts, figures, cell_names, send,
             harness_attempts, observations)
    except BaseException:  # noqa: BLE001 - the runner's own failure, for the grader's log
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        import traceback

        traceback.print_exc()
        os._exit(70)
    send({"t": "done"})
    os._exit(0)


def _with_rebound_names(integrity, names: dict, namespace: dict, builtins_written):
    """``integrity`` that also names each of the grader's names (``mutex``, ``explore``...)
    that the notebook bound to something else (the tests call the grader's own, so it gains
    nothing, and no honest answer does it), and every builtin written since it last asked
    (:func:`~autograder.kernel.audit.watch_builtins`: one swapped and put back mid-check)."""

    missing = object()

    def checked(_integrity=integrity, _names=names, _namespace=namespace, _get=dict.get,
                _items=dict.items, _missing=missing, _written=builtins_written) -> list[str]:
        found = _integrity() + _written()
        for name, value in _items(_names):
            now = _get(_namespace, name, _missing)
            if now is not _missing and now is not value:
                found.append(f"the notebook rebound {name}, a name the lesson's tests use "
                             "(they used the grader's own)")
        return found

    return checked


def _run(cells, compiled, namespace, preload, integrity, attempts, figures, cell_names, send,
         harness_attempts, observations, _dict=dict, _sys=sys, _list=list, _bytes=bytes,
         _builtins=builtins, _capture=io.StringIO, _execute=None, _text=None) -> None:
    """Run every cell in order, sending ``start`` and ``end`` events.

    Every reference is a local or a default argument taken before student code ran: student
    code can reach the runner's module (through the objects it hands out), so nothing here
    looks a global up once the first cell has run.
    """
    since_last_test: list[str] = []
    reported = len(harness_attempts(0))
    for index, cell in enumerate(cells):
        send({"t": "start", "cell": index})
        out, err = _capture(), _capture()
        _sys.stdout, _sys.stderr = out, err
        figures.clear()
        event = {"t": "end", "cell": index, "error": None, "result": None, "tamper": [],
                 "integrity": []}
        body, last, syntax_error = compiled[index]
        if cell.get("skip") == "died":
            event["error"] = {"ename": "KernelDiedInThisCell", "where": "", "evalue": (
                f"{cell.get('skip_reason') or 'the process died'} while it ran this cell in an "
                "earlier run of this notebook, so it scores as an error")}
        elif cell.get("skip") == "timeout":
            event["error"] = {"ename": "CellTimeoutError", "where": "", "evalue": (
                "in an earlier run of this notebook this cell did not finish within the time "
                "limit (a deadlock?), so it scores as an error")}
        elif syntax_error is not None:
            name, _, message = syntax_error.partition(": ")
            event["error"] = {"ename": name, "evalue": message, "where": ""}
        elif cell["kind"] == "test":
            before = integrity()
            if before:
                event["integrity"] = before
            else:
                scope = _dict(namespace)
                scope.update(preload)
                scope["__builtins__"] = _builtins
                event["error"], event["result"] = _execute(body, last, scope, cell_names)
                if event["error"] is None:
                    event["error"], event["values"] = _hidden(cell.get("hidden", ()), scope,
                                                              preload, cell_names, observations)
                for key, value in scope.items():
                    if key not in namespace and key not in preload:
                        namespace[key] = value
                event["integrity"] = integrity()
        else:
            event["error"], event["result"] = _execute(body, last, namespace, cell_names)
        _sys.stdout, _sys.stderr = _sys.__stdout__, _sys.__stderr__
        # A list shorter than before was cleared by the notebook: all it holds now is new.
        recorded = harness_attempts(reported)
        attempts.extend(recorded)
        reported += len(recorded)
        since_last_test.extend(attempts)
        event["tamper"] = _list(attempts)
        attempts.clear()
        if cell["kind"] == "test":
            event["tamper_before"] = _list(since_last_test)
            since_last_test.clear()
        event["out"], event["err"] = _text(out), _text(err)
        event["figures"] = [_bytes(f) for f in figures[:MAX_FIGURES]]
        send(event)


def _hidden(calls, scope: dict, preload: dict, cell_names: dict, observations: list,
            _getattr=getattr, _type=type, _base=BaseException, _plain=None, _describe=None,
            _list=list, _dict=dict) -> tuple[dict | None, list]:
    """Make a test cell's hidden calls: (the first error or None, what each call gave back).

    A check is taken from the runner's own reference to the lesson's face (``preload``), never
    from the notebook's names; the notebook's names are only the answers handed to it. A
    check's value is the list of observations it reported
    (:func:`autograder.checks.kit.report`), as plain data for the host's judge
    (:mod:`autograder.judges`), which decides; an answer's value is what it returned.
    """
    values: list = []
    for call in calls:
        try:
            args = [scope[value] if kind == "name" else value for kind, value in call["args"]]
            if "face" in call:
                face = preload.get(call["face"])
                if face is None:
                    return {"ename": "GraderError", "where": "", "evalue": (
                        f"the grader's check {call['face']} was not loaded")}, values
                _list.clear(observations)
                _getattr(face, call["check"])(*args, **_dict(call.get("kwargs") or {}))
                values.append(_plain(_list(observations)))
                _list.clear(observations)
            else:
                values.append(_plain(scope[call["answer"]](*args)))
        except KeyError as exc:
            return {"ename": "NameError", "where": "",
                    "evalue": f"name {exc.args[0]!r} is not defined"}, values
        except _base as exc:  # noqa: BLE001 - the answer's failure of any kind is its outcome
            return _describe(exc, cell_names), values
    return None, values


def make_plain_encoder():
    """``plain(value)``: ``value`` as plain data the host can compare (exact built-in types, read
    through their own C methods), or a ``["not plain", type name]`` marker, so an answer's
    object never decides what it equals. Built with every reference it uses in its closure."""
    scalars = (int, float, str, bool, type(None))
    _type, _list, _tuple, _dict, _len, _str = type, list, tuple, dict, len, str

    def plain(value, depth=0):
        kind = _type(value)
        for scalar in scalars:
            if kind is scalar:
                return value
        if depth < 8 and (kind is _list or kind is _tuple) and _len(value) <= 10_000:
            items = _list.__iter__(value) if kind is _list else _tuple.__iter__(value)
            return ["list" if kind is _list else "tuple", [plain(v, depth + 1) for v in items]]
        if depth < 8 and kind is _dict and _len(value) <= 10_000:
            return ["dict", [[plain(k, depth + 1), plain(v, depth + 1)]
                             for k, v in _dict.items(value)]]
        name = _type.__dict__["__name__"].__get__(kind)
        return ["not plain", name if _type(name) is _str else "?"]

    return plain


def _captured(stream: io.StringIO) -> str:
    """What a cell wrote to a stream, cut at :data:`MAX_TEXT` characters."""
    text = stream.getvalue()
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "\n... (output cut)\n"


def _execute(body, last, scope: dict, cell_names: dict, _exec=exec, _eval=eval,
             _repr=repr, _base=BaseException, _describe=None):
    """Run one compiled cell in ``scope``: (error or None, repr of the last expression or None)."""
    try:
        if body is not None:
            _exec(body, scope)
        if last is not None:
            value = _eval(last, scope)
            if value is not None:
                return None, _repr(value)[:MAX_TEXT]
        return None, None
    except _base as exc:  # noqa: BLE001 - a cell's failure of any kind is its own outcome
        return _describe(exc, cell_names), None


# Bind the helpers as default arguments once, at import, before any student code runs.
_hidden.__defaults__ = (getattr, type, BaseException, make_plain_encoder(), _describe, list, dict)
_describe.__defaults__ = (type, str, _where, make_signature_reader())
_execute.__defaults__ = (exec, eval, repr, BaseException, _describe)
_run.__defaults__ = (dict, sys, list, bytes, builtins, io.StringIO, _execute, _captured)

if __name__ == "__main__":
    main()
