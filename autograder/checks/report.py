"""Turn a harness result into a graded outcome a student can read."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

FIGURE_SINK: Callable[[bytes], None] | None = None
"""Where figures go outside IPython: the grading runner sets it to collect PNG bytes."""


def require_ok(result: Any, *, exercise: str, show_figure: bool = True) -> None:
    """Pass silently when ``result.ok``; otherwise show the interleaving and fail.

    Args:
        result: A :class:`autograder.harness.Result`.
        exercise: The exercise's name as the student knows it, put first in the message.
        show_figure: Display ``result.figure()`` in the notebook (feedback keeps it) before
            failing. Ignored outside IPython.

    Raises:
        AssertionError: With the exercise name and ``result.message`` when the result is not ok.
    """
    if result.ok:
        return
    if show_figure:
        _display_figure(result)
    raise AssertionError(f"{exercise}: {result.message}")


def _display_figure(result: Any) -> None:
    try:
        from IPython import get_ipython
        from IPython.display import Image, display
    except ImportError:
        get_ipython = None  # noqa: N806
    if (get_ipython is None or get_ipython() is None) and FIGURE_SINK is None:
        return
    try:
        figure = result.figure()
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    except Exception as exc:  # noqa: BLE001 - a broken picture must not hide the verdict
        print(f"(could not draw the interleaving: {exc})")
        return
    if FIGURE_SINK is not None:
        FIGURE_SINK(buffer.getvalue())
        return
    # As PNG bytes: shows in every frontend and in nbgrader's feedback, whatever the backend.
    display(Image(data=buffer.getvalue(), format="png"))
