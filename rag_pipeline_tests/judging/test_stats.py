"""The judge's figures: kappa by hand, Spearman against scipy's definition, and prediction-powered
inference simulated (library level): its interval covers the true mean where the judge's mean is biased."""

import numpy as np

from rag_pipeline.lib.judging import cohen_kappa, ppi_mean, ppi_outcomes, spearman


def test_cohen_kappa_by_hand():
    # observed 0.75; chance 0.5 x 0.25 + 0.5 x 0.75 = 0.5; kappa (0.75 - 0.5) / 0.5
    assert cohen_kappa(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0])) == 0.5
    assert cohen_kappa(np.array([1, 0]), np.array([0, 1])) == -1.0
    assert np.isnan(cohen_kappa(np.array([1, 1]), np.array([1, 1])))  # chance agreement is certain


def test_spearman_ranks_and_leaves_constant_sides_out():
    assert np.isclose(spearman(np.array([1, 2, 3, 4]), np.array([10, 30, 20, 40])), 0.8)
    assert np.isnan(spearman(np.array([1, 2, 3]), np.array([1, 1, 1])))


def test_ppi_is_the_judge_mean_plus_the_labelled_rectifier():
    scores = np.array([1.0, 1.0, 0.0, 1.0, np.nan])
    labels = np.array([0.0, 1.0, np.nan, np.nan, 1.0])  # the last has no valid score: left out
    estimate = ppi_mean(scores, labels)
    assert np.isclose(estimate.mean, 0.75 + (-1 + 0) / 2)
    valid = ~np.isnan(scores)
    assert np.isclose(ppi_outcomes(scores[valid], labels[valid]).mean(), estimate.mean)
    assert np.isnan(ppi_mean(scores, np.full(5, np.nan)).mean)  # no label, no PPI


def test_the_ppi_interval_covers_the_true_mean_where_the_judge_is_biased():
    """A judge that says yes to 95% of the good answers and 45% of the bad ones, three repeats each;
    100 labelled of 600 answers, 100 draws."""
    rng = np.random.default_rng(44)
    covered, biased = 0, 0
    for _ in range(100):
        truth = rng.random(600) < 0.6
        says_yes = np.where(truth[:, None], 0.95, 0.45)
        scores = (rng.random((600, 3)) < says_yes).mean(axis=1)
        labels = np.full(600, np.nan)
        labelled = rng.choice(600, 100, replace=False)
        labels[labelled] = truth[labelled]
        estimate = ppi_mean(scores, labels)
        covered += estimate.low <= truth.mean() <= estimate.high
        biased += scores.mean() - truth.mean() > 0.1
    assert covered >= 90 and biased == 100
