# Lesson 02 (mutex), a student who answers every exercise correctly, in their own words.

# %% ex_mutex_metrics
class ServerMetrics:
    """Request counters shared by every request thread, with consistent snapshots."""

    def __init__(self):
        # One dict of counters, one re-entrant lock guarding all of it.
        self._counts = {"requests": 0, "ok": 0, "errors": 0, "latency_total": 0.0}
        self._lock = threading.RLock()

    def record(self, latency_s, ok):
        """Count one request that took ``latency_s`` seconds and succeeded when ``ok``."""
        with self._lock:
            self._counts["requests"] += 1
            self._counts["ok" if ok else "errors"] += 1
            self._counts["latency_total"] += latency_s

    def snapshot(self):
        """Return a new dict of the four counters, all taken at the same moment."""
        with self._lock:
            return dict(self._counts)

# %% ex_mutex_cache
import concurrent.futures


class PredictionCache:
    """A cache of ``compute(key)`` that computes each key exactly once, whatever the threads do."""

    def __init__(self, compute):
        """Remember ``compute``, a function of one key; do not call it yet."""
        self._compute = compute
        self._futures = {}
        self._lock = threading.Lock()

    def get(self, key):
        """Return the cached ``compute(key)``, computing it on the first request for ``key``."""
        # The first thread to miss a key plants a Future; everyone else waits on it.
        with self._lock:
            future = self._futures.get(key)
            mine = future is None
            if mine:
                future = self._futures[key] = concurrent.futures.Future()
        if mine:
            try:
                future.set_result(self._compute(key))
            except BaseException as error:
                future.set_exception(error)
        return future.result()

# %% ex_mutex_move_slots
def move_slots(src, dst, n):
    """Move ``n`` free slots from ``src`` to ``dst`` if ``src`` has them; return whether it did."""
    # Every mover takes the two locks in the same order: lowest id() first.
    first, second = (src, dst) if id(src) < id(dst) else (dst, src)
    with first.lock:
        with second.lock:
            if src.slots < n:
                return False
            src.slots -= n
            dst.slots += n
            return True

# %% ex_mutex_model_slot
class ModelSlot:
    """The model being served and its version, swappable while requests keep coming."""

    def __init__(self, model, version):
        # One immutable pair: reading or replacing one attribute is a single step.
        self._current = (model, version)

    def predict(self, batch):
        """Return ``(version, model.predict_on_batch(batch))`` for the current model."""
        model, version = self._current
        return version, model.predict_on_batch(batch)

    def swap(self, model, version, example_batch):
        """Warm ``model`` on ``example_batch``, then serve it as ``version``."""
        model.predict_on_batch(example_batch)
        self._current = (model, version)
