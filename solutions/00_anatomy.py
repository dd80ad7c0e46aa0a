# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Anatomy of a race
#
# Two threads that share an object can interleave their steps in many orders. A race is an
# order that breaks your program. This lesson takes one apart in plain Python, the foundation
# for every TensorFlow race in the lessons that follow.
#
# **What you will see break.** Four threads add to one counter. Written as `x += 1`, on
# Python 3.11 it loses nothing, however often you run it. Read the value, let go of the
# interpreter for an instant (as I/O or a TensorFlow op does), then write: updates disappear.
# Put a function call between the read and the write: updates disappear too, a different
# number from one trial to the next. A cache that checks for a key and then loads it
# loads the same key more than once.
#
# **What you will learn to read.** What a thread switch is and where one can happen; the
# *schedule* the Race Lab scheduler finds when it breaks your code, which you replay exactly,
# draw, and write yourself.
#
# **What you will build.** Three graded answers:
#
# 1. `OVERDRAFT` and `DOUBLE_PAY`: two schedules, written by you, that break a bank withdrawal
#    in two different ways.
# 2. `SafeCounter`: a counter whose increments are never lost, whatever the interleaving.
# 3. `OnceCache`: a cache that loads each key exactly once, however many threads ask at once.
#
# **How long it takes.** About 40 minutes. The notebook runs top to bottom in well under a
# minute; every number it prints is measured while you watch, so yours will differ a little.

# %% [markdown]
# ## Setup
#
# Import everything here. `autograder.harness` is the race detector you use in every lesson;
# `autograder.checks.anatomy` holds the thread runners used below and the graders.
# `%matplotlib inline` lets the notebook show the harness's pictures.
#
# This lesson's races live in plain Python, so it does not import TensorFlow: importing it
# takes several seconds and hundreds of megabytes, and nothing here needs it. TensorFlow and
# Keras arrive in lesson 01. Print the interpreter you are running instead, since what you see
# below depends on it:

# %%
# %matplotlib inline
import dis
import platform
import sys
import threading
import time

from autograder.checks import anatomy
from autograder.harness import explore, replay, timeline
from autograder.lesson import claim, quick_test_passed

print("Python", platform.python_version(), platform.python_implementation())
print("switch interval:", sys.getswitchinterval(), "s")

# %% [markdown]
# ## See it break
#
# ### Four threads, one counter
#
# Define a shared object with one number in it, and a function that adds 1 to it `n` times:

# %%
class Counter:
    def __init__(self):
        self.value = 0


def add_plus_equals(counter, n):
    for _ in range(n):
        counter.value += 1


# %% [markdown]
# `anatomy.count_trials` makes a fresh `Counter`, starts four threads that each run
# `add_plus_equals(counter, 200_000)`, releases them together, waits for all of them and
# records the final value. Run five trials. The last line of the output is the claim this
# experiment makes, checked against what it measured (every demonstration in the course ends
# with one):

# %%
THREADS = 4
finals = anatomy.count_trials(Counter, add_plus_equals, threads=THREADS, per_thread=200_000,
                              trials=5)
print("final values:", finals)
print(anatomy.describe_losses(finals, THREADS * 200_000))
claim("x += 1 from four threads lost no increment in any trial",
      all(final == THREADS * 200_000 for final in finals))

# %% [markdown]
# Nothing was lost. It is tempting to conclude that `+=` is atomic in Python. Keep reading.
#
# ### Read, pause, write
#
# Now split the update in two and pause between the read and the write. `time.sleep(0)`
# sleeps for no time at all, but it lets go of the global interpreter lock (GIL) while it does,
# exactly as reading a file, waiting on the network, or running a TensorFlow or NumPy op does:

# %%
def add_after_a_pause(counter, n):
    for _ in range(n):
        seen = counter.value
        time.sleep(0)  # lets go of the GIL, like I/O or a TensorFlow op
        counter.value = seen + 1


# %%
finals = anatomy.count_trials(Counter, add_after_a_pause, threads=THREADS, per_thread=2_000,
                              trials=5)
print("final values:", finals)
print(anatomy.describe_losses(finals, THREADS * 2_000))
claim("read, sleep(0), write lost increments in every trial",
      all(final < THREADS * 2_000 for final in finals))

