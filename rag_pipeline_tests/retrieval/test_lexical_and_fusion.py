import math

import numpy as np
import pytest

from rag_pipeline.lib.evaluation import paired_randomization
from rag_pipeline.lib.retrieval import (
    BM25,
    TokenStore,
    char_ngrams,
    make_analyzer,
    normalized,
    rrf,
    score_fusion,
)

DOCS = [
    "デッドロックを検出すると PostgreSQL は SQLSTATE 40P01 を返します。",
    "列指向の形式では同じ列の値が隣り合うので圧縮がよく効きます。",
    "The TCP handshake exchanges SYN, SYN-ACK and ACK.",
]


def test_char_ngrams_split_japanese_and_keep_identifiers():
    tokens = char_ngrams("SQLSTATE 40P01 を返します")
    assert {"sqlstate", "40p01", "返し", "返しま"} <= set(tokens)
    # a whitespace tokenizer would see one token in a sentence without spaces
    assert len(["列指向の形式では圧縮が効く"]) == 1 and len(char_ngrams("列指向の形式では圧縮が効く")) > 20


@pytest.mark.parametrize("analyzer", ["char", "sudachi"])
def test_bm25_finds_japanese_paraphrase_words_and_error_codes(analyzer):
    a = make_analyzer(analyzer)
    index = BM25.from_tokens([a.tokens(d) for d in DOCS])
    assert index.search(a.tokens("40P01 というエラーコード"), 3)[0][0] == 0
    assert index.search(a.tokens("圧縮が効く理由"), 3)[0][0] == 1
    assert index.search(a.tokens("handshake"), 3)[0][0] == 2
    positions, scores = index.search(a.tokens("한국어"), 3)
    assert len(positions) == 0 and len(scores) == 0  # no shared token: no result, not a random one
    assert a.version and a.version != make_analyzer("char" if analyzer == "sudachi" else "sudachi").version


def hand_bm25(docs: list[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 as written in the textbook, one document and one distinct query term at a time."""
    avgdl = sum(map(len, docs)) / len(docs)
    scores = []
    for doc in docs:
        score = 0.0
        for term in set(query):
            df = sum(term in d for d in docs)
            if df:
                idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                tf = doc.count(term)
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


def test_sparse_bm25_equals_bm25_by_hand():
    docs = [["a", "b"], ["a", "a", "c"], ["c"], ["b", "a"], ["d", "d", "d", "e"]]
    queries = [["b"], ["a", "c", "a"], ["c", "zzz"], ["zzz"], ["e", "d", "a", "b"]]
    index = BM25.from_tokens(docs, k1=1.2, b=0.75)
    matrix = index.score_matrix(queries)
    assert matrix.shape == (5, 5) and matrix.dtype == np.float32
    for j, query in enumerate(queries):
        assert matrix[:, j] == pytest.approx(hand_bm25(docs, query), rel=1e-6)
    # only positive scores are results; docs 0 and 3 tie on "b" and are ordered by the tiebreak rank
    positions, scores = index.search(["b"], 5)
    assert positions.tolist() == [0, 3] and scores[0] == scores[1] > 0
    assert index.search(["b"], 5, tiebreak=np.array([4, 3, 2, 1, 0]))[0].tolist() == [3, 0]
    assert len(index.search(["zzz"], 5)[0]) == 0


def test_term_counts_from_the_token_store_equal_counting_in_memory(tmp_path):
    analyzer = make_analyzer("char")
    texts = [*DOCS, DOCS[0], "", "短い"]
    stored = TokenStore(tmp_path, analyzer).bm25(texts)
    direct = BM25.from_tokens([analyzer.tokens(t) for t in texts])
    assert (
        stored.counts != direct.counts
    ).nnz == 0 and stored.vocabulary.tolist() == direct.vocabulary.tolist()
    queries = [analyzer.tokens(q) for q in ("40P01 のエラー", "圧縮", "handshake")]
    assert np.array_equal(stored.score_matrix(queries), direct.score_matrix(queries))


def test_rrf_by_hand():
    fused = rrf([[("a", 9.0), ("b", 8.0)], [("b", 0.9), ("c", 0.8)]], k=60)
    assert [item for item, _ in fused] == ["b", "a", "c"]
    assert fused[0][1] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1][1] == pytest.approx(1 / 61) and fused[2][1] == pytest.approx(1 / 62)


def test_score_fusion_normalises_each_run():
    assert normalized(np.array([2.0, 4.0, 6.0]), "minmax").tolist() == [0.0, 0.5, 1.0]
    assert normalized(np.array([1.0, 3.0]), "zscore").tolist() == [-1.0, 1.0]
    fused = score_fusion([[("a", 10.0), ("b", 0.0)], [("b", 1.0), ("c", 0.0)]], [0.7, 0.3], "minmax")
    # a: 0.7*1 + 0.3*floor(0); b: 0.7*0 + 0.3*1; c: 0.7*floor(0) + 0
    assert [(i, round(s, 6)) for i, s in fused] == [("a", 0.7), ("b", 0.3), ("c", 0.0)]


def test_paired_randomization():
    a = np.array([1.0] * 30 + [0.0] * 10)
    assert paired_randomization(a, a) == 1.0
    worse = np.array([1.0] * 10 + [0.0] * 30)
    assert paired_randomization(a, worse) < 0.001
    one_flip = a.copy()
    one_flip[0] = 0.0
    assert paired_randomization(a, one_flip) > 0.5


def test_scores_of_the_last_queries_are_kept_read_only_and_new_queries_are_scored():
    bm25 = BM25.from_tokens([["a", "b"], ["b", "c"], ["c"]])
    first = bm25.score_matrix([["a"], ["c"]])
    assert bm25.score_matrix([["a"], ["c"]]) is first and not first.flags.writeable
    other = bm25.score_matrix([["b"]])
    np.testing.assert_array_equal(
        other, BM25.from_tokens([["a", "b"], ["b", "c"], ["c"]]).score_matrix([["b"]])
    )
    np.testing.assert_array_equal(bm25.score_matrix([["a"], ["c"]]), first)
