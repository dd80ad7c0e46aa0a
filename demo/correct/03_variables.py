# Lesson 03 (variables), a student who gets every exercise right, differently from the
# solutions: a ticket from itertools.count next to assign_add, a readers-writer lock built on
# a Condition, and a measurement run with a thread pool whose readers poll the writer's future.

# %% ex_variables_step_counter
class StepCounter:
    """A step counter on a tf.Variable, safe to share between threads."""

    def __init__(self):
        import itertools

        self.steps = tf.Variable(0, dtype=tf.int64)
        self._numbers = itertools.count(1)  # next() on a count is atomic in CPython

    def step(self):
        """Record one step; return its number (1 for the first step)."""
        number = next(self._numbers)
        self.steps.assign_add(1, read_value=False)
        return number

# %% ex_variables_publisher
class WeightPublisher:
    """Serve a model from many threads while one thread publishes new weights."""

    def __init__(self, model):
        self.model = model
        self.cond = threading.Condition()
        self.readers = 0
        self.writing = False
        self.writers_waiting = 0

    def publish(self, weights):
        """Serve ``weights`` (a list in ``set_weights`` order) from now on."""
        with self.cond:
            self.writers_waiting += 1
            while self.writing or self.readers:
                self.cond.wait()
            self.writers_waiting -= 1
            self.writing = True
        try:
            self.model.set_weights(weights)
        finally:
            with self.cond:
                self.writing = False
                self.cond.notify_all()

    def predict(self, x):
        """Return the model's output for ``x``, computed with one version of the weights."""
        with self.cond:
            while self.writing or self.writers_waiting:
                self.cond.wait()
            self.readers += 1
        try:
            return self.model.predict_on_batch(x)
        finally:
            with self.cond:
                self.readers -= 1
                if self.readers == 0:
                    self.cond.notify_all()

# %% ex_variables_choose
def choose_publisher(candidates, make_model, *, readers=2, updates=6, interval_s=0.01,
                     min_updates_per_s=20.0):
    """Measure every candidate publisher under the same load; return ``(name, table)``."""
    from concurrent.futures import ThreadPoolExecutor

    table = {}
    for name, publisher_class in candidates.items():
        model = make_model()
        publisher = publisher_class(model)
        x = variables.probe(model)
        versions = [variables.version_weights(k, model) for k in range(1, updates + 1)]

        go = threading.Barrier(readers + 1)  # nobody starts late

        def write(publisher=publisher, versions=versions, go=go):
            go.wait()
            start = time.perf_counter()
            for k, weights in enumerate(versions):
                if k:
                    time.sleep(interval_s)
                publisher.publish(weights)
            return time.perf_counter() - start

        def read(writing, publisher=publisher, x=x, go=go):
            go.wait()
            reads = torn = 0
            while not writing.done():
                torn += variables.is_torn(publisher.predict(x))
                reads += 1
            return reads, torn

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=readers + 1) as pool:
            writing = pool.submit(write)
            readings = [pool.submit(read, writing) for _ in range(readers)]
            counts = [r.result() for r in readings]
            writer_seconds = writing.result()
        seconds = time.perf_counter() - start
        reads = sum(c[0] for c in counts)
        table[name] = {"reads": reads, "torn": sum(c[1] for c in counts),
                       "reads_per_s": reads / seconds, "updates_per_s": updates / writer_seconds}
    ranked = sorted((row["reads_per_s"], name) for name, row in table.items()
                    if row["torn"] == 0 and row["updates_per_s"] >= min_updates_per_s)
    return (ranked[-1][1] if ranked else None), table
