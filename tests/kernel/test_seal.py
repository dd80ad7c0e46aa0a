"""The runner's integrity check names every way a notebook can change what a check relies on.

Each test builds a throwaway grader module and library in ``sys.modules`` (so that nothing the
rest of the suite imports is touched), remembers them, changes one thing the way an attack in
``tests/security/attacks.py`` does, and asserts that the change is named, or, for the grader's
caches and legitimate library additions, that it is not.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator

import pytest

from autograder.kernel import object_internals, seal

LIBRARY = textwrap.dedent("""
    def close_enough(a, b):
        return abs(a - b) < 1e-9

    class Sampler(dict):
        def pick(self):
            return 1

    TOLERANCE = 1e-9
""")

GRADER = textwrap.dedent("""
    import fake_library

    BUDGETS = {"schedules": 300}

    def check(value, *, schedules=300):
        return fake_library.close_enough(value, 7) and fake_library.Sampler().pick()
""")


def _module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), vars(module))  # noqa: S102 - test fixture
    sys.modules[name] = module
    return module


@pytest.fixture
def grader() -> Iterator[tuple[types.ModuleType, types.ModuleType]]:
    library = _module("fake_library", LIBRARY)
    checks = _module("fake_grader", GRADER)
    yield checks, library
    sys.modules.pop("fake_library", None)
    sys.modules.pop("fake_grader", None)


def _integrity(checks: types.ModuleType, library: types.ModuleType):
    return seal.integrity_check({checks.__name__: None,
                                 library.__name__: ("close_enough", "Sampler")})


def test_nothing_is_named_when_nothing_changed(grader):
    assert _integrity(*grader)() == []


def test_a_replaced_library_function_is_named(grader):
    checks, library = grader
    problems = _integrity(checks, library)
    library.close_enough = lambda *args: True
    assert problems() == ["fake_library.close_enough was replaced"]


def test_a_method_added_to_shadow_an_inherited_one_is_named(grader):
    checks, library = grader
    problems = _integrity(checks, library)
    library.Sampler.__eq__ = lambda self, other: True
    assert problems() == ["fake_library.Sampler.__eq__ was added"]


def test_a_pickling_record_added_by_the_standard_library_is_not_named(grader):
    checks, library = grader
    problems = _integrity(checks, library)
    library.Sampler.__slotnames__ = []
    assert problems() == []


def test_a_module_whose_type_was_swapped_is_named(grader):
    checks, library = grader
    problems = _integrity(checks, library)

    class Lenient(types.ModuleType):
        pass

    checks.__class__ = Lenient
    assert problems() == ["the type of the module fake_grader was replaced"]


def test_default_arguments_changed_in_place_are_named(grader):
    checks, library = grader
    problems = _integrity(checks, library)
    checks.check.__kwdefaults__["schedules"] = 1
    assert problems() == ["the default arguments of fake_grader.check were changed"]


def test_a_constant_container_changed_in_place_is_named(grader):
    checks, library = grader
    problems = _integrity(checks, library)
    checks.BUDGETS["schedules"] = 1
    assert problems() == ["the contents of fake_grader.BUDGETS were changed"]


def test_a_grader_cache_may_fill(monkeypatch, grader):
    checks, library = grader
    checks.CACHE = {}
    monkeypatch.setattr(seal, "_GRADER_CACHES", frozenset({"fake_grader.CACHE"}))
    problems = _integrity(checks, library)
    checks.CACHE["reference"] = [1, 2, 3]
    assert problems() == []


def test_the_library_names_a_grader_uses_are_found(grader):
    found = seal._library_names(["fake_grader"])
    assert found["fake_library"] == {"close_enough", "Sampler"}


def test_the_real_grader_remembers_the_libraries_its_checks_call():
    import autograder.harness  # noqa: F401 - the runner imports these before it seals
    from autograder.checks import processes, warmup  # noqa: F401

    protected = seal.protected_modules()
    assert {"allclose", "array_equal"} <= set(protected["numpy"])
    assert "Random" in protected["random"]
    assert "Lock" in protected["threading"]


SEALED_RUN = textwrap.dedent('''
    import json, sys, threading
    from autograder.checks import anatomy
    from autograder.kernel import audit, kernel_guard, seal

    kernel_guard.install()
    attempts = []
    hook = audit.make_audit_hook(audit.trusted_roots(), [], attempts)
    seal.hide_trace_function(attempts)
    seal.seal_grader_modules()
    sys.addaudithook(hook)
    STUDENT = {student!r}
    found = {{}}
    for name, source in STUDENT.items():
        scope = {{"__name__": "__main__"}}
        exec(compile(source, "<cell 0>", "exec"), scope)
        found[name] = [anatomy.run_counter(scope["SafeCounter"]).verdict, list(attempts)]
        attempts.clear()
    print(json.dumps(found))
''')

COUNTER = textwrap.dedent('''
    import sys, threading
    LOCK = threading.Lock()
    OUTSIDE = sys.gettrace()  # no run yet: nothing to hide, nothing to refuse

    def peek():
        PEEK

    class SafeCounter:
        def __init__(self):
            self._count = 0

        def increment(self, by=1):
            peek()
            with LOCK:
                self._count += by

        def take(self):
            with LOCK:
                count, self._count = self._count, 0
                return count
''')


def test_code_under_test_cannot_reach_the_schedulers_trace_function_or_hooks():
    """In a child process sealed as the runner seals itself: a correct counter that reads
    nothing still passes, and each way to the scheduler is refused and recorded (the
    attack corpus shows each one forging a pass without the seal)."""
    peeks = {
        "honest": "pass",
        "gettrace": "sys.gettrace()",
        "thread hook": "threading._trace_hook.__kwdefaults__",
        "excepthook": "threading.excepthook.__kwdefaults__",
        "library relay": ("__import__('unittest.mock').mock._copy_func_details("
                          "threading._trace_hook, lambda: None)"),
    }
    student = {name: COUNTER.replace("PEEK", peek) for name, peek in peeks.items()}
    done = subprocess.run([sys.executable, "-c", SEALED_RUN.format(student=student)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found.pop("honest") == ["pass", []]
    for name, (verdict, attempts) in found.items():
        assert verdict == "error", name
        assert len(attempts) == 1 and ("sys.gettrace()" in attempts[0]
                                       or "hidden references" in attempts[0]), (name, attempts)


SEALED_MODULES = textwrap.dedent('''
    import json, types
    from autograder.checks import anatomy
    from autograder.harness import tamper
    from autograder.kernel import seal

    seal.seal_grader_modules()
    refused = []
    for name, value in (("check_counter", print), ("__class__", types.ModuleType)):
        try:
            setattr(anatomy, name, value)
        except AttributeError:
            refused.append(name)
    try:
        del anatomy.run_counter
    except AttributeError:
        refused.append("del run_counter")
    anatomy.NEW_NAME = 1  # a name the grader never had is the student's own business
    print(json.dumps([refused, tamper.refused_attempts(), type(anatomy).__name__]))
''')


def test_assigning_to_a_grader_modules_names_is_refused_as_it_happens():
    """Integrity is compared after each test cell; an answer that swaps a check's helper while
    the check runs and swaps it back would pass that comparison (the attack corpus's
    ``rebind_a_check_helper_only_while_the_check_runs``). In a sealed child process the
    assignment itself is refused and recorded."""
    done = subprocess.run([sys.executable, "-c", SEALED_MODULES], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    refused, attempts, kind = json.loads(done.stdout.splitlines()[-1])
    assert refused == ["check_counter", "__class__", "del run_counter"]
    assert attempts == ["overwriting autograder.checks.anatomy.check_counter",
                        "overwriting autograder.checks.anatomy.__class__",
                        "deleting autograder.checks.anatomy.run_counter"]
    assert kind == "_SealedModule"


WRITTEN_AND_PUT_BACK = textwrap.dedent('''
    import json, types
    from autograder.checks import anatomy
    from autograder.checks.anatomy import grading
    from autograder.kernel import seal

    seal.seal_grader_modules()
    integrity = seal.integrity_check(seal.protected_modules())
    found = {"clean": integrity()}
    original = grading.run_counter  # the run check_counter trusts, looked up in grading
    for route, write in (
            ("vars", lambda value: vars(grading).__setitem__("run_counter", value)),
            ("ModuleType.__setattr__",
             lambda value: types.ModuleType.__setattr__(grading, "run_counter", value)),
            ("__globals__",
             lambda value: anatomy.check_counter.__globals__.__setitem__("run_counter", value))):
        write(print)
        write(original)
        found[route] = integrity()
    found["after reporting"] = integrity()
    types.ModuleType.__setattr__(anatomy, "sum", lambda values: 7)
    found["shadowed builtin"] = integrity()
    import autograder.grading.demo  # a submodule imported for the first time
    del vars(anatomy)["sum"]
    integrity()
    found["first import"] = integrity()
    print(json.dumps(found))
''')


def test_a_grader_name_written_and_put_back_or_a_shadowed_builtin_is_named():
    """No audit event sees a write into a module's dictionary, and a write that is undone
    before the test cell ends leaves every name as it was; the dictionary's version does not
    (PEP 509). In a sealed child process: each route is named once, a global that shadows a
    builtin for as long as it is there, and a first import of a submodule not at all."""
    done = subprocess.run([sys.executable, "-c", WRITTEN_AND_PUT_BACK], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    written = ["a name of autograder.checks.anatomy.grading was written while graded code ran "
               "(and perhaps put back)"]
    assert found == {"clean": [], "vars": written, "ModuleType.__setattr__": written,
                     "__globals__": written, "after reporting": [],
                     "shadowed builtin": ["autograder.checks.anatomy.sum was added"],
                     "first import": []}


SWAPPED_CLASS_ATTRIBUTES = textwrap.dedent('''
    import json
    from autograder.checks import anatomy  # noqa: F401 - a grader module, sealed below
    from autograder.harness.result import Result
    from autograder.kernel import seal

    seal.seal_grader_modules()
    real_ok = Result.__dict__["ok"]
    found = {}
    for route, write in (
            ("Class.attr", lambda: setattr(Result, "ok", property(lambda self: True))),
            ("type.__setattr__",
             lambda: type.__setattr__(Result, "ok", property(lambda self: True))),
            ("del", lambda: delattr(Result, "figure"))):
        try:
            write()
            found[route] = "written"
        except TypeError as error:
            found[route] = "refused" if "immutable type" in str(error) else str(error)
    found["ok unchanged"] = Result.__dict__["ok"] is real_ok

    class Student(Result):
        pass

    Student.extra = 1  # a subclass of the student's own stays theirs to change
    found["subclass"] = Student.extra
    print(json.dumps(found))
''')


def test_a_grader_class_refuses_a_swapped_attribute_by_every_route():
    """Python raises no audit event for a class attribute assignment, so a property swapped
    while a check runs and put back before it returns would leave nothing to find (a racy
    counter passed ``anatomy.check_counter`` that way, with ``Result.ok`` always true for one
    call). Sealed, every class of a grader module refuses the write itself."""
    done = subprocess.run([sys.executable, "-c", SWAPPED_CLASS_ATTRIBUTES], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"Class.attr": "refused", "type.__setattr__": "refused", "del": "refused",
                     "ok unchanged": True, "subclass": 1}


def test_freezing_a_class_keeps_its_instances_and_subclasses_working():
    frozen = type("Frozen", (), {"__init__": lambda self: setattr(self, "value", 3)})
    assert object_internals.freeze_class(frozen)
    with pytest.raises(TypeError, match="immutable type"):
        frozen.value = 4
    assert frozen().value == 3
    child = type("Child", (frozen,), {})
    child.extra = 5
    assert child.extra == 5 and not object_internals.freeze_class(int)


LIBRARY_NAMES = textwrap.dedent('''
    import json, random
    import autograder.checks.anatomy  # noqa: F401 - the harness names random.Random
    from autograder.harness import tamper
    from autograder.kernel import seal

    protected = seal.protected_modules()
    seal.seal_library_names(protected)
    integrity = seal.integrity_check(protected)
    found = {"clean": integrity()}
    real = random.Random
    try:
        random.Random = object
        found["assigned"] = "written"
    except AttributeError:
        found["assigned"] = tamper.refused_attempts()[-1]
    vars(random)["Random"] = object
    vars(random)["Random"] = real
    found["written and put back"] = integrity()
    vars(random)["lazily_loaded"] = object()  # a library filling a name of its own
    found["a new name"] = integrity()
    print(json.dumps(found))
''')


def test_a_library_name_the_grader_calls_is_refused_or_named_when_put_back():
    """A library function or class the grader calls (``random.Random``, which the harness
    samples schedules with), swapped while a check runs and put back before the cell ends,
    left nothing to find. Assigned through the module, it is refused as it happens; written
    straight into the module's dictionary, the dictionary's version names it. A library that
    fills a new name of its own (a lazy import) is not reported."""
    done = subprocess.run([sys.executable, "-c", LIBRARY_NAMES], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"clean": [], "assigned": "overwriting random.Random",
                     "written and put back": ["a name of random was written while graded code "
                                              "ran (and perhaps put back)"],
                     "a new name": []}


#: Defines ``run_routes(routes, namespace, attempts)`` in a route script: each route's source
#: runs as a notebook cell; per route, how it ended and the refusals it left (then forgotten).
_RUN_ROUTES = textwrap.dedent('''
    def run_routes(routes, namespace, attempts):
        found = {}
        for name, source in routes.items():
            try:
                exec(compile(source, "<cell 0>", "exec"), dict(namespace))
            except Exception as error:
                found[name] = [type(error).__name__, list(attempts)]
            else:
                found[name] = ["ran", list(attempts)]
            attempts.clear()
        return found
''')

SCRATCH_ROUTES = _RUN_ROUTES + textwrap.dedent('''
    import concurrent.futures, json, os, pathlib, shutil, subprocess, sys, tempfile
    from autograder.checks import process_workers
    from autograder.checks.processes import ledger
    from autograder.harness import tamper
    from autograder.kernel import audit, seal

    attempts = []
    sys.addaudithook(audit.make_audit_hook(audit.trusted_roots(), [], attempts))
    records = tamper.scratch_folder("receipts")
    elsewhere = tempfile.mkdtemp()
    os.environ[process_workers.RECEIPTS_ENV] = records
    process_workers._leave_receipt(0)  # the grader's own code, in this process: allowed

    class Named:
        def __fspath__(self):
            return os.path.join(records, "receipts")

    ROUTES = {
        "honest": "pathlib.Path(elsewhere, 'a').write_text('x'); "
                  "shutil.copytree(elsewhere, elsewhere + '-copy')",
        "open": "open(os.path.join(records, 'receipts'), 'a').write('1 99')",
        "os.open": "os.open(os.path.join(records, 'receipts'), os.O_WRONLY | os.O_APPEND)",
        "pathlib": "pathlib.Path(records, 'receipts').write_text('1 99')",
        "rename": "open(os.path.join(elsewhere, 'r'), 'w').close(); "
                  "os.rename(os.path.join(elsewhere, 'r'), os.path.join(records, 'r'))",
        "link": "os.link(os.path.join(elsewhere, 'a'), os.path.join(records, 'l'))",
        "chdir": "os.chdir(records)",
        "a path object of its own": "os.rename(os.path.join(elsewhere, 'a'), Named())",
        "the grader's own release": "ledger._release(records)",
        "the grader's own reader": "process_workers._fields(records, 'extra', 2)",
        "the grader's own writer on a thread": "concurrent.futures.ThreadPoolExecutor(1)"
            ".submit(process_workers._leave_receipt, 1).result()",
        "a shell": "os.system('true')",
        "a program": "subprocess.run(['true'])",
    }
    found = run_routes(ROUTES, dict(globals()), attempts)
    found["receipts"] = sorted(process_workers.read_receipts(records))
    found["released"] = os.path.exists(os.path.join(records, "release"))
    print(json.dumps(found))
''')


def test_code_under_test_cannot_touch_the_checks_own_records_by_any_path_route():
    """Lesson 08's ledger workers leave receipts in a folder of the check's, and read the
    extra amounts it drew there: a notebook that wrote or read them itself could claim workers
    that never ran, let held workers go, or compute the totals. Every route to such a folder
    (a string, ``pathlib``, a rename or link into it, ``chdir``, a path object of its own, the
    grader's own functions called by graded code, on its thread or another) is refused to
    code under test, and so is starting a program while the folder exists; the check that made
    the folder and honest file work are not."""
    done = subprocess.run([sys.executable, "-c", SCRATCH_ROUTES], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found.pop("honest") == ["ran", []]
    assert [index for index, _pid in found.pop("receipts")] == [0]
    assert found.pop("released") is False
    for name, (outcome, attempts) in found.items():
        # _release swallows an OSError (TamperingError is one): the refusal is recorded
        swallowed = name == "the grader's own release"
        assert outcome == ("ran" if swallowed else "TamperingError"), (name, outcome, attempts)
        assert len(attempts) == 1, (name, attempts)
        assert ("the grader's own records" in attempts[0]
                or "not a path string" in attempts[0]
                or "starting a program" in attempts[0]), (name, attempts)


REFERENCE_ROUTES = _RUN_ROUTES + textwrap.dedent('''
    import concurrent.futures, functools, json, sys
    from autograder.checks import kit, tracing
    from autograder.checks.tracing import grading
    from autograder.kernel import audit

    attempts = []
    sys.addaudithook(audit.make_audit_hook(audit.trusted_roots(), [], attempts))
    log = tracing.hidden_log(0, racy=True)
    ROUTES = {
        "a direct call": "tracing.reference_find_conflicts(log)",
        "through map": "list(map(tracing.reference_who_overwrote, [log]))",
        "through a pool": "concurrent.futures.ThreadPoolExecutor(1)"
            ".submit(tracing.reference_lockset_races, log).result()",
        "through the grader's own relay": "kit.within(functools.partial("
            "tracing.reference_find_conflicts, log), 5.0).value",
        "through the grader's private grading function": "grading._grade_on_hidden_logs("
            "lambda log: [], exercise='find_conflicts', normalise=set, explain=repr, "
            "reference=tracing.reference_find_conflicts, logs=[('mine', log)])",
        "through a check run inside the answer": "tracing.check_find_conflicts("
            "lambda log: tracing.check_find_conflicts(lambda inner: []))",
    }
    found = run_routes(ROUTES, dict(globals()), attempts)
    # The grader's own check calls the references on its hidden logs: allowed.
    try:
        tracing.check_find_conflicts(lambda log: [])
    except AssertionError as error:
        found["the check"] = ["failed", str(error)[:60], list(attempts)]
    print(json.dumps(found))
''')


def test_graded_code_cannot_call_the_lessons_reference_answers_by_any_route():
    """Lesson 06's analyses are graded against the grader's own answers, which the ``tracing``
    module holds: graded code calling one (directly, through ``map``, a thread pool, one of
    the grader's functions that calls what it is handed, the private grading function handed
    a reference, or a check run from inside the answer it grades) is refused; the check that
    compares with them still runs and fails a wrong answer in the exercise's terms."""
    from autograder.checks.tracing import references
    from autograder.kernel import audit

    assert audit.REFERENCE_EVENT == references.REFERENCE_EVENT
    done = subprocess.run([sys.executable, "-c", REFERENCE_ROUTES], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    outcome, message, attempts = found.pop("the check")
    assert outcome == "failed" and message.startswith("find_conflicts: on the"), message
    assert attempts == []
    # within() reports the call's error as its outcome, and the outer check reports the
    # answer's error as a failure: the refusal is recorded either way
    caught = {"through the grader's own relay": "ran",
              "through a check run inside the answer": "AssertionError"}
    for name, (outcome, attempts) in found.items():
        assert outcome == caught.get(name, "TamperingError"), (name, outcome, attempts)
        assert len(attempts) == 1 and "reference answer" in attempts[0], (name, attempts)


WITNESS_ROUTES = _RUN_ROUTES + textwrap.dedent('''
    import json, sys, threading
    from autograder.checks import stress_tests
    from autograder.harness import tamper
    from autograder.kernel import audit

    attempts = []
    sys.addaudithook(audit.make_audit_hook(audit.trusted_roots(), [], attempts))
    make_ledger, seen = stress_tests.witnessed(stress_tests.PlainLedger)
    ledger = make_ledger()

    def forged():
        """A torn snapshot forged by changing a fresh ledger's own state, then read."""
        make, judged = stress_tests.witnessed(stress_tests.PlainLedger)
        other = make()
        other.record([1, 2])
        vars(other)["rows"] += 1
        other.totals()
        return judged()

    hooks = [cell.cell_contents for cell in type(ledger).record.__closure__
             if callable(cell.cell_contents) and cell.cell_contents.__name__ in ("enter", "leave")]
    ROUTES = {
        "honest calls on two threads": "threads = [threading.Thread(target=ledger.record, "
            "args=([1, 2],)) for _ in range(2)]; [t.start() for t in threads]; "
            "[t.join() for t in threads]; assert ledger.totals() == (2, 4)",
        "the witness's hook called directly": "hooks[0]('totals', ledger, 0)",
        "the hook's hidden function": "hooks[0].__kwdefaults__",
    }
    found = run_routes(ROUTES, dict(globals()), attempts)
    found["hooks"] = len(hooks)
    found["refused"] = tamper.attempts_since(0)
    found["seen"] = seen()
    found["forged"] = forged()
    print(json.dumps(found))
''')


def test_graded_code_cannot_write_or_forge_what_the_grader_saw_of_an_explored_ledger():
    """Lesson 05's explorer is credited with a racy ledger only if the grader's witness saw
    the ledger break: graded code that calls the witness's hooks (reachable from a ledger's
    methods) is refused as tampering, their hidden function is out of reach, and a torn
    snapshot forged by changing the ledger's state is reported as tampering, not as a race;
    honest calls on threads are watched without a refusal."""
    done = subprocess.run([sys.executable, "-c", WITNESS_ROUTES], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["hooks"] == 2
    assert found["honest calls on two threads"] == ["ran", []]
    assert found["the witness's hook called directly"][0] == "PermissionError"
    assert found["the hook's hidden function"][0] == "TamperingError"
    assert found["refused"] == ["writing a hidden ledger's call record"]
    # the refused call is no call of the ledger's, but the witness names it
    assert found["seen"] == {"anomaly": "", "tampered": "writing a hidden ledger's call record",
                             "ledgers": 1, "calls": 3}
    assert found["forged"] == {"anomaly": "snapshot", "calls": 2, "ledgers": 1, "tampered":
                               "a hidden ledger's state was changed outside its record() and "
                               "totals()"}


_FIRST_FIGURE = textwrap.dedent("""
    import json, sys
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from autograder.kernel import seal
    if sys.argv[1] == "filled":
        seal.fill_library_caches()
    problems = seal.integrity_check({"matplotlib.path": ("Path",)})
    figure, axes = plt.subplots()
    axes.bar([0, 1], [2, 3])
    axes.add_patch(matplotlib.patches.Circle((0.5, 0.5), 0.2))
    figure.savefig(sys.argv[2])
    print(json.dumps(problems()))
""")


@pytest.mark.parametrize(("caches", "named"), [
    ("filled", []), ("cold", ["matplotlib.path.Path._unit_rectangle was replaced"])])
def test_a_checks_first_figure_is_no_replaced_name_once_library_caches_are_filled(
        tmp_path, caches, named):
    """A failing check draws its figure in the kernel; matplotlib then fills ``Path``'s unit
    paths, None until first used. The runner fills them before it remembers the names (an
    honest answer whose check failed was once reported as tampered)."""
    out = subprocess.run([sys.executable, "-c", _FIRST_FIGURE, caches,
                          str(tmp_path / "figure.png")],
                         capture_output=True, text=True, check=True, timeout=120)
    problems = json.loads(out.stdout.strip().splitlines()[-1])
    assert [p for p in problems if "_unit_rectangle" in p] == named
    if caches == "filled":
        assert problems == []


def test_the_answers_clock_running_ahead_while_its_timeouts_are_cut_is_not_a_change():
    from autograder.checks import timeouts

    problems = seal.integrity_check({"autograder.checks.timeouts": None})
    timeouts.pass_time(0.5)  # what a check does while an answer's timeouts are cut
    assert problems() == []
