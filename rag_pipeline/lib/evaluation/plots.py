"""The plots a person reads in the UI: which configuration to pick (recall against characters passed,
the Pareto frontier named) and a strategy x retriever heatmap. PNG bytes out, titles inside the image.

Figures are built on matplotlib's Agg canvas directly, not through pyplot, so no global figure state
is shared between runs and nothing needs closing.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from rag_pipeline.lib.evaluation.metrics import BASELINE_RUN, HEADLINE_BUDGET

if TYPE_CHECKING:  # matplotlib takes seconds to import: loaded where a plot is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Annotation
    from matplotlib.transforms import Bbox

# 8 x 5 inches at 100 dpi: 800 x 500 px; 9 pt is then 12.5 px, readable at 100%
SIZE_IN = (8.0, 5.0)
DPI = 100
FONT = 10  # the smallest text drawn is FONT - 1 = 9 pt
FRONT_COLOUR = "#1f5fa8"


def configuration_name(strategy: str, retriever: str) -> str:
    """The name of a strategy x retriever configuration, as in the report's tables."""
    return strategy if retriever == BASELINE_RUN[1] else f"{strategy}/{retriever}"


def pareto_points(
    summary: pd.DataFrame, budget: pd.DataFrame, budget_chars: int = HEADLINE_BUDGET, k: int = 5
) -> pd.DataFrame:
    """`configuration`, `recall` (evidence recall within `budget_chars`) and `chars` (median characters
    passed at k) per configuration, from the `evaluation_summary` and `budget_recall` report tables
    (one embedding_version)."""
    chars = summary.loc[summary["k"] == k, ["strategy", "retriever", "chars_median"]]
    recall = budget.loc[budget["budget_chars"] == budget_chars, ["strategy", "retriever", "evidence_recall"]]
    points = chars.merge(recall, on=["strategy", "retriever"], sort=False)
    return pd.DataFrame(
        {
            "configuration": [
                configuration_name(s, r) for s, r in zip(points["strategy"], points["retriever"])
            ],
            "recall": points["evidence_recall"].to_numpy(float),
            "chars": points["chars_median"].to_numpy(float),
        }
    )


def recall_grid(budget: pd.DataFrame, budget_chars: int = HEADLINE_BUDGET) -> pd.DataFrame:
    """Evidence recall within `budget_chars`, strategies as rows and retrievers as columns, both in the
    order the `budget_recall` table first lists them."""
    at = budget[budget["budget_chars"] == budget_chars]
    grid = at.pivot_table(index="strategy", columns="retriever", values="evidence_recall", sort=False)
    grid = grid.reindex(
        index=list(dict.fromkeys(at["strategy"])), columns=list(dict.fromkeys(at["retriever"]))
    )
    return grid.rename_axis(index="chunking strategy", columns="retriever")


def pareto_front(points: pd.DataFrame) -> list[str]:
    """Configurations no other one beats: none has recall >= and chars <= with one of them strictly.
    Exact ties on both are all kept. Ordered by chars (ties as given); rows with a missing recall or
    chars are ignored."""
    valid = points.dropna(subset=["recall", "chars"])
    recall, chars = valid["recall"].to_numpy(float), valid["chars"].to_numpy(float)
    at_least = (recall[None, :] >= recall[:, None]) & (chars[None, :] <= chars[:, None])
    strictly = (recall[None, :] > recall[:, None]) | (chars[None, :] < chars[:, None])
    dominated = (at_least & strictly).any(axis=1)
    return list(valid[~dominated].sort_values("chars", kind="stable")["configuration"])


def _figure() -> tuple[Figure, Axes]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE_IN, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def _png(fig: Figure) -> bytes:
    # no bbox_inches="tight": the saved size must stay SIZE_IN x DPI
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _thousands(value: float, _pos: object = None) -> str:
    return f"{value:,.0f}"


# label offsets in points, tried in this order: beside the point first, then further out on a leader line
LABEL_OFFSETS = [
    (8, -6),
    (8, 6),
    (-8, 6),
    (-8, -6),
    (14, -22),
    (-14, 22),
    (24, -40),
    (-24, 40),
    (40, 0),
    (-40, 0),
]


