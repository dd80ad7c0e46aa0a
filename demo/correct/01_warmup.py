# Lesson 01 (warmup), a student who answers every exercise correctly, in their own words.

# %% ex_warmup_entry_point
def warm_up(model, example_batch):
    """Prepare ``model`` so that threads can call ``model.predict_on_batch`` on it at once.

    Runs once, on one thread, before any serving thread starts. Afterwards, concurrent
    ``model.predict_on_batch(batch)`` calls with batches shaped like ``example_batch`` must
    not raise, must not add weights and must not trace the predict function.

    Args:
        model: An unbuilt Keras model (no ``keras.Input``).
        example_batch: A numpy batch with the shape and dtype of the batches you will serve.
    """
    # Same entry point, same shape as serving; zeros are as good as real data.
    model.predict_on_batch(np.zeros_like(example_batch))

# %% ex_warmup_shared_predictor
class SharedPredictor:
    """Serve ``model.predict_on_batch`` to many threads, including the very first calls."""

    def __init__(self, model):
        """Wrap an unbuilt Keras ``model``. Do not call it here: the input shape is unknown."""
        self.model = model
        self.claim = threading.Lock()
        self.claimed = False
        self.ready = threading.Event()

    def __call__(self, batch):
        """Return ``model.predict_on_batch(batch)``; safe to call from many threads at once."""
        if not self.ready.is_set():
            with self.claim:
                first = not self.claimed
                self.claimed = True
            if first:
                try:
                    return self.model.predict_on_batch(batch)
                finally:
                    self.ready.set()
            self.ready.wait()
        return self.model.predict_on_batch(batch)

# %% ex_warmup_lazy_model
class LazyModel:
    """Create a model on first use, once, and share it only once it is built."""

    def __init__(self, factory, input_shape):
        """Remember how to make the model; do not call ``factory`` yet.

        Args:
            factory: Returns a new, unbuilt Keras model.
            input_shape: Shape of one input row, e.g. ``(8,)``.
        """
        self.factory = factory
        self.input_shape = tuple(input_shape)
        self.model = None
        self.lock = threading.RLock()

    def get(self):
        """Return the shared, built model, creating it on the first call from any thread."""
        with self.lock:
            if self.model is None:
                model = self.factory()
                model(np.zeros((1,) + self.input_shape, dtype="float32"))
                self.model = model
            return self.model

# %% ex_warmup_both_entry_points
def warm_up_both(model, example_batch):
    """Prepare ``model`` for concurrent ``predict`` and ``predict_on_batch`` calls."""
    zeros = np.zeros_like(example_batch)
    for serve in (model.predict_on_batch, lambda batch: model.predict(batch, verbose=0)):
        serve(zeros)
