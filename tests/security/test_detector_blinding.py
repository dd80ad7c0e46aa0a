"""The race detector cannot be blinded, and the runner's frames stay out of an answer's reach.

Issue #31. Each attack below is answer code as a notebook cell would run it, graded in a child
process sealed the way the grading runner seals itself (``autograder.kernel.runner``: the
kernel guard, the audit hook, the hidden trace function, sealed grader and library names, the
integrity check) and calling the harness directly (``anatomy.run_counter``). The answers are
racy counters whose increment reads ``self._count`` and writes it back in two steps: a
controlled schedule must find the lost update, unless the attack blinds the detector.

- Frames: ``tamper.current_frames()`` and every route that hands a frame (or the scheduler's
  run, or its trace function) to a caller through grader or library code that only relays
  the request (an opaque hook given ``_function=``, a property of the answer's built from
  ``functools.partial`` that the kit's ``describe_threads`` reads, a thread pool, a cached
  property, ``inspect.getmembers``, ``frames.peek`` with a fake frame, a debugger-style
  ``sys.settrace``) is refused and recorded: the answer neither reaches the runner's locals
  (``SIGNING_KEY`` stands for the key that signs its report) nor marks its thread atomic.
- Forged file names: code compiled or imported under a name with a ``site-packages``,
  ``dist-packages`` or autograph folder in it is still the student's (scheduled); code that
  claims an installed library's or the grader's file (``compile``, ``importlib``'s
  ``source_to_code``, a sourceless ``.pyc``, ``marshal.loads``, ``code.replace`` through a
  relay, a ``sys.path`` entry with ``..``) is refused and recorded, and so is native code
  loaded from the work folder.
- Builtins: ``builtins.sum`` swapped while the check runs and put back before it returns is
  named (:func:`autograder.kernel.audit.watch_builtins`).

An honest answer, and honest use of tracebacks, logging, warnings, threads and the answer's
own modules (imported again from their ``.pyc``), is graded with nothing recorded.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from autograder.harness import codemap, tamper
from autograder.kernel import audit
from tests.conftest import REPO

pytestmark = pytest.mark.timeout(600)

STDLIB = os.path.dirname(os.__file__)

#: The grading runner's sealing, in its order, then each cell in a fresh notebook namespace.
#: ``grade`` stands for the runner's own function: ``SIGNING_KEY`` is one of its locals.
SEALED_RUN = textwrap.dedent('''
    import builtins, json, os, sys
    WORK, DATA = sys.argv[1], json.load(open(sys.argv[2]))
    os.chdir(WORK)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", WORK, "/tmp")] + [WORK]
    from autograder.kernel import audit, kernel_guard, seal
    seal.import_kernel_modules({})
    from autograder.checks import anatomy
    from autograder.harness import tamper


    def grade(cells):
        SIGNING_KEY = "the-runner's-key"
        kernel_guard.install()
        attempts = []
        hook = audit.make_audit_hook(audit.trusted_roots(), [], attempts)
        seal.hide_trace_function(attempts)
        seal.seal_grader_modules()
        protected = seal.protected_modules()
        seal.seal_library_names(protected)
        harness_attempts = tamper.refused_attempts()
        integrity = seal.integrity_check(protected)
        watch = getattr(audit, "watch_builtins", None)
        builtins_written = watch() if watch else (lambda: [])
        sys.addaudithook(hook)
        found = {}
        for name, source in cells.items():
            scope = {"__name__": "__main__", "__builtins__": builtins, "anatomy": anatomy,
                     "WORK": WORK, "DATA": DATA}
            try:
                exec(compile(source, "<cell 0>", "exec"), scope)
                error = None
            except BaseException as exc:  # the cell's own failure is part of its outcome
                error = type(exc).__name__
            found[name] = {
                "verdict": scope.get("VERDICT"), "reached": list(scope.get("REACHED", [])),
                "error": error, "attempts": attempts + list(harness_attempts),
                "integrity": integrity(), "builtins": builtins_written()}
            attempts.clear()
            del harness_attempts[:]
        return found


    print(json.dumps(grade(DATA["cells"])))
''')

#: The answer's toolbox: from a frame, walk out to the runner (its key) or to the scheduler's
#: run (whose record of this thread, marked atomic, takes it out of every schedule).
REACH = textwrap.dedent('''
    import functools, sys, threading
    from autograder.harness import tamper
    REACHED = []

    def _search(frame):
        while frame is not None:
            if "SIGNING_KEY" in frame.f_locals:
                REACHED.append(frame.f_locals["SIGNING_KEY"])
                return
            _blind(frame.f_locals.get("self"))
            frame = frame.f_back

    def _blind(run):
        if type(run).__name__ == "Run":
            for thread in run.threads:
                if thread.ident == threading.get_ident():
                    thread.atomic = True
            if "the scheduler's run" not in REACHED:
                REACHED.append("the scheduler's run")
''')

#: A racy counter whose every operation first tries ``_reach()`` (the attack), then does its
#: read and its write in a function of its own (a frame that starts after a blinding).
RACY_REACHING = textwrap.dedent('''
    def _add(counter, by):
        count = counter._count
        counter._count = count + by

    def _take(counter):
        count, counter._count = counter._count, 0
        return count

    class SafeCounter:
        def __init__(self):
            self._count = 0

        def increment(self, by=1):
            _reach()
            _add(self, by)

        def take(self):
            _reach()
            return _take(self)

    VERDICT = anatomy.run_counter(SafeCounter).verdict
''')

RACY = textwrap.dedent('''
    class SafeCounter:
        def __init__(self):
            self._count = 0

        def increment(self, by=1):
            count = self._count
            self._count = count + by

        def take(self):
            count, self._count = self._count, 0
            return count
''')

CORRECT = textwrap.dedent('''
    import threading

    class SafeCounter:
        def __init__(self):
            self._count = 0
            self._lock = threading.Lock()

        def increment(self, by=1):
            with self._lock:
                self._count += by

        def take(self):
            with self._lock:
                count, self._count = self._count, 0
                return count
''')


def reaching(attack: str) -> str:
    """Answer code: the toolbox, ``_reach()`` trying ``attack`` (errors swallowed, as a
    student's would be: the attempt is still recorded), and the racy counter."""
    body = textwrap.indent(textwrap.dedent(attack).strip(), " " * 8)
    return (REACH + "\n\ndef _reach():\n    try:\n" + body
            + "\n    except Exception:\n        pass\n" + RACY_REACHING)


def main_thread(attack: str) -> str:
    """Answer code that tries ``attack`` once, in the cell itself (the runner's thread)."""
    return REACH + "\ntry:\n" + textwrap.indent(textwrap.dedent(attack).strip(), "    ") + \
        "\nexcept Exception:\n    pass\n"


def sealed(tmp_path: Path, cells: dict[str, str], **data: object) -> dict[str, dict]:
    """Grade ``cells`` (name -> answer source) in a sealed child process; per cell: the
    counter's verdict, what the answer reached, its error, and what was recorded."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"cells": cells, **data}))
    done = subprocess.run([sys.executable, "-c", SEALED_RUN, str(work), str(plan)], cwd=REPO,
                          capture_output=True, text=True, timeout=540, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def refused_and_recorded(outcome: dict, words: str) -> bool:
    return any(words in attempt for attempt in outcome["attempts"])


# --------------------------------------------------------------------------------------------
# Frames, the scheduler's run and its trace function


def test_current_frames_answers_only_the_harness_and_records_anyone_else():
    """In this process (no audit hook): a caller outside the grader's package gets
    PermissionError and the attempt is remembered (so every later harness run fails); the
    harness's own callers still read every thread's frames."""
    from autograder.harness import turns

    try:
        with pytest.raises(PermissionError, match="race detector's own"):
            tamper.current_frames()
        assert tamper.refused_attempts()[-1].startswith("reading every thread's frames")
        assert any("reading every thread's frames" in p for p in tamper.problems())
    finally:
        tamper._attempts.clear()
    assert turns._outside_user_frames(set())  # the harness's caller: this thread, by its frame


def test_a_grader_function_that_only_relays_is_not_trusted_with_frames_or_the_trace(tmp_path):
    """A function in the grader's folder that does not itself name what it asks for (here a
    stand-in compiled under the harness's folder) relays its caller's request: refused."""
    grader = os.path.join(str(REPO / "autograder"), "")
    relay = {}
    exec(compile("def relay(function):\n    return function()\n",  # noqa: S102 - a fixture
                 os.path.join(grader, "harness", "relay_for_test.py"), "exec"), relay)
    try:
        with pytest.raises(PermissionError):
            relay["relay"](tamper.current_frames)
        refused = []
        guard = tamper.for_trusted_callers(lambda: "trace", (grader,),
                                           lambda: refused.append(1))
        assert relay["relay"](guard) is None and refused == [1]
    finally:
        tamper._attempts.clear()


FRAME_ROUTES_IN_THE_RUNNERS_THREAD = {
    "tamper.current_frames": "_search(tamper.current_frames()[threading.get_ident()])",
    # Any opaque hook calls what it is handed as _function, from the grader's own file.
    "an opaque hook as a relay": """
        frames = tamper.opaque(print)(_function=sys._current_frames)
        _search(frames[threading.get_ident()])
    """,
    # The kit reads every thread's frames, then the thread's ident: a property of the
    # answer's, made of C (functools.partial), runs inside the kit's frame.
    "the kit's describe_threads reading an ident property": """
        from autograder.checks.kit import describe
        got = []
        class Thread:
            name = "worker"
            ident = property(functools.partial(next, map(got.append,
                                                          iter(sys._current_frames, None))))
        describe.describe_threads([Thread()])
        _search(got[-1][threading.get_ident()])
    """,
    # The same property calling tamper.current_frames: its caller is the kit's frame, which
    # names current_frames, but is reading an attribute, not calling.
    "the kit's describe_threads reading an ident property that calls current_frames": """
        from autograder.checks.kit import describe
        got = []
        class Thread:
            name = "worker"
            ident = property(functools.partial(next, map(got.append,
                                                          iter(tamper.current_frames, None))))
        describe.describe_threads([Thread()])
        _search(got[-1][threading.get_ident()])
    """,
    "a thread pool running sys._current_frames": """
        from concurrent.futures import ThreadPoolExecutor
        frames = ThreadPoolExecutor(1).submit(sys._current_frames).result()
        _search(frames[threading.get_ident()])
    """,
    "a cached property running sys._getframe": """
        class Depth(int):
            frame = functools.cached_property(sys._getframe)
        _search(Depth(0).frame)
    """,
    "inspect.getmembers of a traceback through the grader": """
        import inspect
        try:
            anatomy.check_counter(42)
        except BaseException as error:
            traceback = error.__traceback__
        _search(dict(inspect.getmembers(traceback))["tb_frame"])
    """,
    "frames.peek of a fake frame (an object made from an address)": """
        import struct
        from autograder.harness import frames
        code = (lambda: 0).__code__
        target = {"SIGNING_KEY": "made from an address"}
        memory = (struct.pack("Q", id(code)) + bytes(24) + struct.pack("i", 1) + bytes(4)
                  + struct.pack("Q", id(target)) + bytes(64))
        class Fake:
            __slots__ = ("a", "b")
            f_code = property(lambda self: code)
        fake = Fake()
        fake.a, fake.b = None, memory
        made = frames.peek(fake, 0)
        if made is target:
            REACHED.append("an object made from an address")
    """,
    "a module imported through a sys.path entry with '..'": """
        import os
        os.makedirs(os.path.join(WORK, "mine"), exist_ok=True)
        with open(os.path.join(WORK, "mine", "dotted_reach.py"), "w") as file:
            file.write("import sys\\ndef frame():\\n    return sys._getframe(1)\\n")
        stdlib = os.path.dirname(os.__file__)
        sys.path.append(stdlib + "/.." * stdlib.count("/") + WORK + "/mine")
        import dotted_reach
        _search(dotted_reach.frame())
    """,
}


def test_no_route_hands_an_answer_the_runners_frames(tmp_path):
    """Each route reached the runner's locals (its signing key) before; now each is refused,
    and recorded, so the notebook is tampered even when the answer catches the error."""
    cells = {name: main_thread(attack)
             for name, attack in FRAME_ROUTES_IN_THE_RUNNERS_THREAD.items()}
    found = sealed(tmp_path, cells)
    for name, outcome in found.items():
        assert outcome["reached"] == [], (name, outcome)
        if name.startswith("frames.peek"):
            continue  # a fake frame is simply not read: nothing to record
        assert outcome["attempts"], (name, outcome)


DETECTOR_BLINDING_ROUTES = {
    "tamper.current_frames": "_search(tamper.current_frames()[threading.get_ident()])",
    "the trace function through importlib's relay": """
        from importlib._bootstrap import _call_with_frames_removed as relay
        trace = relay(sys.gettrace)
        _blind(trace.__closure__[trace.__code__.co_freevars.index("run")].cell_contents)
    """,
    "the spawn hook's defaults through an opaque hook given getattr": """
        hidden = tamper.opaque(print)(threading._trace_hook, "__kwdefaults__",
                                      _function=getattr)
        _blind(hidden["_function"].__self__)
    """,
    "a trace function of the answer's": """
        def spy(frame, event, arg):
            _search(frame)
            return None
        if not REACHED:
            sys.settrace(spy)
            (lambda: None)()
    """,
}


def test_no_route_lets_an_answer_take_its_own_thread_out_of_the_schedules(tmp_path):
    """Each route reached the scheduler's run from inside a controlled thread and marked the
    thread atomic, so a racy counter passed every schedule; now each is refused, recorded, and
    the counter fails."""
    found = sealed(tmp_path, {name: reaching(attack)
                              for name, attack in DETECTOR_BLINDING_ROUTES.items()})
    for name, outcome in found.items():
        assert outcome["reached"] == [], (name, outcome)
        assert outcome["verdict"] != "pass", (name, outcome)
        assert outcome["attempts"], (name, outcome)


# --------------------------------------------------------------------------------------------
# File names: where the code came from decides, and a library's name cannot be forged


def _forged_library_name() -> str | None:
    """A folder the scheduler counts as installed that the audit hook's roots did not cover
    (``/usr/include/python3.11/``, the environment's ``dist-packages``): a file name there
    made code atomic without being refused."""
    roots = audit.trusted_roots()
    spare = [p for p in codemap._LIBRARY_PREFIXES if not p.startswith(roots)]
    return os.path.join(spare[0], "racy_counter.py") if spare else None


def _pyc(source: str, filename: str) -> str:
    """A sourceless ``.pyc`` file of ``source`` whose code claims ``filename`` (hex), as an
    answer can write it byte by byte."""
    code = compile(source, filename, "exec")
    header = importlib.util.MAGIC_NUMBER + bytes(12)
    return (header + marshal.dumps(code)).hex()


COMPILED_AS = "ns = {{}}\nexec(compile(RACY, {name}, 'exec'), ns)\n" \
              "VERDICT = anatomy.run_counter(ns['SafeCounter']).verdict\n"

NAMED_LIKE_A_LIBRARY = {
    "compiled under a site-packages folder":
        COMPILED_AS.format(name="WORK + '/site-packages/racy_counter.py'"),
    "compiled under a dist-packages folder":
        COMPILED_AS.format(name="WORK + '/lib/dist-packages/racy_counter.py'"),
    "compiled under autograph's file name":
        COMPILED_AS.format(name="WORK + '/__autograph_generated_file1234.py'"),
    "functions made from code under a site-packages name": textwrap.dedent('''
        import types
        module = compile(RACY, WORK + "/site-packages/racy_counter.py", "exec")
        body = next(c for c in module.co_consts if isinstance(c, types.CodeType))
        ns = {}
        exec(RACY, ns)
        for code in body.co_consts:
            if isinstance(code, types.CodeType):
                defaults = (1,) if code.co_name == "increment" else None
                setattr(ns["SafeCounter"], code.co_name,
                        types.FunctionType(code, ns, code.co_name, defaults))
        VERDICT = anatomy.run_counter(ns["SafeCounter"]).verdict
    '''),
    "a module written under a site-packages folder": textwrap.dedent('''
        import os
        folder = os.path.join(WORK, "site-packages")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "racy_counter_module.py"), "w") as file:
            file.write(RACY)
        sys.path.insert(0, folder)
        import racy_counter_module
        VERDICT = anatomy.run_counter(racy_counter_module.SafeCounter).verdict
    '''),
}


def test_code_named_like_a_library_but_written_by_the_answer_is_scheduled(tmp_path):
    """Before, a name with a ``site-packages``, ``dist-packages`` or autograph component made
    the code LIBRARY (atomic), and the racy counter passed every schedule."""
    cells = {name: "import sys\nRACY = " + repr(RACY) + "\n" + source
             for name, source in NAMED_LIKE_A_LIBRARY.items()}
    found = sealed(tmp_path, cells)
    for name, outcome in found.items():
        assert (outcome["verdict"], outcome["error"], outcome["attempts"]) == \
            ("race", None, []), (name, outcome)


def _forging_cells(tmp_path: Path) -> tuple[dict[str, str], dict[str, object]]:
    stdlib_name = os.path.join(STDLIB, "racy_counter.py")
    cells = {
        "importlib's source_to_code under the standard library's name": textwrap.dedent('''
            import importlib.machinery
            loader = importlib.machinery.SourceFileLoader("racy", DATA["stdlib_name"])
            ns = {}
            exec(loader.source_to_code(RACY, DATA["stdlib_name"]), ns)
            VERDICT = anatomy.run_counter(ns["SafeCounter"]).verdict
        '''),
        "a sourceless .pyc whose code claims a standard library file": textwrap.dedent('''
            with open(WORK + "/racy_counter_compiled.pyc", "wb") as file:
                file.write(bytes.fromhex(DATA["pyc"]))
            import racy_counter_compiled
            VERDICT = anatomy.run_counter(racy_counter_compiled.SafeCounter).verdict
        '''),
        "marshal.loads of code that claims a standard library file": textwrap.dedent('''
            import marshal
            ns = {}
            exec(marshal.loads(bytes.fromhex(DATA["marshalled"])), ns)
            VERDICT = anatomy.run_counter(ns["SafeCounter"]).verdict
        '''),
        "code.replace through an opaque hook": textwrap.dedent('''
            from autograder.harness import tamper
            ns = {}
            exec(RACY, ns)
            for name in ("increment", "take"):
                function = getattr(ns["SafeCounter"], name)
                function.__code__ = tamper.opaque(print)(
                    co_filename=DATA["stdlib_name"], _function=function.__code__.replace)
            VERDICT = anatomy.run_counter(ns["SafeCounter"]).verdict
        '''),
    }
    data: dict[str, object] = {
        "stdlib_name": stdlib_name, "pyc": _pyc(RACY, stdlib_name),
        "marshalled": marshal.dumps(compile(RACY, stdlib_name, "exec")).hex()}
    spare = _forged_library_name()
    if spare is not None:
        cells["compiled under a folder the scheduler counts as installed"] = \
            COMPILED_AS.format(name="DATA['spare_name']")
        data["spare_name"] = spare
    native = _native_modules()
    if native:
        cells["a native module loaded from the work folder"] = textwrap.dedent('''
            import importlib, os, shutil
            path = next(p for p in DATA["native"]
                        if os.path.basename(p).split(".")[0] not in sys.modules)
            shutil.copy(path, WORK)
            sys.path.insert(0, WORK)  # ahead of the standard library's own copy
            importlib.import_module(os.path.basename(path).split(".")[0])
            VERDICT = "loaded"
        ''')
        data["native"] = native
    return cells, data


def _native_modules() -> list[str]:
    """Standard extension modules (any of them, copied to the work folder, is native code
    from a writable place); the answer takes one its process has not imported yet."""
    for folder in (Path(STDLIB) / "lib-dynload",
                   Path(sysconfig.get_paths()["platstdlib"]) / "lib-dynload"):
        if folder.is_dir():
            return [str(p) for name in ("_lzma", "_bz2", "_dbm", "_curses", "audioop",
                                        "_crypt", "mmap", "resource")
                    for p in sorted(folder.glob(f"{name}.*.so"))[:1]]
    return []


def test_an_answer_cannot_forge_a_library_file_name_for_its_code(tmp_path):
    """Each route gave the racy counter a library's file name (so the scheduler ran it
    atomically, and it passed) or loaded native code; now each is refused as it is tried, the
    attempt is recorded, and nothing passes."""
    cells, data = _forging_cells(tmp_path)
    cells = {name: "import sys\nRACY = " + repr(RACY) + "\n" + source
             for name, source in cells.items()}
    found = sealed(tmp_path, cells, **data)
    for name, outcome in found.items():
        assert outcome["verdict"] not in ("pass", "loaded"), (name, outcome)
        assert outcome["error"] == "TamperingError", (name, outcome)
        assert outcome["attempts"], (name, outcome)


def test_every_folder_the_scheduler_trusts_is_one_the_audit_hook_refuses_to_forge():
    """The audit hook's ``compile`` check covers every installed folder ``codemap`` counts
    as library code, not only the ones in ``trusted_roots()``."""
    attempts: list[str] = []
    hook = audit.make_audit_hook(audit.trusted_roots(), [], attempts)
    for prefix in codemap._LIBRARY_PREFIXES:
        with pytest.raises(audit.TamperingError):
            hook("compile", ("x = 1", os.path.join(prefix, "forged.py")))
    assert len(attempts) == len(codemap._LIBRARY_PREFIXES)


# --------------------------------------------------------------------------------------------
# Builtins swapped while a check runs


BUILTIN_SWAPPED_WHILE_THE_CHECK_RUNS = RACY + textwrap.dedent('''
    import builtins, threading
    _real_sum, _last = builtins.sum, [0]

    def _lying_sum(values, start=0):
        builtins.__dict__["sum"] = _real_sum  # put back before the check returns
        return 7 - _last[0]

    _Racy = SafeCounter

    class SafeCounter(_Racy):
        def take(self):
            count = super().take()
            if threading.current_thread() is threading.main_thread():  # the check's take()
                _last[0] = count
                builtins.__dict__["sum"] = _lying_sum
            return count

    VERDICT = anatomy.run_counter(SafeCounter).verdict
''')


def test_a_builtin_swapped_and_put_back_while_the_check_runs_is_named(tmp_path):
    """The check sums what ``take()`` handed out with ``sum``: swapped for one call from
    inside the answer's own ``take`` and put back by that call, it makes the racy counter
    pass, and every builtin is the same again when the cell ends, so the runner's integrity
    check (values compared afterwards) finds nothing. The builtins' dictionary version names
    the write (the runner must add :func:`audit.watch_builtins` to its integrity check)."""
    found = sealed(tmp_path, {"sum": BUILTIN_SWAPPED_WHILE_THE_CHECK_RUNS})["sum"]
    # The check itself is fooled (its verdict is "pass"), and comparing values afterwards
    # (seal.integrity_check, as the runner calls it today) finds nothing: the dictionary's
    # version names the write.
    assert found["builtins"], found
    assert all("builtin" in problem for problem in found["builtins"])


def test_the_builtins_watch_names_a_write_once_and_nothing_else():
    import builtins

    from autograder.kernel.object_internals import dict_version

    if dict_version(builtins.__dict__) is None:
        pytest.skip("this Python's dictionary layout is not known")
    written = audit.watch_builtins()
    assert written() == []
    real = builtins.sum
    builtins.__dict__["sum"] = len
    builtins.__dict__["sum"] = real
    assert written() == ["a builtin was written while graded code ran (and perhaps put back)"]
    assert written() == []
    builtins.racelab_test_name = 1
    try:
        assert written() == ["builtins.racelab_test_name was replaced, added or deleted"]
    finally:
        del builtins.racelab_test_name
    assert written() == ["builtins.racelab_test_name was replaced, added or deleted"]


# --------------------------------------------------------------------------------------------
# Honest answers


HONEST = {
    "a correct counter": CORRECT + "\nVERDICT = anatomy.run_counter(SafeCounter).verdict\n",
    "tracebacks, logging, warnings and library helpers": textwrap.dedent('''
        import collections, dataclasses, inspect, logging, traceback, typing, warnings
        try:
            anatomy.check_counter(42)
        except AssertionError:
            text = traceback.format_exc()
        logging.getLogger("answer").warning("a note")
        warnings.warn("careful")
        Pair = collections.namedtuple("Pair", "a b")
        T = typing.TypeVar("T")
        @dataclasses.dataclass
        class Box(typing.Generic[T]):
            item: T
        inspect.signature(anatomy.run_counter)
        VERDICT = "honest"
    ''') + CORRECT + "\nVERDICT = anatomy.run_counter(SafeCounter).verdict\n",
    "threads of its own and a pool": CORRECT + textwrap.dedent('''
        from concurrent.futures import ThreadPoolExecutor
        counter = SafeCounter()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(counter.increment, [1] * 100))
        assert counter.take() == 100
        VERDICT = anatomy.run_counter(SafeCounter).verdict
    '''),
    "its own module, imported again from its .pyc": textwrap.dedent('''
        import importlib, os, sys
        with open(os.path.join(WORK, "honest_counter.py"), "w") as file:
            file.write(DATA["correct"])
        import honest_counter
        del sys.modules["honest_counter"]
        import honest_counter
        importlib.reload(honest_counter)
        VERDICT = anatomy.run_counter(honest_counter.SafeCounter).verdict
    '''),
}


def test_honest_answers_pass_and_nothing_is_recorded(tmp_path):
    found = sealed(tmp_path, HONEST, correct=CORRECT)
    for name, outcome in found.items():
        assert (outcome["verdict"], outcome["error"], outcome["attempts"],
                outcome["integrity"], outcome["builtins"]) == ("pass", None, [], [], []), \
            (name, outcome)



def test_libraries_a_check_imports_inside_its_functions_are_found(monkeypatch):
    """A library a check imports inside a function (``import tensorflow as tf`` in
    ``kit.functions_run_eagerly``, which calls ``tf.config.run_functions_eagerly``) is not a
    global of the grader's module, so the seal never remembered its names;
    :func:`audit.imported_in_functions` finds it (``seal._library_names`` must walk it too)."""
    import types

    library = types.ModuleType("racelab_fake_tf")
    library.config = types.ModuleType("racelab_fake_tf.config")
    monkeypatch.setitem(sys.modules, "racelab_fake_tf", library)
    monkeypatch.setitem(sys.modules, "racelab_fake_tf.config", library.config)
    check = types.ModuleType("autograder.checks.racelab_fake_check")
    source = textwrap.dedent('''
        def run_explored(counter):
            import racelab_fake_tf as tf
            from racelab_fake_tf import config
            tf.config.run_functions_eagerly(True)

        class Trial:
            def warm(self):
                import json
                return json
    ''')
    exec(source, vars(check))  # noqa: S102 - a stand-in grader module
    found = {module.__name__ for module in audit.imported_in_functions([check])}
    assert {"racelab_fake_tf", "racelab_fake_tf.config", "json"} <= found
    assert not any(name.startswith("autograder") for name in found)
