# Lesson 08 (processes), a student who answers every exercise correctly, in their own words.

# %% ex_processes_pool
import concurrent.futures


class SharedWeightsPool:
    """Worker processes answering ``predict`` from one copy of the weights in shared memory."""

    def __init__(self, weights, workers=2, target=process_workers.serve):
        ctx = multiprocessing.get_context("spawn")
        # One block for every worker; each array copied in at its offset through a numpy view.
        self._shm = shared_memory.SharedMemory(create=True, size=sum(a.nbytes for a in weights))
        offset = 0
        for array in weights:
            np.ndarray(array.shape, np.float32, buffer=self._shm.buf, offset=offset)[...] = array
            offset += array.nbytes
        self._todo, self._done = ctx.Queue(), ctx.Queue()
        shapes = [array.shape for array in weights]
        self._procs = [ctx.Process(target=target, daemon=True,
                                   args=(self._shm.name, shapes, self._todo, self._done))
                       for _ in range(workers)]
        for proc in self._procs:
            proc.start()
        # Each request gets a Future; one reader thread resolves them by request id.
        self._futures = {}
        self._guard = threading.Lock()
        self._counter = itertools.count()
        self._reader = threading.Thread(target=self._read_answers, daemon=True)
        self._reader.start()

    def _read_answers(self):
        for request_id, output in iter(self._done.get, "stop"):
            with self._guard:
                future = self._futures.pop(request_id)
            future.set_result(output)

    def predict(self, tokens):
        """The model's output for ``tokens``; safe to call from many threads at once."""
        future = concurrent.futures.Future()
        with self._guard:
            request_id = next(self._counter)
            self._futures[request_id] = future
        self._todo.put((request_id, tokens))
        return future.result()

    def close(self):
        """Stop and join every worker; close and unlink the shared block."""
        for _ in self._procs:
            self._todo.put(None)
        for proc in self._procs:
            proc.join()
        self._done.put("stop")
        self._reader.join()
        self._shm.close()
        self._shm.unlink()

# %% ex_processes_ledger
def run_ledger(workers, updates):
    """Run ``workers`` ledger workers on processes; the accounts' totals, no update lost."""
    # A synchronized Array, and every worker holds the Array's own lock around its update.
    ctx = multiprocessing.get_context("spawn")
    ledger = ctx.Array("q", process_workers.LEDGER_SLOTS)
    procs = [ctx.Process(target=process_workers.tally,
                         args=(ledger, ledger.get_lock(), index, workers, updates))
             for index in range(workers)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    return [int(value) for value in ledger[:process_workers.ACCOUNTS]]

# %% ex_processes_choose
import statistics


def choose(threads, processes_, memory_budget_mb):
    """``"threads"`` or ``"processes"`` for two measured designs and a memory budget."""
    fits = processes_.memory_mb <= memory_budget_mb
    paired = [p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True)]
    return "processes" if fits and statistics.median(paired) >= 1.2 else "threads"
