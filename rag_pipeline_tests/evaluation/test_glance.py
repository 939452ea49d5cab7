"""The two tables the summary page shows inline: narrow, best first, hand-made frames."""

import pandas as pd

from rag_pipeline.lib.evaluation import glance_tables, records


def test_glance_tables_keep_the_headline_columns_and_the_best_beside_the_baseline():
    matrix = pd.DataFrame(
        {
            "configuration": [f"run-{i}" for i in range(6)],
            "r@2k": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
            "Δ": [0.3, 0.2, 0.1, 0.0, -0.1, -0.2],
            "p": [0.0001, 0.01, 0.2, 1.0, 0.5, float("nan")],
            "evid@5": [0.9] * 6,
        }
    )
    category = pd.DataFrame(
        {"configuration": ["run-0", "run-3"], "number (60)": [0.9, 0.5], "table (17)": [1.0, float("nan")]}
    )
    tables = glance_tables(matrix, category, "run-3")
    top = tables["top_configurations"]
    assert list(top.columns) == ["configuration", "r@2k", "Δ", "p"]
    assert list(top["configuration"]) == ["run-0", "run-1", "run-2", "run-3", "run-4"]
    assert list(top["p"]) == ["0.0001", "0.01", "0.2", "1", "0.5"]
    assert records(tables["per_category"]) == [
        {"category": "number (60)", "best": 0.9, "baseline": 0.5},
        {"category": "table (17)", "best": 1.0, "baseline": None},  # NaN is an empty cell, not JSON NaN
    ]


def test_without_the_baseline_the_top_table_has_no_comparison():
    matrix = pd.DataFrame({"configuration": ["a/bm25"], "r@2k": [0.5]})
    category = pd.DataFrame({"configuration": ["a/bm25"], "number (3)": [0.5]})
    tables = glance_tables(matrix, category, "fixed-1000")
    assert list(tables["top_configurations"].columns) == ["configuration", "r@2k"]
    assert records(tables["per_category"]) == [{"category": "number (3)", "best": 0.5, "baseline": None}]