# %% [markdown]
# Increments are gone, in every trial. Each thread read a value, paused, and wrote back its own
# stale value plus one, erasing whatever the others had written meanwhile: a *lost update*.
#
# ### Read, call a function, write
#
# No pause this time, only Python code: read the value in one small function and write it in
# another. The interpreter may switch threads at any function call. It does so every 5 ms by
# default; the cell below asks it to every 10 microseconds (`switch_interval=1e-5`), which
# changes how often the race shows, not whether it can.

# %%
def read(counter):
    return counter.value


def write(counter, value):
    counter.value = value


def add_through_calls(counter, n):
    for _ in range(n):
        write(counter, read(counter) + 1)


# %%
finals = anatomy.count_trials(Counter, add_through_calls, threads=THREADS, per_thread=100_000,
                              trials=5, switch_interval=1e-5)
print("final values:", finals)
print(anatomy.describe_losses(finals, THREADS * 100_000))
claim("read, call, write lost increments in at least one trial",
      any(final < THREADS * 100_000 for final in finals))

# %% [markdown]
# The same arithmetic as `counter.value += 1`, moved into two functions, loses updates. Pure
# Python is not safe; the first loop was lucky in a way you will take apart in "See why".
#
# ### Check, then act
#
# The other classic race: look at shared state, then act on what you saw. Here is a cache that
# loads a value the first time a key is asked for:

# %%
class RacyCache:
    def __init__(self, load):
        self.load = load
        self.values = {}

    def get(self, key):
        if key not in self.values:
            self.values[key] = self.load(key)
        return self.values[key]


# %% [markdown]
# `anatomy.cache_trials` gives a fresh cache a loader that takes 10 ms (a sleep standing in for
# reading a model from disk) and lets four threads call `cache.get("model")` at once. It
# returns, per trial, how many times the loader ran and how long the four calls took:

# %%
racy_runs = anatomy.cache_trials(RacyCache, threads=THREADS, trials=5)
loads = [n for n, _ in racy_runs]
print("loads per trial:", loads)
print(f"loaded more than once in {sum(n > 1 for n in loads)} of {len(loads)} trials")
claim("the key was loaded more than once in every trial", all(n > 1 for n in loads))

# %% [markdown]
# Every thread that found the key missing before another had stored it loaded it too: the
# counts above say how many did, in each trial. With a real model each extra load is another
# copy in memory and another round of start-up work.

# %% [markdown]
# ## See why
#
# ### What a thread switch is
#
# CPython runs your code as a list of small instructions, *bytecode*. Only the thread that holds
# the GIL executes bytecode; the others wait. A *thread switch* is the moment the running thread
# stops and another one takes over. It can happen in two ways:
#
# - C code lets go of the GIL while it waits or computes: `time.sleep`, file and network I/O,
#   many NumPy and TensorFlow ops. Another thread runs at once.
# - A waiting thread asks for the GIL, and after the switch interval (printed in the setup, 5 ms
#   by default) the running thread is told to hand it over. CPython 3.11 obeys only at certain
#   instructions: when a Python function starts, when a loop jumps back to its top, and after
#   some calls into C.
#
# Look at the instructions of the first loop:

# %%
dis.dis(add_plus_equals)

# %% [markdown]
# `counter.value += 1` is `LOAD_ATTR value` (read), `BINARY_OP +=` (add), `STORE_ATTR value`
# (write): three steps, with a moment between the read and the write when another thread could
# change `counter.value`. On this Python none of these is a place where the interpreter lets go,
# so the switch always lands elsewhere (for instance at `JUMP_BACKWARD`, the loop's jump back)
# and no update was lost. In `add_through_calls`, `write(...)` starts a Python function
# *between* the read and the write: a switch point inside the window, so updates were lost. In
# `add_after_a_pause`, `time.sleep(0)` gives the GIL away inside the window every time.
#
# ### Outdated advice: make threads switch more often
#
# Tutorials that want to show a race with `+=` often tell you to make the interpreter switch
# threads more often, with `sys.setcheckinterval`. That function is gone; its successor is
# `sys.setswitchinterval`. Try both on this Python:

# %%
print("sys.setcheckinterval exists:", hasattr(sys, "setcheckinterval"))
previous = sys.getswitchinterval()
sys.setswitchinterval(1e-6)  # ask for a switch every microsecond
try:
    plus_equals = anatomy.count_trials(Counter, add_plus_equals, threads=THREADS,
                                       per_thread=200_000, trials=5)
    through_calls = anatomy.count_trials(Counter, add_through_calls, threads=THREADS,
                                         per_thread=100_000, trials=5)
