"""The answer stage's plain-Python part: prompt, strict parsing, scoring, summary, oracle units, extractive."""

import math

import pandas as pd
import pytest

from rag_pipeline.lib.answers import (
    ABSTAIN,
    BASELINE_STRATEGY,
    NONE,
    ORACLE,
    ExtractiveLLM,
    Reply,
    Unit,
    answer_all,
    answer_runs,
    answer_summary,
    answered_runs,
    answers_md,
    context_units,
    make_prompt,
    oracle_units,
    parse_reply,
    run_units,
    score_answers,
    sentences,
)
from rag_pipeline.lib.embedding import HashingEmbedder
from rag_pipeline.lib.evaluation import holds
from rag_pipeline.lib.questions import Question, parse_questions, questions_frame, questions_from_frame
from rag_pipeline.lib.sources import clean_note, note_id, note_title
from rag_pipeline_tests.support.repos import NOTES, QUESTIONS

UNITS = (
    Unit("c1", "columnar-storage", 0, 40, "CSV は 1.2 GB でした。Parquet は 77 MB でした。"),
    Unit("c2", "tcp-handshake", 0, 30, "A TCP connection starts with SYN, SYN-ACK and ACK."),
)


@pytest.fixture(scope="module")
def cleaned() -> pd.DataFrame:
    rows = []
    for path, raw in NOTES.items():
        if path.endswith("_index.md"):
            continue
        note = clean_note(raw, note_title(raw, note_id(path)))
        rows.append(
            {"note": note_id(path), "text": note.text, "sections": [s.__dict__ for s in note.sections]}
        )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def gold(cleaned):
    frame = questions_frame(
        parse_questions(QUESTIONS, "questions.json"), dict(zip(cleaned.note, cleaned.text))
    )
    return questions_from_frame(frame)


@pytest.mark.parametrize(
    "reply, numbers, valid",
    [
        ("Parquet は 77 MB です [1]。", (1,), True),
        ("77 MB [1] and SYN first [2]. Again [1].", (1, 2), True),
        ("Both [2][1].", (2, 1), True),
        ("No citation at all.", (), True),
        ("77 MB [1] and something [3].", (1,), False),  # [3] was never passed
        ("77 MB [0].", (), False),
        ("77 MB [1, 2].", (), False),  # not the asked form
    ],
)
def test_citations_are_parsed_strictly(reply, numbers, valid):
    parsed = parse_reply(reply, n_units=2)
    assert (parsed.numbers, parsed.citation_valid, parsed.abstained) == (numbers, valid, False)


def test_abstention_is_the_exact_phrase_on_the_first_line():
    assert parse_reply(f"  \n{ABSTAIN}\n", 2).abstained
    assert parse_reply(f"{ABSTAIN}\nThe passages do not say.", 2).abstained
    assert not parse_reply(f"I would say {ABSTAIN}", 2).abstained
    assert not parse_reply("answer: none", 2).abstained


def test_score_answers(gold):
    items, spans = gold
    section = Unit("s", "columnar-storage", 0, 10_000, "")  # holds question 2's evidence
    other = Unit("t", "tcp-handshake", 0, 10_000, "")
    prompts = [
        make_prompt("2", "q", [section, other]),
        make_prompt("2", "q", [section, other]),
        make_prompt("5", "q", [other]),
    ]
    replies = [
        Reply("15.6 分の 1 [1]", "why", 10, 3, 0.5),
        Reply("15.6 [1][2][3]", latency_s=0.25),
        Reply(ABSTAIN, latency_s=0.1),
    ]
    with_pattern = [
        q if q.id != "2" else Question(q.id, q.q, q.category, q.evidence, r"15\.6") for q in items
    ]
    rows = score_answers(prompts, replies, with_pattern, spans, strategy="s", retriever="r", llm_version="v")
    assert rows["cited"].tolist() == [["s"], ["s", "t"], []]
    assert rows["citation_valid"].tolist() == [True, False, True]
    assert rows["citation_correct"].tolist()[:2] == [True, False] and pd.isna(rows["citation_correct"][2])
    assert rows["correct"].tolist()[:2] == [True, True] and pd.isna(rows["correct"][2])  # 5 has no pattern
    assert rows["abstained"].tolist() == [False, False, True]
    assert rows["prompt_tokens"].tolist()[0] == 10 and pd.isna(rows["prompt_tokens"][1])
    assert rows["n_cited_holding"].tolist() == [1, 1, 0]
    # a pattern is matched against the answer without its citations: [1] is no `1`
    one = [Question(q.id, q.q, q.category, q.evidence, "1") for q in items]
    rows = score_answers(
        prompts[:1], [Reply("SYN [1]")], one, spans, strategy="s", retriever="r", llm_version="v"
    )
    assert rows["correct"].tolist() == [False]


