# Lesson 00 (anatomy of a race), a student who locks only where the count goes up: "take() just
# reads and resets, that's quick". An increment landing between take()'s read and its reset is
# lost, so exercise 2 scores 0; the schedules and the cache are right.

# %% ex_anatomy_schedules
# Schedule tokens of [alice, bob] on open_account(), e.g. "v1:1>0,7>1".
OVERDRAFT = "v1:1>0,3>1,9>0"
DOUBLE_PAY = "v1:1>0,4>1,7>0,10>1"

# %% ex_anatomy_counter
class SafeCounter:
    """A count that threads add to and a reporter takes, never losing an increment."""

    def __init__(self):
        self.value = 0
        self.lock = threading.Lock()

    def increment(self, by=1):
        """Add ``by`` to the count; safe to call from many threads at once."""
        with self.lock:
            self.value += by

    def take(self):
        """Return the count so far and reset it to 0, as one indivisible step."""
        value = self.value
        self.value = 0
        return value

# %% ex_anatomy_cache
class OnceCache:
    """Memoise an expensive ``load(key)``: each key is loaded once, however many threads ask."""

    def __init__(self, load):
        """Remember ``load``; call it only from ``get``."""
        self.load = load
        self.values = {}
        self.lock = threading.Lock()

    def get(self, key):
        """Return the value for ``key``, calling ``load(key)`` only if no thread has yet."""
        if key in self.values:
            return self.values[key]
        with self.lock:
            if key not in self.values:
                self.values[key] = self.load(key)
            return self.values[key]
