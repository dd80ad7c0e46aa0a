"""Lesson 01's model sizes, fixed seeds, trial counts and time budgets."""

from __future__ import annotations

#: Dense(16, relu) -> Dense(4): two kernels and two biases.
EXPECTED_WEIGHTS = 4
HIDDEN_UNITS = 16
OUTPUT_UNITS = 4
#: Worker threads per trial in the graded checks.
THREADS = 6
SEED = 1701
#: Trials per graded check. ``tests/checks/test_warmup.py`` gives the per-trial detection rate
#: of every known wrong answer and the arithmetic for why these counts are enough.
TRIALS_ENTRY_POINT = 3
TRIALS_SHARED_PREDICTOR = 5
TRIALS_LAZY_MODEL = 4
TRIALS_BOTH_ENTRY_POINTS = 3
#: Time the graded factory spends "loading" the model, as reading it from disk would.
_FACTORY_LOAD_S = 0.01
#: Extra time each layer of the graded subclassed model takes to create its weights, so a
#: thread arriving while another builds is inside the window (a bigger model's real cost).
_BUILD_DELAY_S = 0.01
_LATE_WAIT_S = 5.0
#: Seconds between Keras's check that a model has no predict function and its storing the one
#: it made (``make_predict_function`` is a check-then-set without a lock), in the graded
#: SharedPredictor trials: every thread that arrives meanwhile finds none and makes its own,
#: as Keras lets it. Real Keras's window is a few microseconds; a predictor that lets two
#: threads reach it failed 121 of 140 single trials with that window, and 20 of 20 runs
#: need it every time.
_PREDICT_FUNCTION_WINDOW_S = 0.1
#: Wall-clock budget of one graded check: below nbgrader's 30 s per-cell timeout, so a hang is
#: reported as a deadlock with stacks rather than cut off.
_TIMEOUT_S = 20.0
#: Backstop of the ``explore`` search (a bound on its schedule count, not on time): far above
#: its few seconds on an idle machine, so a correct answer on a loaded machine still finishes.
_EXPLORE_TIMEOUT_S = 60.0


#: The lazy model's explore run: threads, and its bound (every schedule with at most
#: LAZY_DEVIATIONS preemptions; then LAZY_SAMPLES seeded samples). Two, because a lock made
#: check-then-act needs two switches (after the first caller's check, and back before the
#: second caller stores its model).
LAZY_EXPLORE_THREADS = 2
#: The shared predictor's explore run, alike (a first-call flag claimed without a lock, or a
#: fast path on ``model.built``, needs one switch; two for a margin).
SHARED_EXPLORE_THREADS = 2
SHARED_DEVIATIONS = 2
SHARED_SCHEDULES = 2000
SHARED_SAMPLES = 20
LAZY_DEVIATIONS = 2
LAZY_SCHEDULES = 2000
LAZY_SAMPLES = 20
