"""Answers a student might write for lesson 01 (warmup): wrong ones and correct ones.

Each exercise gets the mistakes people really make (no warmup, warming the wrong entry point,
Keras 2 advice, a lock that protects nothing, check-then-set without a lock, publishing a model
before it is built) and correct answers written differently from the lesson's solution.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Any

import numpy as np

from tests.checks.liars import lying

# --------------------------------------------------------------------------- warm_up


def warm_nothing(model: Any, example_batch: np.ndarray) -> None:
    """Serve cold: the first concurrent calls build the model and trace its predict function."""


def warm_with_predict(model: Any, example_batch: np.ndarray) -> None:
    """Warm ``predict`` while the server calls ``predict_on_batch``: that still traces."""
    model.predict(example_batch, verbose=0)


def warm_by_calling_model(model: Any, example_batch: np.ndarray) -> None:
    """Build the weights with ``model(x)``; the predict function is still made cold."""
    model(example_batch)


def warm_with_make_predict_function(model: Any, example_batch: np.ndarray) -> None:
    """Create the predict function without tracing it (and on an unbuilt model)."""
    model.make_predict_function()


def warm_with_legacy_make_predict_function(model: Any, example_batch: np.ndarray) -> None:
    """Keras 2 advice; Keras 3 has no ``_make_predict_function``, so this does nothing."""
    try:
        model._make_predict_function()
    except AttributeError:
        pass


def warm_with_one_row(model: Any, example_batch: np.ndarray) -> None:
    """Warm with a batch of one row; serving batches of another size trace again."""
    model.predict_on_batch(example_batch[:1])


def warm_in_background(model: Any, example_batch: np.ndarray) -> None:
    """Start the warmup on a thread and return at once: it races with serving."""
    threading.Thread(target=model.predict_on_batch, args=(example_batch,)).start()


def warm_on_a_thread_joined_with_a_timeout(model: Any, example_batch: np.ndarray) -> None:
    """Warm on a helper thread joined for at most 5 s: on a slow machine serving starts while
    the warm-up still runs."""
    worker = threading.Thread(target=model.predict_on_batch, args=(example_batch,))
    worker.start()
    worker.join(timeout=5)


def warm_with_zeros(model: Any, example_batch: np.ndarray) -> None:
    """Correct: any batch of the serving shape warms ``predict_on_batch``."""
    model.predict_on_batch(np.zeros_like(example_batch))


def warm_build_then_predict_on_batch(model: Any, example_batch: np.ndarray) -> None:
    """Correct: build explicitly, then trace the entry point once."""
    model.build((None, *example_batch.shape[1:]))
    model.predict_on_batch(example_batch)


def warm_with_predict_and_hide_the_traces(model: Any, example_batch: np.ndarray) -> None:
    """Cheats: warms the wrong entry point, then takes the grader's trace log off the model."""
    model.predict(example_batch, verbose=0)
    vars(model).pop("predict_step", None)


def warm_with_one_row_and_a_fake_predict_function(model: Any,
                                                  example_batch: np.ndarray) -> None:
    """Cheats: warms the wrong shape, then hides TensorFlow's own count of the traces behind a
    plain function that calls the real one."""
    model.predict_on_batch(example_batch[:1])
    real = model.predict_function
    model.predict_function = lambda *args, **kwargs: real(*args, **kwargs)


lying(warm_with_predict_and_hide_the_traces, warm_with_one_row_and_a_fake_predict_function)
WRONG_WARM_UPS = [
    warm_with_predict_and_hide_the_traces,
    warm_with_one_row_and_a_fake_predict_function,
    warm_nothing,
    warm_with_predict,
    warm_by_calling_model,
    warm_with_make_predict_function,
    warm_with_legacy_make_predict_function,
    warm_with_one_row,
    warm_in_background,
    warm_on_a_thread_joined_with_a_timeout,
]
CORRECT_WARM_UPS = [warm_with_zeros, warm_build_then_predict_on_batch]


# --------------------------------------------------------------------------- warm_up_both


