"""The verdict both engines return."""

from __future__ import annotations

import weakref
from typing import Any

from matplotlib.figure import Figure

from .timeline import Timeline, draw

VERDICTS = ("pass", "race", "deadlock", "error", "timeout")

_issued: weakref.WeakSet[Result] = weakref.WeakSet()


class Result:
    """What a race-detection run found.

    Attributes:
        verdict: ``"pass"``, ``"race"``, ``"deadlock"``, ``"error"`` or ``"timeout"``.
        schedule: A JSON-serialisable token naming the failing run (``None`` when ok). For
            ``explore`` it is a string to hand to ``replay``; for ``stress`` a dict naming the
            seed and trial.
        schedules_run: How many schedules (``explore``) or trials (``stress``) ran.
        message: A plain-language explanation for the student.
        covered: True when ``explore`` tried every schedule of the program (a proof, within
            the harness's model), False when it sampled.
        bound: The search bound a passing ``explore`` reached, in words (``"every schedule
            with at most 1 preemption (212 schedules)"``); ``""`` when it only sampled.
        trace: The failing run's decision points in order, as plain tuples ``(thread,
            filename, lineno, function, note, op, name)`` (``op`` and ``name`` as
            :class:`~autograder.harness.access.Access` has them; ``note`` ``"finished"``,
            ``"blocked: ..."`` or ``"raised TypeName"``); ``()`` when no schedule failed or the
            engine was ``stress``. What failure signatures are made of.
    """

    __slots__ = ("verdict", "schedule", "schedules_run", "message", "covered", "bound",
                 "trace", "_timeline", "__weakref__")

    def __init__(
        self,
        verdict: str,
        *,
        schedule: Any = None,
        schedules_run: int = 0,
        message: str = "",
        covered: bool = False,
        bound: str = "",
        timeline: Timeline | None = None,
        trace: tuple = (),
    ) -> None:
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, not {verdict!r}")
        for name, value in (("verdict", verdict), ("schedule", schedule),
                            ("schedules_run", schedules_run), ("message", message),
                            ("covered", covered), ("bound", bound), ("trace", tuple(trace)),
                            ("_timeline", timeline or Timeline())):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("a Result cannot be changed")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as a plain copy: a Result from another process is never ``ok``."""
        return (_copy_of, (self.verdict, {
            "schedule": self.schedule, "schedules_run": self.schedules_run,
            "message": self.message, "covered": self.covered, "bound": self.bound,
            "timeline": self._timeline, "trace": self.trace}))

    @property
    def ok(self) -> bool:
        """True when the verdict is ``"pass"`` and this result came from the harness itself.

        A Result built by hand (for instance by code replacing a grader function) is never ok.
        """
        return self.verdict == "pass" and self in _issued

    def figure(self) -> Figure:
        """Draw the run: one lane per thread, the steps each took, the failure marked.

        Returns:
            A headless matplotlib Figure; a notebook shows it when it is a cell's last value.
        """
        return draw(self._timeline)

    def __repr__(self) -> str:
        return (f"Result(verdict={self.verdict!r}, schedules_run={self.schedules_run}, "
                f"schedule={self.schedule!r})")

    def __str__(self) -> str:
        return self.message or repr(self)


def _copy_of(verdict: str, fields: dict[str, Any]) -> Result:
    """A Result rebuilt from a pickle (not issued: its ``ok`` is False)."""
    return Result(verdict, **fields)


def issue(verdict: str, **fields: Any) -> Result:
    """Make a Result the harness vouches for (its ``ok`` can be True)."""
    result = Result(verdict, **fields)
    _issued.add(result)
    return result