finally:
    sys.setswitchinterval(previous)
print("+=            :", anatomy.describe_losses(plus_equals, THREADS * 200_000))
print("through calls :", anatomy.describe_losses(through_calls, THREADS * 100_000))
claim("at a 1 us switch interval, += still lost nothing and the calls still lost increments",
      all(final == THREADS * 200_000 for final in plus_equals)
      and any(final < THREADS * 100_000 for final in through_calls))

# %% [markdown]
# Switching thousands of times more often still loses nothing with `+=`: the interpreter cannot
# switch where it does not look. That is a detail of this interpreter, not a promise of the
# language. A property instead of a plain attribute, a logging call, an `__iadd__` written in
# Python, or another Python build puts a switch point inside the window. Code is correct only
# if *every* order of its steps works, and running it and hoping is a poor way to try them all.
#
# ### Let a scheduler choose the switches
#
# `explore(setup, workers, check)` runs your threads one at a time and decides itself, before
# every step that another thread could notice, which thread goes next. It tries many such
# schedules (seeded, so the same every time) and stops at the first one that breaks `check`.
# Give it the bare `+=`, two threads of one increment each:

# %%
def add_once(counter):
    counter.value += 1


def both_counted(counter):
    assert counter.value == 2, f"expected 2 increments, saw {counter.value}"


result = explore(Counter, [add_once, add_once], both_counted)
print(result.verdict, "after", result.schedules_run, "schedules")
print(result.message)
claim("the scheduler found a lost update of the bare +=", result.verdict == "race")

# %% [markdown]
# Real threads never lost an update of `+=`; the scheduler found the order that does within a
# handful of schedules, and explains it.
#
# ### Read a schedule
#
# `result.schedule` is a *token* naming that exact run:

# %%
print(result.schedule)
print(anatomy.explain_schedule(result.schedule))
claim("the token is v1:1>0,3>1,6>0, the one read step by step below",
      result.schedule == "v1:1>0,3>1,6>0")

# %% [markdown]
# The format is `v1:` followed by `step>worker` pairs. The scheduler numbers its decisions
# (steps) from 1; `3>1` means "at step 3, worker 1 gets the turn". Between two pairs, the
# worker holding the turn keeps running. Spaces are allowed anywhere in a token and ignored:
# `"v1: 1>0, 3>1"` is the same token as `"v1:1>0,3>1"`. The scheduler makes a decision:
#
# - at step 1, to pick the first worker;
# - before each instruction of your code that touches something another thread can see:
#   reading or writing an attribute (`counter.value`), an item (`d[k]`), a global, or calling
#   C code. Local variables, constants and arithmetic on numbers are private: no step;
# - when a worker finishes (or blocks on a lock): someone else must get the turn.
#
# So for two `add_once` workers: step 1 picks worker 0; step 2 is before its read, step 3
# before its write. The token above hands the turn to worker 1 at step 3, *between worker 0's
# read and its write*. Worker 1 reads (step 4) and writes (step 5) and finishes; at step 6 the
# turn goes back to worker 0, which writes the value it read before: 1, not 2.
#
# The harness draws the run: one lane per worker, the horizontal axis counts steps, dashed
# lines mark switches and the red cross marks where the check failed.

# %%
result.figure()

# %% [markdown]
# The bars name the lines each worker ran, not what they saw. Make the workers say it: the
# same read and write, split into two statements, each noting the value it read or wrote in a
# list the check can look at. Each access and its note share a small lock, so that the notes
# come out in the order of the accesses; the lock never covers the read and the write
# together, so the race is still there. Let `explore` find the lost update again and draw the
# notes of the failing run, one step per note, with `timeline.from_events`:

# %%
def noted_setup():
    counter = Counter()
    counter.notes, counter.note_lock = [], threading.Lock()
    return counter


def noted_add_once(worker):
    def add(counter):
        with counter.note_lock:
            seen = counter.value
            counter.notes.append((worker, f"read {seen}"))
        with counter.note_lock:
            counter.value = seen + 1
            counter.notes.append((worker, f"write {seen + 1}"))
    return add


noted_runs = []


def noted_check(counter):
    noted_runs.append(list(counter.notes))
    both_counted(counter)


