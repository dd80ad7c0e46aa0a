"""Graded properties for lesson 07, the capstone: one shared Keras model behind a service.

Students write ``InferenceService(model, example)`` with ``predict(x)`` (one request: one row
shaped like ``example``; returns the model's output row), ``update_weights(weights)`` (a full
list in ``set_weights`` order; once it returns, every later request uses it), ``stats()`` (a
dict with ``requests``, ``batches`` and ``errors``) and ``close()``. Four graded parts, each a
property under load with fixed seeds and counts and no retries:

- :func:`check_cold_start` (``stress``): a model that has never been called; 16 clients
  released together send two requests each. No client may raise, every answer must equal the
  model's output for that client's own row (a twin model built on one thread, ``np.allclose``)
  and the model must hold exactly its four weights (a racy build adds duplicates silently).
- :func:`check_weight_updates` (``stress``): a :func:`autograder.checks.variables.versioned_model`
  (every output row encodes the version of each layer) is served to 6 clients while a writer
  calls ``update_weights`` with versions 2, 3, ...; no answer may mix versions, a client never
  sees the version go backwards, a request that starts after ``update_weights`` returned sees
  that version or a newer one, and the last requests see the last version.
- :func:`check_accounting` (real threads, bounded waits): one client in sequence, then 16 at
  once with a few malformed requests among them, then ``close()`` while 12 clients are sending
  to a slow model. Every accepted request is answered exactly with its own row, malformed ones
  raise ``ValueError`` in their own caller only, the statistics are exact, ``close()`` answers
  what was queued, joins the service's threads and makes later calls raise ``RuntimeError``.
  A client or ``close()`` that does not return in time, or a thread left running, fails with
  the names and stacks of the stuck threads. Not graded: a count kept with a plain ``+=``
  on the client threads (real threads under the GIL practically never lose one, and
  ``explore`` needed 3 to over 200 schedules to find it, too many for the budget).
- :func:`check_throughput` (real threads): memory first: the bytes of Keras variables the
  answer creates on top of the model's own (found through ``gc``) while 16 clients are
  connected must stay within :data:`MAX_EXTRA_COPIES` copies of the model (one copy per
  client, :class:`PerThreadService`, holds 16). Then requests per second of the answer
  against :class:`GlobalLockService` (one lock around every call), measured alternately in
  the same run, 16 clients, on :func:`busy_model` (a fixed per-call cost that holds the GIL,
  so that the ratio measures batching, not the machine's load); the answer's median must
  reach :data:`MIN_SPEEDUP` times the lock's. The two serve separate models, and every
  request the answer serves must get its row's output, computed by the model it was given
  (its slow layer records the rows it computes): no answer can slow the baseline, skip the
  slow layer or answer without the model.

The notebook's three designs (:class:`GlobalLockService`, :class:`PerThreadService`, the
student's batching service) and their measurements (:func:`benchmark`, :func:`plot_designs`)
live here too.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from autograder.checks import variables, warmup
from autograder.checks.cache import frozen, memo
from autograder.checks.child import Crashed, run_in_children
from autograder.checks.plain import plain, plain_array
from autograder.checks.report import call_text, require_ok
from autograder.harness import Result, stress
from autograder.harness.tamper import opaque

SEED = 707
#: Features per request (the input width of the served model).
FEATURES = 8
#: Clients released together in the cold-start and throughput checks.
CLIENTS = 16
#: Wall-clock budget of one ``stress`` run (a correct answer needs about one second).
TIMEOUT_S = 10.0

#: Trials of the cold-start check. A service whose two batchers build the model together is
#: caught in about 9 of 10 trials (one batcher can take every first request and warm the
#: model alone): with 3 trials a fresh-clone suite saw it pass 1 grading run of 20; with 5 a
#: run misses it with probability about 1e-5.
COLD_TRIALS = 5
COLD_REQUESTS = 2

UPDATE_TRIALS = 3
UPDATE_CLIENTS = 6
UPDATES = 6
#: Pause between two requests of one client while weights are updated: clients arrive, they
#: do not queue back to back (with a plain lock, back-to-back readers can starve the writer).
UPDATE_GAP_S = 0.0005
#: The version the served model starts at (version 0 is a model whose weights were never set).
FIRST_VERSION = variables.FIRST_VERSION

ACCOUNT_SEQUENTIAL = 5
ACCOUNT_CLIENTS = 16
ACCOUNT_REQUESTS = 8
#: Clients (of ACCOUNT_CLIENTS) whose third request is malformed (a row of the wrong width).
ACCOUNT_BAD_CLIENTS = 4
CLOSE_CLIENTS = 12
CLOSE_REQUESTS = 4
#: Seconds each call of the slow model takes in the close test, so that requests queue up.
SLOW_CALL_S = 0.05
#: The close test's late clients (every other one) send their first request this long after
#: the early ones, so they wait in the queue while the early ones' batch is computed.
LATE_START_S = 0.01
#: ``close()`` is called this long after every late client has sent its first request.
CLOSE_AFTER_S = 0.005
#: While requests are waiting, the longest time without any answer before they count as
#: stuck. The slow model answers a batch every 50 ms, but a new batch size can make Keras
#: trace the predict function again, which took over a second on the loaded machine.
STALL_S = 3.0
#: The longest a client phase, or close(), may take in all, progress or not.
STUCK_S = 10.0
#: How long creating a service and making one request on one thread may take.
SMOKE_S = 5.0
#: How long the service's threads may take to end after close() returned.
JOIN_GRACE_S = 0.5

THROUGHPUT_ROUNDS = 3
THROUGHPUT_REQUESTS = 4
#: Seconds every call of the throughput check's model spends in a Python loop, on top of its
#: layers, whatever the batch size (:func:`slow_model` with ``busy``): a fixed per-call cost
#: that holds the GIL, so the ratio measures batching and holds on a loaded machine.
THROUGHPUT_CALL_S = 0.002
#: Required requests/s of the answer over :class:`GlobalLockService`, measured in the same run.
MIN_SPEEDUP = 2.0
#: Extra copies of the model's weights (as Keras variables) the answer may create.
MAX_EXTRA_COPIES = 2


# --------------------------------------------------------------------------- models


def serving_model(seed: int = SEED) -> Any:
    """The served model: lesson 01's ``warmup.tiny_sequential(seed)``, never called.

    ``Sequential([Dense(16, relu), Dense(4)])`` without a ``keras.Input``: its weights are
    created by its first call, drawn from ``seed``, so two models made with the same seed get
    the same weights, whichever thread builds them.
    """
    return warmup.tiny_sequential(seed)


def requests_for(seed: int, clients: int, per_client: int, features: int = FEATURES
                 ) -> list[list[np.ndarray]]:
    """``per_client`` float32 request rows of width ``features`` for each of ``clients``."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(size=(clients, per_client, features)).astype("float32")
    return [[rows[c, r] for r in range(per_client)] for c in range(clients)]


