"""Lesson 03's judge: the step numbers handed out, the versions the readers were served, and
what ``choose_publisher`` measured and chose, from what ran."""

from __future__ import annotations

from autograder.judges import expect, explored, field, fresh_versions, items

# The check's settings (``autograder.checks.variables.settings``; a test ties them).
#: Layers of the graded model, and the version it starts at (publishes count up from it).
LAYERS = 8
FIRST_VERSION = 1
#: StepCounter: stress trials of real threads x steps, then explore's threads x steps and its
#: schedules (it runs exactly that many unless the search covered the whole space first).
COUNTER_TRIALS = 3
COUNTER_STRESS_THREADS = 4
COUNTER_STRESS_STEPS = 201
COUNTER_EXPLORE_THREADS = 2
COUNTER_EXPLORE_STEPS = 2
COUNTER_SCHEDULES = 80
#: Then two threads' first steps on a new counter: at most this many schedules.
COUNTER_FIRST_USE_SCHEDULES = 3000
#: WeightPublisher: stress trials, their readers and the versions a writer publishes;
#: explore's one reader and one publish, its seeded samples
#: after the bounded search, and its cap.
PUBLISHER_TRIALS = 6
#: On one thread, after versions 2 and 3 were each published and read, these are published
#: in a row (each a new list the check drops) before the last read.
ONE_THREAD_IN_A_ROW = (4, 5)
PUBLISHER_READERS = 2
PUBLISHER_UPDATES = 5
PUBLISHER_EXPLORE_UPDATES = 1
PUBLISHER_SAMPLES = 20
PUBLISHER_SCHEDULES = 600
#: explore's second run: readers that read once each before the one publish.
PUBLISHER_EXPLORE_READERS = 2
#: choose_publisher: the grader's four candidates (their names, drawn from the check's seed),
#: the readers and updates it asks for, the update rate a choice needs, and how far a
#: reported rate may be from what the candidate really did (thread start-up under load).
CHOICE_NAMES = ("bravo", "echo", "foxtrot", "hotel")
CHOICE_READERS = 2
CHOICE_UPDATES = 2
CHOICE_MIN_UPDATES_PER_S = 12.0
RATE_WITHIN = (0.05, 5.0)
#: A reported updates_per_s may be at most this far above the truth: a writer timed around its
#: own publishes took at least as long as they did (``choice.UPDATES_RATE_ABOVE``).
UPDATES_RATE_ABOVE = 1.05
#: The last publish waits until every reader has been served the last version this often
#: (``choice.LAST_VERSION_READS``): a reader that read it fewer times stopped early.
LAST_VERSION_READS = 2

_NUMBER = (int, float, bool)
_MAX_READS = 10_000


def _complete(seen: dict, schedules_key: str, most: int, samples: int | None,
              covered_key: str = "covered") -> int:
    """The explored schedules, after checking the search was the graded one: ``most`` when
    it ran to its cap (``samples`` None), or past its bound plus ``samples`` seeded samples,
    fewer only when it covered every schedule."""
    schedules = field(seen, schedules_key, int)
    covered = field(seen, covered_key, bool)
    complete = schedules == most if samples is None else samples < schedules <= most
    expect(1 <= schedules <= most and (complete or covered),
           f"{schedules} schedules ran: not the complete graded search")
    return schedules


def _trials(seen: dict, trials: int) -> list[dict]:
    run = field(seen, "trials_run", int)
    expect(run == trials, f"{run} stress trials ran, not the graded {trials}")
    return items(seen, "trials", dict, at_least=trials, at_most=trials)


def _steps(run: dict, what: str, threads: int, steps: int) -> None:
    """Every call got its own number, 1 to threads x steps, later calls on one thread later
    ones, and the variable counted them all."""
    expected = threads * steps
    recorded = field(run, "recorded", int)
    expect(recorded == expected, f"{what}: the variable counted {recorded} steps, not "
                                 f"{expected}: steps were lost")
    numbers = items(run, "numbers", list, at_least=threads, at_most=threads)
    mine = [items({"thread": got}, "thread", int, at_least=steps, at_most=steps)
            for got in numbers]
    expect(sorted(n for got in mine for n in got) == list(range(1, expected + 1)),
           f"{what}: step() did not return each of 1 .. {expected} once")
    expect(all(got == sorted(got) for got in mine),
           f"{what}: a thread's later call got an earlier step number")


