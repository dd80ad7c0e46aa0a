"""The attack corpus: answer cells a determined student might submit to raise their own grade.

Every attack answers the counter exercise with a racy counter (which scores 0 when the grader
holds) and adds one attack; the add exercise is answered correctly, so an attack that works
only on its own exercise cannot cost the student more than that exercise. Each entry is
``(answer source, statuses it may get)``.
"""

RACY = """
class SafeCounter:
    def __init__(self):
        self._count = 0

    def increment(self, by=1):
        self._count += by

    def take(self):
        count, self._count = self._count, 0
        return count
"""

NOOP = "lambda *args, **kwargs: None"

#: A racy counter whose operations first reach for the scheduler's record of their own thread
#: (RUN: code that binds ``run``) and mark it atomic, then run in a function of their own.
FORGE = """
import sys, threading

def _hide():
    try:
RUN
    except Exception:  # no run right now (or the grader refused: it is caught, but recorded)
        return
    for thread in getattr(run, 'threads', ()):
        if thread.ident == threading.get_ident():
            thread.atomic = True

def _add(counter, by):
    counter._count += by

def _take(counter):
    count, counter._count = counter._count, 0
    return count

class SafeCounter:
    def __init__(self):
        self._count = 0

    def increment(self, by=1):
        _hide()
        _add(self, by)

    def take(self):
        _hide()
        return _take(self)
"""

TAMPERED = ("tampered",)
# Attacks that only break the student's own cell: the grader scores them 0 as an error.
FAILS = ("graded", "tampered")