def test_summary_metrics_on_a_hand_made_frame():
    ev = ("note", None, "x")
    questions = [
        Question("1", "q", "number", (ev,), "a"),
        Question("2", "q", "number", (ev,), "b"),
        Question("3", "q", "paraphrase", (ev,)),
        Question("4", "q", "unanswerable", ()),
        Question("5", "q", "unanswerable", ()),
        Question("6", "q", "unauthorized", (ev,)),
    ]
    #            qid  abstained correct cited            holding latency
    runs = [
        ("1", False, True, ["a", "b"], 1, 1.0),
        ("2", True, False, [], 0, 2.0),
        ("3", False, None, ["c"], 1, 3.0),
        ("4", True, None, [], 0, 4.0),
        ("5", False, None, ["d"], 0, 5.0),
        ("6", True, None, [], 0, 6.0),
    ]
    columns = ["question_id", "abstained", "correct", "cited", "n_cited_holding", "latency_s"]
    frame = pd.DataFrame(runs, columns=columns).assign(strategy="s", retriever="r", llm_version="v")
    baseline = frame[frame["question_id"] != "6"].assign(retriever="none")
    summary = answer_summary(pd.concat([frame, baseline]), questions).set_index("retriever")
    row = summary.loc["r"]
    assert row["n_questions"] == 6
    assert row["accuracy"] == 0.5  # 1 of the 2 answerable questions with a pattern
    assert row["citation_precision"] == 0.5  # 2 holding of 4 cited
    assert row["citation_recall"] == pytest.approx(2 / 3)
    assert row["abstain_unanswerable"] == 0.5
    assert row["abstain_unauthorized"] == 1.0
    assert row["false_abstain"] == pytest.approx(1 / 3)
    assert row["latency_p50_s"] == 3.5 and row["latency_p95_s"] == pytest.approx(5.75)
    assert math.isnan(summary.loc["none", "abstain_unauthorized"])
    with pytest.raises(ValueError, match="question 9"):
        answer_summary(frame.assign(question_id="9"), questions)


def test_oracle_units_are_the_sections_holding_the_evidence(cleaned, gold):
    _, spans = gold
    units = oracle_units(spans["4"], cleaned)  # two evidences in one section: one unit
    assert len(units) == 1
    (unit,) = units
    text = cleaned.set_index("note").at["deadlock", "text"]
    assert unit.text == text[unit.start : unit.end] and unit.text.startswith("### 再試行の設計")
    assert unit.chunk_id == f"{ORACLE}:deadlock:{unit.start}-{unit.end}"
    assert all(holds(unit.note, unit.start, unit.end, span) for span in spans["4"])
    assert oracle_units(spans["5"], cleaned) == []  # unanswerable: no evidence, no unit
    with pytest.raises(ValueError, match="'gone'"):
        oracle_units([("gone", 0, 5)], cleaned)


def test_context_units_follow_the_budget_rule():
    texts = {"n": "a" * 100}
    ranked = pd.DataFrame(
        {
            "question_id": ["1"] * 3 + ["2"],
            "rank": [2, 1, 3, 1],
            "chunk_id": ["b", "a", "c", "z"],
            "note": ["n"] * 4,
            "start": [10, 0, 20, 0],
            "end": [30, 10, 100, 60],
            "n_chars": [20, 10, 80, 60],
        }
    )
    units = context_units(ranked, texts, context_k=5, context_chars=50)
    assert [u.chunk_id for u in units["1"]] == ["a", "b"]  # c would bring the total to 110
    assert units["2"] == []  # the first unit alone is over the budget
    assert [u.chunk_id for u in context_units(ranked, texts, 1, 1000)["1"]] == ["a"]


def test_sentences_split_on_japanese_and_english_ends_but_not_decimals():
    text = "### 比較\nCSV は 1.2 GB でした。Parquet は 15.6 分の 1!本当?\n|---|---|\nv1.2 is out. Next one"
    assert sentences(text) == [
        "CSV は 1.2 GB でした。",
        "Parquet は 15.6 分の 1!本当?",
        "v1.2 is out.",
        "Next one",
    ]


