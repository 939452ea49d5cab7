"""The release rules on per-question results, without Dagster."""

import pandas as pd

from rag_pipeline.lib.release import REJECTED, RELEASED, decide, found, label_key, question_results


def questions(n: int = 20, unauthorized: int = 0, dev: tuple[int, ...] = ()) -> pd.DataFrame:
    """`n` questions, the last `unauthorized` ones about a restricted note, those in `dev` in the
    development split and the others in the test split."""
    rows = []
    for i in range(1, n + 1):
        rows.append(
            {
                "question_id": str(i),
                "q": f"question {i}",
                "category": "unauthorized" if i > n - unauthorized else "paraphrase",
                "answerable": i <= n - unauthorized,
                "groups": ["sre"] if i > n - unauthorized else None,
                "evidence": [{"note": f"note-{i}", "text": f"evidence {i}"}],
                "critical": i == 1,
                "split": "dev" if i in dev else "test",
            }
        )
    return pd.DataFrame(rows)


def outcomes(ranks: dict[int, int | None]) -> pd.DataFrame:
    return pd.DataFrame(
        {"question_id": [str(q) for q in ranks], "first_evidence_rank": [r for r in ranks.values()]}
    )


def results(
    ranks: dict[int, int | None],
    abstained: dict[int, bool] | None = None,
    n: int = 20,
    unauthorized: int = 0,
    dev: tuple[int, ...] = (),
):
    answers = None
    if abstained is not None:
        answers = pd.DataFrame(
            {"question_id": [str(q) for q in abstained], "abstained": list(abstained.values())}
        )
    return question_results(questions(n, unauthorized, dev), outcomes(ranks), answers)


def test_found_means_an_evidence_within_k():
    got = results({1: 1, 2: 5, 3: 6, 4: None}).set_index("question_id").loc[["1", "2", "3", "4"]]
    assert found(got["first_evidence_rank"], 5).tolist() == [True, True, False, False]


def test_a_decision_under_another_k_compares_at_its_own_k():
    before = results({q: 5 for q in range(1, 21)})  # every evidence at rank 5: found at k=5, not at 4
    assert decide(before, [], before, 4, 0.05).decision == RELEASED
    worse = decide(results({q: 6 for q in range(1, 21)}), [], before, 5, 0.05)
    assert worse.decision == REJECTED and len(worse.newly_missed) == 20
    assert decide(results({q: 6 for q in range(1, 21)}), [], before, 4, 0.05).newly_missed == []


def test_a_first_release_applies_the_absolute_checks_only():
    bad = results({q: None for q in range(1, 21)})
    assert decide(bad, [], None, 5, 0.05).decision == RELEASED
    leaked = decide(bad, ["retrieval: 1 unit(s) leaked"], None, 5, 0.05)
    assert leaked.decision == REJECTED and leaked.reasons == ["retrieval: 1 unit(s) leaked"]


def test_a_recall_drop_beyond_the_allowed_share_is_rejected():
    before = results({q: 1 for q in range(1, 21)})
    small = results({**{q: 1 for q in range(1, 21)}, 20: None})  # 1.00 -> 0.95: a drop of 0.05
    assert decide(small, [], before, 5, 0.05).decision == RELEASED
    large = results({**{q: 1 for q in range(1, 21)}, 19: None, 20: None})
    decision = decide(large, [], before, 5, 0.05)
    assert decision.decision == REJECTED
    assert "dropped from 1.000 to 0.900" in decision.reasons[0]
    assert decision.newly_missed == ["19", "20"]


def test_the_recall_is_judged_on_the_test_questions_only():
    dev = tuple(range(11, 21))  # the development questions chose the configuration
    before = results({q: 1 for q in range(1, 21)}, dev=dev)
    worse_on_dev = results({**{q: 1 for q in range(1, 21)}, **{q: None for q in dev}}, dev=dev)
    decision = decide(worse_on_dev, [], before, 5, 0.05)
    assert decision.decision == RELEASED and decision.recall == 1.0
    assert decision.newly_missed == [str(q) for q in dev]  # listed, not judged
    worse_on_test = results({**{q: 1 for q in range(1, 21)}, 1: None, 2: None}, dev=dev)
    decision = decide(worse_on_test, [], before, 5, 0.05)
    assert decision.decision == REJECTED and decision.recall == 0.8
    assert "dropped from 1.000 to 0.800 on the 10 test questions both scored" in decision.reasons[0]


def test_only_questions_both_scored_the_same_way_are_compared():
    before = results({q: 1 for q in range(1, 21)})
    now = results({**{q: 1 for q in range(1, 21)}, 19: None, 20: None})
    relabelled = now.copy()
    relabelled.loc[relabelled["question_id"].isin(["19", "20"]), "label_key"] = "another label"
    decision = decide(relabelled, [], before, 5, 0.05)
    assert decision.decision == RELEASED and decision.compared == 18 and decision.newly_missed == []


