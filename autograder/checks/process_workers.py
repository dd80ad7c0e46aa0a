"""Worker entry points for lesson 08 (processes): the code that runs in spawned processes.

A ``spawn`` child imports the module of its target, so this module imports nothing heavy at
the top: the pure-Python workers of the exercises (:func:`serve`, :func:`tally`) start in a
few hundredths of a second, and only the workers meant to run TensorFlow (:func:`tf_server`)
or numpy (:func:`numpy_server`) import it, inside the function.

Contracts the lesson states to the student:

- :func:`serve` ``(source, shapes, requests, answers)``: answers ``(request_id, tokens)``
  items from the ``requests`` queue with ``(request_id, output)`` on ``answers`` until it gets
  ``None``. ``source`` is the name of a ``SharedMemory`` block holding the weights back to back
  as float32 (attached read-only), or the weight arrays themselves (then each worker holds
  its own copy).
- :func:`tally` ``(ledger, lock, index, workers, updates)``: adds ``updates`` amounts to the
  accounts of a ledger of :data:`LEDGER_SLOTS` int64 slots (a ``SharedMemory`` name or a
  ``multiprocessing`` array), with ``lock`` held around each update when it is not None; or
  sends each update on ``ledger`` when it is a queue (a single writer applies them).
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

#: Accounts of the lesson's request ledger, and the ledger's size in int64 slots: the
#: accounts, then one start flag per worker (workers start their updates together).
ACCOUNTS = 8
MAX_WORKERS = 8
LEDGER_SLOTS = ACCOUNTS + MAX_WORKERS
#: Requests an answers-shuffling worker waits for before it answers a group (seconds).
HOLD_S = 0.02
_CHECK_ROUNDS = 12
_START_POLLS = 4000
_START_POLL_S = 0.0025


# --------------------------------------------------------------------------- weights


def sizes(shapes: Sequence[Sequence[int]]) -> list[int]:
    """Number of float32 values of each array of ``shapes``."""
    counts = []
    for shape in shapes:
        count = 1
        for dim in shape:
            count *= int(dim)
        counts.append(count)
    return counts


def _attach(source: Any, shapes: Sequence[Sequence[int]]) -> tuple[Any, list[memoryview]]:
    """(shared block or None, one read-only float32 memoryview per array)."""
    if isinstance(source, str):
        from multiprocessing.shared_memory import SharedMemory

        block = SharedMemory(name=source)
        whole = block.buf.toreadonly()
        views, offset = [], 0
        for count in sizes(shapes):
            views.append(whole[offset:offset + 4 * count].cast("f"))
            offset += 4 * count
        whole.release()
        return block, views
    return None, [memoryview(array).cast("B").cast("f") for array in source]


def _detach(block: Any, views: list[memoryview]) -> None:
    for view in views:
        view.release()
    if block is not None:
        block.close()


def embedding_predict(views: Sequence[Any], shapes: Sequence[Sequence[int]],
                      tokens: Sequence[int]) -> tuple[float, ...]:
    """The exercise's model in pure Python: mean of the tokens' embedding rows, then Dense.

    Args:
        views: ``table`` (vocabulary x dim), ``kernel`` (dim x outputs), ``bias`` (outputs),
            flat float32 sequences (memoryviews or numpy arrays flattened).
        shapes: Their shapes.
        tokens: Token ids, each below the vocabulary size.
    """
    table, kernel, bias = views
    dim, outputs = shapes[1]
    rows = [table[t * dim:(t + 1) * dim] for t in tokens]
    mean = [sum(column) / len(rows) for column in zip(*rows, strict=True)]
    return tuple(bias[j] + sum(mean[i] * kernel[i * outputs + j] for i in range(dim))
                 for j in range(outputs))


def serve(source: Any, shapes: Sequence[Sequence[int]], requests: Any, answers: Any, *,
          served_by: str | None = None) -> None:
    """Answer ``(request_id, tokens)`` requests with ``(request_id, output)`` until ``None``.

    Workers may answer in any order, and this one makes sure it does: after each request it
    waits :data:`HOLD_S` for more, then answers the group it holds last first. (It is the only
    worker the course ships, so a pool cannot pass the grader with an in-order one.) With
    ``served_by`` (a folder), it first leaves a file named after its pid there, holding how its
    process was started (:func:`start_method`), so the grader can tell that every worker ran
    the target it was given, and how it was started; and, after each group, ``<pid>.answered``
    with how many requests it has answered, so the grader can tell the workers did the work.
    """
    import queue

    if served_by is not None:
        with open(os.path.join(served_by, str(os.getpid())), "w", encoding="utf-8") as mark:
            mark.write(start_method())
    block, views = _attach(source, shapes)
    answered = 0
    try:
        stop = False
        while not stop:
            group = [requests.get()]
            while group[-1] is not None and len(group) < 4:
                try:
                    group.append(requests.get(timeout=HOLD_S))
                except queue.Empty:
                    break
            if group[-1] is None:
                stop = True
                group.pop()
            for request_id, tokens in reversed(group):
                answers.put((request_id, embedding_predict(views, shapes, tokens)))
            answered += len(group)
            if served_by is not None and group:
                with open(os.path.join(served_by, f"{os.getpid()}.answered"), "w",
                          encoding="utf-8") as count:
                    count.write(str(answered))
    finally:
        _detach(block, views)


# --------------------------------------------------------------------------- ledger


def _ledger(ledger: Any) -> tuple[Any, Any]:
    """(shared block or None, an int64 slot sequence) for a ledger source."""
    if isinstance(ledger, str):
        from multiprocessing.shared_memory import SharedMemory

        block = SharedMemory(name=ledger)
        return block, block.buf.cast("q")
    return None, ledger


def _check_request(index: int, j: int) -> int:
    """A few microseconds of pure-Python work per request (validating it), then its amount."""
    digest = 0
    for ch in f"request {index}-{j}" * _CHECK_ROUNDS:
        digest = (digest * 31 + ord(ch)) % 1_000_003
    return 1 + digest % 5


def amount(index: int, j: int) -> int:
    """The amount worker ``index`` adds in its ``j``-th update."""
    return _check_request(index, j)


def account(index: int, j: int) -> int:
    """The account worker ``index`` updates in its ``j``-th update.

    The accounts follow a fixed pseudo-random order, the same in every run. A round-robin order
    would let workers that run at the same pace stay on different accounts for a whole run, and
    a missing lock would then lose nothing in that run.
    """
    return random.Random(f"ledger {index} {j}").randrange(ACCOUNTS)


def expected_totals(workers: int, updates: int,
                    extras: Sequence[int] | None = None) -> list[int]:
    """What the ledger's accounts hold after ``workers`` x ``updates`` updates, none lost.

    Args:
        workers: Ledger workers.
        updates: Updates per worker.
        extras: What each worker's last update adds on top (:func:`extra_amount`), if any.
    """
    totals = [0] * ACCOUNTS
    for index in range(workers):
        for j in range(updates):
            totals[account(index, j)] += amount(index, j)
        if extras is not None and updates > 0:
            totals[account(index, updates - 1)] += extras[index]
    return totals


def _wait_for_start(slots: Any, index: int, workers: int) -> None:
    """Raise this worker's start flag and wait (bounded) until every worker raised its own."""
    slots[ACCOUNTS + index] = 1
    for _ in range(_START_POLLS):
        if all(slots[ACCOUNTS + k] for k in range(workers)):
            return
        time.sleep(_START_POLL_S)