noted = explore(noted_setup, [noted_add_once(0), noted_add_once(1)], noted_check)
notes = noted_runs[-1]
print(noted.verdict, "|", notes)
claim("in the failing run both workers read 0 and both wrote 1",
      noted.verdict == "race"
      and [label for _, label in notes] == ["read 0", "read 0", "write 1", "write 1"])
timeline.draw(timeline.from_events(["worker 0", "worker 1"], notes,
                                   failure="1 increment, not 2", title="the lost update, step by step"))

# %% [markdown]
# Both workers read 0 before either wrote, so both wrote 1: one increment is lost.
#
# ### Replay it, then write your own
#
# `replay(setup, workers, check, token)` runs exactly that schedule again, with the same
# verdict every time. Replay the token you found, then three you write by hand:
# worker 0 runs to the end before worker 1 (`v1:1>0,4>1`), the mirror image of the race
# (`v1:1>1,3>0,6>1`), and a switch *before* worker 0's read (`v1:1>0,2>1,5>0`):

# %%
verdicts = {}
for token in [result.schedule, "v1:1>0,4>1", "v1:1>1,3>0,6>1", "v1:1>0,2>1,5>0"]:
    verdicts[token] = replay(Counter, [add_once, add_once], both_counted, token).verdict
    print(f"{token:18} -> {verdicts[token]}")
claim("only the two switches between a read and its write lost an update",
      [v == "race" for v in verdicts.values()] == [True, False, True, False])

# %% [markdown]
# Only a switch between one worker's read and its write loses an update. A switch before the
# read is harmless: worker 0 reads after worker 1 has written.
#
# ### Steps of a bank withdrawal
#
# Alice and Bob share an account holding 100, and both withdraw 60 at the same time. The
# bank's `withdraw` checks the balance, then subtracts. Each customer records what they were
# paid in `account.paid`. (The grader of exercise 1 uses exactly this code.)

# %%
class Account:
    """A bank account two customers share."""

    def __init__(self, balance):
        self.balance = balance
        self.paid = {}


def withdraw(account, amount):
    """Pay out `amount` if the balance covers it; return what was paid."""
    if account.balance >= amount:
        account.balance -= amount
        return amount
    return 0


def alice(account):
    account.paid["alice"] = withdraw(account, 60)


def bob(account):
    account.paid["bob"] = withdraw(account, 60)


def open_account():
    return Account(100)


# %% [markdown]
# Run one after the other, one customer is paid and the other is refused. `bank_after(token)`
# replays a schedule of Alice (worker 0) and Bob (worker 1) and returns the account it ended
# with, so you can look at it:

# %%
def bank_after(token):
    accounts = []

    def setup():
        accounts.append(open_account())
        return accounts[-1]

    replay(setup, [alice, bob], lambda account: True, token)
    return accounts[-1]


account = bank_after("v1:1>0,7>1")
print("balance:", account.balance, "| paid:", account.paid)

# %% [markdown]
# To count the steps, read the instructions. In `withdraw`, look for the reads and writes of
# `account.balance` (`LOAD_ATTR`, `STORE_ATTR`); in `alice`, the read of `account.paid` and the
# store into it (`STORE_SUBSCR`). `LOAD_GLOBAL withdraw` and the call into `withdraw` are not
# steps: `withdraw` is a function of yours, and the scheduler steps into it instead.

# %%
dis.dis(withdraw)

# %%
dis.dis(alice)

# %% [markdown]
# ## Fix it
#
# Each exercise has an answer cell, a cell that runs your answer once, and a test cell. The
# quick checks in the test cell run in a second; the grader then runs your answer under the
# scheduler, through many interleavings, with a fixed seed: the same answer gets the same
# verdict every time. When it finds a breaking schedule it shows you the token, the story and
# the picture, so you can replay it here.
#
# ### Exercise 1: name the failing interleavings
#
# Two different things can go wrong when Alice and Bob withdraw 60 each from 100 at once.
# Write each one as a schedule token of `[alice, bob]` on `open_account()` (worker 0 is Alice,
# worker 1 is Bob):
#
# - `OVERDRAFT`: both are paid and the balance ends **negative** (-20). Both customers passed
#   the `if` before either subtracted.
# - `DOUBLE_PAY`: both are paid 60, 120 in all, yet the balance shows **40**: money was made
#   out of nothing. Both read the balance for `-=` before either wrote it back.
#
# Work out the steps from the instructions above and check your tokens with `bank_after`. You
# may also let `explore` find them, but then you have to write the check that each outcome
# breaks: only one of them leaves the balance below zero.

