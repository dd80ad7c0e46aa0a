"""The tamper guard: code under test that replaces what the grader relies on never passes."""

import queue
import subprocess
import sys
import threading
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

import autograder.harness
from autograder.harness import Result, explore, scheduler, stress, tamper

from .subjects import SUBJECTS

ROOT = Path(__file__).resolve().parents[2]


class NoopLock:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def acquire(self, *args, **kwargs):
        return True

    def release(self):
        pass


@pytest.fixture(autouse=True)
def forget_attempts():
    yield
    tamper._attempts.clear()


def correct(name):
    s = next(s for s in SUBJECTS if s.name == name and not s.racy)
    return s.setup, list(s.workers), s.check


def test_the_guard_is_quiet_when_nothing_was_replaced():
    assert tamper.problems() == []
    assert explore(*correct("counter"), max_schedules=5).ok


def test_a_noop_threading_lock_makes_explore_refuse_to_pass(monkeypatch):
    monkeypatch.setattr(threading, "Lock", NoopLock)
    result = explore(*correct("counter"), max_schedules=5)
    assert result.verdict == "error"
    assert "threading.Lock was replaced" in result.message
    assert "NoopLock" in result.message


def test_a_noop_threading_lock_makes_stress_refuse_to_pass(monkeypatch):
    monkeypatch.setattr(threading, "Lock", NoopLock)
    result = stress(*correct("counter"), trials=1)
    assert result.verdict == "error"
    assert "threading.Lock was replaced" in result.message


@pytest.mark.parametrize("owner, name", [
    (threading, "RLock"), (threading, "Condition"), (threading, "Semaphore"),
    (threading, "BoundedSemaphore"), (threading, "Event"), (threading, "Barrier"),
    (threading, "Thread"), (threading, "settrace"), (queue, "Queue"), (sys, "settrace"),
    (sys, "setswitchinterval"), (sys, "getswitchinterval"), (threading, "enumerate"),
])
def test_replacing_a_primitive_or_hook_is_named_in_the_message(monkeypatch, owner, name):
    monkeypatch.setattr(owner, name, lambda *a, **k: None)
    result = explore(*correct("counter"), max_schedules=2)
    assert result.verdict == "error"
    assert f"{owner.__name__}.{name} was replaced" in result.message


def test_a_worker_replacing_threading_lock_during_the_run_is_caught():
    original = threading.Lock

    def cheat(state):
        threading.Lock = NoopLock

    try:
        result = explore(SimpleNamespace, [cheat], lambda s: True, max_schedules=2)
    finally:
        threading.Lock = original
    assert result.verdict == "error"
    assert "threading.Lock was replaced" in result.message


def test_a_worker_switching_tracing_off_is_caught():
    def hide(state):
        sys.settrace(None)
        state.count += 1

    result = explore(lambda: SimpleNamespace(count=0), [hide, hide], lambda s: True,
                     max_schedules=3)
    assert result.verdict == "error"
    assert "switched off the race detector's tracing" in result.message


def test_the_hooks_a_worker_can_read_do_not_lead_to_the_scheduler():
    seen = []

    def peek(state):
        seen.extend([threading._trace_hook, threading.excepthook])

    explore(lambda: None, [peek], lambda s: True, max_schedules=1)
    assert len(seen) == 2
    for hook in seen:
        assert hook.__code__ is tamper.OPAQUE_CODE
        assert hook.__closure__ is None and not hasattr(hook, "__self__")


def test_an_opaque_hook_calls_what_it_hides():
    hook = tamper.opaque(lambda *args, scale=1: scale * sum(args))
    assert hook(1, 2, 3) == 6 and hook(1, 2, scale=2) == 6
    assert hook.__closure__ is None and hook.__code__ is tamper.OPAQUE_CODE


def test_a_guard_for_trusted_callers_refuses_others_and_cannot_be_told_otherwise():
    refused = []
    guard = tamper.for_trusted_callers(lambda: "secret", ("/nowhere/",),
                                       lambda: refused.append(1))
    assert guard() is None and refused == [1]  # this test file is not under /nowhere/
    with pytest.raises(TypeError):
        guard(_trusted=("",))
    with pytest.raises(TypeError):
        guard("/")
    assert guard.__closure__ is None and guard.__code__ is tamper.OPAQUE_CODE


def _grader_functions(memo):
    """``owner(key, build)`` and ``via_owner(key, build)``, compiled as if under ``/grader/``."""
    namespace = {"memo": memo}
    exec(compile("def owner(key, build):\n    return memo(key, build)\n"
                 "def via_owner(key, build):\n    return owner(key, build)\n",
                 "/grader/checks.py", "exec"), namespace)
    return namespace["owner"], namespace["via_owner"]


def test_a_private_memo_keeps_its_values_for_the_graders_own_callers():
    memo = tamper.private_memo(("/grader/",), "the references")
    owner, via_owner = _grader_functions(memo)
    first = via_owner("key", object)
    assert via_owner("key", object) is first
    assert memo.__closure__ is None and memo.__code__ is tamper.OPAQUE_CODE