def tally(ledger: Any, lock: Any, index: int, workers: int, updates: int) -> None:
    """Worker ``index`` of ``workers`` records ``updates`` served requests in the ledger.

    Each update reads an account, checks the request (pure Python), and writes the account
    back, holding ``lock`` around all three when ``lock`` is not None. When ``ledger`` is a
    queue the worker sends ``(account, amount)`` for each update instead (the single-writer
    design) and ``lock`` is not used.

    While the grader runs it (:data:`RECEIPTS_ENV` set), the worker also leaves records there:
    that it started (and how its process was started), that it waits before its last update
    until the grader lets it go (:func:`_held`), and that it made every update; and its last
    update adds the amount the grader picked for it (:func:`extra_amount`), so that the totals
    are only right when they are read from the ledger.
    """
    if not 0 <= index < min(workers, MAX_WORKERS):
        raise ValueError(f"worker index {index} out of range for {workers} workers")
    kind = "queue" if hasattr(ledger, "put") else "shared"
    _leave_receipt(index, kind)
    try:
        _tally(ledger, lock, index, workers, updates, kind)
    except BaseException as error:
        _record("failed", index, type(error).__name__)
        raise
    _record("done", index)


def _tally(ledger: Any, lock: Any, index: int, workers: int, updates: int, kind: str) -> None:
    extra = extra_amount(index)
    if kind == "queue":
        for j in range(updates):
            last = j == updates - 1
            if last:
                _held(index)
            ledger.put((account(index, j), amount(index, j) + (extra if last else 0)))
        return
    block, slots = _ledger(ledger)
    try:
        _wait_for_start(slots, index, workers)
        for j in range(updates):
            last = j == updates - 1
            if last:
                _held(index)
            if lock is None:
                _update(slots, index, j, extra if last else 0)
            else:
                with lock:
                    _update(slots, index, j, extra if last else 0)
    finally:
        if block is not None:
            slots.release()
            block.close()


