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
# # Find out which thread did it with logs and traces
#
# A race leaves a wrong value behind and no trace of how it got there. By the time you look,
# the threads are gone. In this lesson you make threads leave evidence: a log in which every
# access to shared state carries the thread's name and a `time.perf_counter_ns()` timestamp,
# and a TensorFlow profiler trace in which every thread's work is a named region. You then
# read that evidence back in the notebook and let code find the race for you.
#
# **What you will see break.** Four trainer threads publish their validation score to a
# shared "best checkpoint" record. The record should end up holding the best score; you count
# the rounds in which it does not, and log the accesses with Python's `logging`. You also run the popular `tf.summary.trace_on(..., profiler=True)` +
# `trace_export(..., profiler_outdir=...)` snippet and see TensorFlow 2.21 raise on it.
#
# **What you will build.**
#
# 1. `log_access`: run one access to a shared resource and log who did it and when, even
#    when the access raises.
# 2. `who_overwrote`: read a log and name the thread that overwrote another thread's update.
# 3. `find_conflicts`: read a log and list the accesses that overlapped without a common lock.
#    You then see why overlap in time is not enough to find races.
# 4. `lockset_races`: find races by the locks held instead, as the Eraser detector does.
# 5. `publish_locked`: fix the pipeline, and make its log say which lock guarded each access.
#
# You then measure what logging and profiling cost per access.
#
# **How long it takes.** About 40 minutes. The notebook runs top to bottom in well under two
# minutes on two cores; every number it prints is measured while you watch, so yours will
# differ from run to run. Lessons 01-02 (threads, locks) come first.

# %% [markdown]
# ## Setup
#
# Import everything here. `autograder.checks.tracing` holds the plotting and trace-reading
# helpers and the graders. Traces go under `logs/06_tracing/`, next to this notebook.

# %%
import functools
import logging
import os

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"

import shutil
import statistics
import threading
import time

import keras
import matplotlib.pyplot as plt
import tensorflow as tf

from autograder.checks import tracing
from autograder.harness import explore
from autograder.lesson import claim, quick_test_passed

# %matplotlib inline
tf.get_logger().setLevel("ERROR")  # quiet; the profiler section below turns warnings back on
LOGDIR = os.path.join("logs", "06_tracing")
shutil.rmtree(LOGDIR, ignore_errors=True)
print("TensorFlow", tf.__version__)
print("Keras", keras.__version__)

# %% [markdown]
# ## The pipeline
#
# Each trainer evaluates its candidate weights with TensorFlow, then publishes the score: it
# reads the shared record, writes its own checkpoint (a short sleep stands in for the file
# I/O), and replaces the record when its score is better than the one it read.
#
# `access(op, resource, fn)` is how `publish` touches the record. For now it just calls
# `fn()`; later you swap in a version that logs.

# %%
def plain_access(op, resource, fn, lock=None):
    return fn()


def evaluate(seed):
    weights = tf.random.stateless_normal((160, 160), seed=(seed, 6))
    return float(tf.reduce_mean(tf.abs(tf.linalg.matmul(weights, weights))))


def publish(best, name, score, access=plain_access):
    seen = access("read", "best", lambda: best["score"])
    time.sleep(0.002)  # write this trainer's checkpoint file (simulated I/O)
    if score > seen:
        access("write", "best", lambda: best.update(score=score, by=name))


def train_round(access=plain_access, threads=4):
    best = {"score": float("-inf"), "by": None}
    scores = {f"trainer-{k}": evaluate(k) for k in range(threads)}

    def trainer(name):
        evaluate(hash(name) % 1000)  # this round's work: TensorFlow releases the GIL here
        publish(best, name, scores[name], access)

    workers = [threading.Thread(target=trainer, args=(n,), name=n) for n in scores]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return best, scores


# %% [markdown]
# Run one round and compare the record with the best score:

# %%
evaluate(0)  # warm TensorFlow's kernels before threads share them
best, scores = train_round()
print("scores:", {n: round(s, 3) for n, s in scores.items()})
print("record:", best, "| should be by", max(scores, key=scores.get))

# %% [markdown]
# ## See it break
#
# Run many rounds and count the ones whose record does not hold the best score:

# %%
rounds = 30
wrong = 0
for _ in range(rounds):
    best, scores = train_round()
    wrong += best["by"] != max(scores, key=scores.get)