def test_a_private_memo_builds_afresh_for_any_other_caller_and_stores_nothing():
    memo = tamper.private_memo(("/grader/",), "the references")
    owner, via_owner = _grader_functions(memo)
    handed = owner("key", object)  # this test file is not under /grader/
    assert owner("key", object) is not handed
    assert via_owner("key", object) is not handed


def test_a_private_memo_called_by_code_under_test_is_refused_and_recorded():
    memo = tamper.private_memo(("/grader/",), "the references")
    with pytest.raises(PermissionError, match="the references"):
        memo("key", lambda: "forged")
    assert tamper._attempts == ["reaching the references"]


@pytest.mark.parametrize("amount", [-5.0, 0, float("nan"), float("-inf"), float("inf"),
                                    True, "1", None])
def test_a_growing_total_is_never_wound_back_and_an_attempt_is_recorded(amount):
    read, add = tamper.growing_total("the answer's clock")
    add(2.5)
    add(1)
    with pytest.raises(ValueError, match="only moves ahead"):
        add(amount)
    assert read() == 3.5
    assert tamper._attempts == [f"moving the answer's clock by {amount!r}"]
    assert read.__closure__ is None and add.__code__ is tamper.OPAQUE_CODE


def test_an_adopted_guard_is_genuine_and_replacing_it_is_named(monkeypatch):
    module = types.ModuleType("fake_sys")
    module.hook = print
    monkeypatch.setattr(tamper, "_WATCHED",
                        [tamper._Watched(module, "hook", lambda obj: obj is print)])
    guard = tamper.opaque(print)
    tamper.adopt(module, "hook", guard)
    assert module.hook is guard and tamper.problems() == []
    module.hook = print
    assert "fake_sys.hook was replaced" in " ".join(tamper.problems())


def test_assigning_to_the_public_api_is_refused_and_later_results_fail():
    def always_pass(*args, **kwargs):
        return Result("pass")

    with pytest.raises(AttributeError):
        autograder.harness.explore = always_pass
    assert autograder.harness.explore is explore
    result = explore(*correct("counter"), max_schedules=2)
    assert result.verdict == "error"
    assert "tried overwriting autograder.harness.explore" in result.message


def test_replacing_a_harness_function_in_its_module_is_caught(monkeypatch):
    monkeypatch.setattr(scheduler, "_nap", lambda: None)
    result = explore(*correct("counter"), max_schedules=2)
    assert result.verdict == "error"
    assert "autograder.harness.scheduler._nap was replaced" in result.message


def test_replacing_a_method_a_harness_class_inherits_is_caught(monkeypatch):
    assert "_pause" not in vars(scheduler.Run)  # defined by its base class, turns.Turns
    monkeypatch.setattr(scheduler.Run, "_pause", lambda *args: None, raising=False)
    assert "autograder.harness.scheduler.Run._pause was replaced" in "\n".join(tamper.problems())


def test_making_every_result_ok_is_caught(monkeypatch):
    monkeypatch.setattr(Result, "ok", property(lambda self: True))
    result = explore(*correct("counter"), max_schedules=2)
    assert result.verdict == "error"
    assert "Result.ok was replaced" in result.message


def test_a_replacement_made_before_the_harness_was_imported_is_caught(monkeypatch):
    def fake(*args):
        return None

    monkeypatch.setitem(tamper._OWN, "sys.settrace", (fake, tamper._OWN["sys.settrace"][1]))
    found = tamper.problems()
    assert any("already replaced before the harness was imported" in p for p in found)


def test_a_forged_passing_result_is_not_ok():
    assert not Result("pass").ok


# Threads parked in frames that have no frame object yet: sys._current_frames() allocates one
# for each while it holds the interpreter's thread-list lock, and with a threshold of 1 the
# second allocation starts a collection there. The gc callback then takes the same lock, as a
# TensorFlow graph's finalizer does.
_FRAMES_UNDER_COLLECTION = """
import gc, sys, threading
from autograder.harness import turns

gate = threading.Lock()
gate.acquire()

def parked():
    gate.acquire()

for _ in range(4):
    threading.Thread(target=parked, daemon=True).start()
armed = False

def takes_the_thread_list_lock(phase, info):
    if armed and phase == "start":
        sys._current_frames()

gc.callbacks.append(takes_the_thread_list_lock)
gc.collect()
gc.set_threshold(1)
armed = True
frames = {call}
armed = False
print(len(frames), gc.isenabled())
"""


def _frames_under_collection(call: str, timeout: float) -> subprocess.CompletedProcess | None:
    try:
        return subprocess.run([sys.executable, "-c", _FRAMES_UNDER_COLLECTION.format(call=call)],
                              cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None


def test_reading_every_threads_frame_never_deadlocks_in_a_finalizer_that_takes_the_thread_lock():
    # The bare call hangs.
    assert _frames_under_collection("sys._current_frames()", timeout=5) is None
    # The harness's own caller (each thread in user code, by id): tamper.current_frames
    # answers only the harness.
    done = _frames_under_collection("turns._outside_user_frames(set())", timeout=60)
    assert done is not None and done.returncode == 0, done and done.stderr
    assert done.stdout.split() == ["5", "True"]  # every thread's frame; the collector back on
