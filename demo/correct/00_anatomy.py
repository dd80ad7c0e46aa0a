# Lesson 00 (anatomy of a race), a student who gets everything right in their own way: Bob goes
# first in the overdraft, an RLock guards the counter, and the cache lets the thread that
# claims a key load it while the others wait on an Event.

# %% ex_anatomy_schedules
# Schedule tokens of [alice, bob] on open_account(), e.g. "v1:1>0,7>1".
# Bob passes the `if` (step 2), then Alice runs to the end, then Bob subtracts as well.
OVERDRAFT = "v1:1>1,3>0,9>1"
# Alice passes the `if`; Bob reads the balance for `-=` before Alice writes it back.
DOUBLE_PAY = "v1:1>0,2>1,5>0,10>1"

# %% ex_anatomy_counter
class SafeCounter:
    """A count that threads add to and a reporter takes, never losing an increment."""

    def __init__(self):
        self.total = 0
        self.guard = threading.RLock()

    def increment(self, by=1):
        """Add ``by`` to the count; safe to call from many threads at once."""
        self.guard.acquire()
        try:
            self.total = self.total + by
        finally:
            self.guard.release()

    def take(self):
        """Return the count so far and reset it to 0, as one indivisible step."""
        with self.guard:
            taken, self.total = self.total, 0
        return taken

# %% ex_anatomy_cache
class OnceCache:
    """Memoise an expensive ``load(key)``: each key is loaded once, however many threads ask."""

    def __init__(self, load):
        """Remember ``load``; call it only from ``get``."""
        self.load = load
        self.values = {}
        self.ready = {}
        self.claims = threading.Lock()

    def get(self, key):
        """Return the value for ``key``, calling ``load(key)`` only if no thread has yet."""
        with self.claims:
            event = self.ready.get(key)
            mine = event is None
            if mine:
                event = self.ready[key] = threading.Event()
        if mine:
            self.values[key] = self.load(key)
            event.set()
        else:
            event.wait()
        return self.values[key]
