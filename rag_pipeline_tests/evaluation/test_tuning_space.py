"""The tuning space: every valid point of a TOML file, drawn at random and the same for one seed; a bad
file is one line naming it and the table or key."""

import pytest

from rag_pipeline.lib.chunking import read_strategy_file
from rag_pipeline.lib.evaluation.tuning import SpaceError, draw, read_space
from rag_pipeline.settings import PROJECT_ROOT
from rag_pipeline_tests.support.errors import one_line_error


def test_the_shipped_space_and_its_trials(tmp_path):
    points = read_space(PROJECT_ROOT / "data" / "tune.toml")
    assert len(points) == (6 + 4) * 2 * 2 * 3  # strategies x candidate_k x rrf_k x dense_weight
    trials = draw(points, 6, seed=0)
    assert trials == draw(points, 6, seed=0) and len(set(trials)) == 6
    names = [t.name for t in trials]
    assert names == sorted(names, key=names.index)  # one strategy's trials follow each other
    trial = trials[0]
    (tmp_path / "s.toml").write_text(trial.strategy_toml())
    (strategy,) = read_strategy_file(tmp_path / "s.toml")
    assert strategy.name == trial.name and strategy.name.startswith("tune-")
    assert set(trial.env()) == {"RAG_CANDIDATE_K", "RAG_RRF_K", "RAG_DENSE_WEIGHT", "RAG_CONTEXT_K"}
    assert sorted(draw(points[:2], 6, seed=0), key=points.index) == points[:2]  # every point, once


def test_points_the_pipeline_would_refuse_are_left_out(tmp_path):
    path = tmp_path / "space.toml"
    path.write_text(
        '[[strategy]]\nkind = "fixed"\nsize = [100, 300]\noverlap = [0, 200]\n\n'
        "[retrieval]\ncandidate_k = [10, 30]\ncontext_k = [5, 25]\n"
    )
    points = read_space(path)
    assert {(dict(p.strategy)["size"], dict(p.strategy)["overlap"]) for p in points} == {
        (100, 0),
        (300, 0),
        (300, 200),
    }
    assert {p.retrieval for p in points} == {(("candidate_k", 30), ("context_k", 5))}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[strategy]]\nkind = "python"\n', "[[strategy]] #1: `kind` must be one of fixed, section"),
        ('[[strategy]]\nkind = "fixed"\nsize = []\n', "`size` must be a value or a non-empty list"),
        ('[[strategy]]\nkind = "fixed"\nsize = 100\noverlap = 100\n', "must be smaller than `size` (100)"),
        # the value as written, not a strategy name made of it (`tune-fixed--5`)
        (
            '[[strategy]]\nkind = "fixed"\nsize = [-5, 0]\n',
            "#1: parameter `size` must be an integer >= 1, not -5",
        ),
        ('[[strategy]]\nkind = "section"\n[retrieval]\ntop_k = [3]\n', "[retrieval] may hold candidate_k"),
        ('[[strategy]]\nkind = "section"\n[retrieval]\ncandidate_k = [5]\n', "no combination has"),
        ("[search]\nx = 1\n", "unknown table(s) search"),
        ("[[strategy]\n", "invalid TOML"),
    ],
)
def test_a_bad_space_is_one_line_naming_the_file(tmp_path, text, message):
    assert message in one_line_error(tmp_path / "space.toml", text, read_space, SpaceError)
