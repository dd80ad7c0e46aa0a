# Lesson 07 (capstone), a student who batches well but writes new weights straight into the
# served model ("only the batcher reads the model, so writing it needs no lock"): predictions
# computed while set_weights runs mix two weight versions, so part 2 (weight updates) scores 0;
# the cold start, the accounting and close, and the throughput are right.

# %% ex_capstone_service
class InferenceService:
    """Serve one shared Keras model to many client threads, with micro-batching."""

    def __init__(self, model, example):
        """Wrap a never-called ``model``; ``example`` is one request row. Start serving."""
        self.model = model
        self.shape = np.shape(example)
        model.predict_on_batch(np.zeros((1, *self.shape), dtype="float32"))
        self.cond = threading.Condition()
        self.waiting = []
        self.closed = False
        self.counts = {"requests": 0, "batches": 0, "errors": 0}
        self.batcher = threading.Thread(target=self._serve, name="batcher")
        self.batcher.start()

    def predict(self, x):
        """Return the model's output row for the request ``x`` (one row)."""
        slot = {"x": np.asarray(x, dtype="float32"), "done": threading.Event()}
        with self.cond:
            if self.closed:
                raise RuntimeError("service closed")
            self.waiting.append(slot)
            self.cond.notify()
        slot["done"].wait()
        if "error" in slot:
            raise slot["error"]
        return slot["y"]

    def update_weights(self, weights):
        """Serve ``weights`` (a list in ``set_weights`` order) to every later request."""
        # Only the batcher reads the model, so writing it needs no lock (or so it seems).
        self.model.set_weights(weights)

    def stats(self):
        """Return ``{"requests": ..., "batches": ..., "errors": ...}``."""
        with self.cond:
            return dict(self.counts)

    def close(self):
        """Answer what was accepted, stop the service's threads, refuse later requests."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.batcher.join()

    def _serve(self):
        """The batcher thread: take the waiting requests, answer them with one model call."""
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.waiting or self.closed)
                if not self.waiting:
                    return
                batch, self.waiting = self.waiting, []
            ok = [s for s in batch if s["x"].shape == self.shape]
            for s in batch:
                if s["x"].shape != self.shape:
                    s["error"] = ValueError(f"request shape {s['x'].shape}, expected {self.shape}")
            if ok:
                out = np.asarray(self.model.predict_on_batch(np.stack([s["x"] for s in ok])))
                for s, row in zip(ok, out, strict=True):
                    s["y"] = row
            with self.cond:
                self.counts["requests"] += len(batch)
                self.counts["batches"] += bool(ok)
                self.counts["errors"] += len(batch) - len(ok)
            for s in batch:
                s["done"].set()
