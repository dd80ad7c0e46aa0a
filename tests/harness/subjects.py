"""Reference subjects: small programs with a known race, each next to its correct twin.

The tests and ``benchmarks/harness_bench.py`` both run these. A subject names its engine
(``explore`` for races in Python code, ``stress`` for races inside TF/Keras), the verdict a
racy version must get, and an optional ``prepare`` that warms TF/Keras once per process.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from autograder.harness import Result, explore, stress

# Made when this module is imported, long before any explore() call: a module-level lock, as
# in a notebook cell run earlier.
MODULE_LOCK = threading.Lock()
MODULE_RLOCK = threading.RLock()
MODULE_EVENT = threading.Event()


@dataclass(frozen=True)
class Subject:
    """One reference program.

    Attributes:
        name: The pair's name (racy and correct twins share it).
        racy: Whether the program has the bug.
        setup: Returns fresh state.
        workers: One callable per thread.
        check: Raises AssertionError when the invariant is broken.
        engine: ``"explore"`` or ``"stress"``.
        expect: The verdict the program must get.
        also: Other failing verdicts the same bug may show instead, when which symptom a run
            hits first is up to the threads (a cold Keras model either raises or builds its
            weights twice).
        prepare: Warms library code once per process (TF/Keras first use).
        options: Extra keyword arguments for the engine.
    """

    name: str
    racy: bool
    setup: Callable[[], Any]
    workers: tuple[Callable[[Any], Any], ...]
    check: Callable[[Any], Any]
    engine: str = "explore"
    expect: str = "pass"
    also: tuple[str, ...] = ()
    prepare: Callable[[], None] | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def accepted(self) -> tuple[str, ...]:
        """Every verdict that counts as right for this program."""
        return (self.expect, *self.also)

    @property
    def label(self) -> str:
        return f"{self.name} ({'racy' if self.racy else 'correct'})"

    def run(self, seed: int = 0, **overrides: Any) -> Result:
        """Run the subject's engine with its options (and any overrides)."""
        if self.prepare is not None:
            self.prepare()
        options = {**self.options, **overrides}
        engine = explore if self.engine == "explore" else stress
        return engine(self.setup, list(self.workers), self.check, seed=seed, **options)


def _state(**fields: Any) -> SimpleNamespace:
    return SimpleNamespace(**fields)


# --- counters: read-modify-write -------------------------------------------------------------
def counter_state() -> SimpleNamespace:
    return _state(count=0, lock=threading.Lock())


def add_three(state):
    for _ in range(3):
        state.count += 1


def add_three_locked(state):
    for _ in range(3):
        with state.lock:
            state.count += 1


def six_counted(state):
    assert state.count == 6, f"expected 6 increments, saw {state.count}"


# --- check-then-act initialisation ---------------------------------------------------------------
def lazy_state() -> SimpleNamespace:
    return _state(model=None, built=0, lock=threading.Lock())


def get_model(state):
    if state.model is None:
        state.built += 1
        state.model = object()
    return state.model


def get_model_locked(state):
    if state.model is None:
        with state.lock:
            if state.model is None:
                state.built += 1
                state.model = object()
    return state.model


def built_once(state):
    assert state.built == 1, f"expected the model built once, it was built {state.built} times"


# --- torn reads of a pair that must stay consistent --------------------------------------------
def pair_state() -> SimpleNamespace:
    return _state(low=0, high=0, seen=[], lock=threading.Lock())


def write_pair(state):
    for version in (1, 2):
        state.low = version
        state.high = version


def read_pair(state):
    state.seen.append((state.low, state.high))


def write_pair_locked(state):
    for version in (1, 2):
        with state.lock:
            state.low = version
            state.high = version


def read_pair_locked(state):
    with state.lock:
        state.seen.append((state.low, state.high))


def pairs_consistent(state):
    for low, high in state.seen:
        assert low == high, f"expected a matching pair, saw low={low} high={high}"


# --- a lock made per call protects nothing ------------------------------------------------------
def add_with_fresh_lock(state):
    for _ in range(2):
        lock = threading.Lock()
        with lock:
            state.count += 1


def add_with_module_lock(state):
    for _ in range(2):
        with MODULE_LOCK:
            state.count += 1


def four_counted(state):
    assert state.count == 4, f"expected 4 increments, saw {state.count}"


# --- a lock on the writer only -------------------------------------------------------------------
# write_pair_locked + read_pair (racy) vs write_pair_locked + read_pair_locked (correct).


# --- lock-order deadlock -------------------------------------------------------------------------
def two_locks() -> SimpleNamespace:
    return _state(a=threading.Lock(), b=threading.Lock(), moved=0)


def move_a_to_b(state):
    with state.a:
        with state.b:
            state.moved += 1


def move_b_to_a(state):
    with state.b:
        with state.a:
            state.moved += 1


