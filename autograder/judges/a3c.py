"""Lesson 09's judge: the shared network's outputs and traces, the learner's exact weights and
counts, the step budget's steps and the versioned acts, from what ran."""

from __future__ import annotations

from autograder.judges import Malformed, expect, explored, field, fresh_versions, items

# The check's settings (``autograder.checks.a3c.settings``; a test ties them).
#: Policy logits plus one value: the numbers one forward pass of one state gives.
OUTPUTS = 2 + 1
#: The network's sizes, which make a forward pass of the probe on weights all ``k`` give
#: ``HIDDEN * (STATE_SIZE + 1) * k * k + k`` in every output; version ``v`` has weights
#: ``FIRST_WEIGHT + v``.
HIDDEN = 16
STATE_SIZE = 8
FIRST_WEIGHT = 1.0
#: Exercise 1: trials, actors, calls per actor; how close an actor's output must be to the
#: same call on one thread afterwards (``np.allclose``'s rtol and atol, as the check).
NETWORK_TRIALS = 3
NETWORK_THREADS = 4
NETWORK_CALLS = 3
NETWORK_RTOL = 1e-5
NETWORK_ATOL = 1e-6
#: Exercise 2: trials, actors, pushes per actor, the network's trainable variables, and the
#: pushes of the one-thread run.
LEARNER_TRIALS = 4
LEARNER_THREADS = 4
LEARNER_PUSHES = 25
VARIABLES = 6
ONE_THREAD_PUSHES = 2
#: Then two actors pushing one gradient each under the controlled scheduler: the explored
#: schedules (at most; the bounded search's then this many samples).
LEARNER_SCHEDULES = 300
LEARNER_SAMPLES = 20
#: Then two actors pushing this many gradients (one more than a stress trial) while the
#: learner's first apply waits for them: one schedule.
LEARNER_BACKLOG_PUSHES = LEARNER_THREADS * LEARNER_PUSHES + 1
#: Exercise 3: the budget, the actors, and the explored schedules (at most; the bounded
#: search's then this many samples).
BUDGET_T_MAX = 3
BUDGET_ACTORS = 2
BUDGET_SCHEDULES = 400
BUDGET_SAMPLES = 40
#: Then one thread through a long budget, an episode finished after each step with return
#: ``step % BUDGET_LONG_RETURNS``: every step once, every return kept, equal ones included.
BUDGET_LONG_T_MAX = 250
BUDGET_LONG_RETURNS = 7
#: Exercise 4: stress trials, learns and actors; the explored learns, schedules and samples.
VERSIONED_TRIALS = 4
VERSIONED_LEARNS = 30
VERSIONED_ACTORS = 2
VERSIONED_EXPLORE_LEARNS = 1
VERSIONED_SCHEDULES = 300
VERSIONED_SAMPLES = 20
#: explore's second run: actors acting once each between two learns.
VERSIONED_EXPLORE_ACTORS = 2

_NONE = type(None)


def _floats(values: object, what: str, count: int) -> list[float]:
    """``values``: a list of exactly ``count`` floats."""
    return items({what: values}, what, float, at_least=count, at_most=count)


def _trials(seen: dict, graded: int) -> list:
    ran = field(seen, "trials_run", int)
    expect(ran == graded, f"{ran} trials ran, not the graded {graded}")
    return items(seen, "trials", dict, at_least=graded, at_most=graded)



def check_shared_network(seen: dict) -> None:
    """In every trial: nothing traced, the count intact, no weight built while the actors ran,
    and every call's outputs those of the same call on one thread afterwards."""
    for number, trial in enumerate(_trials(seen, NETWORK_TRIALS), 1):
        traces = field(trial, "traces", int)
        expect(traces == 0, f"in trial {number} the predict function was traced {traces} "
                            "time(s) while the actors called it")
        expect(field(trial, "intact", bool) is True,
               f"in trial {number} the model's predict_step was replaced")
        before, after = field(trial, "weights_before", int), field(trial, "weights_after", int)
        expect(before == after, f"in trial {number} the model held {before} weights before the "
                                f"actors ran and {after} after")
        calls = NETWORK_THREADS * NETWORK_CALLS
        outputs = items(trial, "outputs", list, at_least=calls, at_most=calls)
        expected = items(trial, "expected", list, at_least=NETWORK_THREADS,
                         at_most=NETWORK_THREADS)
        for index, output in enumerate(outputs):
            actor = index // NETWORK_CALLS
            got = _floats(output, "an actor's output", OUTPUTS)
            want = _floats(expected[actor], "an actor's one-thread output", OUTPUTS)
            expect(all(abs(g - w) <= NETWORK_ATOL + NETWORK_RTOL * abs(w)
                       for g, w in zip(got, want, strict=True)),
                   f"in trial {number} actor {actor} got {got}, not the one-thread output "
                   f"{want} for its state")