# %% nbgrader={"grade": false, "grade_id": "ex_anatomy_schedules", "locked": false, "schema_version": 3, "solution": true, "task": false}
# Schedule tokens of [alice, bob] on open_account(), e.g. "v1:1>0,7>1".
### BEGIN SOLUTION
OVERDRAFT = "v1:1>0,3>1,9>0"
DOUBLE_PAY = "v1:1>0,4>1,7>0,10>1"
### END SOLUTION

# %%
for name, token in [("OVERDRAFT", OVERDRAFT), ("DOUBLE_PAY", DOUBLE_PAY)]:
    account = bank_after(token)
    print(f"{name:10} {token:22} balance {account.balance:4} | paid {account.paid}")

# %% nbgrader={"grade": true, "grade_id": "test_anatomy_schedules", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
anatomy.parse_schedule(OVERDRAFT, name="OVERDRAFT", workers=2)
anatomy.parse_schedule(DOUBLE_PAY, name="DOUBLE_PAY", workers=2)
assert bank_after(OVERDRAFT).balance < 0, "OVERDRAFT should leave a negative balance"
quick_test_passed()
### BEGIN HIDDEN TESTS
anatomy.check_schedules(OVERDRAFT, DOUBLE_PAY)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: a counter whose increments are never lost
#
# A metrics counter is shared by the threads that serve requests, which call `increment`, and
# a reporter thread that calls `take` now and then to read the count and start again from
# zero. Write `SafeCounter`:
#
# - `increment(by=1)` adds `by` to the count;
# - `take()` returns the count so far and resets it to 0;
# - `increment` may be called from many threads at once, and while `take` runs; `take()` is
#   called by one reporter thread at a time;
# - every increment is returned by exactly one `take()`, in every interleaving: none lost,
#   none counted twice.
#
# Both methods read and write the same shared state. The grader runs two threads that
# increment and one that takes, through many schedules.

# %% nbgrader={"grade": false, "grade_id": "ex_anatomy_counter", "locked": false, "schema_version": 3, "solution": true, "task": false}
class SafeCounter:
    """A count that threads add to and a reporter takes, never losing an increment."""

    def __init__(self):
        ### BEGIN SOLUTION
        self._count = 0
        self._lock = threading.Lock()
        ### END SOLUTION

    def increment(self, by=1):
        """Add ``by`` to the count; safe to call from many threads at once."""
        ### BEGIN SOLUTION
        with self._lock:
            self._count += by
        ### END SOLUTION

    def take(self):
        """Return the count so far and reset it to 0, as one indivisible step."""
        ### BEGIN SOLUTION
        with self._lock:
            count = self._count
            self._count = 0
        return count
        ### END SOLUTION


# %%
counter = SafeCounter()
counter.increment()
counter.increment(5)
print("take:", counter.take(), "| take again:", counter.take())

# %% nbgrader={"grade": true, "grade_id": "test_anatomy_counter", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
anatomy.counter_on_one_thread(SafeCounter)  # increment(), increment(3), take() == 4, take() == 0 ...
shared = SafeCounter()
anatomy.run_threads(lambda _index: [shared.increment() for _ in range(1_000)], 2)
assert shared.take() == 2_000, "two threads of 1,000 increments each should take 2,000"
quick_test_passed()
### BEGIN HIDDEN TESTS
anatomy.check_counter(SafeCounter)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: a cache that loads each key once
#
# Fix the check-then-act race of `RacyCache`. Write `OnceCache(load)`:
#
# - `get(key)` returns `load(key)`'s value for that key;
# - `load` runs at most once per key for the lifetime of the cache, even when many threads ask
#   for the same missing key at the same moment;
# - every caller of a key gets the very same object (`is`), whichever thread loaded it.
#
# The grader runs three threads asking for two keys in different orders, through many
# schedules, and counts the loads.

# %% nbgrader={"grade": false, "grade_id": "ex_anatomy_cache", "locked": false, "schema_version": 3, "solution": true, "task": false}
class OnceCache:
    """Memoise an expensive ``load(key)``: each key is loaded once, however many threads ask."""

    def __init__(self, load):
        """Remember ``load``; call it only from ``get``."""
        ### BEGIN SOLUTION
        self._load = load
        self._values = {}
        self._lock = threading.Lock()
        ### END SOLUTION

    def get(self, key):
        """Return the value for ``key``, calling ``load(key)`` only if no thread has yet."""
        ### BEGIN SOLUTION
        with self._lock:
            if key not in self._values:
                self._values[key] = self._load(key)
            return self._values[key]
        ### END SOLUTION