def warm_both_with_predict_on_batch(model: Any, example_batch: np.ndarray) -> None:
    """Warm ``predict_on_batch`` only: the ``predict`` threads trace again."""
    model.predict_on_batch(example_batch)


def warm_both_with_predict(model: Any, example_batch: np.ndarray) -> None:
    """Warm ``predict`` only, the usual Keras 3 advice: ``predict_on_batch`` traces again."""
    model.predict(example_batch, verbose=0)


def warm_both_by_calling_model(model: Any, example_batch: np.ndarray) -> None:
    """Build the weights with ``model(x)``: neither entry point's function is traced."""
    model(example_batch)


def warm_both_predict_one_row(model: Any, example_batch: np.ndarray) -> None:
    """Both entry points, but ``predict`` with one row: serving full batches traces again."""
    model.predict_on_batch(example_batch)
    model.predict(example_batch[:1], verbose=0)


def warm_both_on_two_threads(model: Any, example_batch: np.ndarray) -> None:
    """Warm each entry point on its own thread at once: the two first calls race."""
    workers = [threading.Thread(target=model.predict, args=(example_batch,),
                                kwargs={"verbose": 0}),
               threading.Thread(target=model.predict_on_batch, args=(example_batch,))]
    for worker in workers:
        worker.start()


def warm_both_on_two_joined_threads(model: Any, example_batch: np.ndarray) -> None:
    """Warm each entry point on its own thread at once, then join both: the two first calls
    race on the cold model (a thread may raise unseen), though both are traced by the end."""
    workers = [threading.Thread(target=model.predict, args=(example_batch,),
                                kwargs={"verbose": 0}),
               threading.Thread(target=model.predict_on_batch, args=(example_batch,))]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def warm_both_on_a_thread_joined_with_a_timeout(model: Any, example_batch: np.ndarray) -> None:
    """Warm on a helper thread joined for at most 5 s: on a slow machine the server starts
    serving while the warm-up still runs."""
    def warm() -> None:
        model.predict(example_batch, verbose=0)
        model.predict_on_batch(example_batch)

    worker = threading.Thread(target=warm)
    worker.start()
    worker.join(timeout=5)


def warm_both_predict_then_predict_on_batch(model: Any, example_batch: np.ndarray) -> None:
    """Correct: ``predict`` first, then ``predict_on_batch``, with a batch of zeros."""
    zeros = np.zeros_like(example_batch)
    model.predict(zeros, verbose=0)
    model.predict_on_batch(zeros)


def warm_both_in_a_loop(model: Any, example_batch: np.ndarray) -> None:
    """Correct: each entry point the server uses, in a loop, ``predict_on_batch`` first."""
    for entry in (model.predict_on_batch, functools.partial(model.predict, verbose=0)):
        entry(example_batch)


#: No warm-up and ``make_predict_function`` fail here as they fail ``warm_up`` (threads raise
#: on the cold model); they are not run again, to keep the suite in its budget.
# The warm-up's traces run on a thread other than its caller's in every trial.
for _decided in (warm_on_a_thread_joined_with_a_timeout, warm_both_on_two_joined_threads,
                 warm_both_on_a_thread_joined_with_a_timeout):
    _decided.decided_by_construction = True

WRONG_WARM_UPS_BOTH = [
    warm_both_with_predict_on_batch,
    warm_both_with_predict,
    warm_both_by_calling_model,
    warm_both_predict_one_row,
    warm_both_on_two_threads,
    warm_both_on_two_joined_threads,
    warm_both_on_a_thread_joined_with_a_timeout,
]
CORRECT_WARM_UPS_BOTH = [warm_both_predict_then_predict_on_batch, warm_both_in_a_loop]


# --------------------------------------------------------------------------- SharedPredictor


class PassThroughPredictor:
    """No protection at all: concurrent first calls go straight into the cold model."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __call__(self, batch: np.ndarray) -> Any:
        return self.model.predict_on_batch(batch)


class LockPerCallPredictor:
    """A new lock on every call: each thread holds its own lock, nobody waits."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def __call__(self, batch: np.ndarray) -> Any:
        with threading.Lock():
            return self.model.predict_on_batch(batch)


