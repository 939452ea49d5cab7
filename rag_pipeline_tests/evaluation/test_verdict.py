"""The verdict chooses on the development questions (the configurations tied at the top there), says
whether the chosen one beats the baseline significantly on the test questions, and words both in one
sentence; its best_value, baseline_value and delta are of one population (the test questions, or the
development ones, named so, when too few test questions can decide)."""

import pandas as pd

from rag_pipeline.lib.evaluation import verdict

COLUMNS = ["configuration", "r@2k", "chars@5", "dev", "dev_mrr@10", "test", "Δ", "p"]


def matrix(*rows: tuple, n_dev: int = 196, n_test: int = 84, baseline: str | None = None) -> pd.DataFrame:
    """Rows of (configuration, r@2k on all questions, chars@5, dev, dev MRR@10, test, Δ and p on test),
    with the baseline's (the row whose Δ is 0, or `baseline`) figures beside each as the splits hold
    them; every development p-value 0.01."""
    frame = pd.DataFrame(rows, columns=COLUMNS).assign(n_dev=n_dev, n_test=n_test)
    base = frame[frame["configuration"] == baseline] if baseline else frame[frame["Δ"] == 0]
    test_base = base["test"].iloc[0] if len(base) else float("nan")
    dev_base = base["dev"].iloc[0] if len(base) else float("nan")
    return frame.assign(
        test_baseline=test_base, dev_baseline=dev_base, dev_delta=frame["dev"] - dev_base, dev_p=0.01
    )


# the matrices the tests judge, a scenario's rows together: (scenario, *a row of `matrix`)
SCENARIOS = [
    ("winner", "section/rrf", 0.90, 1200, 0.91, 0.80, 0.88, 0.31, 0.0004),
    ("winner", "fixed-1000", 0.60, 4300, 0.60, 0.70, 0.57, 0.0, 1.0),
    ("leader", "a", 0.80, 900, 0.85, 0.8, 0.70, 0.02, 0.6),
    ("leader", "b", 0.82, 900, 0.80, 0.8, 0.86, 0.18, 0.001),
    ("leader", "base", 0.70, 900, 0.70, 0.7, 0.68, 0.0, 1.0),
    ("tie", "fixed-200/bm25", 0.9, 1000, 0.90, 0.70, 0.9, 0.02, 0.62),
    ("tie", "section", 0.9, 1500, 0.90, 0.85, 0.9, 0.02, 0.62),
    ("tie", "fixed-1000", 0.88, 4300, 0.88, 0.90, 0.88, 0.0, 1.0),
    ("tie", "fixed-2000", 0.7, 6900, 0.70, 0.90, 0.7, -0.18, 0.01),
    ("ties", "a", 0.95, 900, 0.95, 0.9, 0.9, 0.2, 0.01),
    ("ties", "b", 0.95, 800, 0.95, 0.8, 0.9, 0.2, 0.02),
    ("ties", "base", 0.75, 900, 0.75, 0.7, 0.7, 0, 1),
    ("baseline", "base", 0.9, 900, 0.9, 0.9, 0.9, 0.0, 1.0),
    ("baseline", "other", 0.8, 500, 0.8, 0.9, 0.8, -0.1, 0.2),
]


def judged(scenario: str, baseline: str) -> dict:
    """The verdict on a scenario's matrix (196 development and 84 test questions) against `baseline`."""
    return verdict(matrix(*(row[1:] for row in SCENARIOS if row[0] == scenario), baseline=baseline), baseline)


def test_a_significant_winner_is_chosen_on_dev_and_confirmed_on_test():
    got = judged("winner", "fixed-1000")
    assert got["best"] == ["section/rrf"] and got["significant"] and got["chosen_on"] == "dev"
    assert (got["n_dev"], got["n_test"], got["dev_value"], got["test_value"]) == (196, 84, 0.91, 0.88)
    assert (got["test_delta"], got["test_p"]) == (0.31, 0.0004) == (got["delta"], got["p_value"])
    # one population: the test questions; the development figures under their own keys
    assert (got["best_value"], got["baseline_value"], got["compared_on"]) == (0.88, 0.57, "test")
    assert round(got["best_value"] - got["baseline_value"], 4) == got["delta"]
    assert (got["dev_value"], got["dev_baseline_value"], got["dev_delta"]) == (0.91, 0.6, 0.31)
    assert got["wording"] == (
        "`section/rrf` is chosen on 196 development questions (0.91); on 84 test questions it beats the "
        "baseline `fixed-1000` by +0.31 on evidence recall within 2,000 characters (0.88 against 0.57, "
        "p = 0.0004)."
    )