print(f"the record lost the best score in {wrong} of {rounds} rounds")
claim("the record lost the best score in at least one round", wrong >= 1)

# %% [markdown]
# Each thread read the record, slept while it wrote its file, and then wrote the record based
# on what it had read. The final value tells you *that* an update was lost, not *whose*, nor
# *who* overwrote it. For that you need each thread to write down what it did and when.

# %% [markdown]
# ## See why
#
# ### A log of who touched the record, and when
#
# The smallest useful log entry names the thread (`threading.current_thread().name`), the
# operation and resource, and a start and end time from `time.perf_counter_ns()`: an integer
# clock that never goes backwards and that all threads of a process share
# (`time.get_clock_info("time")` says `adjustable=True`: wall-clock time can jump when the
# system clock is set). Here is a first version that takes a single timestamp, after the
# access:

# %%
def log_after(log):
    def access(op, resource, fn, lock=None):
        value = fn()
        log.append({"thread": threading.current_thread().name, "op": op,
                    "resource": resource, "at": time.perf_counter_ns()})
        return value
    return access


for _ in range(rounds):
    log = []
    best, scores = train_round(log_after(log))
    if best["by"] != max(scores, key=scores.get):
        break
print("record:", best, "| best score by", max(scores, key=scores.get))
t0 = min(r["at"] for r in log)
for r in sorted(log, key=lambda r: r["at"]):
    print(f"{(r['at'] - t0) / 1e6:8.3f} ms  {r['thread']:10s} {r['op']:5s} {r['resource']}")
claim("the round shown lost the best score", best["by"] != max(scores, key=scores.get))

# %% [markdown]
# Read it top to bottom: trainers read the record before the other trainers' writes landed,
# so at least one trainer compared its score with a stale value, and the last writer won,
# whatever its score. `list.append` is thread-safe in CPython, so the log itself is not a
# race. A log sorted by time, with thread names, is the whole story: you will build the full
# version (start *and* end of each access, and the lock held) in exercise 1, and code that
# reads it in exercises 2 and 3.
#
# ### The production way: `logging` with `%(threadName)s`
#
# In a real service you would not append to a list: Python's `logging` already records, for
# every message, the thread's name (`%(threadName)s`) and the time since the program started
# (`%(relativeCreated)d`, in milliseconds), and one handler is safe to share between threads.
# Send the accesses of one round through a logger whose format names the thread:

# %%
class Lines(logging.Handler):
    """Keep formatted log lines in a list (a FileHandler would write them to a file)."""

    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(self.format(record))


access_log = logging.getLogger("racelab.access")
access_log.setLevel(logging.INFO)
access_log.propagate = False
lines = Lines()
lines.setFormatter(logging.Formatter("%(relativeCreated)10.3f ms %(threadName)-10s %(message)s"))
access_log.addHandler(lines)


def logged_access(op, resource, fn, lock=None):
    value = fn()
    access_log.info("%s %s -> %r", op, resource, value if op == "read" else None)
    return value


best, scores = train_round(logged_access)
access_log.removeHandler(lines)
print("\n".join(lines.lines))
claim("every logged access names the trainer thread that made it",
      len(lines.lines) >= 4 and all(" trainer-" in line for line in lines.lines))

# %% [markdown]
# Each line says who, when and what, including the score each trainer read: the same evidence
# as the list, in a form every log viewer reads. The rest of this lesson uses a list of dicts,
# so that code can read the log back directly.
#
# ### The same race, under the controlled scheduler
#
# Real threads found the race in the rounds counted above because `publish` sleeps between its
# read and its write. `explore` (from lesson 02) runs the threads one at a time and picks who
# goes next at each step, so it finds the interleaving without any sleep being long enough. Give
# it two trainers and the invariant "the record holds the best score":

# %%
two_scores = {"trainer-0": 0.71, "trainer-1": 0.93}


def fresh_record():
    return {"score": float("-inf"), "by": None}


def trainer_worker(name):
    def worker(best):
        publish(best, name, two_scores[name])
    return worker


def holds_best(best):
    assert best["by"] == "trainer-1", f"expected trainer-1's 0.93 in the record, got {best}"


found = explore(fresh_record, [trainer_worker(n) for n in two_scores], holds_best, seed=0)
print(found.verdict, "after", found.schedules_run, "schedules")
print(found.message)
claim("the scheduler found the lost best score", found.verdict == "race")

# %%
found.figure()