class FlagWithoutLockPredictor:
    """Check-then-set without a lock: every thread sees ``warm`` False and warms."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.warm = False

    def __call__(self, batch: np.ndarray) -> Any:
        if not self.warm:
            self.model.predict_on_batch(batch)
            self.warm = True
        return self.model.predict_on_batch(batch)


class LockOnlyTheFlagPredictor:
    """Locks the flag but not the warmup: threads still warm at the same time."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.warm = False
        self.lock = threading.Lock()

    def __call__(self, batch: np.ndarray) -> Any:
        if not self.warm:
            self.model.predict_on_batch(batch)
            with self.lock:
                self.warm = True
        return self.model.predict_on_batch(batch)


class MakePredictFunctionUnderLockPredictor:
    """Creates the predict function under a lock, but tracing happens later, unlocked."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.ready = False
        self.lock = threading.Lock()

    def __call__(self, batch: np.ndarray) -> Any:
        with self.lock:
            if not self.ready:
                self.model.make_predict_function()
                self.ready = True
        return self.model.predict_on_batch(batch)


class BuildUnderLockPredictor:
    """Builds the weights under a lock; the predict function is still made by every thread."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()

    def __call__(self, batch: np.ndarray) -> Any:
        with self.lock:
            if not self.model.built:
                self.model(batch)
        return self.model.predict_on_batch(batch)


class WarmPredictUnderLockPredictor:
    """Warms ``predict`` under a lock but serves ``predict_on_batch``: a second thread traces."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.ready = False
        self.lock = threading.Lock()

    def __call__(self, batch: np.ndarray) -> Any:
        with self.lock:
            if not self.ready:
                self.model.predict(batch, verbose=0)
                self.ready = True
        return self.model.predict_on_batch(batch)


class SerializedPredictor:
    """Correct and simple: every call holds one lock (slower under load, never wrong)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()

    def __call__(self, batch: np.ndarray) -> Any:
        with self.lock:
            return self.model.predict_on_batch(batch)


class EventGatePredictor:
    """Correct: the thread that claims the first call warms; the others wait on an Event."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.claim = threading.Lock()
        self.claimed = False
        self.warm = threading.Event()

    def __call__(self, batch: np.ndarray) -> Any:
        if not self.warm.is_set():
            with self.claim:
                mine = not self.claimed
                self.claimed = True
            if mine:
                try:
                    self.model.predict_on_batch(batch)
                finally:
                    self.warm.set()
            else:
                self.warm.wait()
        return self.model.predict_on_batch(batch)


class ClaimWithoutLockPredictor:
    """An Event gate whose first-call claim is a check-then-set without a lock: two threads
    can both see ``started`` False and both make the first call (real threads under the GIL
    almost never switch inside that gap; ``explore`` does)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.started = False
        self.ready = threading.Event()

    def __call__(self, batch: np.ndarray) -> Any:
        if not self.ready.is_set():
            if not self.started:
                self.started = True
                try:
                    return self.model.predict_on_batch(batch)
                finally:
                    self.ready.set()
            self.ready.wait()
        return self.model.predict_on_batch(batch)


class BuiltFastPathPredictor:
    """Double-checked locking on ``model.built``: Keras sets it early in the first call,
    before tracing is done, so a thread arriving then skips the lock and calls the model in
    the middle of the first call."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()

    def __call__(self, batch: np.ndarray) -> Any:
        if not self.model.built:
            with self.lock:
                if not self.model.built:
                    return self.model.predict_on_batch(batch)
        return self.model.predict_on_batch(batch)


class ConditionStatePredictor:
    """Correct: cold, warming, warm under a Condition; the claimer calls outside the lock and
    the others wait for the state to leave "warming"."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.cond = threading.Condition()
        self.state = "cold"

    def __call__(self, batch: np.ndarray) -> Any:
        if self.state != "warm":
            with self.cond:
                mine = self.state == "cold"
                if mine:
                    self.state = "warming"
                else:
                    self.cond.wait_for(lambda: self.state != "warming")
            if mine:
                try:
                    return self.model.predict_on_batch(batch)
                finally:
                    with self.cond:
                        self.state = "warm"
                        self.cond.notify_all()
        return self.model.predict_on_batch(batch)


