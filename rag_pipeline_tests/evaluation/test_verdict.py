"""The verdict names the configurations tied at the top of the headline measure, says whether the
leader beats the baseline significantly on the same questions, and words it in one sentence."""

import pandas as pd

from rag_pipeline.lib.evaluation import verdict


def matrix(*rows: tuple[str, float, float, int, float, float]) -> pd.DataFrame:
    columns = ["configuration", "r@2k", "mrr@10", "chars@5", "Δ", "p"]
    return pd.DataFrame(rows, columns=columns)


def test_a_significant_winner():
    got = verdict(
        matrix(("section/rrf", 0.91, 0.80, 1200, 0.31, 0.0004), ("fixed-1000", 0.60, 0.70, 4300, 0.0, 1.0)),
        "fixed-1000",
    )
    assert got["best"] == ["section/rrf"] and got["significant"] and got["p_value"] == 0.0004
    assert got["delta"] == 0.31 and got["baseline_value"] == 0.6 and got["best_value"] == 0.91
    assert got["wording"] == (
        "`section/rrf` beats the baseline `fixed-1000` by +0.31 on evidence recall within 2,000 characters "
        "(p = 0.0004)."
    )


def test_a_tie_at_the_top_without_significance_names_the_cheapest():
    got = verdict(
        matrix(
            ("fixed-200/bm25", 0.90, 0.70, 1000, 0.02, 0.62),
            ("section", 0.90, 0.85, 1500, 0.02, 0.62),
            ("fixed-1000", 0.88, 0.90, 4300, 0.0, 1.0),
            ("fixed-2000", 0.70, 0.90, 6900, -0.18, 0.01),
        ),
        "fixed-1000",
    )
    assert got["best"] == ["section", "fixed-200/bm25"]  # tied; MRR@10 orders them
    assert not got["significant"] and got["delta"] == 0.02
    assert got["wording"].startswith("No configuration beats the baseline `fixed-1000` significantly")
    assert "the cheapest at equal recall is `fixed-200/bm25` (1,000 characters at k=5)" in got["wording"]


def test_a_significant_leader_among_ties_is_named_with_them():
    got = verdict(
        matrix(
            ("a", 0.95, 0.9, 900, 0.2, 0.01), ("b", 0.95, 0.8, 800, 0.2, 0.02), ("base", 0.75, 0.7, 900, 0, 1)
        ),
        "base",
    )
    assert got["best"] == ["a", "b"] and got["significant"]
    assert got["wording"].startswith("`a` and `b` tie at the top (0.95); `a`, the first by MRR@10, beats")


def test_the_baseline_leading_is_no_win():
    got = verdict(matrix(("base", 0.9, 0.9, 900, 0.0, 1.0), ("other", 0.8, 0.9, 500, -0.1, 0.2)), "base")
    assert got["best"] == ["base"] and not got["significant"]
    assert "the cheapest at equal recall is `base`" in got["wording"]
