# Lesson 00: a "lock" that never blocks, installed over threading.Lock so that unlocked code
# looks locked. The race detector notices its tools were replaced and refuses to pass.
# base: correct

# %% ex_anatomy_counter
class _FastLock:
    def acquire(self, blocking=True, timeout=-1):
        return True

    def release(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


threading.Lock = _FastLock


class SafeCounter:
    def __init__(self):
        self.total = 0
        self.guard = threading.Lock()

    def increment(self, by=1):
        with self.guard:
            self.total += by

    def take(self):
        with self.guard:
            taken, self.total = self.total, 0
        return taken
