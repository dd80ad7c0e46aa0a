"""Everything that crosses the boundary between the host and the student's kernel, named once.

The host (:mod:`autograder.grading.execute`) hands the runner a plan in which each cell holds
only :data:`PLAN_CELL_KEYS` (never a hidden test's source or what its calls must return). The
runner (:mod:`autograder.kernel.runner`) answers with signed events
(:mod:`autograder.kernel.channel`) whose kind is ``event[KIND]``: :data:`START` and
:data:`END` for each cell in the plan's order, then :data:`DONE`; or :data:`GRADER_ERROR` when
it could not seal itself. A test cell's :data:`END` carries ``values``: for each hidden call,
what the answer returned, or the observations the check reported
(:func:`autograder.checks.kit.report`), all as plain data; the host compares the first with
its expectations and hands the second to its judge (:mod:`autograder.judges`), so no event
is a pass by itself. The host puts two kinds of its own in the same queue: :data:`FLOOD`
(the notebook wrote more than the host reads) and :data:`EOF` (the runner's pipe closed). A
check that finds the race detector's tools replaced says :data:`TOOLS_REPLACED` in its message
(:func:`autograder.harness.tamper.message`), and scoring reads that phrase as tampering.

The runner spells its event kinds as literals (after student code runs it looks no global up)
and the harness its tamper message (this module imports nothing, so the host does not load the
harness); ``tests/kernel/test_protocol.py`` holds both to these names.
"""

from __future__ import annotations

KIND = "t"
START = "start"
END = "end"
DONE = "done"
GRADER_ERROR = "grader-error"
#: The runner's event kinds, in the order a run sends them.
RUNNER_EVENTS = (START, END, DONE, GRADER_ERROR)
FLOOD = "flood"
EOF = "eof"
#: Kinds the host makes itself: they carry no sequence number.
HOST_EVENTS = (FLOOD, EOF)
#: The words a tamper verdict of the harness starts with, read by scoring as tampering.
TOOLS_REPLACED = "the race detector's own tools were replaced"
#: What the runner is told about each cell of the plan.
PLAN_CELL_KEYS = ("kind", "source", "hidden", "label", "skip", "skip_reason")

__all__ = ["DONE", "END", "EOF", "FLOOD", "GRADER_ERROR", "HOST_EVENTS", "KIND",
           "PLAN_CELL_KEYS", "RUNNER_EVENTS", "START", "TOOLS_REPLACED"]