def moved_twice(state):
    assert state.moved == 2, f"expected 2 transfers, saw {state.moved}"


# --- Condition-based buffer ----------------------------------------------------------------------
def buffer_state() -> SimpleNamespace:
    return _state(items=[], taken=[], ready=threading.Condition())


def produce_two(state):
    for item in (1, 2):
        with state.ready:
            state.items.append(item)
            state.ready.notify()


def take_one_if(state):
    with state.ready:
        if not state.items:
            state.ready.wait()
        state.taken.append(state.items.pop(0))


def take_one_while(state):
    with state.ready:
        while not state.items:
            state.ready.wait()
        state.taken.append(state.items.pop(0))


def both_taken(state):
    assert sorted(state.taken) == [1, 2], f"expected items [1, 2] taken, saw {state.taken}"


# --- Queue: check-then-get -----------------------------------------------------------------------
def one_item_queue() -> SimpleNamespace:
    items = queue.Queue()
    items.put("job")
    return _state(queue=items, got=[])


def get_if_not_empty(state):
    if not state.queue.empty():
        state.got.append(state.queue.get_nowait())


def get_or_skip(state):
    try:
        state.got.append(state.queue.get_nowait())
    except queue.Empty:
        pass


def got_the_job_once(state):
    assert state.got == ["job"], f"expected the job taken once, saw {state.got}"


# --- Event: publish before the data is ready --------------------------------------------------
def event_state() -> SimpleNamespace:
    MODULE_EVENT.clear()
    return _state(data=None, seen=None)


def publish_early(state):
    MODULE_EVENT.set()
    state.data = 42


def publish_late(state):
    state.data = 42
    MODULE_EVENT.set()


def read_when_ready(state):
    MODULE_EVENT.wait()
    state.seen = state.data


def saw_data(state):
    assert state.seen == 42, f"expected the reader to see 42, saw {state.seen}"


# --- Semaphore: a one-at-a-time resource ---------------------------------------------------------
def slots_of(semaphore: Callable[[int], Any], size: int) -> Callable[[], SimpleNamespace]:
    def setup() -> SimpleNamespace:
        return _state(slots=semaphore(size), inside=0, most=0)
    return setup


def use_resource(state):
    with state.slots:
        state.inside += 1
        state.most = max(state.most, state.inside)
        state.inside -= 1


def one_at_a_time(state):
    assert state.most == 1, f"expected at most 1 thread inside, saw {state.most}"


# --- RLock: re-entering the same lock ------------------------------------------------------------
def nested_state_plain() -> SimpleNamespace:
    return _state(lock=threading.Lock(), count=0)


def nested_state_module_rlock() -> SimpleNamespace:
    return _state(lock=MODULE_RLOCK, count=0)


def add_nested(state):
    with state.lock:
        with state.lock:
            state.count += 1


def two_nested(state):
    assert state.count == 2, f"expected 2 increments, saw {state.count}"


# --- threads started by the worker ---------------------------------------------------------------
def spawn_adders(state):
    def add():
        for _ in range(2):
            state.count += 1

    threads = [threading.Thread(target=add) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def spawn_locked_adders(state):
    def add():
        for _ in range(2):
            with state.lock:
                state.count += 1

    threads = [threading.Thread(target=add) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def pool_adders(state):
    def add():
        seen = state.count
        state.count = seen + 1

    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(add) for _ in range(4)]:
            future.result()


def pool_locked_adders(state):
    def add():
        with state.lock:
            seen = state.count
            state.count = seen + 1

    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(add) for _ in range(4)]:
            future.result()


# --- dict check-then-insert ----------------------------------------------------------------------
def dict_state() -> SimpleNamespace:
    return _state(groups={})


def group_racy(item: str) -> Callable[[SimpleNamespace], None]:
    def add(state):
        if "k" not in state.groups:
            state.groups["k"] = []
        state.groups["k"].append(item)
    return add


def group_setdefault(item: str) -> Callable[[SimpleNamespace], None]:
    def add(state):
        state.groups.setdefault("k", []).append(item)
    return add


def both_grouped(state):
    got = sorted(state.groups.get("k", []))
    assert got == ["a", "b"], f"expected ['a', 'b'] under 'k', saw {got}"


# --- tf.Variable: assign(v + 1) vs assign_add ----------------------------------------------------
def warm_tensorflow() -> None:
    import tensorflow as tf

    warm = tf.Variable(0)
    warm.assign(warm + 1)
    warm.assign_add(1)
    int(warm.numpy())


def variable_state() -> SimpleNamespace:
    import tensorflow as tf

    return _state(v=tf.Variable(0))


def assign_plus_one(state):
    for _ in range(2):
        state.v.assign(state.v + 1)


def assign_add_one(state):
    for _ in range(2):
        state.v.assign_add(1)


def variable_is_four(state):
    value = int(state.v.numpy())
    assert value == 4, f"expected the variable to reach 4, saw {value}"