def test_a_critical_question_newly_missed_is_rejected_whatever_the_recall():
    before = results({q: 1 for q in range(1, 21)})
    now = results({**{q: 1 for q in range(1, 21)}, 1: 7})
    decision = decide(now, [], before, 5, max_drop=1.0)
    assert decision.decision == REJECTED
    assert decision.reasons == ["critical question(s) 1 found by the last release, now missed"]


def test_less_abstention_on_unauthorized_questions_is_rejected():
    ranks = {q: 1 for q in range(1, 17)}
    before = results(ranks, {17: True, 18: True, 19: True, 20: True}, unauthorized=4)
    same = results(ranks, {17: True, 18: True, 19: True, 20: True}, unauthorized=4)
    assert decide(same, [], before, 5, 0.05).decision == RELEASED
    fewer = results(ranks, {17: True, 18: False, 19: True, 20: True}, unauthorized=4)
    decision = decide(fewer, [], before, 5, 0.05)
    assert decision.decision == REJECTED
    assert "abstain on 75% of the 4 unauthorized questions, the last release on 100%" in decision.reasons[0]


def test_the_label_key_follows_text_evidence_and_asker():
    evidence = [{"note": "a", "text": "x"}]
    key = label_key("q", evidence, None)
    assert key == label_key("q", [{"note": "a", "text": "x", "start": 3}], None)
    assert (
        len({key, label_key("q2", evidence, None), label_key("q", [{"note": "a", "text": "y"}], None)}) == 3
    )
    assert key != label_key("q", evidence, ["sre"])


def judged_results(faithful: dict[int, float], labels: dict[int, bool] | None = None, judge: str = "j"):
    """40 answerable questions all found, the answers' faithful scores and people's labels as given."""
    frame = pd.DataFrame(
        {
            "question_id": [str(q) for q in faithful],
            "judge_version": judge,
            "faithful": list(faithful.values()),
            "faithful_label": pd.array([(labels or {}).get(q) for q in faithful], dtype="boolean"),
        }
    )
    return question_results(questions(40), outcomes({q: 1 for q in range(1, 41)}), None, frame)


def test_a_significant_faithful_drop_beyond_the_allowed_share_is_rejected():
    before = judged_results({q: 1.0 for q in range(1, 41)})
    worse = decide(judged_results({q: 1.0 if q > 20 else 0.0 for q in range(1, 41)}), [], before, 5, 0.05)
    assert worse.decision == REJECTED
    assert worse.reasons[0].startswith("answers' faithful fell from 1.000 to 0.500 on the 40 test questions")


def test_a_faithful_drop_within_the_judges_noise_or_by_another_judge_is_not_rejected():
    before = judged_results({q: 1.0 for q in range(1, 41)})
    # 4 of 40 answers judged worse: 0.10 lower, but 4 sign flips cannot tell it from noise (p = 0.125)
    noisy = judged_results({q: 0.0 if q <= 4 else 1.0 for q in range(1, 41)})
    assert decide(noisy, [], before, 5, 0.05).decision == RELEASED
    other = judged_results({q: 0.0 for q in range(1, 41)}, judge="another judge")
    assert decide(other, [], before, 5, 0.05).decision == RELEASED
    everything = judged_results({q: 0.0 for q in range(1, 41)})
    assert decide(everything, [], before, 5, 0.05, max_faithful_drop=1.0).decision == RELEASED


def test_people_s_labels_correct_the_faithful_score_the_gate_compares():
    """The judge says yes to every answer both times; people say 10 of the new answers are not faithful."""
    before = judged_results({q: 1.0 for q in range(1, 41)})
    labelled = judged_results({q: 1.0 for q in range(1, 41)}, labels={q: False for q in range(1, 11)})
    decision = decide(labelled, [], before, 5, 0.05)
    assert decision.decision == REJECTED and "faithful fell from 1.000 to 0.000" in decision.reasons[0]


def test_without_test_questions_the_gate_decides_on_dev_and_says_so():
    """RAG_TEST_SHARE=0: every question is a development question. The recall is theirs, never NaN,
    and a drop there is named as theirs."""
    every = tuple(range(1, 21))
    before = results({q: 1 for q in every}, dev=every)
    first = decide(before, [], None, 5, 0.05)
    assert first.decision == RELEASED and (first.recall, first.recall_on) == (1.0, "dev")
    worse = decide(results({q: 1 if q > 4 else None for q in every}, dev=every), [], before, 5, 0.05)
    assert worse.decision == REJECTED and worse.recall_on == "dev"
    assert (
        "on the 20 development questions (too few test questions to decide) both scored" in worse.reasons[0]
    )
    # five test questions are too few to decide: the development ones decide
    assert decide(results({q: 1 for q in every}, dev=every[5:]), [], None, 5, 0.05).recall_on == "dev"
    assert decide(results({q: 1 for q in every}, dev=every[6:]), [], None, 5, 0.05).recall_on == "test"