def check_step_counter(seen: dict) -> None:
    """Two steps on one thread are 1 and 2; every stress trial, explored schedule and
    first-use schedule counted every step and handed out each number once, in order on each
    thread."""
    one_thread = items(seen, "one_thread", int, at_least=2, at_most=2)
    expect(one_thread == [1, 2], f"on one thread step() returned {one_thread}, not 1, 2")
    for number, trial in enumerate(_trials(seen, COUNTER_TRIALS), 1):
        _steps(trial, f"stress trial {number}", COUNTER_STRESS_THREADS, COUNTER_STRESS_STEPS)
    schedules = _complete(seen, "schedules", COUNTER_SCHEDULES, None)
    runs = items(seen, "runs", dict, at_least=schedules, at_most=schedules)
    for number, run in enumerate(runs, 1):
        _steps(run, f"schedule {number}", COUNTER_EXPLORE_THREADS, COUNTER_EXPLORE_STEPS)
    for number, run in enumerate(explored(field(seen, "first_use", dict),
                                          COUNTER_FIRST_USE_SCHEDULES, 0), 1):
        _steps(run, f"first-use schedule {number}", COUNTER_EXPLORE_THREADS, 1)


def _served(trial: dict, what: str, readers: int, updates: tuple[int, int], timed: bool,
            reads_last: bool = True) -> None:
    """Versions ``FIRST_VERSION + 1`` on were published; every read used one published
    version in every layer, never older than one published before it started nor than the
    reader's previous read; and (``reads_last``) each reader's last read got the last
    version."""
    published = items(trial, "published", list, at_least=updates[0], at_most=updates[1])
    when: dict[int, float | None] = {}
    for entry in published:
        version, at = items({"publish": entry}, "publish", (int, float, type(None)),
                            at_least=2, at_most=2)
        expect(type(version) is int and type(at) is (float if timed else type(None)),
               f"{what}: a publish is recorded as {entry}")
        when[version] = at
    versions = [version for version, _ in published]
    last_version = FIRST_VERSION + len(versions)
    expect(versions == list(range(FIRST_VERSION + 1, last_version + 1)),
           f"{what}: the writer published versions {versions}")
    by_reader: list[list[tuple[float, int, int]]] = [[] for _ in range(readers)]
    for read in items(trial, "reads", list, at_least=readers, at_most=_MAX_READS):
        reader, start, low, high = items({"read": read}, "read", _NUMBER, at_least=4,
                                         at_most=4)
        expect(type(reader) is int and 0 <= reader < readers and type(start) is float
               and type(low) is int and type(high) is int, f"{what}: a read is {read}")
        by_reader[reader].append((start, low, high))
    for reader, reads in enumerate(by_reader):
        expect(bool(reads), f"{what}: reader {reader} made no reads")
        for _, low, high in reads:
            expect(low == high, f"{what}: reader {reader} got a torn read (layers of versions "
                                f"{low} to {high})")
        fresh_versions([(low, start) for start, low, _ in reads], when, first=FIRST_VERSION,
                       last=last_version if reads_last else reads[-1][1],
                       who=f"{what}: reader {reader}")


def check_publisher(seen: dict) -> None:
    """One thread is served version 1, then after each publish the version published (the
    last of ONE_THREAD_IN_A_ROW after those in a row) in every layer; every stress trial and
    every explored schedule (one reader, then several before the publish) served whole,
    published, never older versions."""
    wanted = (FIRST_VERSION, FIRST_VERSION + 1, FIRST_VERSION + 2, ONE_THREAD_IN_A_ROW[-1])
    one_thread = items(seen, "one_thread", list, at_least=len(wanted), at_most=len(wanted))
    for served, version in zip(one_thread, wanted, strict=True):
        layers = items({"served": served}, "served", int, at_least=LAYERS, at_most=LAYERS)
        expect(layers == [version] * LAYERS,
               f"on one thread predict() served versions {layers}, not {version} everywhere")
    for number, trial in enumerate(_trials(seen, PUBLISHER_TRIALS), 1):
        _served(trial, f"stress trial {number}", PUBLISHER_READERS,
                (PUBLISHER_UPDATES, PUBLISHER_UPDATES), timed=True)
    schedules = _complete(seen, "schedules", PUBLISHER_SCHEDULES, PUBLISHER_SAMPLES)
    runs = items(seen, "runs", dict, at_least=schedules, at_most=schedules)
    for number, run in enumerate(runs, 1):
        _served(run, f"schedule {number}", 1,
                (PUBLISHER_EXPLORE_UPDATES, PUBLISHER_EXPLORE_UPDATES), timed=False)
    schedules = _complete(seen, "readers_schedules", PUBLISHER_SCHEDULES, PUBLISHER_SAMPLES,
                          "readers_covered")
    runs = items(seen, "readers_runs", dict, at_least=schedules, at_most=schedules)
    for number, run in enumerate(runs, 1):
        _served(run, f"schedule {number} with {PUBLISHER_EXPLORE_READERS} readers",
                PUBLISHER_EXPLORE_READERS,
                (PUBLISHER_EXPLORE_UPDATES, PUBLISHER_EXPLORE_UPDATES), timed=False,
                reads_last=False)


