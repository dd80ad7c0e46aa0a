# Lesson 08 (processes), a student who thinks a multiprocessing.Array "has a lock, so it is
# safe", and whose pool takes the next answer off the queue instead of its own. Exercise 1
# hands threads each other's outputs when workers answer out of order, and exercise 2 loses
# updates across processes; exercise 3 is correct, so the score is partial.

# %% ex_processes_pool
class SharedWeightsPool:
    """Worker processes answering ``predict`` from one copy of the weights in shared memory."""

    def __init__(self, weights, workers=2, target=process_workers.serve):
        ctx = multiprocessing.get_context("spawn")
        self.block = shared_memory.SharedMemory(create=True, size=sum(w.nbytes for w in weights))
        offset = 0
        for w in weights:
            self.block.buf[offset:offset + w.nbytes] = w.tobytes()
            offset += w.nbytes
        self.requests, self.answers = ctx.Queue(), ctx.Queue()
        self.workers = [ctx.Process(target=target, args=(self.block.name, [w.shape for w in weights],
                                                         self.requests, self.answers))
                        for _ in range(workers)]
        for p in self.workers:
            p.start()

    def predict(self, tokens):
        """The model's output for ``tokens``; safe to call from many threads at once."""
        # Queues are process-safe and thread-safe, so this should be fine.
        self.requests.put((0, tokens))
        return self.answers.get()[1]

    def close(self):
        """Stop and join every worker; close and unlink the shared block."""
        for _ in self.workers:
            self.requests.put(None)
        for p in self.workers:
            p.join()
        self.block.close()
        self.block.unlink()

# %% ex_processes_ledger
def run_ledger(workers, updates):
    """Run ``workers`` ledger workers on processes; the accounts' totals, no update lost."""
    ctx = multiprocessing.get_context("spawn")
    ledger = ctx.Array("q", process_workers.LEDGER_SLOTS)  # synchronized: it has its own lock
    procs = [ctx.Process(target=process_workers.tally, args=(ledger, None, k, workers, updates))
             for k in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    return list(ledger[:process_workers.ACCOUNTS])

# %% ex_processes_choose
def choose(threads, processes_, memory_budget_mb):
    """``"threads"`` or ``"processes"`` for two measured designs and a memory budget."""
    if processes_.memory_mb > memory_budget_mb:
        return "threads"
    ratios = sorted(p / t for p, t in zip(processes_.per_second, threads.per_second, strict=True))
    middle = len(ratios) // 2
    median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
    return "processes" if median >= 1.2 else "threads"