# --- Keras: first call on a cold model vs a warmed one (stress) ---------------------------------
_keras: dict[str, Any] = {}


def warm_keras() -> None:
    if _keras:
        return
    import keras
    import numpy as np

    _keras["x"] = np.ones((8, 4), "float32")
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(2)])
    _keras["expected"] = np.asarray(model(_keras["x"]))
    _keras["warm"] = model


def cold_model_state() -> SimpleNamespace:
    import keras

    model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
    return _state(model=model, outputs=[])


def warm_model_state() -> SimpleNamespace:
    return _state(model=_keras["warm"], outputs=[])


def call_model(state):
    for _ in range(4):
        state.outputs.append(state.model(_keras["x"]))


def model_consistent(state):
    import numpy as np

    weights = len(state.model.weights)
    assert weights == 4, f"expected 4 weight tensors, saw {weights}"
    first = np.asarray(state.outputs[0])
    for output in state.outputs:
        assert np.allclose(np.asarray(output), first), "threads saw different outputs"


def _pair(name: str, racy: dict[str, Any], correct: dict[str, Any],
          **shared: Any) -> list[Subject]:
    return [Subject(name=name, racy=True, **{**shared, **racy}),
            Subject(name=name, racy=False, **{**shared, **correct})]


SUBJECTS: list[Subject] = [
    *_pair("counter", {"workers": (add_three, add_three), "expect": "race"},
           {"workers": (add_three_locked, add_three_locked)},
           setup=counter_state, check=six_counted),
    *_pair("check_then_act_init", {"workers": (get_model, get_model), "expect": "race"},
           {"workers": (get_model_locked, get_model_locked)},
           setup=lazy_state, check=built_once),
    *_pair("torn_read", {"workers": (write_pair, read_pair), "expect": "race"},
           {"workers": (write_pair_locked, read_pair_locked)},
           setup=pair_state, check=pairs_consistent),
    *_pair("lock_per_call", {"workers": (add_with_fresh_lock, add_with_fresh_lock),
                             "expect": "race"},
           {"workers": (add_with_module_lock, add_with_module_lock)},
           setup=counter_state, check=four_counted),
    *_pair("lock_on_writer_only", {"workers": (write_pair_locked, read_pair), "expect": "race"},
           {"workers": (write_pair_locked, read_pair_locked)},
           setup=pair_state, check=pairs_consistent),
    *_pair("lock_order_deadlock", {"workers": (move_a_to_b, move_b_to_a), "expect": "deadlock"},
           {"workers": (move_a_to_b, move_a_to_b)},
           setup=two_locks, check=moved_twice),
    *_pair("condition_buffer",
           {"workers": (produce_two, take_one_if, take_one_if), "expect": "error"},
           {"workers": (produce_two, take_one_while, take_one_while)},
           setup=buffer_state, check=both_taken),
    *_pair("queue_check_then_get",
           {"workers": (get_if_not_empty, get_if_not_empty), "expect": "error"},
           {"workers": (get_or_skip, get_or_skip)},
           setup=one_item_queue, check=got_the_job_once),
    *_pair("event_publish", {"workers": (publish_early, read_when_ready), "expect": "race"},
           {"workers": (publish_late, read_when_ready)},
           setup=event_state, check=saw_data),
    *_pair("semaphore", {"setup": slots_of(threading.Semaphore, 2), "expect": "race"},
           {"setup": slots_of(threading.BoundedSemaphore, 1)},
           workers=(use_resource, use_resource), check=one_at_a_time),
    *_pair("rlock", {"setup": nested_state_plain, "expect": "deadlock"},
           {"setup": nested_state_module_rlock},
           workers=(add_nested, add_nested), check=two_nested),
    *_pair("threads_started_by_worker", {"workers": (spawn_adders,), "expect": "race"},
           {"workers": (spawn_locked_adders,)},
           setup=counter_state, check=four_counted),
    *_pair("thread_pool", {"workers": (pool_adders,), "expect": "race"},
           {"workers": (pool_locked_adders,)},
           setup=counter_state, check=four_counted),
    *_pair("dict_check_then_insert",
           {"workers": (group_racy("a"), group_racy("b")), "expect": "race"},
           {"workers": (group_setdefault("a"), group_setdefault("b"))},
           setup=dict_state, check=both_grouped),
    *_pair("tf_variable_increment",
           {"workers": (assign_plus_one, assign_plus_one), "expect": "race"},
           {"workers": (assign_add_one, assign_add_one)},
           setup=variable_state, check=variable_is_four, prepare=warm_tensorflow),
    *_pair("keras_first_call",
           {"setup": cold_model_state, "expect": "error", "also": ("race",)},
           {"setup": warm_model_state},
           workers=(call_model,) * 4, check=model_consistent, engine="stress",
           prepare=warm_keras, options={"trials": 3}),
]