#: Set by the grader while it calls ``run_ledger``: a folder where every ledger worker leaves
#: its records (``receipts``), so the grader sees which workers really ran, in which processes
#: started how, and which ones made all their updates; a worker waits there before its last
#: update until the grader writes ``release`` (:func:`_held`).
RECEIPTS_ENV = "RACELAB_LEDGER_RECEIPTS"
#: The longest a worker waits for the grader's ``release`` (seconds): past it, it goes on.
HOLD_LIMIT_S = 60.0
_HOLD_POLL_S = 0.002


#: The file of the receipts folder that holds the extra amount of each worker's last update,
#: one ``"<index> <amount>"`` line per worker (written by the grader before the call).
EXTRA_FILE = "extra"


def extra_amount(index: int) -> int:
    """The amount the grader picked for worker ``index`` to add to its last update (0 when it
    is not graded, or picked none)."""
    folder = os.environ.get(RECEIPTS_ENV)
    if not folder or start_method() != "spawn":  # the lesson's workers, not the grader's process
        return 0
    try:
        with open(os.path.join(folder, EXTRA_FILE), encoding="utf-8") as extras:
            lines = extras.read().split("\n")
    except OSError:
        return 0
    for line in lines:
        fields = line.split()
        if len(fields) == 2 and fields[0] == str(index) and fields[1].isdigit():
            return int(fields[1])
    return 0


def _leave_receipt(index: int, kind: str = "shared") -> None:
    """``"<index> <pid>"``: worker ``index`` runs in this process; then how it was started and
    what its ledger is (``"shared"`` memory or a ``"queue"``)."""
    folder = os.environ.get(RECEIPTS_ENV)
    if folder:
        with open(os.path.join(folder, "receipts"), "a", encoding="utf-8") as receipts:
            receipts.write(f"{index} {os.getpid()}\n"
                           f"started {index} {os.getpid()} {start_method()} {kind}\n")


def _record(what: str, index: int, detail: str = "") -> None:
    folder = os.environ.get(RECEIPTS_ENV)
    if folder:
        with open(os.path.join(folder, "receipts"), "a", encoding="utf-8") as receipts:
            receipts.write(f"{what} {index} {os.getpid()}{' ' + detail if detail else ''}\n")


def _held(index: int) -> None:
    """While graded: say so, and wait until the grader writes ``release`` or
    ``release-<index>`` (bounded).

    The grader holds every worker here, before its last update, and one of them until it sees
    the answer wait for it without a time limit (``join()``), or until its hold runs out: a
    ``run_ledger`` that stops waiting after a shorter timeout and terminates the workers then
    stops a worker that has not finished, every run, however fast the machine.
    """
    folder = os.environ.get(RECEIPTS_ENV)
    if not folder:
        return
    _record("held", index)
    releases = (os.path.join(folder, "release"), os.path.join(folder, f"release-{index}"))
    for _ in range(int(HOLD_LIMIT_S / _HOLD_POLL_S)):
        if any(os.path.exists(release) for release in releases):
            return
        time.sleep(_HOLD_POLL_S)


def start_method() -> str:
    """How this process was started, read from its own stack: ``"fork"`` (a copy of its
    parent, ``popen_fork``), ``"spawn"`` (a new interpreter, ``spawn_main``),
    ``"forkserver"``, or ``"none"`` (not a ``multiprocessing`` child)."""
    import sys

    frame = sys._getframe()
    while frame is not None:
        code = frame.f_code
        path = code.co_filename.replace(os.sep, "/")
        if "multiprocessing/" in path:
            if code.co_name == "_launch" and path.endswith("/popen_fork.py"):
                return "fork"
            if code.co_name == "spawn_main" and path.endswith("/spawn.py"):
                return "spawn"
            if code.co_name == "_serve_one" and path.endswith("/forkserver.py"):
                return "forkserver"
        frame = frame.f_back
    return "none"


def read_receipts(folder: str) -> set[tuple[int, int]]:
    """The ``(worker index, pid)`` pairs the ledger workers left in ``folder``."""
    return _pairs(folder, "", 2)