# %% [markdown]
# The scheduler tells you the interleaving it chose. A production race gives you no such
# report: that is what your own log is for.
#
# ### The popular profiler snippet, on TensorFlow 2.21
#
# Many tutorials profile a function with `tf.summary.trace_on(graph=True, profiler=True)`
# and then pass `profiler_outdir` to `tf.summary.trace_export`. Run it. The setup cell set
# TensorFlow's logger to errors only, which would hide what TensorFlow says about this, so
# this cell lets warnings through again for its duration and collects them:

# %%
@tf.function
def step(x):
    return tf.linalg.matmul(x, x)


tf_logger = tf.get_logger()
collected = Lines()
tf_logger.addHandler(collected)
tf_logger.setLevel("WARNING")
x = tf.random.normal((200, 200))
writer = tf.summary.create_file_writer(os.path.join(LOGDIR, "snippet"))
try:
    tf.summary.trace_on(graph=True, profiler=True)
    step(x)
    with writer.as_default():
        try:
            tf.summary.trace_export(name="step", step=0,
                                    profiler_outdir=os.path.join(LOGDIR, "snippet"))
            export_error = None
            print("trace_export worked")
        except Exception as error:
            export_error = error
            print(f"trace_export raised {type(error).__name__}: {error}")
    tf.summary.trace_off()
finally:
    tf_logger.removeHandler(collected)
    tf_logger.setLevel("ERROR")
print("TensorFlow's warnings:", *collected.lines, sep="\n  ")
claim("the snippet raised, and TensorFlow warned that the profiler was not enabled and that "
      "trace_export ignored profiler_outdir",
      export_error is not None
      and any("Profiler won't be enabled" in line for line in collected.lines)
      and any("Ignoring `profiler_outdir`" in line for line in collected.lines))

# %% [markdown]
# It raises, and the warnings say why. On TensorFlow 2.21 the profiler output directory
# belongs to `trace_on`; `trace_export` ignores it, so no profiler ever ran. The working
# form:

# %%
graph_dir = os.path.join(LOGDIR, "graph")
writer = tf.summary.create_file_writer(graph_dir)
tf.summary.trace_on(graph=True, profiler=True, profiler_outdir=graph_dir)
step(x)
with writer.as_default():
    tf.summary.trace_export(name="step", step=0)
written = []
for root, _, files in os.walk(graph_dir):
    for f in files:
        written.append(os.path.join(root, f))
        print(written[-1])
claim("the working form wrote an events file and an xplane.pb profile",
      any(".tfevents." in f for f in written) and any(f.endswith(".xplane.pb") for f in written))

# %% [markdown]
# One events file (the graph, for TensorBoard's Graphs tab) and one `*.xplane.pb`: the
# profile.
#
# ### A trace with one region per thread
#
# To profile threads, start the profiler around the whole round with
# `tf.profiler.experimental.start(logdir)` / `stop()`, and wrap each thread's work in
# `tf.profiler.experimental.Trace(name)`. Name each region after its thread, so you can tell
# them apart when you read the trace:

# %%
def traced_access(op, resource, fn, lock=None):
    name = f"{op} {resource} by {threading.current_thread().name}"
    with tf.profiler.experimental.Trace(name):
        return fn()