ATTACKS: dict[str, tuple[str, tuple[str, ...]]] = {
    # 1. Rebinding the checks and the harness.
    "rebind_check_in_module": (f"anatomy.check_counter = {NOOP}", TAMPERED),
    "rebind_check_in_globals": (
        f"import types\nanatomy = types.SimpleNamespace(check_counter={NOOP})", FAILS),
    "rebind_check_in_sys_modules": (
        "import sys, types\nfake = types.ModuleType('autograder.checks.anatomy')\n"
        f"fake.check_counter = {NOOP}\nsys.modules['autograder.checks.anatomy'] = fake\n"
        "import autograder.checks\nautograder.checks.anatomy = fake", TAMPERED),
    "rebind_check_through_vars": (f"vars(anatomy)['check_counter'] = {NOOP}", TAMPERED),
    "rebind_require": (
        f"from autograder.checks.anatomy import grading\ngrading.require = {NOOP}", TAMPERED),
    "rebind_harness_explore": (
        "import autograder.harness as harness\n"
        "from autograder.harness import exploration\n"
        "real = exploration.explore\n"
        "def explore(*args, **kwargs):\n"
        "    result = real(*args, **kwargs)\n"
        "    object.__setattr__(result, 'verdict', 'pass')\n"
        "    return result\n"
        "exploration.explore = explore\nvars(harness)['explore'] = explore", TAMPERED),
    "replace_check_code": (
        f"anatomy.check_counter.__code__ = ({NOOP}).__code__", TAMPERED),
    "patch_builtins": (
        "import builtins\nbuiltins.AssertionError = type('AssertionError', (Exception,), {})\n"
        "builtins.isinstance = lambda *a: True", TAMPERED),
    "patch_builtins_exec": ("import builtins\nbuiltins.exec = lambda *a, **k: None", TAMPERED),
    "patch_the_seal": (
        "import autograder.kernel.seal as seal\n"
        "seal.integrity_check = lambda *a, **k: (lambda: [])", TAMPERED),
    # Lesson 00's checks call no NumPy, so this one changes nothing they rely on (the checks
    # that do call it are covered in tests/kernel/test_seal.py); random.Random they do.
    "patch_a_library_the_check_does_not_use": (
        "import numpy\nnumpy.allclose = numpy.array_equal = lambda *a, **k: True", FAILS),
    "patch_a_library_class_the_harness_uses": (
        "import random\nrandom.Random.randrange = lambda self, *a, **k: 0", TAMPERED),
    "shadow_an_inherited_method": (
        "import random\nrandom.Random.random = lambda self: 0.99", TAMPERED),
    "swap_the_check_modules_type": (
        "import types\nclass Lenient(types.ModuleType):\n"
        "    def __getattribute__(self, name):\n"
        "        if name == 'check_counter':\n            return lambda *a, **k: None\n"
        "        return types.ModuleType.__getattribute__(self, name)\n"
        "anatomy.__class__ = Lenient", TAMPERED),
    "shrink_the_search_through_default_arguments": (
        "anatomy.run_counter.__kwdefaults__['max_schedules'] = 1", TAMPERED),
    "poison_a_harness_constant": (
        "from autograder.harness import exploration\n"
        "for key in list(exploration._ROTATIONS):\n    exploration._ROTATIONS[key] = ('random',)",
        TAMPERED),
    # Swapped in while the check runs, swapped back by the check's own call to it: the names
    # are the same again when the test cell ends (a pass, before assignments were refused).
    "rebind_a_check_helper_only_while_the_check_runs": (
        "import autograder.checks.anatomy.grading as _anatomy\n"
        "_real_require = _anatomy.require\n"
        "def _lenient(*args, **kwargs):\n    _anatomy.require = _real_require\n"
        "_Racy = SafeCounter\nclass SafeCounter(_Racy):\n    def increment(self, by=1):\n"
        "        if _anatomy.require is _real_require:\n"
        "            _anatomy.require = _lenient\n"
        "        super().increment(by)", TAMPERED),
    # The same swap written straight into the module's dictionary, which no audit event and
    # no __setattr__ sees: the dictionary's version still changes, and the test is tampered.
    "rebind_a_check_helper_in_the_module_dict_only_while_the_check_runs": (
        "import autograder.checks.anatomy as _anatomy\n"
        "_globals = _anatomy.check_counter.__globals__\n"
        "_real_require = _globals['require']\n"
        "def _lenient(*args, **kwargs):\n    _globals['require'] = _real_require\n"
        "_Racy = SafeCounter\nclass SafeCounter(_Racy):\n    def increment(self, by=1):\n"
        "        if _globals['require'] is _real_require:\n"
        "            _globals['require'] = _lenient\n"
        "        super().increment(by)", TAMPERED),
    # A property of a harness class swapped for one check's verdict and put back from inside
    # it: no audit event sees a class attribute written, and nothing is left to find after
    # the cell. A racy counter passed this way; the grader's classes now refuse the write.
    "swap_a_harness_class_property_only_while_the_check_runs": (
        "from autograder.harness.result import Result as _Result\n"
        "_real_ok, _made, _done = _Result.__dict__['ok'], [], []\n"
        "def _always(self):\n    type.__setattr__(_Result, 'ok', _real_ok)\n    return True\n"
        "_Racy = SafeCounter\nclass SafeCounter(_Racy):\n    def __init__(self):\n"
        "        super().__init__()\n        _made.append(1)\n"
        "    def increment(self, by=1):\n"
        "        if len(_made) >= 3 and not _done:\n            _done.append(1)\n"
        "            try:\n                type.__setattr__(_Result, 'ok', property(_always))\n"
        "            except TypeError:\n                pass\n"
        "        super().increment(by)", FAILS),
    # A library name the harness calls (its seeded schedule sampler), swapped while the check
    # runs and put back: refused as it happens, or, written straight into the module's
    # dictionary, named after the cell by the dictionary's version.
    "swap_a_library_name_the_harness_calls_while_the_check_runs": (
        "import random as _random\n_real_Random, _done = _random.Random, []\n"
        "_Racy = SafeCounter\nclass SafeCounter(_Racy):\n    def increment(self, by=1):\n"
        "        if not _done:\n            _done.append(1)\n"
        "            try:\n                _random.Random = type('Random', (_real_Random,), {})\n"
        "            except AttributeError:\n                pass\n"
        "        super().increment(by)", TAMPERED),
    "swap_a_library_name_in_its_module_dict_and_put_it_back": (
        "import random as _random\n_real_Random, _done = _random.Random, []\n"
        "_Racy = SafeCounter\nclass SafeCounter(_Racy):\n    def increment(self, by=1):\n"
        "        if not _done:\n            _done.append(1)\n"
        "            vars(_random)['Random'] = type('Random', (_real_Random,), {})\n"
        "            vars(_random)['Random'] = _real_Random\n"
        "        super().increment(by)", TAMPERED),
    "shadow_a_builtin_in_a_check_module": (
        "import autograder.checks.anatomy.counter as _anatomy\n"
        "import types\n"
        "types.ModuleType.__setattr__(_anatomy, 'sum', lambda values: 7)", TAMPERED),
    # 2. Answers that lie: values whose comparisons always agree.
    "lying_number_from_take": (
        "class Liar(int):\n    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "    def __add__(self, other):\n        return self\n    __radd__ = __add__\n"
        "    def __hash__(self):\n        return 0\n"
        "_Racy = SafeCounter\nclass SafeCounter(_Racy):\n    def take(self):\n"
        "        super().take()\n        return Liar(0)", FAILS),
    "object_with_a_fake_class_from_take": (
        "class Liar:\n    __class__ = property(lambda self: int)\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __ne__(self, other):\n        return False\n"
        "    def __add__(self, other):\n        return self\n    __radd__ = __add__\n"
        "_Racy = SafeCounter\nclass SafeCounter(_Racy):\n    def take(self):\n"
        "        super().take()\n        return Liar()", FAILS),
    # 3. Rewriting later cells at run time.
    "ipython_input_transformer": (
        "get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])", FAILS),
    "ipython_ast_transformer": (
        "import ast\nfrom IPython import get_ipython\n"
        "class Gut(ast.NodeTransformer):\n"
        "    def visit_Module(self, node):\n"
        "        return ast.Module(body=[], type_ignores=[])\n"
        "get_ipython().ast_transformers.append(Gut())", FAILS),
    # 4. Reaching the runner's frames, objects or memory.
    "walk_frames_with_getframe": (
        "import sys\nframe = sys._getframe()\nwhile frame.f_back is not None:\n"
        "    frame = frame.f_back\nframe.f_locals.clear()", TAMPERED),
    "walk_frames_with_inspect": (
        "import inspect\nfor info in inspect.stack():\n    info.frame.f_locals.get('send')",
        TAMPERED),
    "frames_through_a_traceback": (
        "try:\n    raise ValueError\nexcept ValueError as exc:\n"
        "    runner = exc.__traceback__.tb_frame.f_back", TAMPERED),
    "frames_through_a_generator": (
        "def gen():\n    yield 1\nframe = gen().gi_frame", TAMPERED),
    "gc_walk_for_the_key": (
        "import gc\nkeys = [o for o in gc.get_objects() if isinstance(o, bytes) "
        "and len(o) == 32]", TAMPERED),
    "gc_referrers": ("import gc\ngc.get_referrers(anatomy.check_counter)", TAMPERED),
    "ctypes_memory_read": (
        "import ctypes\nctypes.string_at(id(anatomy), 64)", TAMPERED),
    "proc_self_mem": ("open('/proc/self/mem', 'rb').read(1)", TAMPERED),
    "proc_mem_through_a_link": (
        "import os\nos.symlink('/proc/self/mem', 'innocent')\nopen('innocent', 'rb')", TAMPERED),
    "own_trace_function": ("import sys\nsys.settrace(lambda *a: None)", TAMPERED),
    "own_thread_trace_function": (
        "import threading, sys\nthreading.settrace(lambda *a: None)\n"
        "t = threading.Thread(target=lambda: None)\nt.start()\nt.join()", TAMPERED),
    "signal_handler_frames": (
        "import signal\nsignal.signal(signal.SIGALRM, lambda signum, frame: None)", FAILS),
    "trap_object_as_thread_hook": (
        "import sys, threading\nclass Trap:\n    @property\n    def __code__(self):\n"
        "        sys._getframe().f_back.f_locals.clear()\n        return None\n"
        "    def __call__(self, *args):\n        return None\n"
        "vars(threading)['_trace_hook'] = Trap()\n"
        "t = threading.Thread(target=lambda: None)\nt.start()\nt.join()", TAMPERED),
    "path_object_to_proc_mem": (
        "import io\nclass Sneaky:\n    def __fspath__(self):\n        return '/proc/self/mem'\n"
        "io.FileIO(Sneaky())", TAMPERED),
    "str_subclass_path_to_proc_mem": (
        "class Sneaky(str):\n    pass\nopen(Sneaky('/proc/self/mem'), 'rb')", TAMPERED),
    "own_audit_hook": (
        "import sys\nsys.addaudithook(lambda event, args: None)", TAMPERED),
    "forged_code_object": (
        "code = compile('x = 1', anatomy.__file__, 'exec')", TAMPERED),
    # 5. Reaching the race detector's scheduler while it explores: each marks its own thread
    # atomic, which hides every preemption inside the racy operations (a pass without the seal).
    "scheduler_through_gettrace": (FORGE.replace("RUN", (
        "        trace = sys.gettrace()\n"
        "        cells = dict(zip(trace.__code__.co_freevars,\n"
        "                         (c.cell_contents for c in trace.__closure__)))\n"
        "        run = cells['run']")), TAMPERED),
    "scheduler_through_the_harness_copy_of_gettrace": (FORGE.replace("RUN", (
        "        from autograder.harness import tamper\n"
        "        trace = tamper.gettrace()\n"
        "        cells = dict(zip(trace.__code__.co_freevars,\n"
        "                         (c.cell_contents for c in trace.__closure__)))\n"
        "        run = cells['run']")), TAMPERED),
    "scheduler_through_the_thread_hook": (FORGE.replace("RUN", (
        "        hook = threading._trace_hook\n"
        "        run = getattr(hook, '__self__', None) or getattr(\n"
        "            hook.__kwdefaults__['_function'], '__self__', None)")), TAMPERED),
    "scheduler_through_the_excepthook": (FORGE.replace("RUN", (
        "        hook = threading.excepthook\n"
        "        run = getattr(hook, '__self__', None) or getattr(\n"
        "            hook.__kwdefaults__['_function'], '__self__', None)")), TAMPERED),
    "scheduler_through_a_library_that_copies_defaults": (FORGE.replace("RUN", (
        "        from unittest import mock\n"
        "        hook, holder = threading._trace_hook, lambda: None\n"
        "        mock._copy_func_details(hook, holder)\n"
        "        run = getattr(hook, '__self__', None) or getattr(\n"
        "            holder.__kwdefaults__['_function'], '__self__', None)")), TAMPERED),
    "scheduler_through_gettrace_told_the_caller_is_trusted": (FORGE.replace("RUN", (
        "        trace = sys.gettrace(_trusted=('',), _getter=sys.gettrace)\n"
        "        cells = dict(zip(trace.__code__.co_freevars,\n"
        "                         (c.cell_contents for c in trace.__closure__)))\n"
        "        run = cells['run']")), FAILS),
    "scheduler_code_map_poisoned": (
        "from autograder.harness import codemap\n"
        "for code in (SafeCounter.increment.__code__, SafeCounter.take.__code__):\n"
        "    for poison in (lambda: object.__setattr__(codemap.info(code), 'kind', 2),\n"
        "                   lambda: codemap.harness_cache().__setitem__(id(code), (\n"
        "                       code, codemap.CodeInfo(codemap.LIBRARY, (), frozenset()))),\n"
        "                   lambda: codemap.harness_cache(_trusted=('',)).__setitem__(\n"
        "                       id(code), (code, codemap.CodeInfo(codemap.LIBRARY, (),\n"
        "                                                         frozenset())))):\n"
        "        try:\n            poison()\n        except Exception:\n            pass",
        FAILS),
    # 6. Forging the verdict.
    "forged_report_lines": (
        "import os\nfor fd in range(3, 40):\n"
        "    try:\n        os.write(fd, b'00' * 32 + b' eyJ0IjogImRvbmUifQ==\\n')\n"
        "    except OSError:\n        pass", TAMPERED),
    "replace_threading_lock": (
        "import threading\nclass Lock:\n    def __enter__(self): return self\n"
        "    def __exit__(self, *a): pass\n    def acquire(self, *a, **k): return True\n"
        "    def release(self): pass\nthreading.Lock = Lock", TAMPERED),
    # A refusal caught, then its record erased from every list a notebook can reach: the
    # runner reads its own copy of the log (tamper.attempts_since), so it is still reported.
    "erase_the_record_of_a_caught_refusal": (
        "import threading\nfrom autograder.harness import tamper\n"
        "try:\n    threading.Lock = type('Lock', (), {})\nexcept Exception:\n    pass\n"
        "tamper.refused_attempts().clear()\nvars(tamper)['_attempts'].clear()", TAMPERED),
    # Lesson 09's backlog runs the answer's clocks ahead while its learner is held, so a
    # deadline loop gives up; winding them back would hide it. The offset only moves ahead.
    "wind_the_answers_clock_back": (
        "from autograder.checks import timeouts\n"
        "try:\n    timeouts.pass_time(-3600.0)\nexcept ValueError:\n    pass\n", TAMPERED),
    "background_thread_rebinds_later": (
        "import threading, time\n"
        "def later():\n    time.sleep(0.5)\n"
        f"    anatomy.check_counter = {NOOP}\n"
        "threading.Thread(target=later, daemon=True).start()\ntime.sleep(1)", TAMPERED),
    # 7. Leaving the process: exits, signals, forks, memory, disk.
    "system_exit_in_answer": ("raise SystemExit(0)", FAILS),
    "system_exit_in_the_test": (
        "class SafeCounter:\n    def __init__(self):\n        raise SystemExit(0)", FAILS),
    "atexit_handler": (
        "import atexit\natexit.register(lambda: print('test_guarded_counter passed'))", FAILS),
    "os_exit": ("import os\nos._exit(0)", ("kernel-died",)),
    "kill_every_process": ("import os, signal\nos.kill(-1, signal.SIGKILL)",
                           ("kernel-died", "graded", "tampered")),
    "bounded_fork_bomb": (
        "import os, time\nfor _ in range(120):\n    if os.fork() == 0:\n"
        "        time.sleep(30)\n        os._exit(0)\ntime.sleep(30)", ("kernel-died",)),
    "memory_split_across_children": (
        "import os, time\nfor _ in range(6):\n    if os.fork() == 0:\n"
        "        hog = b'x' * (300 * 2**20)\n        time.sleep(30)\n        os._exit(0)\n"
        "time.sleep(30)", ("kernel-died",)),
    "memory_in_tmpfs": (
        "import time\nwith open('/tmp/fill', 'wb') as handle:\n"
        "    for _ in range(600):\n        handle.write(b'x' * 2**20)\n",
        ("graded", "tampered", "kernel-died")),
    "memory_in_dev_shm": (
        "with open('/dev/shm/fill', 'wb') as handle:\n"
        "    for _ in range(600):\n        handle.write(b'x' * 2**20)\n",
        ("graded", "tampered", "kernel-died")),
    "memory_on_the_read_only_root": (
        "for place in ('/fill', '/dev/fill'):\n    with open(place, 'wb') as handle:\n"
        "        handle.write(b'x' * 2**20)\n", FAILS),
    "output_flood": ("for i in range(300_000):\n    print('flood', i)", FAILS),
    # 8. Reading what the student must not see.
    "read_hidden_tests_from_stdin": (
        "import os, sys\nseen = sys.stdin.read() + os.read(0, 1 << 20).decode(errors='ignore')\n"
        "if ('HIDDEN' + '-MARKER') in seen:\n    exec(SOLUTION)", FAILS),
    "read_environment_and_cmdline": (
        "import os\nseen = str(dict(os.environ))\nfor pid in os.listdir('/proc'):\n"
        "    try:\n        seen += open(f'/proc/{pid}/cmdline', 'rb').read().decode()\n"
        "    except (OSError, ValueError):\n        pass\n"
        "if ('HIDDEN' + '-MARKER') in seen or 'solutions' in seen:\n    exec(SOLUTION)", FAILS),
}

