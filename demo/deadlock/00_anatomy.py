# Lesson 00: right answers, but the counter cell ends with a self-test that deadlocks:
# it holds the (non-reentrant) lock and calls take(), which waits for that same lock forever.
# base: correct

# %% ex_anatomy_counter
class SafeCounter:
    """A count that threads add to and a reporter takes, never losing an increment."""

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


# Quick self-test before moving on.
_counter = SafeCounter()
with _counter.guard:
    print("taken:", _counter.take())