def traced_round():
    best = {"score": float("-inf"), "by": None}
    ready = threading.Barrier(4)

    def trainer(name):
        ready.wait()  # the round starts for all trainers at once
        with tf.profiler.experimental.Trace(f"evaluate by {name}"):
            score = evaluate(int(name[-1]))
        with tf.profiler.experimental.Trace(f"publish by {name}"):
            publish(best, name, score, traced_access)

    workers = [threading.Thread(target=trainer, args=(f"trainer-{k}",), name=f"trainer-{k}")
               for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


profile_dir = os.path.join(LOGDIR, "threads")
tf.profiler.experimental.start(profile_dir)
traced_round()
tf.profiler.experimental.stop()

# %% [markdown]
# Read the trace back. `tracing.read_xplane_threads` parses the newest `*.xplane.pb` with the
# XSpace protobuf that TensorFlow ships (`tensorflow.tsl.profiler.protobuf.xplane_pb2`) and
# returns the events of each host thread ("line"). The Python threads' lines all carry the
# process's name; your region names tell you which trainer each one is:

# %%
lines = tracing.read_xplane_threads(profile_dir)
regions = {}
for events in lines.values():
    for name, start, end in events:
        if " by trainer-" in name:
            regions.setdefault(name.split(" by ")[1], []).append((name, start, end))
for line, events in lines.items():
    print(f"{line:40s} {len(events):4d} events")

# %%
fig, ax = plt.subplots(figsize=(9, 2.6))
colors = {"evaluate": "tab:gray", "publish": "tab:green", "read": "tab:blue", "write": "tab:red"}
for lane, trainer in enumerate(sorted(regions)):
    for name, start, end in regions[trainer]:
        kind = name.split()[0]
        height = 0.6 if kind in ("evaluate", "publish") else 0.3
        ax.barh(lane, max(end - start, 0.01), left=start, height=height, color=colors[kind],
                alpha=0.7)
ax.set_yticks(range(len(regions)), sorted(regions))
ax.set_xlabel("ms (from the profiler's xplane)")
ax.set_title("Trace regions per thread: grey evaluate, green publish, blue read, red write")
ax.invert_yaxis()
plt.show()

publishes = {t: [e for e in ev if e[0].startswith("publish")] for t, ev in regions.items()}
names = sorted(publishes)
pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
overlapping = [(a, b) for a, b in pairs if tracing.overlap_ms(publishes[a], publishes[b]) > 0]
print(f"publish regions that overlapped in time: {len(overlapping)} of {len(pairs)} thread pairs")
claim("the trace held the evaluate and publish regions of all four trainers",
      sorted(regions) == [f"trainer-{k}" for k in range(4)]
      and all({"evaluate", "publish"} <= {e[0].split()[0] for e in ev} for ev in regions.values()))

# %% [markdown]
# Each lane is one trainer, read back from the profile. Where two `publish` regions overlap
# (the last line counts the pairs), one trainer's read-sleep-write ran while another ran its
# own. The profile is also what TensorBoard shows: install `tensorboard`
# and `tensorboard-plugin-profile` (the course environment has both), run `make tensorboard`
# from the course directory (it reads `notebooks/logs`) and open the Profile tab, trace
# viewer. The profiler is the tool to see where time goes inside TensorFlow; your own log is
# the tool to see what happened to *your* shared state.

# %% [markdown]
# ## Fix it
#
# Each record in the log is a dict with six keys:
#
# | key | value |
# | --- | --- |
# | `"thread"` | `threading.current_thread().name` of the thread that made the access |
# | `"op"` | `"read"` or `"write"` |
# | `"resource"` | the name of the shared resource, e.g. `"best"` |
# | `"start"`, `"end"` | `time.perf_counter_ns()` just before and just after the access |
# | `"lock"` | the name of the lock held during the access, or `None` |
#
# ### Exercise 1: log every access
#
# Write `log_access(log, op, resource, fn, lock=None)`. It calls `fn()`, appends one record
# (as in the table) to the list `log`, and returns what `fn()` returned. It calls `fn()` once:
# the access is `fn()`, so running it again runs the access again. When `fn()` raises, whatever
# it raises (an `OSError`, or a `BaseException` such as `KeyboardInterrupt`), the record is
# still appended and the exception still reaches the caller: a failed write is exactly the
# access you will want to see. Hold no lock of your own around `fn()`: a logger that
# serialises the accesses it logs hides the races it is there to find. `lock` is what the
# caller says it holds: record it as said, never take a lock for it (that would make the
# claim true and hide a caller that never held the lock). The log is shared by
# every thread, so add the record in one step (`list.append` is atomic): a log copied, changed
# and written back (`log[:] = sorted(log + [record])`) loses the record another thread added
# meanwhile. The grader runs your function from real threads, then under a controlled
# scheduler that tries every switch between two threads (`tracing.run_log_access_explore`).

# %% nbgrader={"grade": false, "grade_id": "ex_tracing_log_access", "locked": false, "schema_version": 3, "solution": true, "task": false}
def log_access(log, op, resource, fn, lock=None):
    """Call ``fn()``, append a record of the access to ``log``, return ``fn()``'s value."""
    ### BEGIN SOLUTION
    start = time.perf_counter_ns()
    try:
        return fn()
    finally:
        log.append({"thread": threading.current_thread().name, "op": op,
                    "resource": resource, "start": start, "end": time.perf_counter_ns(),
                    "lock": lock})
    ### END SOLUTION


# %% [markdown]
# Run a round with it and draw the log, one lane per thread:

# %%
for _ in range(rounds):
    log = []
    best, scores = train_round(functools.partial(log_access, log))
    if best["by"] != max(scores, key=scores.get):
        break
print("record:", best, "| best score by", max(scores, key=scores.get))
fig = tracing.plot_timeline(log, title="one round: who read and wrote the record")
plt.show()

# %% nbgrader={"grade": true, "grade_id": "test_tracing_log_access", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
demo_log = []
assert log_access(demo_log, "read", "best", lambda: 42) == 42, "log_access must return fn()'s value"
assert len(demo_log) == 1 and demo_log[0]["thread"] == threading.current_thread().name
assert demo_log[0]["start"] <= demo_log[0]["end"] and demo_log[0]["lock"] is None
try:
    log_access(demo_log, "write", "best", lambda: 1 / 0, lock="best_lock")
except ZeroDivisionError:
    pass
else:
    raise AssertionError("the exception raised by fn() must reach the caller")
assert len(demo_log) == 2 and demo_log[1]["lock"] == "best_lock", "a failed access must be logged too"
quick_test_passed()
### BEGIN HIDDEN TESTS
tracing.check_log_access(log_access)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: who overwrote whom
#
# A *lost update*: thread B reads a resource, another thread A writes it, then B writes it,
# computed from what it read before A's write. B has overwritten A's update.
#
# Write `who_overwrote(log)`. Order the accesses by `"start"` (the log is not sorted: threads
# append when they finish). For every write by a thread B to a resource, look at B's most
# recent read of that resource before the write; every write to the same resource by another
# thread A that starts after that read and before B's write is a lost update. Return a list
# of `(B, A, resource)` tuples of thread names (each one once, any order). A write with no
# earlier read by its thread reports nothing. Do not change `log`.

# %% nbgrader={"grade": false, "grade_id": "ex_tracing_who_overwrote", "locked": false, "schema_version": 3, "solution": true, "task": false}
def who_overwrote(log):
    """Return ``[(overwriter, overwritten, resource), ...]``: the lost updates in ``log``."""
    ### BEGIN SOLUTION
    ordered = sorted(log, key=lambda r: r["start"])
    found = set()
    for k, write in enumerate(ordered):
        if write["op"] != "write":
            continue
        read_at = None
        for j in range(k - 1, -1, -1):
            r = ordered[j]
            if r["op"] == "read" and r["thread"] == write["thread"] \
                    and r["resource"] == write["resource"]:
                read_at = j
                break
        if read_at is None:
            continue
        for other in ordered[read_at + 1:k]:
            if other["op"] == "write" and other["resource"] == write["resource"] \
                    and other["thread"] != write["thread"]:
                found.add((write["thread"], other["thread"], write["resource"]))
    return list(found)
    ### END SOLUTION


# %% [markdown]
# Run it on the round you just drew:

# %%
print("lost updates:", who_overwrote(log))
print("record:", best)

# %% nbgrader={"grade": true, "grade_id": "test_tracing_who_overwrote", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
def rec(thread, op, start, resource="best"):
    return {"thread": thread, "op": op, "resource": resource, "start": start, "end": start + 5,
            "lock": None}


sample = [rec("b", "write", 30), rec("a", "read", 10), rec("b", "read", 0), rec("a", "write", 20)]
assert sorted(who_overwrote(sample)) == [("b", "a", "best")], who_overwrote(sample)
assert who_overwrote([rec("a", "read", 0), rec("a", "write", 10), rec("b", "read", 20),
                      rec("b", "write", 30)]) == [], "serial updates lose nothing"
quick_test_passed()
### BEGIN HIDDEN TESTS
tracing.check_who_overwrote(who_overwrote)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 3: find the conflicting accesses
#
# Two accesses *conflict* when they touch the same resource from two different threads, at
# least one of them is a write, their time intervals overlap (each starts strictly before
# the other ends, so one ending at the very nanosecond the other starts does not count), and
# they are not both made under the same lock (`"lock"` equal and not `None`).
#
# Write `find_conflicts(log)`: return the list of index pairs `(i, j)` into `log`, `i < j`,
# of all conflicting accesses, each pair once. Do not change `log`.

# %% nbgrader={"grade": false, "grade_id": "ex_tracing_find_conflicts", "locked": false, "schema_version": 3, "solution": true, "task": false}
def find_conflicts(log):
    """Return ``[(i, j), ...]`` with ``i < j``: the pairs of conflicting accesses in ``log``."""
    ### BEGIN SOLUTION
    pairs = []
    for i, a in enumerate(log):
        for j in range(i + 1, len(log)):
            b = log[j]
            if a["resource"] != b["resource"] or a["thread"] == b["thread"]:
                continue
            if "write" not in (a["op"], b["op"]):
                continue
            if a["start"] >= b["end"] or b["start"] >= a["end"]:
                continue
            if a["lock"] is not None and a["lock"] == b["lock"]:
                continue
            pairs.append((i, j))
    return pairs
    ### END SOLUTION


# %% [markdown]
# The pipeline's accesses are short; the conflict is the read-sleep-write as a whole. Log the
# whole `publish` as one `"write"` access, unlocked and then under one lock, and count the
# conflicts in each:

# %%
def publishing_round(lock=None):
    log = []
    best = {"score": float("-inf"), "by": None}
    guard = threading.Lock()

    def trainer(name):
        score = evaluate(int(name[-1]))
        if lock is None:
            log_access(log, "write", "best", lambda: publish(best, name, score))
        else:
            with guard:
                log_access(log, "write", "best", lambda: publish(best, name, score), lock=lock)

    workers = [threading.Thread(target=trainer, args=(f"trainer-{k}",), name=f"trainer-{k}")
               for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return log


unlocked, locked = publishing_round(), publishing_round(lock="best_lock")
print("conflicts without a lock:", len(find_conflicts(unlocked)))
print("conflicts under best_lock:", len(find_conflicts(locked)))
claim("the accesses made under best_lock had no conflict", not find_conflicts(locked))
fig = tracing.plot_timeline(unlocked, title="publish without a lock (outlined: conflicts)",
                            highlight=find_conflicts(unlocked))
plt.show()

# %% nbgrader={"grade": true, "grade_id": "test_tracing_find_conflicts", "locked": true, "points": 4, "schema_version": 3, "solution": false, "task": false}
def rec(thread, op, start, end, lock=None, resource="best"):
    return {"thread": thread, "op": op, "resource": resource, "start": start, "end": end,
            "lock": lock}


sample = [rec("a", "write", 0, 10), rec("b", "read", 5, 15), rec("c", "read", 6, 8),
          rec("b", "write", 10, 20), rec("c", "write", 30, 40, "L"), rec("d", "write", 35, 45, "L")]
assert sorted(find_conflicts(sample)) == [(0, 1), (0, 2)], sorted(find_conflicts(sample))
quick_test_passed()
### BEGIN HIDDEN TESTS
tracing.check_find_conflicts(find_conflicts)
### END HIDDEN TESTS

# %% [markdown]
# ### Overlap in time is not how races are found
#
# `find_conflicts` finds accesses that overlapped in time. But the lost update in this
# pipeline is a read, a pause, then a write: each access is over in microseconds, and the race
# is in the *gap* between them. Run the pipeline again, logging every access with your
# `log_access`, and ask of every round that lost the best score whether `find_conflicts` saw
# anything.
#
# A race detector looks instead at which locks were held. A *lockset* check (the idea of the
# Eraser detector) asks, for each resource: did two threads touch it, at least one of them
# writing, with no lock held in common by all those accesses? That question is about the
# locks, not about when the accesses ran, so the accesses need not overlap for the check to
# flag them. (A happens-before check, which tools such as ThreadSanitizer use, orders
# accesses by the locks and thread starts between them; it is more precise, and needs more of
# the log.)
#
# ### Exercise 4: find races by the locks held
#
# Write `lockset_races(log)`: return the list of resource names (each once, any order) that
#
# - at least two different threads accessed,
# - with at least one of those accesses a write,
# - and for which no lock name is common to *every* access to that resource (an access with
#   `"lock": None` holds no lock, so one unlocked access leaves nothing in common).
#
# Look only at the `"thread"`, `"op"`, `"resource"` and `"lock"` of each record, never at the
# times. Do not change `log`.

# %% nbgrader={"grade": false, "grade_id": "ex_tracing_lockset_races", "locked": false, "schema_version": 3, "solution": true, "task": false}
def lockset_races(log):
    """Return the resources that two threads touched, one writing, with no common lock."""
    ### BEGIN SOLUTION
    by_resource = {}
    for record in log:
        by_resource.setdefault(record["resource"], []).append(record)
    races = []
    for resource, accesses in by_resource.items():
        threads = {r["thread"] for r in accesses}
        written = any(r["op"] == "write" for r in accesses)
        common = set.intersection(*({r["lock"]} - {None} for r in accesses))
        if len(threads) > 1 and written and not common:
            races.append(resource)
    return races
    ### END SOLUTION


# %% [markdown]
# Ask it about the two publishing rounds you logged above, one unlocked and one under
# `best_lock`:

# %%
print("unlocked round:", lockset_races(unlocked))
print("locked round:  ", lockset_races(locked))

# %% nbgrader={"grade": true, "grade_id": "test_tracing_lockset_races", "locked": true, "points": 2, "schema_version": 3, "solution": false, "task": false}
def rec(thread, op, start, lock=None, resource="best"):
    return {"thread": thread, "op": op, "resource": resource, "start": start, "end": start + 5,
            "lock": lock}


spread_out = [rec("a", "read", 0), rec("b", "read", 10), rec("a", "write", 20),
              rec("b", "write", 30)]
assert lockset_races(spread_out) == ["best"], (
    "two threads read then write 'best' with no lock: a race, though no two accesses overlap",
    lockset_races(spread_out))
guarded = [rec("a", "write", 0, "L"), rec("b", "read", 10, "L"), rec("c", "read", 20, "L")]
assert lockset_races(guarded) == [], "every access held L: nothing to flag"
quick_test_passed()
### BEGIN HIDDEN TESTS
tracing.check_lockset_races(lockset_races)
### END HIDDEN TESTS

# %% [markdown]
# Now the real test. Run as many rounds as in "See it break", keep the logs of the rounds that
# lost the best score, and ask both `find_conflicts` and your `lockset_races` about each:

# %%
def logged_round():
    log = []
    best, scores = train_round(functools.partial(log_access, log))
    return best["by"] != max(scores, key=scores.get), log


lost_logs = [log for lost, log in (logged_round() for _ in range(rounds)) if lost]
by_overlap = sum(bool(find_conflicts(log)) for log in lost_logs)
by_lockset = sum(bool(lockset_races(log)) for log in lost_logs)
print(f"rounds that lost the best score: {len(lost_logs)} of {rounds}")
print(f"  flagged by find_conflicts (overlap in time): {by_overlap}")
print(f"  flagged by the lockset check:                {by_lockset}")
claim("the lockset check flagged every round that lost the best score",
      lost_logs and by_lockset == len(lost_logs))
claim("overlap in time missed at least one round that lost the best score",
      by_overlap < len(lost_logs))

# %% [markdown]
# The lockset check flagged every losing round, from logs in which no two accesses need have
# overlapped. An empty `find_conflicts` result says only that no two logged accesses ran at
# the same moment; it does not prove there is no race. What a log can show of a fix is that
# every access to the shared state held the same lock, which is what exercise 5 makes your
# log say.

# %% [markdown]
# ### Exercise 5: fix the pipeline, and let the log show the lock
#
# Write `publish_locked(best, lock, name, score, access, save)`, the fixed `publish`:
#
# - read the record, compare, and write it (when `score` beats the score read; a tie does not)
#   while holding `lock`, a `threading.Lock` shared by all trainers, so no update is lost;
# - make both accesses (and no other) through `access(op, resource, fn, lock=...)` with
#   resource `"best"` and `lock="best_lock"`, each while holding `lock` itself (not a lock of
#   your own), so the log says which lock guarded them, truly;
# - when this trainer's score beat the record (so it wrote it), call `save(name)` to write its
#   checkpoint, *after* releasing the lock: it is slow file I/O, and the other trainers should
#   not wait for it. Decide from what you read under the lock: the record may have changed
#   since. Return once the checkpoint is saved (call `save` yourself, not on a thread left
#   running).

# %% nbgrader={"grade": false, "grade_id": "ex_tracing_publish_locked", "locked": false, "schema_version": 3, "solution": true, "task": false}
def publish_locked(best, lock, name, score, access, save):
    """Publish ``score`` to ``best`` under ``lock``; save the checkpoint outside the lock."""
    ### BEGIN SOLUTION
    with lock:
        seen = access("read", "best", lambda: best["score"], lock="best_lock")
        improved = score > seen
        if improved:
            access("write", "best", lambda: best.update(score=score, by=name), lock="best_lock")
    if improved:
        save(name)
    ### END SOLUTION


# %% [markdown]
# Run rounds of real threads with it, logging with your `log_access`, and count the rounds
# that lost the best score and the conflicts in their logs:

# %%
def locked_round():
    log, best, lock = [], {"score": float("-inf"), "by": None}, threading.Lock()
    scores = {f"trainer-{k}": evaluate(k) for k in range(4)}

    def trainer(name):
        evaluate(hash(name) % 1000)
        publish_locked(best, lock, name, scores[name], functools.partial(log_access, log),
                       lambda who: time.sleep(0.002))  # the checkpoint write

    workers = [threading.Thread(target=trainer, args=(n,), name=n) for n in scores]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return best["by"] != max(scores, key=scores.get), len(find_conflicts(log)), lockset_races(log)


results = [locked_round() for _ in range(rounds)]
print(f"lost the best score in {sum(lost for lost, _, _ in results)} of {rounds} rounds; "
      f"conflicts in the logs: {sum(c for _, c, _ in results)}; "
      f"rounds flagged by the lockset check: {sum(bool(r) for _, _, r in results)}")
claim("with publish_locked no round lost the best score, and the lockset check flagged none",
      not any(lost or races for lost, _, races in results))

# %% nbgrader={"grade": true, "grade_id": "test_tracing_publish_locked", "locked": true, "points": 3, "schema_version": 3, "solution": false, "task": false}
demo_log, demo_best, saved = [], {"score": 0.5, "by": "old"}, []
publish_locked(demo_best, threading.Lock(), "t", 0.9, functools.partial(log_access, demo_log),
               saved.append)
assert demo_best == {"score": 0.9, "by": "t"} and saved == ["t"], (demo_best, saved)
assert {r["lock"] for r in demo_log} == {"best_lock"}, demo_log
publish_locked(demo_best, threading.Lock(), "u", 0.1, functools.partial(log_access, demo_log),
               saved.append)
assert demo_best["by"] == "t" and saved == ["t"], "a worse score must change nothing"
tracing.check_publish_locked(publish_locked, schedules=40)
quick_test_passed()
### BEGIN HIDDEN TESTS
tracing.check_publish_locked(publish_locked)
### END HIDDEN TESTS

# %% [markdown]
# ## Measure it
#
# Evidence is not free. Measure what one access costs plain, logged with your `log_access`,
# and wrapped in a profiler `Trace` region with the profiler off and on, as ratios:

# %%
def per_call_ns(access, calls=20_000):
    box = {"score": 0.0}
    start = time.perf_counter_ns()
    for _ in range(calls):
        access("read", "best", lambda: box["score"])
    return (time.perf_counter_ns() - start) / calls


def median_ns(access):
    return statistics.median(per_call_ns(access) for _ in range(5))


sink = []
costs = {"plain": median_ns(plain_access),
         "log_access": median_ns(lambda op, r, fn, lock=None: log_access(sink, op, r, fn)),
         "Trace, profiler off": median_ns(traced_access)}
tf.profiler.experimental.start(os.path.join(LOGDIR, "measure"))
costs["Trace, profiler on"] = median_ns(traced_access)
tf.profiler.experimental.stop()
for name, ns in costs.items():
    print(f"{name:20s} {ns:8.0f} ns per access  {ns / costs['plain']:6.1f}x plain")
start = time.perf_counter_ns()
evaluate(1)
evaluate_ns = time.perf_counter_ns() - start
print(f"one evaluate() call: {evaluate_ns / 1e6:.2f} ms, the time of "
      f"{evaluate_ns / costs['log_access']:,.0f} logged accesses; the simulated checkpoint "
      f"write sleeps 2 ms")

# %% [markdown]
# Compare the rows with the work around an access in this pipeline: the last line puts one
# TensorFlow call next to the cost of a logged access, and each trainer makes two accesses per
# round. A running profiler records every TensorFlow op as well, and its trace
# grows with every event: profile short windows, and keep your own log for the shared state.
#
# ## Summary
#
# Make every access to shared state leave a record of which thread, what, when
# (`time.perf_counter_ns()`, start and end, in a `finally`) and under which lock, with
# `logging`'s `%(threadName)s` in production, then let code read the log: lost updates are
# easy to find once they are written down. Find races by the locks held (a lockset or
# happens-before check), not by accesses that happen to overlap in time. On TensorFlow 2.21
# pass `profiler_outdir` to `trace_on`, or use `tf.profiler.experimental.start/stop` with a
# named `Trace` region per thread.
