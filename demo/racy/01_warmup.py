# Lesson 01 (warmup), a student who serves the model cold: "Keras builds it on the first call
# anyway". Exercises 1 and 2 race; exercise 3 is correct, so the score is partial.

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
    # Nothing to do: Keras builds the model on the first call.
    return model

# %% ex_warmup_shared_predictor
class SharedPredictor:
    """Serve ``model.predict_on_batch`` to many threads, including the very first calls."""

    def __init__(self, model):
        """Wrap an unbuilt Keras ``model``. Do not call it here: the input shape is unknown."""
        self.model = model

    def __call__(self, batch):
        """Return ``model.predict_on_batch(batch)``; safe to call from many threads at once."""
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
        self._factory = factory
        self._input_shape = tuple(input_shape)
        self._model = None
        self._lock = threading.Lock()

    def get(self):
        """Return the shared, built model, creating it on the first call from any thread."""
        with self._lock:
            if self._model is None:
                model = self._factory()
                model(np.zeros((1, *self._input_shape), dtype="float32"))
                self._model = model
        return self._model

# %% ex_warmup_both_entry_points
def warm_up_both(model, example_batch):
    """Prepare ``model`` for concurrent ``predict`` and ``predict_on_batch`` calls."""
    model.predict(example_batch, verbose=0)  # "call predict once first"; predict_on_batch is cold