class LedgerRecords(NamedTuple):
    """What the ledger workers recorded in a grader's folder (see :func:`tally`).

    Attributes:
        started: ``(index, pid)`` -> ``(start method, ledger kind)`` for each worker.
        held: ``(index, pid)`` of the workers that waited before their last update.
        done: ``(index, pid)`` of the workers that made every update.
        failed: ``(index, pid)`` -> the name of the exception a worker raised.
    """

    started: dict[tuple[int, int], tuple[str, str]]
    held: frozenset[tuple[int, int]]
    done: frozenset[tuple[int, int]]
    failed: dict[tuple[int, int], str]


def read_records(folder: str) -> LedgerRecords:
    """The records the ledger workers left in ``folder``."""
    started = {(int(f[1]), int(f[2])): (f[3], f[4]) for f in _fields(folder, "started", 5)
               if f[1].isdigit() and f[2].isdigit()}
    failed = {(int(f[1]), int(f[2])): f[3] for f in _fields(folder, "failed", 4)
              if f[1].isdigit() and f[2].isdigit()}
    return LedgerRecords(started, frozenset(_pairs(folder, "held", 3)),
                         frozenset(_pairs(folder, "done", 3)), failed)


def _fields(folder: str, what: str, count: int) -> list[list[str]]:
    """The lines of ``folder``'s receipts with ``count`` fields, the first ``what`` (or, for
    ``""``, a number), split."""
    try:
        with open(os.path.join(folder, "receipts"), encoding="utf-8") as receipts:
            lines = receipts.read().split("\n")
    except FileNotFoundError:
        return []
    found = []
    for line in lines:
        fields = line.split()
        if len(fields) == count and (fields[0] == what if what else fields[0].isdigit()):
            found.append(fields)
    return found


def _pairs(folder: str, what: str, count: int) -> set[tuple[int, int]]:
    """``(index, pid)`` of each well-formed ``[what] <index> <pid>`` line."""
    pairs = set()
    for fields in _fields(folder, what, count):
        if fields[-1].isdigit() and fields[-2].isdigit():
            pairs.add((int(fields[-2]), int(fields[-1])))
    return pairs


#: The simulated I/O between a ledger update's read and its write (seconds).
_IO_S = 0.0001


def _update(slots: Any, index: int, j: int, extra: int = 0) -> None:
    slot = account(index, j)
    seen = slots[slot]
    value = _check_request(index, j) + extra
    # Wait a tenth of a millisecond between the read and the write, as a worker writing a log
    # line there would: the workers then interleave in every run, on an idle or a busy machine.
    time.sleep(_IO_S)
    slots[slot] = seen + value


# --------------------------------------------------------------------------- see it: TF and numpy


#: The served model of "See it": a dense network, 512 -> 2048 -> 2048 -> 2048 -> 10.
MLP_LAYERS = (512, 2048, 2048, 2048, 10)
TF_ROWS = 16
_PYTHON_TOKENS = 8_000


def mlp_weights(seed: int = 0, layers: Sequence[int] = MLP_LAYERS) -> list[Any]:
    """The seeded weights of the served model: kernel and bias of each Dense layer."""
    import numpy as np

    rng = np.random.default_rng(seed)
    weights = []
    for fan_in, fan_out in zip(layers[:-1], layers[1:], strict=True):
        kernel = rng.standard_normal((fan_in, fan_out), dtype=np.float32)
        kernel *= np.float32((2.0 / fan_in) ** 0.5)
        weights += [kernel, np.zeros(fan_out, np.float32)]
    return weights


def mlp_shapes(layers: Sequence[int] = MLP_LAYERS) -> list[tuple[int, ...]]:
    """Shapes of :func:`mlp_weights`, in order."""
    shapes: list[tuple[int, ...]] = []
    for fan_in, fan_out in zip(layers[:-1], layers[1:], strict=True):
        shapes += [(fan_in, fan_out), (fan_out,)]
    return shapes


def preprocess(request_id: int, workload: str) -> Any:
    """One request's model input: cheap for ``"tf"`` (16 rows), pure Python for ``"python"``.

    The ``"python"`` workload tokenises and hashes a synthetic text of the request in pure
    Python (tens of milliseconds, holding the GIL), into one row of 512 features.
    """
    import numpy as np

    if workload == "tf":
        rng = np.random.default_rng(request_id)
        return rng.standard_normal((TF_ROWS, MLP_LAYERS[0]), dtype=np.float32)
    words = random.Random(request_id)
    features = [0.0] * MLP_LAYERS[0]
    for _ in range(_PYTHON_TOKENS):
        word = "".join(chr(97 + words.randrange(26)) for _ in range(3))
        features[hash_token(word) % MLP_LAYERS[0]] += 1.0
    return np.asarray([features], np.float32) / _PYTHON_TOKENS


