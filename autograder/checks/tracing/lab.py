"""The notebook's plumbing: a log drawn as a timeline, a profiler trace read back per thread."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def plot_timeline(log: Sequence[dict[str, Any]], *, title: str = "", highlight: Sequence[
        tuple[int, int]] = ()) -> Any:
    """Draw a log as a timeline: one lane per thread, one bar per access (reads light).

    Args:
        log: Access records (see the module docstring).
        title: The figure's title.
        highlight: Index pairs to outline in red (conflicts).

    Returns:
        The matplotlib Figure.
    """
    import matplotlib.pyplot as plt

    threads = sorted({r["thread"] for r in log})
    lane = {name: i for i, name in enumerate(threads)}
    t0 = min(r["start"] for r in log) if log else 0
    marked = {i for pair in highlight for i in pair}
    fig, ax = plt.subplots(figsize=(9, 0.7 + 0.6 * len(threads)))
    for i, r in enumerate(log):
        start_ms = (r["start"] - t0) / 1e6
        width_ms = max((r["end"] - r["start"]) / 1e6, 0.02)
        color = "tab:red" if r["op"] == "write" else "tab:blue"
        ax.barh(lane[r["thread"]], width_ms, left=start_ms, height=0.5, color=color,
                alpha=0.85 if r["op"] == "write" else 0.45,
                edgecolor="black" if i in marked else "none", linewidth=2 if i in marked else 0)
        label = f"{r['op'][0].upper()} {r['resource']}"
        if r.get("value") is not None:
            label += f"={r['value']}"
        ax.text(start_ms, lane[r["thread"]] + 0.33, label, fontsize=7)
    ax.set_yticks(range(len(threads)), threads)
    ax.set_xlabel("ms since the first access (time.perf_counter_ns)")
    ax.set_title(title or "accesses per thread (red: write, blue: read)")
    ax.invert_yaxis()
    fig.tight_layout()
    return fig


def read_xplane_threads(logdir: str) -> dict[str, list[tuple[str, float, float]]]:
    """Read the newest ``*.xplane.pb`` under ``logdir`` and return the host's events per thread.

    Uses the XSpace protobuf that TensorFlow ships (``tensorflow.tsl.profiler.protobuf``).

    Returns:
        ``{line name and id: [(event name, start_ms, end_ms), ...]}`` for the ``/host:CPU``
        plane, times relative to the earliest event.
    """
    import glob
    import os

    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    paths = sorted(glob.glob(os.path.join(logdir, "plugins", "profile", "*", "*.xplane.pb")))
    if not paths:
        raise FileNotFoundError(f"no *.xplane.pb under {logdir}/plugins/profile")
    space = xplane_pb2.XSpace()
    with open(paths[-1], "rb") as handle:
        space.ParseFromString(handle.read())
    lines: dict[str, list[tuple[str, float, float]]] = {}
    for plane in space.planes:
        if plane.name != "/host:CPU":
            continue
        names = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            key = f"{line.name} #{line.id % 10000:04d}"
            events = []
            for event in line.events:
                start_ns = line.timestamp_ns + event.offset_ps / 1000
                events.append((names.get(event.metadata_id, "?"), start_ns,
                               start_ns + event.duration_ps / 1000))
            lines[key] = events
    t0 = min((e[1] for events in lines.values() for e in events), default=0)
    return {key: [(n, (s - t0) / 1e6, (e - t0) / 1e6) for n, s, e in events]
            for key, events in lines.items()}


def overlap_ms(a: Sequence[tuple[str, float, float]],
               b: Sequence[tuple[str, float, float]]) -> float:
    """Total time (ms) during which an event of ``a`` and an event of ``b`` both ran."""
    total = 0.0
    for _, s1, e1 in a:
        for _, s2, e2 in b:
            total += max(0.0, min(e1, e2) - max(s1, s2))
    return total