# Attacks whose success cannot be seen from the grade alone: the test fixture plants files and
# a listening socket, and the attack reports what it reached by passing when it reached any.
PROBES = """
import os, socket
reached = []
for path in PATHS:
    try:
        with open(path, 'rb') as handle:
            handle.read(1)
        reached.append(path)
    except OSError:
        pass
for path in WRITES:
    try:
        with open(path, 'a') as handle:
            handle.write('x')
        reached.append('wrote ' + path)
    except OSError:
        pass
for host, port in ADDRESSES:
    try:
        socket.create_connection((host, port), timeout=2).close()
        reached.append(f'{host}:{port}')
    except OSError:
        pass
reached += [name for _, name in socket.if_nameindex() if name != 'lo']
for link, target in (('feedback.html', '/etc/passwd'), ('result.json', PATHS[0])):
    try:
        os.symlink(target, link)
        os.mkfifo(link + '.fifo')
    except OSError:
        pass
if reached:
    exec(SOLUTION)
"""

SOLUTION = '''
import threading
class SafeCounter:
    def __init__(self):
        self._lock = threading.Lock()
        self._count = 0
    def increment(self, by=1):
        with self._lock:
            self._count += by
    def take(self):
        with self._lock:
            count, self._count = self._count, 0
            return count
'''
