"""Lesson 03's fixed seeds, counts and time budgets, shared by its trials and graders."""

from __future__ import annotations

#: Layers of the versioned model; one version number per layer.
LAYERS = 8
SEED = 3
TIMEOUT_S = 60.0
#: Wall-clock budget of each explored run. Its search is bounded by a schedule count; this
#: only stops an answer whose schedules never end. A correct publisher that copies its
#: snapshot (its whole check: 35 s on a quiet machine) ran out of 60 s in schedule 578 of the
#: readers' run beside a test run (load 5): the verdict depended on the load.
EXPLORE_TIMEOUT_S = 180.0

# Exercise 1 (StepCounter).
COUNTER_EXPLORE_THREADS = 2
COUNTER_EXPLORE_STEPS = 2
COUNTER_SCHEDULES = 80
#: Then a first-use run: two threads, one step each, on a new counter; every schedule with at
#: most this many departures, TF calls whole (a lock made on first use needs two: one
#: between its test and its store, one inside the section each thread enters with its own
#: lock), at most COUNTER_FIRST_USE_SCHEDULES (the tests' correct answers need 110-180).
COUNTER_FIRST_USE_DEVIATIONS = 2
COUNTER_FIRST_USE_SCHEDULES = 3000
COUNTER_STRESS_THREADS = 4
COUNTER_STRESS_STEPS = 201
COUNTER_TRIALS = 3

# Exercise 2 (WeightPublisher).
PUBLISHER_READERS = 2
#: Versions a stress writer publishes, however long each takes (a count, not a time budget:
#: the work and the verdict must not depend on the machine's speed or load).
PUBLISHER_UPDATES = 5
PUBLISHER_TRIALS = 6
#: Pause between two reads of one stress reader.
READ_GAP_S = 0.0005
PUBLISHER_EXPLORE_UPDATES = 1
#: The explore runs use a 2-layer model: Keras calls are atomic there, so depth adds nothing
#: but the time a per-thread copy or a new model takes to build.
EXPLORE_LAYERS = 2
#: Search bound of the publisher's explore run: every schedule with at most
#: PUBLISHER_DEVIATIONS preemptions or other departures from round-robin order, the reader
#: going first (15-200 schedules for the answers in the tests), then PUBLISHER_SAMPLES seeded
#: PCT/random schedules; PUBLISHER_SCHEDULES caps the whole. Two, because a reader slipping
#: into a readers-writer handshake without a lock needs two switches (issue #18, class 1:
#: found at schedule 26). The grader's own loops are glue (no decision points), so the bound
#: is spent on the answer's code and the layer boundary.
EXPLORE_STRATEGY = "auto"
PUBLISHER_DEVIATIONS = 2
#: The publisher's second explore run: PUBLISHER_EXPLORE_READERS readers read once each, then
#: the writer publishes; bounded by PUBLISHER_READERS_DEVIATIONS switches, then the same
#: samples and cap. Two readers, because a count of readers lost by two unlocked updates needs
#: both inside at once; two switches, because one reader must stop inside and the other in the
#: middle of its update (a reader that leaves outside the lock: found at schedule 275).
PUBLISHER_EXPLORE_READERS = 2
PUBLISHER_READERS_DEVIATIONS = 2
PUBLISHER_SAMPLES = 20
PUBLISHER_SCHEDULES = 600
#: The version a graded model starts at; publishes count up from the next one. Not 0: a model
#: built from scratch (a clone before its weights are set) reads as version 0.
FIRST_VERSION = 1
#: The one-thread run publishes these versions in a row (no read between), each as a new list
#: the check drops: the second reuses the memory of the list published before the first, so a
#: publisher that tells versions apart by ``id(weights)`` serves the old one (the ABA problem).
ONE_THREAD_IN_A_ROW = (FIRST_VERSION + 3, FIRST_VERSION + 4)

# Exercise 3 (choose_publisher): what the grader asks for.
CHOICE_READERS = 2
CHOICE_UPDATES = 2
CHOICE_INTERVAL_S = 0.015
CHOICE_MIN_UPDATES_PER_S = 12.0