def _overlapping_pairs(applies: list) -> int:
    """Pairs of ``apply`` calls from different threads that ran at the same time (as the
    check's ``_overlapping`` counts them)."""
    calls = []
    for entry in applies:
        if len(entry) != 3 or type(entry[0]) is not int or type(entry[1]) is not float \
                or type(entry[2]) is not float:
            raise Malformed("an apply call is not [thread, start, end]")
        calls.append(entry)
    ordered = sorted(calls, key=lambda call: call[1])
    pairs = 0
    for index, (thread, _, end) in enumerate(ordered):
        for other, other_start, _ in ordered[index + 1:]:
            if other_start >= end:
                break
            pairs += other != thread
    return pairs


def check_learner(seen: dict) -> None:
    """Two applies and exact weights on one thread; in every trial, explored schedule and the
    backlog every push applied once: the exact SGD weights, ``iterations`` equal to the pushes,
    no two applies at once, ``close()`` returned and no thread of the answer's left running."""
    one_thread = field(seen, "one_thread", dict)
    iterations = field(one_thread, "iterations", int)
    largest = field(one_thread, "largest_difference", float)
    expect(iterations == ONE_THREAD_PUSHES and largest == 0.0,
           f"on one thread two pushes left iterations at {iterations} and the weights off by "
           f"{largest}")
    pushes = LEARNER_THREADS * LEARNER_PUSHES
    for number, trial in enumerate(_trials(seen, LEARNER_TRIALS), 1):
        pushed = field(trial, "pushes", int)
        expect(pushed == pushes, f"in trial {number} the actors pushed {pushed} gradients, not "
                                 f"{pushes}")
        iterations = field(trial, "iterations", int)
        expect(iterations == pushes, f"in trial {number} optimizer.iterations was {iterations} "
                                     f"after {pushes} pushes: an update was lost or repeated")
        differences = items(trial, "differences", float, at_least=VARIABLES, at_most=VARIABLES)
        off = [difference for difference in differences if difference != 0.0]
        expect(not off, f"in trial {number} {len(off)} variables differ from the exact SGD sum "
                        f"(by up to {max(off, default=0.0):.6g}): an update was lost or repeated")
        pairs = _overlapping_pairs(items(trial, "applies", list, at_least=0, at_most=10_000))
        expect(pairs == 0, f"in trial {number} {pairs} pair(s) of apply_gradients calls from "
                           "different threads ran at the same time")
        expect(field(trial, "closed", bool) is True, f"in trial {number} close() did not return")
        left = field(trial, "left", int)
        expect(left == 0, f"in trial {number} {left} thread(s) of the learner outlived close()")
    for number, run in enumerate(explored(seen, LEARNER_SCHEDULES, LEARNER_SAMPLES), 1):
        expect(field(run, "pushes", int) == 2 and field(run, "iterations", int) == 2,
               f"in explored schedule {number} optimizer.iterations was not 2 after 2 pushes")
        differences = items(run, "differences", float, at_least=VARIABLES, at_most=VARIABLES)
        expect(not any(differences), f"in explored schedule {number} the weights differ from "
                                     "the exact SGD sum")
        pairs = _overlapping_pairs(items(run, "applies", list, at_least=0, at_most=100))
        expect(pairs == 0, f"in explored schedule {number} two apply_gradients calls ran at "
                           "the same time")
    backlog = field(seen, "backlog", dict)
    expect(field(backlog, "pushes", int) == LEARNER_BACKLOG_PUSHES
           and field(backlog, "iterations", int) == LEARNER_BACKLOG_PUSHES,
           f"with the learner busy, optimizer.iterations was not {LEARNER_BACKLOG_PUSHES} after "
           f"{LEARNER_BACKLOG_PUSHES} pushes: a push lost its gradient")
    differences = items(backlog, "differences", float, at_least=VARIABLES, at_most=VARIABLES)
    expect(not any(differences), "with the learner busy, the weights differ from the exact SGD "
                                 "sum")
    pairs = _overlapping_pairs(items(backlog, "applies", list, at_least=0,
                                     at_most=LEARNER_BACKLOG_PUSHES + 1))
    expect(pairs == 0, "with the learner busy, two apply_gradients calls ran at the same time")
    expect(field(backlog, "closed", bool) is True and field(backlog, "left", int) == 0,
           "with the learner busy, close() did not stop every thread of the learner")


