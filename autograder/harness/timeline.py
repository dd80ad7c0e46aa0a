"""What each thread did and when, and the picture of it (one lane per thread)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

_LANE_COLOURS = ("#4C72B0", "#55A868", "#8172B2", "#CCB974", "#64B5CD", "#8C8C8C")
_FAIL_COLOUR = "#C44E52"


@dataclass
class Segment:
    """A stretch of time (or of scheduler steps) during which one thread ran."""

    lane: int
    start: float
    end: float
    label: str = ""


@dataclass
class Mark:
    """A point to point at: where the failure showed, or where a thread raised."""

    lane: int
    at: float
    label: str


@dataclass
class Timeline:
    """Everything :func:`draw` needs; filled in by the engines while they run.

    Attributes:
        lanes: One name per thread, in lane order.
        segments: What ran where.
        marks: Failure points, drawn as red crosses with a label.
        switches: Positions of the chosen (not forced) thread switches, drawn as dashed lines.
        xlabel: What the horizontal axis counts.
        title: The figure title.
    """

    lanes: list[str] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    switches: list[float] = field(default_factory=list)
    xlabel: str = "step"
    title: str = ""


def from_events(lanes: Sequence[str], events: Sequence[tuple[int, str]], *,
                failure: str = "", title: str = "") -> Timeline:
    """A timeline of labelled steps, one per event, in the order the events happened.

    For schedules where every step says what it did, for example ``(0, "read 0")`` then
    ``(1, "read 0")``, ``(1, "write 1")``, ``(0, "write 1")``: a lost update is visible at a
    glance, without looking up line numbers. Each event is one step wide; a dashed line marks
    each change of thread.

    Args:
        lanes: One name per thread, in lane order.
        events: ``(lane, label)`` per step, in the order the steps ran.
        failure: When given, a red cross after the last step with this label.
        title: The figure title.

    Returns:
        A :class:`Timeline` for :func:`draw`.
    """
    timeline = Timeline(lanes=list(lanes), xlabel="step, in the order the steps ran",
                        title=title)
    previous: int | None = None
    for at, (lane, label) in enumerate(events):
        timeline.segments.append(Segment(lane, at, at + 1, label))
        if previous is not None and lane != previous:
            timeline.switches.append(at)
        previous = lane
    if failure and events:
        timeline.marks.append(Mark(events[-1][0], len(events), failure))
    return timeline


def draw(timeline: Timeline) -> Figure:
    """Draw a timeline as a headless matplotlib Figure (no pyplot, no GUI backend).

    Args:
        timeline: The recorded lanes, segments and marks.

    Returns:
        A Figure with one horizontal lane per thread.
    """
    lanes = timeline.lanes or ["(no threads ran)"]
    figure = Figure(figsize=(9, 1.2 + 0.6 * len(lanes)), layout="constrained")
    axes = figure.add_subplot()
    for segment in timeline.segments:
        width = max(segment.end - segment.start, 1e-9)
        colour = _LANE_COLOURS[segment.lane % len(_LANE_COLOURS)]
        axes.barh(segment.lane, width, left=segment.start, height=0.5, color=colour,
                  edgecolor="white", linewidth=0.5)
        if segment.label and len(timeline.segments) <= 40:
            axes.text(segment.start + width / 2, segment.lane, segment.label, ha="center",
                      va="center", fontsize=7, color="white", clip_on=True)
    for position in timeline.switches:
        axes.axvline(position, color=_FAIL_COLOUR, linestyle="--", linewidth=0.8, alpha=0.6)
    for mark in timeline.marks:
        axes.plot([mark.at], [mark.lane], marker="X", markersize=12, color=_FAIL_COLOUR,
                  linestyle="none")
        axes.annotate(mark.label, (mark.at, mark.lane), xytext=(6, 10),
                      textcoords="offset points", fontsize=8, color=_FAIL_COLOUR)
    axes.set_yticks(range(len(lanes)), lanes)
    axes.set_ylim(len(lanes) - 0.5, -0.5)
    axes.set_xlabel(timeline.xlabel)
    if "step" in timeline.xlabel:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    if timeline.title:
        axes.set_title(timeline.title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    return figure