def test_extractive_backend_answers_with_the_best_sentence_and_cites_its_unit():
    llm = ExtractiveLLM(HashingEmbedder())
    prompt = make_prompt("1", "Parquet は何 MB でしたか?", UNITS)
    reply = llm.answer(prompt)
    parsed = parse_reply(reply.text, len(UNITS))
    assert reply.text == "Parquet は 77 MB でした。 [1]"
    assert parsed.numbers == (1,) and parsed.citation_valid and not parsed.abstained
    assert parse_reply(
        llm.answer(make_prompt("1", "How does TCP start a connection?", UNITS)).text, 2
    ).numbers == (2,)
    assert ExtractiveLLM(HashingEmbedder(), min_score=0.99).answer(prompt).text == ABSTAIN
    assert llm.answer(make_prompt("1", "Parquet?", [])).text == ABSTAIN  # the `none` baseline
    assert "hashing" in llm.llm_version and "min_score=0.47" in llm.llm_version


def test_extractive_answers_are_cached_like_any_other(tmp_path):
    llm = ExtractiveLLM(HashingEmbedder())
    asked = [make_prompt("1", "Parquet は何 MB でしたか?", UNITS), make_prompt("2", "SYN?", UNITS)]
    first, n = answer_all(llm, asked, tmp_path)
    again, m = answer_all(llm, asked, tmp_path)
    assert (n, m) == (2, 0) and again == first and first[0].latency_s > 0


def test_extractive_needs_a_min_score_for_an_embedder_it_was_not_measured_with():
    class Remote(HashingEmbedder):
        backend = "ollama"

    with pytest.raises(ValueError, match="no measured min_score for embedder backend 'ollama'"):
        ExtractiveLLM(Remote())
    assert ExtractiveLLM(Remote(), min_score=0.6).min_score == 0.6


def test_answered_runs_are_the_baseline_the_choice_and_the_served_run_or_the_setting():
    summary = pd.DataFrame({"strategy": ["a", "b"], "retriever": ["dense", "bm25"], "n_questions": [3, 3]})
    base, served = ("a", "dense"), ("b", "bm25")
    assert answered_runs("", summary, base, served, None) == [base, served]
    assert answered_runs("", summary, base, served, served) == [base, served]
    assert answered_runs(" b/bm25 ", summary, base, base, None) == [served, base]
    with pytest.raises(ValueError, match="RAG_ANSWER_RUNS: c/dense is not an evaluated run"):
        answered_runs("c/dense", summary, base, served, None)
    # no answerable question: no best run, only the baselines are answered
    assert answered_runs("b/bm25", summary.assign(n_questions=0), base, served, served) == []


def test_runs_are_answered_from_their_retrieval_lane_and_scored(cleaned, gold, tmp_path):
    items, spans = gold
    (first,) = oracle_units(spans["4"], cleaned)
    lane = pd.DataFrame(
        {
            "question_id": ["4", "4"],
            "retriever": ["dense", "bm25"],
            "rank": [1, 1],
            "chunk_id": ["d", "b"],
            "note": [first.note] * 2,
            "start": [first.start, 0],
            "end": [first.end, 10],
            "n_chars": [first.end - first.start, 10],
        }
    )
    notes = cleaned.assign(access=[[] for _ in range(len(cleaned))])
    units = run_units({"s": lane}, [("s", "bm25")], items, spans, notes, 5, 4000)
    assert set(units) == {(BASELINE_STRATEGY, NONE), (BASELINE_STRATEGY, ORACLE), ("s", "bm25")}
    assert [u.chunk_id for u in units[("s", "bm25")]["4"]] == ["b"]  # the run's retriever only
    assert all(units[("s", "bm25")][str(q.id)] == [] for q in items if str(q.id) != "4")

    done = answer_runs(ExtractiveLLM(HashingEmbedder()), units, items, spans, 2, tmp_path)
    assert len(done.frame) == 3 * 2 * len(items) and set(done.frame["repeat"]) == {0, 1}
    # a prompt already asked (a question with no passage: `none`, and `s` but for question 4) is not
    assert 0 < done.asked < len(done.frame)
    assert len(done.summary) == 3 and not done.reused
    again = answer_runs(ExtractiveLLM(HashingEmbedder()), units, items, spans, 2, tmp_path)
    assert again.asked == 0 and again.frame["answer"].tolist() == done.frame["answer"].tolist()
    shown = answers_md(done.frame)
    assert "s/bm25" in shown and "oracle" in shown and "s/none" not in shown