def check_budget(seen: dict) -> None:
    """take() 1, 2, None, T 2 and returns [1.5] on one thread, then every step and every return
    of a long budget; in every explored schedule steps
    1 .. T_MAX handed out once each, None only once T_MAX steps could have been taken, T at
    T_MAX when read once an actor had its None, every later take() None, T at T_MAX, every return
    kept."""
    one_thread = items(seen, "one_thread", (int, float, bool, _NONE, list), at_least=5,
                       at_most=5)
    expect(one_thread == [1, 2, None, 2, [1.5]],
           f"on one thread take(), take(), take(), T and returns gave {one_thread}")
    long_steps = list(range(1, BUDGET_LONG_T_MAX + 1))
    taken = items(seen, "long_taken", int, at_least=0, at_most=BUDGET_LONG_T_MAX + 1)
    expect(taken == long_steps, f"on one thread StepBudget({BUDGET_LONG_T_MAX}) handed out "
                                f"{len(taken)} steps, not steps 1 .. {BUDGET_LONG_T_MAX} once each")
    returns = items(seen, "long_returns", float, at_least=0, at_most=BUDGET_LONG_T_MAX + 1)
    expect(returns == sorted(float(n % BUDGET_LONG_RETURNS) for n in long_steps),
           f"on one thread StepBudget({BUDGET_LONG_T_MAX}) kept {len(returns)} returns, not "
           "every episode's return (equal ones included)")
    steps = list(range(1, BUDGET_T_MAX + 1))
    for number, run in enumerate(explored(seen, BUDGET_SCHEDULES, BUDGET_SAMPLES), 1):
        taken = items(run, "taken", int, at_least=0, at_most=1000)
        expect(taken == steps, f"schedule {number} handed out steps {taken}, not {steps} once "
                               "each")
        stopped_at = items(run, "stopped_at", int, at_least=BUDGET_ACTORS,
                           at_most=BUDGET_ACTORS)
        expect(min(stopped_at) >= BUDGET_T_MAX,
               f"in schedule {number} an actor's take() returned None when at most "
               f"{min(stopped_at)} of the {BUDGET_T_MAX} steps had been taken")
        t_at_stop = items(run, "t_at_stop", int, at_least=1, at_most=1)
        expect(t_at_stop == [BUDGET_T_MAX],
               f"in schedule {number} T read {t_at_stop[0]} once an actor's take() had "
               f"returned None, not {BUDGET_T_MAX}")
        after = items(run, "after", (int, _NONE), at_least=BUDGET_ACTORS, at_most=BUDGET_ACTORS)
        expect(after == [None] * BUDGET_ACTORS,
               f"in schedule {number} a take() after the budget was spent returned {after}")
        t_value = field(run, "T", (int, bool))
        expect(t_value == BUDGET_T_MAX, f"schedule {number} ended with T == {t_value}, not "
                                        f"{BUDGET_T_MAX}")
        returns = items(run, "returns", float, at_least=0, at_most=1000)
        expect(returns == [float(step) for step in steps],
               f"schedule {number} kept the returns {returns}, not one per episode")


def _output(version: int) -> float:
    """Every output of a forward pass of the probe on the weights of ``version``."""
    weight = version + FIRST_WEIGHT
    return HIDDEN * (STATE_SIZE + 1) * weight * weight + weight


