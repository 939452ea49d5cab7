"""The report's plots: the Pareto frontier on hand-made points, and the rendered PNGs."""

from __future__ import annotations

import io
import struct

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from rag_pipeline.lib.evaluation import heatmap, pareto_front, pareto_plot, pareto_points, recall_grid
from rag_pipeline.lib.evaluation.report import Drawn

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def points(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["configuration", "recall", "chars"])


def test_front_keeps_only_configurations_nobody_beats_on_both() -> None:
    table = points(
        [
            ("cheap", 0.70, 1000),
            ("middle", 0.85, 2000),
            ("worse-than-middle", 0.80, 2500),  # less recall, more characters
            ("best", 0.95, 6000),
            ("dearer-same-recall", 0.95, 7000),  # ties best on recall, more characters
            ("same-chars-less-recall", 0.60, 1000),  # ties cheap on characters, less recall
        ]
    )
    assert pareto_front(table) == ["cheap", "middle", "best"]


def test_exact_ties_are_all_kept_in_the_order_given() -> None:
    table = points([("b", 0.9, 1500), ("a", 0.9, 1500), ("c", 0.5, 900), ("d", 0.8, 1600)])
    assert pareto_front(table) == ["c", "b", "a"]


def test_missing_figures_are_ignored() -> None:
    table = points([("a", 0.9, 1500), ("nan-recall", float("nan"), 10), ("nan-chars", 1.0, float("nan"))])
    assert pareto_front(table) == ["a"]


def png_size(png: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which always follows the signature."""
    assert png[:8] == PNG_MAGIC
    length, kind, width, height = struct.unpack(">I4sII", png[8:24])
    assert kind == b"IHDR" and length == 13
    return width, height


def distinct_colours(png: bytes) -> int:
    pixels = matplotlib.image.imread(io.BytesIO(png), format="png")
    return len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0))


@pytest.fixture
def report_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """A small `evaluation_summary` (k = 5 only) and `budget_recall`, as the report writes them."""
    configs = [
        ("fixed-200", "dense", 0.60, 1000),
        ("fixed-200", "bm25", 0.80, 1000),
        ("fixed-1000", "dense", 0.90, 4400),
        ("fixed-1000", "bm25", 0.85, 4300),
        ("section", "dense", 0.88, 1500),
        ("section", "bm25", float("nan"), 1200),
    ]
    summary = pd.DataFrame(
        [{"strategy": s, "retriever": r, "k": 5, "chars_median": c} for s, r, _, c in configs]
    )
    budget = pd.DataFrame(
        [
            {"strategy": s, "retriever": r, "budget_chars": b, "evidence_recall": v * (b / 4000) ** 0.1}
            for s, r, v, _ in configs
            for b in (1000, 4000)
        ]
    )
    return summary, budget


def test_points_and_grid_come_from_the_report_tables(report_tables) -> None:
    summary, budget = report_tables
    table = pareto_points(summary, budget, budget_chars=4000)
    assert list(table["configuration"])[:3] == ["fixed-200", "fixed-200/bm25", "fixed-1000"]
    assert table.set_index("configuration").at["section", "recall"] == pytest.approx(0.88)
    assert table.set_index("configuration").at["section", "chars"] == 1500
    grid = recall_grid(budget, budget_chars=4000)
    assert list(grid.index) == ["fixed-200", "fixed-1000", "section"]
    assert list(grid.columns) == ["dense", "bm25"]
    assert grid.at["fixed-1000", "dense"] == pytest.approx(0.90)


def test_plots_are_small_pngs_of_the_expected_size_with_content(report_tables) -> None:
    summary, budget = report_tables
    pngs = [
        pareto_plot(pareto_points(summary, budget, budget_chars=4000)),
        heatmap(recall_grid(budget, budget_chars=4000), "Evidence recall within 4,000 characters"),
    ]
    for png in pngs:
        assert png_size(png) == (800, 500)
        assert len(png) < 150_000
        # text, grid, points and a colour scale: far more than a blank or single-colour image
        assert distinct_colours(png) > 20


def test_a_plot_is_drawn_again_only_when_what_it_draws_changes():
    calls = []

    def render(points: pd.DataFrame, title: str) -> bytes:
        calls.append(title)
        return f"{title}:{points['x'].sum()}".encode()

    first = Drawn({})
    drawn = first(render, pd.DataFrame({"x": [1.0, 2.0]}), "t")
    again = Drawn(first.used)  # the next report, given the last one's plots
    assert again(render, pd.DataFrame({"x": [1.0, 2.0]}), "t") == drawn == (b"t:3.0",)
    assert calls == ["t"]
    assert again(render, pd.DataFrame({"x": [1.0, 2.5]}), "t") == (b"t:3.5",)
    assert again(render, pd.DataFrame({"x": [1.0, 2.0]}), "other title") == (b"other title:3.0",)
    assert calls == ["t", "t", "other title"]
    assert len(again.used) == 3
