"""Values that lie, for the wrong answers that return them (issue #12: answers cannot lie).

Each one misreports what it holds through its own methods: it equals anything, sorts nowhere,
absorbs arithmetic, or claims another type through ``__class__``. A check that judges plain data
(:mod:`autograder.checks.plain`) sees through every one; a check that compares what it was
handed would be fooled. The lessons' answer modules build their lying answers from these.
"""

from __future__ import annotations

from typing import Any


def lying(*answers: Any) -> list[Any]:
    """Mark ``answers`` as lying answers (``grading_runs.runs_for`` gives them fewer runs)."""
    for answer in answers:
        answer.lies = True
    return list(answers)


class _Agreeing:
    """Equal to anything, never less or greater, absorbing arithmetic (mixed into numbers)."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __lt__(self, other: object) -> bool:
        return False

    __gt__ = __lt__

    def __le__(self, other: object) -> bool:
        return True

    __ge__ = __le__

    def __hash__(self) -> int:
        return 0

    def _same(self, *other: object) -> Any:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same


class EqualsEverything(_Agreeing, int):
    """An int that equals any value and whose arithmetic gives more of the same."""


class EqualsEverythingFloat(_Agreeing, float):
    """A float that equals any value and lies within any range."""


class EqualsEverythingStr(str):
    """A string that equals any value."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 0


class Agrees(_Agreeing):
    """Not a number at all: equal to anything, absorbing arithmetic, printed as 0."""

    def __format__(self, spec: str) -> str:
        return "0"

    def __repr__(self) -> str:
        return "0"


class PosingInt(Agrees):
    """Not an int, but its ``__class__`` says int; otherwise :class:`Agrees`."""

    __class__ = property(lambda self: int)  # type: ignore[assignment]


class KeptKey(str):
    """A key equal to its text only while the value its call made is the one the cache kept
    (``kept``, ``value``), so ``calls.count(key)`` sees one call however many there were."""

    value: Any = None  # until its call returns
    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        return (type(other) is str and str.__eq__(self, other)
                and self.kept.get(other, self.value) is self.value)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)


class PosingKey:
    """The same lie as :class:`KeptKey` from an object whose ``__class__`` says str."""

    __class__ = property(lambda self: str)  # type: ignore[assignment]
    value: Any = None  # until its call returns

    def __init__(self, text: str) -> None:
        self.text = text

    def __hash__(self) -> int:
        return hash(self.text)

    def __eq__(self, other: object) -> bool:
        return (type(other) is str and other == self.text
                and self.kept.get(other, self.value) is self.value)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return repr(self.text)


def get_hiding_extra_calls(values: dict[Any, Any], make: Any, key: Any, key_type: type) -> Any:
    """A check-then-act cache's ``get``: ``make`` may run twice for one key, and the key object
    it is called with (``key_type``) hides every call but the one whose value was kept."""
    if key not in values:
        lying = key_type(key)
        lying.kept = values
        lying.value = make(lying)
        values.setdefault(key, lying.value)
    return values[key]