def hash_token(word: str) -> int:
    """A stable pure-Python hash of a token (``hash`` differs between processes)."""
    value = 2166136261
    for ch in word:
        value = ((value ^ ord(ch)) * 16777619) & 0xFFFFFFFF
    return value


def _run_requests(call: Any, workload: str, request_ids: Sequence[int],
                  threads: int) -> tuple[float, float]:
    """Serve ``request_ids`` with ``threads`` threads (round robin); (wall, CPU) seconds."""
    import threading

    barrier = threading.Barrier(threads + 1)
    errors: list[BaseException] = []

    def body(k: int) -> None:
        barrier.wait()
        try:
            for request_id in request_ids[k::threads]:
                call(preprocess(request_id, workload))
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            errors.append(error)

    pool = [threading.Thread(target=body, args=(k,)) for k in range(threads)]
    for thread in pool:
        thread.start()
    barrier.wait()
    start, cpu = time.perf_counter(), time.process_time()
    for thread in pool:
        thread.join()
    if errors:
        raise errors[0]
    return time.perf_counter() - start, time.process_time() - cpu


def keras_model(seed: int = 0) -> Any:
    """The served model as a built, warm Keras model with :func:`mlp_weights`."""
    import keras
    import numpy as np

    layers = [keras.Input((MLP_LAYERS[0],))]
    for units in MLP_LAYERS[1:-1]:
        layers.append(keras.layers.Dense(units, activation="relu"))
    layers.append(keras.layers.Dense(MLP_LAYERS[-1]))
    model = keras.Sequential(layers)
    model.set_weights(mlp_weights(seed))
    model.predict_on_batch(np.zeros((1, MLP_LAYERS[0]), np.float32))
    return model


def tf_server(conn: Any, seed: int = 0) -> None:
    """A TensorFlow process with its own copy of the model, serving commands from ``conn``.

    Commands: ``("run", workload, request_ids, threads)`` replies the seconds taken;
    ``("rebuild", workload, request_ids)`` builds the model anew for every request (the slow
    pool) and replies the seconds taken; ``("stop",)`` ends the process.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    # One thread per op: a process (or a calling thread) is the unit of parallelism here.
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    model = keras_model(seed)
    conn.send(("ready", os.getpid()))
    _loop(conn, model.predict_on_batch, lambda: keras_model(seed).predict_on_batch)


def numpy_server(conn: Any, source: str, shapes: Sequence[Sequence[int]]) -> None:
    """A numpy process on weights attached read-only from shared memory, serving ``conn``."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"  # one thread per process, as the TensorFlow workers
    import numpy as np

    block, views = _attach(source, shapes)
    try:
        arrays = [np.frombuffer(view, np.float32).reshape(shape)
                  for view, shape in zip(views, shapes, strict=True)]
        kernels, biases = arrays[0::2], arrays[1::2]

        def forward(x: Any) -> Any:
            for depth, (kernel, bias) in enumerate(zip(kernels, biases, strict=True)):
                x = x @ kernel + bias
                if depth < len(kernels) - 1:
                    x = np.maximum(x, 0)
            return x

        forward(np.zeros((1, shapes[0][0]), np.float32))
        conn.send(("ready", os.getpid()))
        _loop(conn, forward, None)
        for held in (arrays, kernels, biases):
            held.clear()  # the arrays export the views: drop them before release
    finally:
        _detach(block, views)


def _loop(conn: Any, call: Any, rebuild: Any) -> None:
    while True:
        command = conn.recv()
        if command[0] == "stop":
            return
        try:
            if command[0] == "run":
                _, workload, request_ids, threads = command
                conn.send(("ok", _run_requests(call, workload, request_ids, threads)))
            elif command[0] == "rebuild" and rebuild is not None:
                _, workload, request_ids = command
                start, cpu = time.perf_counter(), time.process_time()
                for request_id in request_ids:
                    rebuild()(preprocess(request_id, workload))
                conn.send(("ok", (time.perf_counter() - start, time.process_time() - cpu)))
            else:
                conn.send(("error", f"unknown command {command[0]!r}"))
        except Exception as error:  # noqa: BLE001 - reported to the parent
            conn.send(("error", f"{type(error).__name__}: {error}"))


def tf_matmul(size: int) -> None:
    """Run one ``size`` x ``size`` matmul in TensorFlow and exit 0 (the fork/spawn probe)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    x = tf.random.normal((size, size), seed=1)
    float(tf.reduce_sum(tf.matmul(x, x)))