def test_the_leader_on_dev_is_chosen_even_when_another_is_better_on_test():
    got = judged("leader", "base")
    assert got["best"] == ["a"] and not got["significant"] and got["test_value"] == 0.7
    assert got["wording"].startswith(
        "No configuration beats the baseline `base` significantly on evidence recall within 2,000 "
        "characters: `a`, chosen on 196 development questions (0.85), differs from it by +0.02 on 84 "
        "test questions (0.70 against 0.68, p = 0.6)"
    )


def test_a_tie_at_the_top_without_significance_names_the_cheapest():
    got = judged("tie", "fixed-1000")
    assert got["best"] == ["section", "fixed-200/bm25"]  # tied on dev; MRR@10 on dev orders them
    assert not got["significant"] and got["test_delta"] == 0.02 and got["best"][0] == "section"
    assert got["wording"].startswith("No configuration beats the baseline `fixed-1000` significantly")
    assert "the cheapest at equal recall is `fixed-200/bm25` (1,000 characters at k=5)" in got["wording"]


def test_a_significant_leader_among_ties_is_named_with_them():
    got = judged("ties", "base")
    assert got["best"] == ["a", "b"] and got["significant"]
    assert got["wording"].startswith(
        "`a` and `b` tie on 196 development questions (0.95); `a`, the first by MRR@10, is chosen; on 84 "
        "test questions it beats"
    )


def test_the_baseline_leading_is_no_win():
    got = judged("baseline", "base")
    assert got["best"] == ["base"] and not got["significant"]
    assert "the cheapest at equal recall is `base`" in got["wording"]


def test_under_30_test_questions_the_confirmation_is_weak():
    rows = (("a", 0.9, 900, 0.9, 0.9, 0.85, 0.3, 0.001), ("base", 0.6, 900, 0.6, 0.6, 0.55, 0.0, 1.0))
    got = verdict(matrix(*rows, n_dev=60, n_test=25), "base", "hand-written")
    assert got["significant"] and got["wording"].endswith(
        "(0.85 against 0.55, p = 0.001); decided on the hand-written questions. The confirmation is weak: "
        "25 answerable test questions (fewer than 30)."
    )
    assert "weak" not in verdict(matrix(*rows, n_dev=60, n_test=30), "base")["wording"]


def test_too_few_test_questions_compare_on_dev_named_so_and_no_dev_question_chooses_nothing():
    nan = float("nan")
    rows = (("a", 0.9, 900, 0.9, 0.9, nan, nan, nan), ("base", 0.6, 900, 0.6, 0.6, nan, nan, nan))
    for n_test in (0, 5):
        got = verdict(matrix(*rows, n_test=n_test, baseline="base"), "base")
        assert got["best"] == ["a"] and not got["significant"] and got["compared_on"] == "dev"
        assert (got["best_value"], got["baseline_value"], got["delta"], got["p_value"]) == (
            0.9,
            0.6,
            0.3,
            0.01,
        )
        assert got["test_p"] is None and got["test_delta"] is None
        assert (
            f"{n_test} answerable test question(s) are too few to confirm anything (fewer than 6), so it "
            "is compared on the development questions that chose it, which flatter it: +0.30 against the "
            "baseline `base`"
        ) in got["wording"]
        assert "nan" not in got["wording"]
    got = verdict(matrix(*rows[:1], n_dev=0, n_test=12), "base")
    assert got["best"] == [] and got["wording"].startswith("No answerable development question to choose on")


def test_a_configuration_kept_as_chosen_is_the_verdict_s_choice():
    """RAG_CHOSEN_RUN (tune's best.env): the configuration tune chose on development questions."""
    got = verdict(
        matrix(*(row[1:] for row in SCENARIOS if row[0] == "leader"), baseline="base"), "base", kept="b"
    )
    assert got["best"] == ["b"] and got["significant"] and got["kept"] == "b"
    assert got["wording"].startswith("`b` is kept as chosen (RAG_CHOSEN_RUN: tune chose it on development")
    assert (got["best_value"], got["delta"]) == (0.86, 0.18)