# %%
once_runs = anatomy.cache_trials(OnceCache, threads=THREADS, trials=5)
print("loads per trial, four threads asking for one key:", [n for n, _ in once_runs])

# %% nbgrader={"grade": true, "grade_id": "test_anatomy_cache", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
anatomy.cache_on_one_thread(OnceCache)  # get("x") twice loads once, returns the same object
assert all(n == 1 for n, _ in anatomy.cache_trials(OnceCache, threads=4, trials=2)), (
    "four real threads asking for one key loaded it more than once")
quick_test_passed()
### BEGIN HIDDEN TESTS
anatomy.check_cache(OnceCache)
### END HIDDEN TESTS

# %% [markdown]
# ## Measure it
#
# ### What the lock costs
#
# Compare your `SafeCounter` with the same interface and no lock, four threads each making
# 50,000 increments (best of three runs):

# %%
class UnlockedCounter:
    def __init__(self):
        self.value = 0

    def increment(self, by=1):
        self.value += by


def increments(counter, n):
    for _ in range(n):
        counter.increment()


unlocked_rate = anatomy.throughput(UnlockedCounter, increments, threads=THREADS,
                                   per_thread=50_000)
safe_rate = anatomy.throughput(SafeCounter, increments, threads=THREADS, per_thread=50_000)
print(f"no lock:     {unlocked_rate:12,.0f} increments/s")
print(f"SafeCounter: {safe_rate:12,.0f} increments/s ({safe_rate / unlocked_rate:.2f}x)")
print("the unlocked counter under the scheduler:",
      explore(UnlockedCounter, [lambda c: c.increment(), lambda c: c.increment()],
              lambda c: c.value == 2).verdict)

# %% [markdown]
# The ratio is what taking and releasing a lock costs when the work it guards is a single
# addition, as small as work gets. Real work between increments (serving a request) makes that
# share small, and a count that loses increments is wrong however fast it is.
#
# ### What the cache saves, and what one lock costs it
#
# Four threads ask for the same key: compare the loads and the time of `RacyCache` and your
# `OnceCache` (the five trials from "See it break" and exercise 3). Then let each thread ask
# for a different key:

# %%
def summary(runs):
    loads = sum(n for n, _ in runs) / len(runs)
    seconds = sorted(s for _, s in runs)[len(runs) // 2]
    return loads, seconds


racy_loads, racy_s = summary(racy_runs)
once_loads, once_s = summary(once_runs)
print(f"same key:       RacyCache {racy_loads:.1f} loads in {racy_s * 1e3:5.1f} ms | "
      f"OnceCache {once_loads:.1f} loads in {once_s * 1e3:5.1f} ms")
racy_diff = summary(anatomy.cache_trials(RacyCache, threads=THREADS, trials=5,
                                         same_key=False))
once_diff = summary(anatomy.cache_trials(OnceCache, threads=THREADS, trials=5,
                                         same_key=False))
print(f"different keys: RacyCache {racy_diff[0]:.1f} loads in {racy_diff[1] * 1e3:5.1f} ms | "
      f"OnceCache {once_diff[0]:.1f} loads in {once_diff[1] * 1e3:5.1f} ms "
      f"({once_diff[1] / racy_diff[1]:.1f}x the time)")
if once_diff[1] >= 2 * racy_diff[1]:
    print("different keys waited for each other in your OnceCache: one lock is held while loading")
else:
    print("different keys loaded at the same time in your OnceCache")

# %% [markdown]
# The loads are exact counts: for one key `OnceCache` loads once where `RacyCache` loaded it
# more than once (the counts above), and the threads that did not load waited for the one that
# did. The times show the cost of the design. A `get` that holds one lock while it loads makes
# every other key wait too, so four independent loads take about as long as four loads in a
# row; the last line says which your `OnceCache` does. Lesson 02 builds a cache that loads
# each key once without making the other keys wait.
#
# ## Summary
#
# A race needs shared state, a read and a write that belong together, and a thread switch
# between them. Whether your Python happens to switch there is luck; make every read-modify-write
# and every check-then-act on shared state one step under a lock, and let the scheduler try the
# orders for you.
