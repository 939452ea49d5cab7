import numpy as np
import pytest

from rag_pipeline.lib.fusion import normalized, rrf, score_fusion
from rag_pipeline.lib.lexical import BM25, char_ngrams, make_analyzer
from rag_pipeline.lib.metrics import paired_randomization

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


def test_bm25_scores_by_hand():
    index = BM25.from_tokens([["a", "b"], ["a", "a", "c"], ["c"]], k1=1.2, b=0.75)
    idf_b = np.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    avgdl = 2.0
    expected = idf_b * 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / avgdl))
    assert index.scores(["b"])[0] == pytest.approx(expected, rel=1e-6)


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