def _act(version: object, outputs: list, what: str) -> int:
    """An act's reported version, which its outputs must be exactly those of."""
    if type(version) is not int or len(outputs) != OUTPUTS \
            or any(type(value) is not float for value in outputs):
        raise Malformed("an act is not a version and its outputs")
    expect(all(value == _output(version) for value in outputs),
           f"{what} got outputs {outputs} labelled version {version}, which gives "
           f"{_output(version)} in every output: a torn act, or a stamp read apart from the "
           "weights")
    return version


def _versioned_run(run: dict, what: str, learns: int, *, acts: int | None = None,
                   actors: int | None = None, acts_last: bool = True) -> None:
    """One stress trial or explored schedule: learn() returned 1 .. learns, and every actor's
    acts (``acts`` each, ``actors`` actors) were of the version they report, never older than
    a learn that had returned before them, never going backwards, (``acts_last``) the last the
    last version."""
    learned: dict[int, float | None] = {}
    for entry in items(run, "learned", list, at_least=learns, at_most=learns):
        version, at = entry if len(entry) == 2 else (None, None)
        if type(version) is not int or type(at) not in (float, _NONE):
            raise Malformed("a learn is not [version, time]")
        learned[version] = at
    expect(list(learned) == list(range(1, learns + 1)),
           f"{what} learn() returned {list(learned)}, not 1 .. {learns} in order")
    if actors is None:
        actors = VERSIONED_ACTORS if acts is None else 1
    by_actor: dict[int, list] = {actor: [] for actor in range(actors)}
    for entry in items(run, "acts", list, at_least=actors, at_most=10_000):
        if len(entry) != 5 + OUTPUTS or type(entry[0]) is not int or type(entry[1]) is not int \
                or type(entry[2]) is not float or type(entry[3]) is not float:
            raise Malformed("a run of acts is not [actor, count, first, last, version, *outputs]")
        expect(entry[0] in by_actor and entry[1] >= 1 and entry[2] <= entry[3],
               f"{what} a run of acts names actor {entry[0]}, {entry[1]} acts")
        by_actor[entry[0]].append(entry)
    for actor, runs in by_actor.items():
        expect(bool(runs), f"{what} actor {actor} never acted")
        if acts is not None:
            made = sum(entry[1] for entry in runs)
            expect(made == acts, f"{what} actor {actor} acted {made} times, not {acts}")
        reads = [(_act(version, outputs, f"{what} actor {actor}"), latest)
                 for _, _, _, latest, version, *outputs in runs]
        fresh_versions(reads, learned, first=0, last=learns if acts_last else reads[-1][0],
                       who=f"{what} actor {actor}")


def check_versioned(seen: dict) -> None:
    """On one thread versions 0 and 1 with their outputs and learn() 1; in every stress trial
    and explored schedule (one actor, then two between two learns), every act of the version
    it reports, never stale, never going backwards, the last the last (one actor)."""
    one_thread = field(seen, "one_thread", dict)
    acts = items(one_thread, "acts", list, at_least=2, at_most=2)
    for want, (when, act) in enumerate(zip(("before any learn", "after one learn"), acts,
                                           strict=True)):
        version = _act(act[0] if act else None, act[1:], f"on one thread, an act {when}")
        expect(version == want, f"on one thread an act {when} reported version {version}")
    learned = field(one_thread, "learned", int)
    expect(learned == 1, f"on one thread the first learn() returned {learned}")
    for number, trial in enumerate(_trials(seen, VERSIONED_TRIALS), 1):
        _versioned_run(trial, f"in trial {number}", VERSIONED_LEARNS)
    for number, run in enumerate(explored(seen, VERSIONED_SCHEDULES, VERSIONED_SAMPLES), 1):
        _versioned_run(run, f"in schedule {number}", VERSIONED_EXPLORE_LEARNS, acts=2)
    for number, run in enumerate(explored(field(seen, "actors", dict), VERSIONED_SCHEDULES,
                                          VERSIONED_SAMPLES), 1):
        _versioned_run(run, f"in schedule {number} with {VERSIONED_EXPLORE_ACTORS} actors",
                       VERSIONED_EXPLORE_LEARNS + 1, acts=1, actors=VERSIONED_EXPLORE_ACTORS,
                       acts_last=False)
