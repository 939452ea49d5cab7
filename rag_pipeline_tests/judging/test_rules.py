"""The offline judge's rules, on answers written by hand."""

from rag_pipeline.lib.judging import UNANSWERABLE
from rag_pipeline.lib.judging.rules import RULES, checkable, key_terms
from rag_pipeline_tests.judging.conftest import item

DEADLOCK = "PostgreSQL は `deadlock_timeout` の 1 秒が過ぎると循環を調べます。中止された側には SQLSTATE 40P01 が返ります。"
PARQUET = "同じ表を保存すると Parquet は 15.6 分の 1 の大きさでした。"


def verdict(criterion: str, answer: str, passages=(DEADLOCK, PARQUET), **changes) -> str:
    return RULES[criterion](item(answer, passages, **changes))[0]


def test_numbers_identifiers_and_quoted_phrases_are_what_is_checked():
    sentence = (
        "PostgreSQL は「待ちグラフ」を `deadlock_timeout` の 1.5 秒後に WAL と SYN-ACK で the Parquet 調べる"
    )
    assert checkable(sentence) == [
        "待ちグラフ",
        "deadlock_timeout",
        "PostgreSQL",
        "deadlock_timeout",
        "WAL",
        "SYN-ACK",
        "1.5",
    ]


def test_faithful_needs_every_checkable_token_in_some_passage():
    assert verdict("faithful", "SQLSTATE 40P01 が返ります [1]。") == "yes"
    assert verdict("faithful", "Parquet は 15.6 分の 1 になります [2]。") == "yes"
    assert verdict("faithful", "SQLSTATE 40P02 が返ります [1]。") == "no"  # an identifier not in any passage
    assert verdict("faithful", "Parquet は 15 分の 1 になります [2]。") == "no"  # 15 is not 15.6
    assert verdict("faithful", "ANSWER: NONE") == "yes"  # no claim
    assert verdict("faithful", "エラーになります。", passages=()) == "no"  # claims with nothing given


def test_cites_support_checks_the_passage_each_sentence_cites():
    assert verdict("cites_support", "SQLSTATE 40P01 が返ります。[1]") == "yes"
    assert verdict("cites_support", "SQLSTATE 40P01 が返ります [2]。") == "no"  # cited the Parquet passage
    assert verdict("cites_support", "SQLSTATE 40P01 が返ります。") == "no"  # cites nothing
    assert verdict("cites_support", "SQLSTATE 40P01 が返ります [1]。", citation_valid=False) == "no"
    assert verdict("cites_support", "ANSWER: NONE") == "yes"


def test_correct_needs_the_evidence_key_terms_and_an_abstention_where_due():
    assert key_terms("SQLSTATE 40P01 が返ります") == ["SQLSTATE", "40P01"]
    assert verdict("correct", "SQLSTATE 40P01 です [1]。") == "yes"
    assert verdict("correct", "エラーコード 40P01 です [1]。") == "no"  # SQLSTATE missing
    assert verdict("correct", "ANSWER: NONE") == "no"  # declined an answerable question
    assert verdict("correct", "ANSWER: NONE", kind=UNANSWERABLE, evidence=()) == "yes"
    assert verdict("correct", "40P01 [1]", kind="unauthorized", evidence=()) == "no"
    # full-width and case do not matter
    assert verdict("correct", "ｓｑｌｓｔａｔｅ ４０P01 です。") == "yes"