def _measured(candidate: dict) -> dict:
    """One candidate's measurement, checked against what it really did; its reported row."""
    name = candidate["name"]
    expect(field(candidate, "instances", int) == 1,
           f"{name}: not one publisher made for the measurement")
    versions = items(candidate, "versions", int, at_least=0, at_most=1000)
    expect(versions == list(range(1, CHOICE_UPDATES + 1)),
           f"{name}: the versions published were {versions}")
    expect(field(candidate, "reader_threads", int) == CHOICE_READERS
           and field(candidate, "shared_threads", int) == 0,
           f"{name}: not {CHOICE_READERS} reader threads besides the writer")
    writer_start = field(candidate, "writer_start", float)
    last_start = field(candidate, "last_start", float)
    writer_done = field(candidate, "writer_done", float)
    total = 0
    for reader in items(candidate, "readers", dict, at_least=CHOICE_READERS,
                        at_most=CHOICE_READERS):
        reads = field(reader, "reads", int)
        during, late = field(reader, "during", int), field(reader, "late", int)
        expect(reads >= 1 and during > 0,
               f"{name}: a reader made none of its {reads} reads while the writer published")
        expect(field(reader, "last_end", float) >= last_start,
               f"{name}: a reader stopped before the last publish")
        expect(field(reader, "last_version_reads", int) >= LAST_VERSION_READS,
               f"{name}: a reader stopped before the writer was done (served the last "
               f"version fewer than {LAST_VERSION_READS} times)")
        expect(late <= max(3, reads // 2),
               f"{name}: a reader made {late} of its {reads} reads after the writer was done")
        total += reads
    reads, torn = field(candidate, "reads", int), field(candidate, "torn", int)
    expect(total == reads and 0 <= torn <= reads,
           f"{name}: {reads} reads in all, {torn} torn, but the readers made {total}")
    span = field(candidate, "span", float)
    row = field(candidate, "table", dict)
    reported = {key: field(row, key, _NUMBER)
                for key in ("reads", "torn", "reads_per_s", "updates_per_s")}
    expect(reported["reads"] == reads and reported["torn"] == torn,
           f"{name}: reported {reported['reads']} reads with {reported['torn']} torn, but "
           f"{reads} were made with {torn} torn")
    low, high = RATE_WITHIN
    for key, truth, above in (
            ("reads_per_s", reads / max(span, 1e-9), high),
            ("updates_per_s", CHOICE_UPDATES / max(writer_done - writer_start, 1e-9),
             UPDATES_RATE_ABOVE)):
        expect(low * truth <= reported[key] <= above * truth,
               f"{name}: reported {key} = {reported[key]!r}, but it did about {truth:.0f}")
    return reported


def check_choice(seen: dict) -> None:
    """Every candidate was measured as asked (one publisher, the versions in order, readers
    beside the writer until it was done) and reported as it really did; the choice is the
    fastest reader among those with no torn read and enough updates per second. In the second
    call (``boundary``) every measured rate tied with ``min_updates_per_s``, so every candidate
    with no torn read had enough ("at least")."""
    _choice(seen, at_threshold=False)
    _choice(field(seen, "boundary", dict), at_threshold=True)


def _choice(seen: dict, *, at_threshold: bool) -> None:
    candidates = items(seen, "candidates", dict, at_least=len(CHOICE_NAMES),
                       at_most=len(CHOICE_NAMES))
    names = [field(candidate, "name", str) for candidate in candidates]
    expect(sorted(names) == sorted(CHOICE_NAMES),
           f"the measurements cover {names}, not the candidates {list(CHOICE_NAMES)}")
    table = {name: _measured(candidate) for name, candidate in zip(names, candidates,
                                                                   strict=True)}
    qualified = [name for name, row in table.items() if row["torn"] == 0 and (
        at_threshold or row["updates_per_s"] >= CHOICE_MIN_UPDATES_PER_S)]
    expected = max(qualified, key=lambda name: table[name]["reads_per_s"], default=None)
    chosen = field(seen, "chosen", (str, type(None)))
    where = " with every rate at the threshold" if at_threshold else ""
    expect(chosen == expected,
           f"chose {chosen!r}{where}, but the measurements pick {expected!r}")