def reference_outputs(seed: int, rows: Sequence[np.ndarray]) -> np.ndarray:
    """What :func:`serving_model` ``(seed)`` answers for each row, run on this thread alone.

    Read-only, and cached per process by seed and rows for the grader's own calls (the
    graded runs repeat the same seeds).
    """
    stacked = np.stack(rows)
    return _REFERENCES((seed, stacked.shape, stacked.tobytes()),
                       lambda: frozen(serving_model(seed)(stacked)))


_REFERENCES = memo("the capstone's reference outputs")


def same_answer(output: Any, expected: np.ndarray) -> bool:
    """True when ``output`` is the row ``expected`` (float32 round-off allowed)."""
    try:
        got = np.asarray(output, dtype="float64")
    except (TypeError, ValueError):
        return False
    return got.shape == expected.shape and bool(np.allclose(got, expected, rtol=1e-4,
                                                            atol=1e-5))


def _answer(output: Any) -> np.ndarray:
    """What ``predict()`` returned, as plain numbers copied the moment it came back.

    Judged later, a value could still change (a view of a buffer the service reuses) or run
    the service's code (an object that computes its row when read); the copy does neither.

    Raises:
        NotPlainData: (an AssertionError) when it is not an array of numbers.
    """
    return np.array(plain_array(output, "predict()"))