WRONG_PREDICTORS = [
    PassThroughPredictor,
    LockPerCallPredictor,
    FlagWithoutLockPredictor,
    LockOnlyTheFlagPredictor,
    MakePredictFunctionUnderLockPredictor,
    BuildUnderLockPredictor,
    WarmPredictUnderLockPredictor,
    ClaimWithoutLockPredictor,
    BuiltFastPathPredictor,
]
CORRECT_PREDICTORS = [SerializedPredictor, EventGatePredictor, ConditionStatePredictor]


# --------------------------------------------------------------------------- LazyModel


def _zeros(input_shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros((1, *input_shape), dtype="float32")


class NoLockLazyModel:
    """Check-then-set without a lock: several threads see ``None`` and each build a model."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape, self.model = factory, input_shape, None

    def get(self) -> Any:
        if self.model is None:
            model = self.factory()
            model(_zeros(self.input_shape))
            self.model = model
        return self.model


class LockPerCallLazyModel:
    """A new lock on every call protects nothing."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape, self.model = factory, input_shape, None

    def get(self) -> Any:
        with threading.Lock():
            if self.model is None:
                model = self.factory()
                model(_zeros(self.input_shape))
                self.model = model
        return self.model


class PublishBeforeBuildLazyModel:
    """Double-checked locking that publishes the model before building it.

    A thread arriving during the build takes the fast path, gets the unbuilt model and calls
    it while the first thread is still building: both create the weights.
    """

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape, self.model = factory, input_shape, None
        self.lock = threading.Lock()

    def get(self) -> Any:
        if self.model is not None:
            return self.model
        with self.lock:
            if self.model is None:
                self.model = self.factory()
                self.model(_zeros(self.input_shape))
        return self.model


class BuildWithoutWeightsLazyModel:
    """Locked, but ``model.build(shape)`` on a subclassed model creates no weights."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape, self.model = factory, input_shape, None
        self.lock = threading.Lock()

    def get(self) -> Any:
        with self.lock:
            if self.model is None:
                model = self.factory()
                model.build((None, *self.input_shape))
                self.model = model
        return self.model


class NeverBuiltLazyModel:
    """Creates the model once under a lock but leaves building to the first calls."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.model = factory, None
        self.lock = threading.Lock()

    def get(self) -> Any:
        with self.lock:
            if self.model is None:
                self.model = self.factory()
        return self.model


class CachedFactoryLazyModel:
    """``functools.cache`` is safe to share but runs the function once per concurrent miss."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        @functools.cache
        def load() -> Any:
            model = factory()
            model(_zeros(input_shape))
            return model

        self.load = load

    def get(self) -> Any:
        return self.load()


class EagerLazyModel:
    """Not lazy: builds in ``__init__`` (safe, but the exercise asks for a lazy model)."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.model = factory()
        self.model(_zeros(input_shape))

    def get(self) -> Any:
        return self.model


class LockEverythingLazyModel:
    """Correct: the whole of ``get`` under one lock."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape, self.model = factory, input_shape, None
        self.lock = threading.Lock()

    def get(self) -> Any:
        with self.lock:
            if self.model is None:
                model = self.factory()
                model(_zeros(self.input_shape))
                self.model = model
            return self.model


class RLockDictLazyModel:
    """Correct: a one-slot dict filled under an RLock, built before it is stored."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape = factory, input_shape
        self.slot: dict[str, Any] = {}
        self.lock = threading.RLock()

    def get(self) -> Any:
        model = self.slot.get("model")
        if model is None:
            with self.lock:
                if "model" not in self.slot:
                    fresh = self.factory()
                    fresh(_zeros(self.input_shape))
                    self.slot["model"] = fresh
                model = self.slot["model"]
        return model


class LockMadeOnFirstUseLazyModel:
    """The lock itself is created check-then-act on the first ``get()``: two first callers can
    each make their own lock and both build (issue #18, class 1: 0 in 3,000 real trials under
    the GIL; ``explore`` finds it)."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape, self.model = factory, input_shape, None
        self.lock: Any = None

    def get(self) -> Any:
        if self.lock is None:
            self.lock = threading.Lock()
        with self.lock:
            if self.model is None:
                model = self.factory()
                model(_zeros(self.input_shape))
                self.model = model
            return self.model


class ConditionLazyModel:
    """Correct, unusual: the first caller builds outside any lock while the others wait on a
    Condition until it publishes the built model."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape = factory, input_shape
        self.model: Any = None
        self.building = False
        self.ready = threading.Condition()

    def get(self) -> Any:
        with self.ready:
            if self.model is None and not self.building:
                self.building = True
                builder = True
            else:
                builder = False
                self.ready.wait_for(lambda: self.model is not None)
        if builder:
            model = self.factory()
            model(_zeros(self.input_shape))
            with self.ready:
                self.model = model
                self.ready.notify_all()
        return self.model


WRONG_LAZY_MODELS = [
    LockMadeOnFirstUseLazyModel,
    NoLockLazyModel,
    LockPerCallLazyModel,
    PublishBeforeBuildLazyModel,
    BuildWithoutWeightsLazyModel,
    NeverBuiltLazyModel,
    CachedFactoryLazyModel,
    EagerLazyModel,
]
CORRECT_LAZY_MODELS = [LockEverythingLazyModel, RLockDictLazyModel, ConditionLazyModel]


# --------------------------------------------------------------------------- liars
# Answers whose return values lie: they say they equal (or are close to) any output.


class AlwaysClose:
    """A made-up output value: equal to anything, and as close to it as any tolerance asks."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __sub__(self, other: object) -> AlwaysClose:
        return self

    __rsub__ = __sub__

    def __abs__(self) -> float:
        return 0.0

    def __le__(self, other: object) -> bool:
        return True

    __lt__ = __ge__ = __gt__ = __le__

    def __float__(self) -> float:
        return 0.0

    __hash__ = object.__hash__


def lying_outputs(batch: Any) -> np.ndarray:
    """A batch of :class:`AlwaysClose` values, one row of four per input row (after a few
    milliseconds, as a forward pass would take)."""
    time.sleep(0.005)
    return np.array([[AlwaysClose() for _ in range(4)] for _ in range(len(batch))], dtype=object)


def warm_then_serve_lies(model: Any, example_batch: np.ndarray) -> None:
    """Builds the weights, then swaps ``predict_on_batch`` for one returning made-up values
    that say they equal any output (nothing is ever traced)."""
    model(example_batch)
    model.predict_on_batch = lying_outputs


class LyingPredictor:
    """Builds the model under a lock, then returns made-up values that equal any output."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.lock = threading.Lock()

    def __call__(self, batch: np.ndarray) -> Any:
        with self.lock:
            if not self.model.built:
                self.model(batch)
        return [list(row) for row in lying_outputs(batch)]


class StandInModel:
    """Not a Keras model: four made-up weights, and outputs that equal any output."""

    weights = [0.0, 0.0, 0.0, 0.0]

    def __call__(self, batch: Any) -> np.ndarray:
        return lying_outputs(batch)


class StandInLazyModel:
    """Hands out a stand-in whose weights and outputs lie (the factory's model only for the
    one-thread check's input width)."""

    def __init__(self, factory: Any, input_shape: tuple[int, ...]) -> None:
        self.factory, self.input_shape, self.model = factory, input_shape, None
        self.lock = threading.Lock()

    def get(self) -> Any:
        with self.lock:
            if self.model is None:
                model = self.factory()
                model(_zeros(self.input_shape))
                self.model = model if self.input_shape == (7,) else StandInModel()
            return self.model


WRONG_WARM_UPS += lying(warm_then_serve_lies)
WRONG_PREDICTORS += lying(LyingPredictor)
WRONG_LAZY_MODELS += lying(StandInLazyModel)