def _label_points(fig: Figure, ax: Axes, labels: list[tuple[tuple[float, float], str]]) -> None:
    """Annotate each point with its text at the first offset where the label stays inside the axes and
    covers no earlier label nor a labelled point (the first offset when none is free)."""
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox

    fig.draw_without_rendering()  # settle the layout, so measured extents are final
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    points = ax.transData.transform([xy for xy, _ in labels])
    taken = [Bbox.from_bounds(px - 5, py - 5, 10, 10) for px, py in points]

    def annotate(xy: tuple[float, float], text: str, dx: int, dy: int) -> tuple[Annotation, Bbox]:
        label = ax.annotate(
            text,
            xy,
            xytext=(dx, dy),
            textcoords="offset points",
            ha="left" if dx >= 0 else "right",
            va="bottom" if dy > 0 else "top" if dy < 0 else "center",
            fontsize=FONT - 1,
            color=FRONT_COLOUR,
            bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8},
            arrowprops={"arrowstyle": "-", "color": FRONT_COLOUR, "linewidth": 0.6}
            if abs(dx) + abs(dy) > 20
            else None,
            zorder=4,
        )
        # the text's own extent: the annotation's would include the leader line, which touches the point
        label.update_positions(renderer)
        return label, Text.get_window_extent(label, renderer).padded(2)

    def free(box: Bbox) -> bool:
        inside = frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1)
        return inside and not any(box.overlaps(other) for other in taken)

    for xy, text in labels:
        for dx, dy in LABEL_OFFSETS:
            label, box = annotate(xy, text, dx, dy)
            if free(box):
                break
            label.remove()
        else:
            # nowhere free: an overlapping name rather than an unnamed configuration
            label, box = annotate(xy, text, *LABEL_OFFSETS[0])
        taken.append(box)


def pareto_plot(
    points: pd.DataFrame,
    budget_chars: int = HEADLINE_BUDGET,
    chars_label: str = "median characters passed at k=5",
) -> bytes:
    """Recall within `budget_chars` against characters passed, one point per configuration
    (`configuration`, `recall`, `chars`); the Pareto frontier drawn and named, the rest faint."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    valid = points.dropna(subset=["recall", "chars"])
    front_names = pareto_front(valid)
    on_front = valid["configuration"].isin(front_names)
    fig, ax = _figure()
    rest = valid[~on_front]
    ax.scatter(rest["chars"], rest["recall"], s=22, color="grey", alpha=0.3, linewidths=0, zorder=2)
    front = valid.set_index("configuration").loc[front_names]
    ax.plot(
        front["chars"], front["recall"], color=FRONT_COLOUR, marker="o", markersize=6, linewidth=1.5, zorder=3
    )
    ax.set_xscale("log")
    ax.margins(x=0.08, y=0.05)
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 3.0, 5.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"{chars_label} (log scale; fewer is cheaper)", fontsize=FONT)
    ax.set_ylabel(f"evidence recall within {budget_chars:,} characters", fontsize=FONT)
    low = float(valid["recall"].min()) if len(valid) else 0.0
    ax.set_ylim(max(0.0, np.floor(low * 10) / 10 - 0.05), 1.03)
    ax.tick_params(labelsize=FONT - 1)
    ax.grid(alpha=0.3, which="both")
    ax.set_title(
        f"Which configuration? Recall within {budget_chars:,} characters vs characters passed\n"
        f"named: the {len(front_names)} no other configuration beats on both recall and characters; "
        f"grey: the other {len(rest)}",
        fontsize=FONT,
        loc="left",
    )
    # configurations with the same figures share one label
    groups = front.reset_index().groupby(["chars", "recall"], sort=False)["configuration"]
    _label_points(fig, ax, [((x, y), "\n".join(names)) for (x, y), names in groups])
    return _png(fig)


def heatmap(
    values: pd.DataFrame,
    title: str,
    value_label: str = f"evidence recall within {HEADLINE_BUDGET:,} characters",
) -> bytes:
    """`values` (strategies as rows, retrievers as columns) as coloured cells annotated with 2 decimals,
    with a colour bar; a missing value is an empty cell."""
    fig, ax = _figure()
    data = values.to_numpy(float)
    finite = data[np.isfinite(data)]
    # start the scale a little below the lowest value so close recalls still differ in colour
    low = float(np.floor(finite.min() * 10) / 10) if finite.size else 0.0
    high = max(1.0, float(finite.max())) if finite.size else 1.0
    image = ax.imshow(np.ma.masked_invalid(data), cmap="viridis", vmin=low, vmax=high, aspect="auto")
    for (row, col), v in np.ndenumerate(data):
        if np.isfinite(v):
            shade = (v - low) / (high - low) if high > low else 1.0
            # viridis is dark at the bottom of its scale and light at the top
            colour = "black" if shade > 0.6 else "white"
            ax.text(col, row, f"{v:.2f}", ha="center", va="center", fontsize=FONT - 1, color=colour)
    ax.set_xticks(range(data.shape[1]), [str(c) for c in values.columns], rotation=25, ha="right")
    ax.set_yticks(range(data.shape[0]), [str(i) for i in values.index])
    ax.tick_params(labelsize=FONT - 1, length=0)
    ax.set_xlabel(values.columns.name or "retriever", fontsize=FONT)
    ax.set_ylabel(values.index.name or "chunking strategy", fontsize=FONT)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label(value_label, fontsize=FONT)
    bar.ax.tick_params(labelsize=FONT - 1)
    ax.set_title(title, fontsize=FONT + 1, loc="left")
    return _png(fig)