def _pause(x: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    time.sleep(float(seconds))
    return x


def _busy(x: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    end = time.perf_counter() + float(seconds)
    while time.perf_counter() < end:
        pass
    return x


def _recording(body: Callable[[np.ndarray, np.ndarray], np.ndarray],
               record: Callable[[np.ndarray], Any]) -> Callable[..., np.ndarray]:
    """``body`` that first hands ``record`` a copy of the rows it was given.

    Opaque: the model's layer holds only the hook, so no closure leads an answer to
    ``record`` (it could add the rows it never served).
    """
    def run(x: np.ndarray, seconds: np.ndarray) -> np.ndarray:
        record(np.array(x))
        return body(x, seconds)

    return opaque(run)


def slow_model(seed: int = SEED, seconds: float = SLOW_CALL_S, *, busy: bool = False,
               record: Callable[[np.ndarray], Any] | None = None) -> Any:
    """:func:`serving_model` whose every call takes ``seconds`` longer, whatever its batch size.

    The extra time is a ``tf.numpy_function`` layer at the end, so it runs in every entry
    point (``predict_on_batch``, ``model(x)``, ``predict``). By default it sleeps, releasing
    the GIL as waiting for a device does. With ``busy`` it spins in a Python loop instead,
    keeping the interpreter (the GIL) as Python pre- and post-processing of a call does:
    calls from several threads then do not overlap, and only serving several requests per
    call makes the model answer more of them. With ``record``, every call first hands it the
    rows the layer was given (the model's answers: the layer returns them unchanged).
    """
    import keras
    import tensorflow as tf

    body = _busy if busy else _pause
    if record is not None:
        body = _recording(body, record)

    class Pause(keras.layers.Layer):
        def call(self, x: Any) -> Any:
            y = tf.numpy_function(body, [x, np.float32(seconds)], tf.float32, stateful=True)
            y.set_shape(x.shape)
            return y

        def compute_output_shape(self, shape: Any) -> Any:
            return shape

    model = serving_model(seed)
    model.add(Pause(name="pause"))
    return model


def weight_bytes(model: Any) -> int:
    """Bytes of one copy of ``model``'s weights."""
    return variables.parameter_bytes(model)


def keras_variable_bytes() -> dict[int, int]:
    """Bytes of every Keras variable alive in this process, by id (through ``gc``)."""
    return variables._keras_weight_bytes()


# --------------------------------------------------------------------------- reference designs


class GlobalLockService:
    """The simplest safe service: one lock around every call of the model, one row per call."""

    def __init__(self, model: Any, example: np.ndarray) -> None:
        self._model = model
        self._shape = np.shape(example)
        model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        self._lock = threading.Lock()
        self._counts = {"requests": 0, "batches": 0, "errors": 0}
        self._closed = False

    def predict(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype="float32")
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._counts["requests"] += 1
            if x.shape != self._shape:
                self._counts["errors"] += 1
                raise ValueError(f"expected a request of shape {self._shape}, got {x.shape}")
            self._counts["batches"] += 1
            return np.asarray(self._model.predict_on_batch(x[None]))[0]

    def update_weights(self, weights: list[np.ndarray]) -> None:
        with self._lock:
            self._model.set_weights(weights)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def close(self) -> None:
        with self._lock:
            self._closed = True


def _fresh_layer(layer: Any) -> Any:
    """A new layer like ``layer`` (its initializers replaced: the weights are loaded anyway)."""
    config = layer.get_config()
    for key in [k for k in config if k.endswith("_initializer")]:
        config[key] = "zeros"
    return type(layer).from_config(config)


class PerThreadService:
    """One copy of the model per client thread: no lock around the model, one copy each.

    Each thread clones the model the first time it calls, and loads the latest published
    weights into its copy before a request when they changed. The copies live as long as
    their threads.
    """

    def __init__(self, model: Any, example: np.ndarray) -> None:
        self._model = model
        self._shape = np.shape(example)
        model.predict_on_batch(np.zeros((1, *self._shape), dtype="float32"))
        self._lock = threading.Lock()
        self._weights = (0, model.get_weights())
        self._local = threading.local()
        self._counts = {"requests": 0, "batches": 0, "errors": 0}
        self._closed = False

    def _copy(self) -> Any:
        import keras

        local = self._local
        with self._lock:
            version, weights = self._weights
            if getattr(local, "model", None) is None:
                copy = keras.models.clone_model(self._model, clone_function=_fresh_layer)
                local.model, local.version = copy, -1
        if local.version != version:
            local.model.set_weights(weights)
            local.version = version
        return local.model

    def predict(self, x: Any) -> np.ndarray:
        x = np.asarray(x, dtype="float32")
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is closed")
            self._counts["requests"] += 1
            if x.shape != self._shape:
                self._counts["errors"] += 1
                raise ValueError(f"expected a request of shape {self._shape}, got {x.shape}")
            self._counts["batches"] += 1
        return np.asarray(self._copy().predict_on_batch(x[None]))[0]

    def update_weights(self, weights: list[np.ndarray]) -> None:
        with self._lock:
            self._weights = (self._weights[0] + 1, [np.array(w) for w in weights])

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def close(self) -> None:
        with self._lock:
            self._closed = True


# --------------------------------------------------------------------------- threads and stacks


def _stack_lines(thread: threading.Thread, depth: int = 4) -> list[str]:
    frame = sys._current_frames().get(thread.ident or -1)
    if frame is None:
        return []
    frames = traceback.extract_stack(frame)[-depth:]
    return [f"{f.name} ({f.filename.rsplit('/', 1)[-1]}:{f.lineno}) {(f.line or '').strip()}"
            for f in frames]


def describe_threads(threads: Sequence[threading.Thread]) -> str:
    """Each thread's name and where it is now (its innermost frames), one block per thread."""
    blocks = []
    for thread in threads:
        lines = _stack_lines(thread)
        where = "\n".join(f"      {line}" for line in lines) or "      (no stack)"
        blocks.append(f"  thread {thread.name!r}:\n{where}")
    return "\n".join(blocks)


#: The threads the grader started (clients, close() and smoke runners), by ``id``: a thread the
#: service starts can take any name, so the grader's threads are told apart by identity.
_GRADER_THREADS: weakref.WeakValueDictionary[int, threading.Thread] = (
    weakref.WeakValueDictionary())


def _grader_thread(thread: threading.Thread) -> threading.Thread:
    _GRADER_THREADS[id(thread)] = thread
    return thread


def _is_grader_thread(thread: threading.Thread) -> bool:
    return _GRADER_THREADS.get(id(thread)) is thread


def _new_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not in ``before`` (by identity, asking ``threading`` itself:
    a service's thread class could answer ``is_alive()`` or ``==`` as it likes)."""
    known = {id(t) for t in before}
    return [t for t in threading.enumerate()
            if id(t) not in known and threading.Thread.is_alive(t)]


def _start(body: Callable[[], Any], name: str) -> tuple[threading.Thread, list[BaseException]]:
    """Run ``body`` on a new daemon thread; the list receives what it raises."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as error:  # noqa: BLE001 - handed to the caller
            errors.append(error)

    thread = _grader_thread(threading.Thread(target=run, name=name, daemon=True))
    thread.start()
    return thread, errors


def _within(body: Callable[[], Any], seconds: float, name: str
            ) -> tuple[bool, BaseException | None, threading.Thread]:
    """Run ``body`` on a daemon thread; ``(finished, error, thread)`` after at most ``seconds``."""
    thread, errors = _start(body, name)
    thread.join(seconds)
    return not thread.is_alive(), (errors[0] if errors else None), thread


def _close_quietly(service: Any, seconds: float = 0.3) -> None:
    """Close a service after a check, without waiting long for a broken close()."""
    if service is not None and hasattr(service, "close"):
        _within(service.close, seconds, "grader-close")


@dataclass
class Call:
    """One request a client made: its row, when, and what came back."""

    client: int
    index: int
    x: np.ndarray
    start: float = 0.0
    end: float = 0.0
    output: Any = None
    error: BaseException | None = None


@dataclass
class ClientRun:
    """Requests made by client threads released together.

    Attributes:
        calls: Every request, per client, in the order the client made them.
        seconds: From the release until the last client finished (or the deadline).
        stuck: Client threads still inside a request at the deadline.
    """

    calls: list[list[Call]]
    seconds: float
    stuck: list[threading.Thread] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    @property
    def done(self) -> list[Call]:
        """The requests that were answered (or raised)."""
        return [c for mine in self.calls for c in mine if c.end]


def run_clients(service: Any, rows: Sequence[Sequence[np.ndarray]], *, deadline_s: float,
                gap_s: float = 0.0, when_released: Callable[[ClientRun], Any] | None = None,
                on_finished: Callable[[], Any] | None = None,
                delays: Sequence[float] = ()) -> ClientRun:
    """One real thread per client sends its rows to ``service.predict``, one after another.

    The clients are released together by a barrier; ``when_released`` then runs on this
    thread with the (still running) :class:`ClientRun` (``close()`` in the close test).
    Client ``c`` waits ``delays[c]`` seconds after the release before its first request.
    Waits at most ``deadline_s`` for the clients.
    ``on_finished`` runs on this thread after every client finished its requests but before
    any client thread ends (to measure what lives as long as the threads do).
    """
    calls = [[Call(c, i, np.array(x)) for i, x in enumerate(mine)] for c, mine in enumerate(rows)]
    go = threading.Barrier(len(rows) + 1)
    finished = threading.Barrier(len(rows) + 1) if on_finished else None
    leave = threading.Event()

    def client(mine: list[Call], delay: float) -> None:
        go.wait()
        if delay:
            time.sleep(delay)
        for call in mine:
            call.start = time.perf_counter()
            try:
                call.output = _answer(service.predict(call.x))
            except Exception as error:  # noqa: BLE001 - recorded for the check
                call.error = error
            call.end = time.perf_counter()
            if gap_s:
                time.sleep(gap_s)
        if finished is not None:
            finished.wait()
            leave.wait(STUCK_S)

    delays = list(delays) + [0.0] * (len(calls) - len(delays))
    threads = [_grader_thread(threading.Thread(target=client, args=(mine, delays[c]),
                                               name=f"client-{c}", daemon=True))
               for c, mine in enumerate(calls)]
    for thread in threads:
        thread.start()
    go.wait()
    start = time.perf_counter()
    run = ClientRun(calls, 0.0)
    if when_released is not None:
        when_released(run)
    deadline = start + deadline_s
    if finished is not None and on_finished is not None:
        try:
            finished.wait(timeout=max(0.0, deadline - time.perf_counter()))
            on_finished()
        except threading.BrokenBarrierError:
            pass
        leave.set()
    wait_for_progress(threads, run, start, deadline)
    end = max((c.end for mine in calls for c in mine if c.end), default=time.perf_counter())
    run.seconds = end - start
    run.stuck = [t for c, t in enumerate(threads)
                 if t.is_alive() and any(x.start and not x.end for x in calls[c])]
    run.latencies = [c.end - c.start for c in run.done]
    return run


def _last_answer(run: ClientRun, since: float) -> float:
    return max([since, *(c.end for mine in run.calls for c in mine)])


def _in_flight(run: ClientRun) -> list[Call]:
    """Requests sent and not answered yet."""
    return [c for mine in run.calls for c in mine if c.start and not c.end]


def wait_for_progress(threads: Sequence[threading.Thread], run: ClientRun, since: float,
                      deadline: float, *, clients: bool = True) -> None:
    """Wait until ``threads`` end or ``deadline`` (a ``time.perf_counter()`` value) passes,
    or until they are stuck: no request answered for :data:`STALL_S` while one is waiting
    (``clients``: the threads are the clients), or at all (otherwise: a thread such as
    ``close()`` that should end once the waiting requests are answered)."""
    while True:
        alive = [t for t in threads if t.is_alive()]
        now = time.perf_counter()
        if not alive or now > deadline:
            return
        waiting = _in_flight(run) if clients else True
        if waiting and now - _last_answer(run, since) > STALL_S:
            return
        alive[0].join(0.02)


def _stuck_message(run: ClientRun, what: str, before: set[threading.Thread] | None = None
                   ) -> str:
    waiting = _in_flight(run)
    service = [] if before is None else [
        t for t in _new_threads(before) if not _is_grader_thread(t)]
    shown = describe_threads(run.stuck[:4]) + (
        f"\n  ... and {len(run.stuck) - 4} more client threads" if len(run.stuck) > 4 else "")
    if service:
        shown += f"\nThe service's own threads:\n{describe_threads(service)}"
    return (f"{len(run.stuck)} client thread(s) were still waiting inside predict() after "
            f"{what}: no request was answered for {STALL_S:g} s ({len(waiting)} request(s) "
            "never answered). A request was lost: queued but never served, or its caller never "
            f"woken. Where the stuck threads are:\n{shown}")


# --------------------------------------------------------------------------- smoke


def _smoke(service_class: Callable[..., Any], exercise: str) -> None:
    """One service, one request, on one thread, bounded; a wrong answer gets a plain message."""
    model = serving_model(SEED + 1)
    rows = requests_for(SEED + 1, 1, 2)[0]
    expected = reference_outputs(SEED + 1, rows)
    holder: dict[str, Any] = {}

    def once() -> None:
        holder["service"] = service = service_class(model, rows[0].copy())
        holder["output"] = _answer(service.predict(rows[1]))

    finished, error, thread = _within(once, SMOKE_S, "grader-smoke")
    if not finished:
        _close_quietly(holder.get("service"), 0.5)
        raise AssertionError(
            f"{exercise}: used on one thread, creating the service and making one request "
            f"did not return within {SMOKE_S:g} s. Where it is stuck:\n"
            f"{describe_threads([thread])}")
    if error is not None:
        _close_quietly(holder.get("service"))
        raise AssertionError(
            f"{exercise}: used on one thread, InferenceService(model, example) and one "
            f"predict(x) raised {warmup.describe(error)} (before any client threads were "
            "started). Make it work on one thread first.")
    _close_quietly(holder.get("service"))
    if not same_answer(holder["output"], expected[1]):
        raise AssertionError(
            f"{exercise}: used on one thread, predict(x) returned {holder['output']!r}, "
            f"expected the model's output row for x, {np.round(expected[1], 4).tolist()}")


def _require(result: Result, exercise: str, again: str, errors: Sequence[str] = ()) -> None:
    """Pass, or fail with the harness's explanation, the errors the clients raised and the
    call that gives the verdict again (``again``, see :func:`require_ok`)."""
    listed = "\n".join(f"  {error}" for error in sorted(set(errors))[:5])
    require_ok(result, exercise=exercise, show_figure=result.schedules_run > 0,
               again=again if result.schedules_run else None,
               details=f"What the clients raised:\n{listed}" if listed else None)


# --------------------------------------------------------------------------- part 1: cold start


@dataclass
class ColdTrial:
    model: Any
    service: Any
    rows: list[list[np.ndarray]]
    expected: list[np.ndarray]
    outputs: list[list[Any]]
    errors: list[str] = field(default_factory=list)


def run_cold_start(service_class: Callable[..., Any], *, trials: int = COLD_TRIALS,
                   clients: int = CLIENTS, seed: int = SEED,
                   record: list[ColdTrial] | None = None) -> Result:
    """Per trial: a never-called model, a new service, ``clients`` clients released together.

    Each client sends :data:`COLD_REQUESTS` requests of its own. A trial passes when no client
    raised, every answer equals the model's output for that client's row, and the model holds
    exactly :data:`autograder.checks.warmup.EXPECTED_WEIGHTS` weights.
    """
    counter = iter(range(10**6))

    def setup() -> ColdTrial:
        trial_seed = seed + 101 * next(counter)
        rows = requests_for(trial_seed, clients, COLD_REQUESTS)
        flat = [x for mine in rows for x in mine]
        expected = list(reference_outputs(trial_seed, flat))
        model = serving_model(trial_seed)
        trial = ColdTrial(model, None, rows, expected, [[None] * COLD_REQUESTS
                                                        for _ in range(clients)])
        if record is not None:
            record.append(trial)
        trial.service = service_class(model, rows[0][0].copy())
        return trial

    def worker_for(k: int) -> Callable[[ColdTrial], None]:
        def worker(trial: ColdTrial) -> None:
            for i, x in enumerate(trial.rows[k]):
                try:
                    trial.outputs[k][i] = _answer(trial.service.predict(x))
                except Exception as error:
                    trial.errors.append(warmup.describe(error))
                    raise
        return worker

    def check(trial: ColdTrial) -> None:
        try:
            problems = []
            if len(trial.model.weights) != warmup.EXPECTED_WEIGHTS:
                problems.append(
                    f"the model holds {len(trial.model.weights)} weights after serving, "
                    f"expected {warmup.EXPECTED_WEIGHTS}: several threads built it at once "
                    "and created its weights twice (warm it on one thread before serving)")
            for k, outputs in enumerate(trial.outputs):
                for i, output in enumerate(outputs):
                    expected = trial.expected[k * COLD_REQUESTS + i]
                    if not same_answer(output, expected):
                        problems.append(
                            f"client {k}'s request {i} got {np.round(np.asarray(output), 4)}"
                            f", expected {np.round(expected, 4)} (the model's output for "
                            "that client's own row)")
                        break
                if len(problems) > 1:
                    break
            if problems:
                raise AssertionError("; ".join(problems))
        finally:
            _close_quietly(trial.service)

    return stress(setup, [worker_for(k) for k in range(clients)], check, trials=trials,
                  seed=seed, timeout_s=TIMEOUT_S)


class DirectService:
    """No warmup, no lock: each client calls the shared model itself."""

    def __init__(self, model: Any, example: np.ndarray) -> None:
        self.model = model

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(self.model.predict_on_batch(x[None]))[0]

    def close(self) -> None:
        pass


@dataclass
class ColdStarts:
    """What :func:`cold_start_trials` saw.

    Attributes:
        trials: Trials run.
        failed: Trials that failed (a crashed process included).
        crashed: Trials in which TensorFlow ended the whole (child) process.
        messages: The first line of each failure's explanation.
        first_failure: The harness result of the first failing trial that did not crash (its
            ``figure()`` shows the client threads), else ``None``.
    """

    trials: int = 0
    failed: int = 0
    crashed: int = 0
    messages: list[str] = field(default_factory=list)
    first_failure: Result | None = None


def cold_start_trials(service_class: Callable[..., Any], *, trials: int, seed: int = 0
                      ) -> ColdStarts:
    """Run ``trials`` one-trial cold starts of ``service_class``, each in a child process.

    A cold model raced from threads can crash TensorFlow itself; in a child process that is
    one failed trial, not the end of the notebook's kernel. ``service_class`` must be defined
    in a module (like :class:`DirectService`).
    """
    outcomes = run_in_children(_one_cold_start, [(service_class, s) for s in
                                                 range(seed, seed + trials)],
                               trial_timeout_s=2 * TIMEOUT_S + 30)
    starts = ColdStarts(trials=len(outcomes))
    for outcome in outcomes:
        if isinstance(outcome, Crashed):
            starts.crashed += 1
            starts.messages.append(str(outcome))
        elif outcome.verdict != "pass":
            starts.messages.append(outcome.message.splitlines()[0])
            starts.first_failure = starts.first_failure or outcome
        else:
            continue
        starts.failed += 1
    return starts


def _one_cold_start(service_class: Callable[..., Any], seed: int) -> Result:
    return run_cold_start(service_class, trials=1, seed=seed)


def check_cold_start(service_class: Callable[..., Any], **kwargs: Any) -> None:
    """Grade part 1: a cold model served to 16 clients at once (see :func:`run_cold_start`)."""
    _smoke(service_class, "InferenceService")
    seen: list[ColdTrial] = []
    result = run_cold_start(service_class, record=seen, **kwargs)
    _require(result, "InferenceService, cold start",
             call_text("capstone.run_cold_start", "InferenceService", **kwargs),
             seen[-1].errors if seen else ())


# --------------------------------------------------------------------------- part 2: updates


@dataclass
class UpdateTrial:
    service: Any
    layers: int
    published: list[tuple[int, float]] = field(default_factory=list)
    reads: list[list[tuple[float, Any]]] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)


class _VersionedPool:
    """A versioned model built once per process; each trial resets it to its first version."""

    def __init__(self) -> None:
        self.model = variables.versioned_model()
        self.weights = [variables.version_weights(v, self.model)
                        for v in range(FIRST_VERSION + UPDATES + 1)]
        self.example = variables.probe(self.model)[0]

    def fresh(self) -> Any:
        self.model.set_weights(self.weights[FIRST_VERSION])
        return self.model


_POOL = memo("the capstone's versioned model")


def _versioned_pool() -> _VersionedPool:
    return _POOL(None, _VersionedPool)


def _update_problems(trial: UpdateTrial) -> list[str]:
    published = dict(trial.published)
    last_version = FIRST_VERSION + len(published)
    if sorted(published) != list(range(FIRST_VERSION + 1, last_version + 1)):
        return [f"expected the writer's update_weights calls for versions "
                f"{FIRST_VERSION + 1} .. {FIRST_VERSION + UPDATES} to return, saw "
                f"{sorted(published)}"]
    for index, reads in enumerate(trial.reads):
        if not reads:
            return [f"expected client {index} to get answers, it got none"]
        last = FIRST_VERSION
        for start, output in reads:
            versions = variables.read_versions(output, trial.layers)
            if versions.min() != versions.max():
                return [f"expected every answer computed with one version of the weights, but "
                        f"client {index} got one computed with layers of versions "
                        f"{versions.tolist()} (first layer first): a torn answer, mixing two "
                        "weight versions (the model was being updated while it computed)"]
            seen = int(versions[0])
            if seen != FIRST_VERSION and seen not in published:
                return [f"client {index} got an answer of version {seen}, which was never "
                        f"published (the service started at version {FIRST_VERSION})"]
            newest = max((v for v, at in published.items() if at < start),
                         default=FIRST_VERSION)
            if seen < newest:
                return [f"client {index} sent a request after update_weights() of version "
                        f"{newest} had returned, and got an answer of version {seen}: expected "
                        f"version {newest} or newer (once update_weights returns, every later "
                        "request must use the new weights)"]
            if seen < last:
                return [f"expected versions never to go backwards, but client {index} got "
                        f"version {last} and then version {seen}"]
            last = seen
        if last != last_version:
            return [f"client {index}'s last request, sent after the writer was done, got "
                    f"version {last}: expected the last version published, {last_version}"]
    return []


def run_weight_updates(service_class: Callable[..., Any], *, trials: int = UPDATE_TRIALS,
                       clients: int = UPDATE_CLIENTS, updates: int = UPDATES,
                       seed: int = SEED) -> Result:
    """Per trial: a new service on the versioned model, ``clients`` clients and one writer.

    The writer calls ``update_weights`` with versions ``FIRST_VERSION + 1 ..`` one after the
    other; each client sends requests until the writer is done, then one more.
    """
    pool = _versioned_pool()
    pool.model.predict_on_batch(pool.example[None])

    def setup() -> UpdateTrial:
        model = pool.fresh()
        trial = UpdateTrial(service_class(model, pool.example.copy()), variables.LAYERS)
        trial.reads = [[] for _ in range(clients)]
        return trial

    def writer(trial: UpdateTrial) -> None:
        try:
            for version in range(FIRST_VERSION + 1, FIRST_VERSION + updates + 1):
                trial.service.update_weights(pool.weights[version])
                trial.published.append((version, time.perf_counter()))
        finally:
            trial.done.set()

    def client(index: int) -> Callable[[UpdateTrial], None]:
        def run(trial: UpdateTrial) -> None:
            mine = trial.reads[index]
            while True:
                finished = trial.done.is_set()
                start = time.perf_counter()
                mine.append((start, _answer(trial.service.predict(pool.example))))
                if finished:
                    return
                time.sleep(UPDATE_GAP_S)
        return run

    def check(trial: UpdateTrial) -> None:
        try:
            problems = _update_problems(trial)
            if problems:
                raise AssertionError(problems[0])
        finally:
            _close_quietly(trial.service)

    return stress(setup, [writer, *[client(i) for i in range(clients)]], check, trials=trials,
                  seed=seed, timeout_s=TIMEOUT_S)


def check_weight_updates(service_class: Callable[..., Any], **kwargs: Any) -> None:
    """Grade part 2: weights updated while serving (see :func:`run_weight_updates`)."""
    _smoke(service_class, "InferenceService")
    _require(run_weight_updates(service_class, **kwargs), "InferenceService, weight updates",
             call_text("capstone.run_weight_updates", "InferenceService", **kwargs))


# --------------------------------------------------------------------------- part 3: accounting


def _stats(service: Any) -> dict[str, Any]:
    """``service.stats()`` as plain data; AssertionError (and ``service`` closed) if not counts."""
    try:
        stats = service.stats()
        if not isinstance(stats, dict):
            raise AssertionError(f"stats() returned {type(stats).__name__}, expected a dict "
                                 "with 'requests', 'batches' and 'errors'")
        stats = plain(stats, "stats()", dict)
        missing = [key for key in ("requests", "batches", "errors") if key not in stats]
        if missing:
            raise AssertionError(f"stats() returned {stats!r}: the keys {missing} are missing; "
                                 "expected 'requests', 'batches' and 'errors'")
        for key in ("requests", "batches", "errors"):
            plain(stats[key], f"stats()[{key!r}]", (int, float))
    except AssertionError:
        _close_quietly(service)
        raise
    return stats


def _answers_problems(run: ClientRun, expected: dict[tuple[int, int], np.ndarray],
                      bad: set[tuple[int, int]], *, refused_ok: bool = False) -> list[str]:
    """Every call: its own row's answer, ``ValueError`` for malformed rows, nothing else."""
    problems = []
    for mine in run.calls:
        for call in mine:
            if not call.end:
                continue
            key = (call.client, call.index)
            if key in bad:
                if not isinstance(call.error, ValueError):
                    got = (f"raised {warmup.describe(call.error)}" if call.error else
                           "returned an answer")
                    problems.append(f"client {call.client}'s malformed request (a row of "
                                    f"width {call.x.shape[-1]}, expected {FEATURES}) {got}; "
                                    "expected ValueError in that caller only")
            elif call.error is not None:
                if refused_ok and isinstance(call.error, RuntimeError):
                    continue
                problems.append(f"client {call.client}'s request {call.index} raised "
                                f"{warmup.describe(call.error)}; expected its answer")
            elif not same_answer(call.output, expected[key]):
                problems.append(f"client {call.client}'s request {call.index} got "
                                f"{np.round(np.asarray(call.output, dtype=float), 4)}, "
                                f"expected {np.round(expected[key], 4)} (the model's output "
                                "for its own row: answers went to the wrong caller, or were "
                                "lost)")
            if len(problems) >= 2:
                return problems
    return problems


def _rows_with_bad(seed: int, clients: int, per_client: int, bad_clients: int
                   ) -> tuple[list[list[np.ndarray]], set[tuple[int, int]]]:
    """Request rows; the third request of the first ``bad_clients`` clients is malformed."""
    rows = requests_for(seed, clients, per_client)
    bad = set()
    for c in range(bad_clients):
        rows[c][2] = np.ones(FEATURES + 3, dtype="float32")
        bad.add((c, 2))
    return rows, bad


def accounting_problems(service_class: Callable[..., Any], *, seed: int = SEED) -> list[str]:
    """Run the three phases of part 3 and return what went wrong (empty when all is right).

    1. One client sends :data:`ACCOUNT_SEQUENTIAL` requests one after another: each answer is
       right and afterwards ``stats()`` is exactly that many requests, as many batches (one
       model call per request when requests come one at a time) and no error.
    2. :data:`ACCOUNT_CLIENTS` clients send :data:`ACCOUNT_REQUESTS` each, released together;
       the third request of :data:`ACCOUNT_BAD_CLIENTS` of them is a row of the wrong width.
       Each answer is the client's own row's; each malformed request raises ``ValueError``
       in its caller; ``stats()`` counts every request once, the malformed ones as errors,
       and between one and one-per-request batches for the rest.
    3. On a new service over :func:`slow_model`, :data:`CLOSE_CLIENTS` clients send
       :data:`CLOSE_REQUESTS` each; every other client starts :data:`LATE_START_S` late, and
       ``close()`` is called once the late ones have sent their first request, while the
       early ones' batch is still computing: the late requests are queued. Every request
       gets its answer or ``RuntimeError`` (refused: the service is closed), none hangs;
       ``close()`` returns in time; the threads the service started have ended within
       :data:`JOIN_GRACE_S` of ``close()`` returning; the statistics count the requests that
       were not refused; ``predict`` after ``close()`` raises ``RuntimeError``.
    """
    before = set(threading.enumerate())
    model = serving_model(seed)
    rows = requests_for(seed, 1, ACCOUNT_SEQUENTIAL)
    try:
        service = service_class(model, rows[0][0].copy())
    except Exception as error:  # noqa: BLE001 - reported to the student
        return [f"InferenceService(model, example) raised {warmup.describe(error)}"]

    # Phase 1: one client, one request at a time.
    run = run_clients(service, rows, deadline_s=STUCK_S)
    if run.stuck:
        return [_stuck_message(run, "one client sent its requests one at a time", before)]
    problems = _answers_problems(run, _expected(seed, rows), set())
    if problems:
        return problems
    stats = _stats(service)
    want = {"requests": ACCOUNT_SEQUENTIAL, "batches": ACCOUNT_SEQUENTIAL, "errors": 0}
    if {k: stats[k] for k in want} != want:
        return [f"after one client sent {ACCOUNT_SEQUENTIAL} requests one at a time, stats() "
                f"was {stats!r}; expected {want} (requests come one at a time, so each is a "
                "batch of one)"]

    # Phase 2: many clients at once, a few malformed requests.
    rows, bad = _rows_with_bad(seed + 1, ACCOUNT_CLIENTS, ACCOUNT_REQUESTS,
                               ACCOUNT_BAD_CLIENTS)
    run = run_clients(service, rows, deadline_s=STUCK_S)
    if run.stuck:
        return [_stuck_message(run, f"{ACCOUNT_CLIENTS} clients sent requests at once",
                               before)]
    problems = _answers_problems(run, _expected(seed, rows), bad)
    if problems:
        return problems
    stats = _stats(service)
    total = ACCOUNT_SEQUENTIAL + ACCOUNT_CLIENTS * ACCOUNT_REQUESTS
    good = total - len(bad)
    if stats["requests"] != total or stats["errors"] != len(bad):
        return [f"after {total} requests ({len(bad)} of them malformed) stats() was {stats!r};"
                f" expected requests == {total} and errors == {len(bad)}: a count was lost or "
                "made twice"]
    if not ACCOUNT_SEQUENTIAL + 1 <= stats["batches"] <= good:
        return [f"after {good} well-formed requests stats() reported {stats['batches']} "
                f"batches; expected between {ACCOUNT_SEQUENTIAL + 1} and {good} (one model call"
                " serves one or more requests)"]
    try:
        return _close_problems(service_class, seed, before | set(threading.enumerate()))
    finally:
        _close_quietly(service)


def _expected(seed: int, rows: list[list[np.ndarray]]) -> dict[tuple[int, int], np.ndarray]:
    """Answers of :func:`serving_model` ``(seed)`` for ``rows`` (malformed rows skipped)."""
    keys = [(c, i) for c, mine in enumerate(rows) for i, x in enumerate(mine)
            if x.shape == (FEATURES,)]
    outputs = reference_outputs(seed, [rows[c][i] for c, i in keys])
    return dict(zip(keys, outputs, strict=True))


def _close_problems(service_class: Callable[..., Any], seed: int,
                    before: set[threading.Thread]) -> list[str]:
    model = slow_model(seed)
    rows = requests_for(seed + 2, CLOSE_CLIENTS, CLOSE_REQUESTS)
    try:
        service = service_class(model, rows[0][0].copy())
    except Exception as error:  # noqa: BLE001 - reported to the student
        return [f"InferenceService(model, example) raised {warmup.describe(error)} on a second "
                "service"]
    expected = _expected(seed, rows)
    closing: dict[str, Any] = {}

    late = range(1, CLOSE_CLIENTS, 2)

    def close_soon(run: ClientRun) -> None:
        limit = time.perf_counter() + STUCK_S
        while not all(run.calls[c][0].start for c in late) and time.perf_counter() < limit:
            time.sleep(0.001)
        time.sleep(CLOSE_AFTER_S)
        closing["started"] = start = time.perf_counter()
        thread, errors = _start(service.close, "grader-close")
        wait_for_progress([thread], run, start, start + STUCK_S, clients=False)
        closing.update(finished=not thread.is_alive(), thread=thread,
                       returned=time.perf_counter())
        closing["error"] = errors[0] if errors else None

    delays = [LATE_START_S * (c % 2) for c in range(CLOSE_CLIENTS)]
    run = run_clients(service, rows, deadline_s=STUCK_S, when_released=close_soon,
                      delays=delays)
    if not closing["finished"]:
        stuck = [closing["thread"], *_new_threads(before)]
        return [f"close() did not return while clients were sending requests, and no request"
                f" was answered for {STALL_S:g} s (a deadlock, or a join on a thread that never "
                "ends). Where the "
                f"threads are:\n{describe_threads(stuck)}"]
    if closing["error"] is not None:
        return [f"close() raised {warmup.describe(closing['error'])}"]
    if run.stuck:
        return [_stuck_message(run, "close() was called while clients were sending", before)]
    deadline = time.perf_counter() + JOIN_GRACE_S
    left = []
    while time.perf_counter() < deadline:
        left = [t for t in _new_threads(before) if not _is_grader_thread(t)]
        if not left:
            break
        time.sleep(0.02)
    if left:
        return [f"{len(left)} thread(s) the service started were still running "
                f"{JOIN_GRACE_S:g} s after close() returned; close() must stop and join "
                f"them. The threads left running:\n{describe_threads(left)}"]
    problems = _answers_problems(run, expected, set(), refused_ok=True)
    if problems:
        return problems
    late = [c for c in run.done if c.start > closing["returned"] and c.error is None]
    if late:
        return [f"client {late[0].client} sent a request after close() had returned and got "
                "an answer; expected RuntimeError (the service is closed)"]
    served = [c for c in run.done if not isinstance(c.error, RuntimeError)]
    refused = [c for c in run.done if isinstance(c.error, RuntimeError)]
    if not served:
        return ["close() was called while requests were queued, and every request was refused"
                "; expected the queued requests to be answered (close() drains them)"]
    stats = _stats(service)
    if stats["requests"] != len(served) or stats["errors"] != 0:
        return [f"after close(), stats() was {stats!r}: expected requests == {len(served)} "
                f"(answered before closing; {len(refused)} more were refused) and errors == 0"]
    try:
        service.predict(rows[0][0])
    except RuntimeError:
        return []
    except Exception as error:  # noqa: BLE001 - reported to the student
        return [f"predict() after close() raised {warmup.describe(error)}; expected "
                "RuntimeError saying the service is closed"]
    return ["predict() after close() returned an answer; expected RuntimeError saying the "
            "service is closed"]


def check_accounting(service_class: Callable[..., Any], *, seed: int = SEED) -> None:
    """Grade part 3: no request lost or answered twice, exact stats, a clean close()."""
    _smoke(service_class, "InferenceService")
    try:
        problems = accounting_problems(service_class, seed=seed)
    except AssertionError as failure:  # stats() did not return plain counts
        problems = [str(failure)]
    if problems:
        raise AssertionError("InferenceService, accounting and close: " + "; ".join(problems))


# --------------------------------------------------------------------------- part 4: throughput


@dataclass
class Measurement:
    """One design serving ``clients`` clients: rate, latency percentiles, extra memory."""

    design: str
    clients: int
    requests: int
    seconds: float
    p50_ms: float
    p99_ms: float
    extra_bytes: int | None = None

    @property
    def rate(self) -> float:
        return self.requests / max(self.seconds, 1e-9)


def busy_model(seed: int = SEED) -> Any:
    """The throughput check's model: :func:`slow_model` spinning :data:`THROUGHPUT_CALL_S`.

    Built and warmed on every call from a notebook; the check keeps its own (see
    :func:`measure_speedup`).
    """
    return _BUSY((seed, "notebook"), lambda: _warm_busy_model(seed)[0])


def _warm_busy_model(seed: int) -> tuple[Any, list[np.ndarray]]:
    """A warm :func:`busy_model` and the list its slow layer records every call's rows in."""
    seen: list[np.ndarray] = []
    model = slow_model(seed, THROUGHPUT_CALL_S, busy=True, record=seen.append)
    model.predict_on_batch(np.zeros((1, FEATURES), dtype="float32"))
    return model, seen


#: The busy model only :class:`GlobalLockService` serves in the throughput check, built once per
#: process and seed; no answer is ever handed it (each answer gets a new one, 0.1 s to build).
_BUSY = memo("the throughput check's model")


def _served_by_the_model(run: ClientRun, seed: int, seen: list[np.ndarray]) -> None:
    """Fail unless every answered request got the model's answer for its row, computed by the
    model the service was given (its slow layer saw the row's output).

    Raises:
        AssertionError: Naming the first wrong answer, or how many requests bypassed the model.
    """
    calls = [c for c in run.done if c.error is None]
    if not calls:
        return
    expected = reference_outputs(seed, [c.x for c in calls])
    for call, want in zip(calls, expected, strict=True):
        if not same_answer(call.output, want):
            raise AssertionError(
                f"client {call.client}'s request {call.index} was answered "
                f"{np.round(np.asarray(call.output, dtype='float64'), 4).tolist()}, but the "
                f"model answers {np.round(want.astype('float64'), 4).tolist()} for its row")
    width = expected.shape[-1]
    computed = [np.reshape(rows, (-1, width)) for rows in list(seen)
                if np.size(rows) and np.shape(rows)[-1] == width]
    done = np.concatenate(computed) if computed else np.zeros((0, width), dtype="float32")
    bypassed = sum(not np.any(np.all(np.isclose(done, want, rtol=1e-4, atol=1e-5), axis=1))
                   for want in expected)
    if bypassed:
        raise AssertionError(
            f"{bypassed} of the {len(calls)} requests were answered without the model the "
            "service was given computing them (its last layer never saw their rows): serve "
            "every request with that model, several requests per call")


def benchmark(service_class: Callable[..., Any], clients: int, *, requests: int,
              design: str = "", seed: int = SEED, memory: bool = False,
              model_factory: Callable[[int], Any] = serving_model,
              check_run: Callable[[ClientRun], Any] | None = None) -> Measurement:
    """Serve a fresh ``model_factory(seed)`` to ``clients`` clients, ``requests`` rows each.

    Times from the release of the clients until the last answer. With ``memory``, counts the
    bytes of Keras variables alive once every client has finished but before any client
    thread has ended, minus those alive before the service was made (the model's own weights
    do not count; copies the service made do). ``check_run`` then judges the clients' run
    (it raises AssertionError to fail it).
    """
    model = model_factory(seed)
    rows = requests_for(seed, clients, requests)
    if memory:
        model(rows[0][0][None])  # create the model's own weights before counting
    before = keras_variable_bytes() if memory else {}
    extra: list[int] = []

    def count() -> None:
        now = keras_variable_bytes()
        extra.append(sum(size for key, size in now.items() if key not in before))

    service = service_class(model, rows[0][0].copy())
    try:
        run = run_clients(service, rows, deadline_s=TIMEOUT_S,
                          on_finished=count if memory else None)
    finally:
        _close_quietly(service)
    if run.stuck:
        raise AssertionError(_stuck_message(run, f"{clients} clients sent requests"))
    failed = [c for c in run.done if c.error is not None]
    if failed:
        raise AssertionError(f"a request raised {warmup.describe(failed[0].error)} while "
                             f"{clients} clients were sending")
    if check_run is not None:
        check_run(run)
    latencies = np.array(run.latencies) * 1e3
    return Measurement(design or getattr(service_class, "__name__", "service"), clients,
                       len(run.done), run.seconds, float(np.percentile(latencies, 50)),
                       float(np.percentile(latencies, 99)), extra[0] if extra else None)


@dataclass
class Speedup:
    """The answer against :class:`GlobalLockService`, measured alternately in one run."""

    lock_rates: list[float]
    answer_rates: list[float]
    extra_bytes: int
    copy_bytes: int

    @property
    def ratio(self) -> float:
        """The median of the rounds' paired ratios (each answer run against the lock run just
        before it): load on a shared machine that slows one round slows both of its runs."""
        if not self.lock_rates:
            return float("nan")
        return float(np.median([answer / lock for answer, lock
                                in zip(self.answer_rates, self.lock_rates, strict=True)]))


def measure_speedup(service_class: Callable[..., Any], *, rounds: int = THROUGHPUT_ROUNDS,
                    requests: int = THROUGHPUT_REQUESTS, clients: int = CLIENTS,
                    seed: int = SEED, stop_if_copies: float | None = None) -> Speedup:
    """Requests/s of the answer and of the global lock, ``rounds`` times each, alternately.

    First one answer run on :func:`serving_model` counts the extra Keras weight bytes (and
    when they exceed ``stop_if_copies`` copies of the model, nothing more is measured). Then
    both serve a :func:`busy_model`: one unmeasured run of each (the first run of a code path
    pays for tracing), then the rounds; the ratio is the median of the rounds' paired ratios.
    The answer serves a busy model built for it, the global lock one no answer is handed
    (an answer cannot slow the one it is compared with, nor inherit another's changes), and
    every answer run must answer each request with its row's output, computed by the model
    the answer was given.
    """
    answer_model, seen = _warm_busy_model(seed)  # new for every answer: none inherits a change
    lock_model, _ = _BUSY((seed, "lock"), lambda: _warm_busy_model(seed))

    def check_run(run: ClientRun) -> None:
        _served_by_the_model(run, seed, seen)

    def rate(service: Callable[..., Any], rows: int) -> float:
        if service is GlobalLockService:
            return benchmark(service, clients, requests=rows, seed=seed,
                             model_factory=lambda _seed: lock_model).rate
        seen.clear()
        return benchmark(service, clients, requests=rows, seed=seed,
                         model_factory=lambda _seed: answer_model, check_run=check_run).rate

    memory = benchmark(service_class, clients, requests=2, seed=seed, memory=True)
    copy = serving_model(seed)
    copy(np.zeros((1, FEATURES), dtype="float32"))
    speedup = Speedup([], [], int(memory.extra_bytes or 0), weight_bytes(copy))
    if stop_if_copies is not None and speedup.extra_bytes > stop_if_copies * speedup.copy_bytes:
        return speedup
    rate(GlobalLockService, 2)
    rate(service_class, 2)
    for _ in range(rounds):
        speedup.lock_rates.append(rate(GlobalLockService, requests))
        speedup.answer_rates.append(rate(service_class, requests))
    return speedup


def check_throughput(service_class: Callable[..., Any], *, seed: int = SEED) -> None:
    """Grade part 4: at least :data:`MIN_SPEEDUP` x the global lock's rate, little memory."""
    _smoke(service_class, "InferenceService")
    try:
        speedup = measure_speedup(service_class, seed=seed, stop_if_copies=MAX_EXTRA_COPIES)
    except AssertionError as failure:
        raise AssertionError(f"InferenceService, throughput and memory: {failure}") from None
    problems = []
    if speedup.lock_rates and not speedup.ratio >= MIN_SPEEDUP:
        problems.append(
            f"with {CLIENTS} clients your service served {np.median(speedup.answer_rates):.0f} "
            f"requests/s and one global lock {np.median(speedup.lock_rates):.0f} requests/s in "
            f"the same run: {speedup.ratio:.2f}x, expected at least {MIN_SPEEDUP:g}x. Serve "
            "the requests that wait together, in one model call (micro-batching)")
    limit = MAX_EXTRA_COPIES * speedup.copy_bytes
    if speedup.extra_bytes > limit:  # measured first: the rates were then not measured
        problems.append(
            f"your service created {speedup.extra_bytes} bytes of Keras weights on top of the "
            f"model's own {speedup.copy_bytes}; expected at most {MAX_EXTRA_COPIES} extra "
            f"copies ({limit} bytes). One copy per client would be {CLIENTS} copies: share "
            "the one model")
    if problems:
        raise AssertionError("InferenceService, throughput and memory: " + "; ".join(problems))


# --------------------------------------------------------------------------- notebook pictures


def compare_designs(designs: dict[str, Callable[..., Any]], client_counts: Sequence[int], *,
                    requests: int = 30, seed: int = SEED) -> list[Measurement]:
    """:func:`benchmark` every design at every client count, with memory counted."""
    results = []
    for name, service_class in designs.items():
        benchmark(service_class, 2, requests=2, seed=seed)
        for clients in client_counts:
            results.append(benchmark(service_class, clients, requests=requests, design=name,
                                     seed=seed, memory=True))
    return results


def plot_designs(results: Sequence[Measurement]) -> Any:
    """Requests/s, p50 and p99 latency and extra weight memory against clients, per design."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 3.2), layout="constrained")
    axes = figure.subplots(1, 4)
    designs = list(dict.fromkeys(m.design for m in results))
    panels = [("requests / s", lambda m: m.rate), ("p50 latency (ms)", lambda m: m.p50_ms),
              ("p99 latency (ms)", lambda m: m.p99_ms),
              ("extra weight bytes", lambda m: m.extra_bytes or 0)]
    for ax, (title, value) in zip(axes, panels, strict=True):
        for design in designs:
            mine = [m for m in results if m.design == design]
            ax.plot([m.clients for m in mine], [value(m) for m in mine], marker="o",
                    label=design)
        ax.set_xscale("log", base=2)
        ax.set_xticks(sorted({m.clients for m in results}),
                      [str(c) for c in sorted({m.clients for m in results})])
        ax.set_xlabel("clients")
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=8)
    return figure


def table(results: Sequence[Measurement]) -> str:
    """The measurements as aligned text, one line per design and client count."""
    lines = [f"{'design':<18}{'clients':>8}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}"
             f"{'extra weight bytes':>20}"]
    for m in results:
        extra = "-" if m.extra_bytes is None else str(m.extra_bytes)
        lines.append(f"{m.design:<18}{m.clients:>8}{m.rate:>9.0f}{m.p50_ms:>9.2f}"
                     f"{m.p99_ms:>9.2f}{extra:>20}")
    return "\n".join(lines)
