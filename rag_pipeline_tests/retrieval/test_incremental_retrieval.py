import numpy as np
import pandas as pd
import pytest

from rag_pipeline.lib.chunking import Strategy, chunk_note, contextual_text, fixed_spans, stable_id
from rag_pipeline.lib.embedding import HashingEmbedder
from rag_pipeline.lib.retrieval import (
    RANKERS,
    Analyzer,
    ChunkIndex,
    Queries,
    RetrievalSettings,
    TokenStore,
    bm25_terms,
    char_ngrams,
    lexical_miss_share,
    make_analyzer,
    retrieve,
    retrieve_incremental,
)
from rag_pipeline.lib.retrieval import incremental as incremental_retrieval
from rag_pipeline.lib.retrieval.bm25_terms import question_bm25
from rag_pipeline.lib.retrieval.lexical import BM25
from rag_pipeline.lib.sources import clean_note

EVERY = [f"{r}{ctx}{parent}" for r in RANKERS for ctx in ("", "+ctx") for parent in ("", "+parent")]
SETTINGS = RetrievalSettings(candidate_k=6, depth=6, rerank_k=3, context_k=2)  # short lists: merges matter
EMBEDDER = HashingEmbedder(dim=32)
SHARED = "共通の注意書き: 設定を変えたら再起動します。"  # the same sentence in many notes: tied scores


def note(i: int, words: str) -> str:
    return (
        f'---\ntitle: "Note {i}"\n---\n{words} の概要。\n\n### 設定 {i}\n{SHARED}\n{words} は cache-{i} を使う。\n'
        f"\n### 障害 {i}\n{words} の障害では SQLSTATE 40P0{i % 10} が返る。{SHARED}\n"
    )


WORDS = ["索引", "ログの遅延", "再試行", "キャッシュ", "分散合意", "複製", "圧縮", "暗号", "認証", "queue"]
QUESTIONS = ["索引の設定は?", "40P03 とは", "cache-4 を使うのは", "再起動はいつ", "교착 상태", "複製の障害"]


def strategy(size: int) -> Strategy:
    return Strategy(
        f"fixed-{size}", f"fixed:size={size}", lambda text, _, size=size: fixed_spans(text, _, size)
    )


def index_of(notes: dict[str, str], chunker: Strategy, shuffle: int | None = None, **extra) -> ChunkIndex:
    rows = []
    for name, markdown in notes.items():
        cleaned = clean_note(markdown, name)
        rows += chunk_note(
            chunker,
            note=name,
            source_version=stable_id(markdown),
            commit="c",
            cleaner_version="test",
            text=cleaned.text,
            sections=cleaned.sections,
        )
    chunks = pd.DataFrame(rows)
    if shuffle is not None:
        chunks = chunks.sample(frac=1, random_state=shuffle).reset_index(drop=True)
    ctx = [contextual_text(h, t) for h, t in zip(chunks["heading_path"], chunks["text"])]
    return ChunkIndex(
        chunks,
        EMBEDDER.embed(chunks["text"].tolist(), "passage"),
        extra.pop("analyzer", make_analyzer("char")),
        ctx_vectors=EMBEDDER.embed(ctx, "passage"),
        **extra,
    )


class Counting:
    def __init__(self):
        self.seen: list[str] = []

    def tokens(self, text: str) -> list[str]:
        self.seen.append(text)
        return char_ngrams(text)


def test_incremental_retrieval_equals_a_fresh_build_across_edits(tmp_path, monkeypatch):
    counting = Counting()
    analyzer = Analyzer("char", counting.tokens)
    scored: list[tuple[str, int, int]] = []  # (what, questions, chunks) of every dense scoring
    real_scores, real_top_k = incremental_retrieval.dense_scores, incremental_retrieval.top_k
    monkeypatch.setattr(
        incremental_retrieval,
        "dense_scores",
        lambda v, q: scored.append(("merge", len(q), len(v))) or real_scores(v, q),
    )
    monkeypatch.setattr(
        incremental_retrieval,
        "top_k",
        lambda v, q, k, t, m=None: scored.append(("all", len(q), len(v))) or real_top_k(v, q, k, t, m),
    )
    reads: list[int] = []  # texts whose counts are read from the token store
    real_counts = TokenStore.counts
    monkeypatch.setattr(TokenStore, "counts", lambda s, t, h: reads.append(len(t)) or real_counts(s, t, h))

    notes = {f"n{i:02d}": note(i, WORDS[i]) for i in range(8)}
    chunker = strategy(40)
    questions = list(QUESTIONS)
    tokenized: set[str] = set()

    def check(what: str) -> ChunkIndex:
        store = TokenStore(tmp_path / "tokens", analyzer)  # opened anew, as by a new run
        index = index_of(notes, chunker, analyzer=analyzer, token_store=store)
        ids = [f"q{i}" for i in range(len(questions))]
        vectors = EMBEDDER.embed(questions, "query")
        counting.seen.clear()
        scored.clear()
        reads.clear()
        got = retrieve_incremental(
            index,
            EVERY,
            Queries(ids, vectors, questions),
            SETTINGS,
            cache_dir=tmp_path / "cache",
            version="v1",
        )
        fresh = index_of(notes, chunker, shuffle=len(tokenized))  # row order must not matter
        expected = retrieve(fresh, EVERY, Queries(ids, vectors, questions), SETTINGS)
        pd.testing.assert_frame_equal(got, expected, check_exact=True, obj=what)
        assert lexical_miss_share(index, questions) == lexical_miss_share(fresh, questions) > 0
        assert set(got["retriever"]) == set(EVERY)
        # a text is tokenized once, ever: only texts no earlier run indexed reach the analyzer
        texts = set(index.chunks["text"]) | set(index.ctx_texts)
        chunk_calls = [t for t in counting.seen if t not in questions]
        assert sorted(chunk_calls) == sorted(texts - tokenized), what
        tokenized.update(chunk_calls)
        return index

    first = check("cold build")
    assert {w for w, _, _ in scored} == {"all"}
    notes["n03"] = notes["n03"].replace("の概要。", "の概要。追記しました。")
    index = check("one-note edit")
    new = len(set(index.chunks["chunk_id"]) - set(first.chunks["chunk_id"]))
    # only the edited note's chunks are scored against the questions whose lists kept every chunk
    assert [w for w, _, _ in scored].count("merge") == 2 and all(
        c == new for w, _, c in scored if w == "merge"
    )
    assert reads == [new, new]  # BM25 (plain, +ctx) reads the counts of the new texts only
    merged = sum(n for w, n, _ in scored if w == "merge")
    assert merged > 0 and merged + sum(n for w, n, _ in scored if w == "all") == 2 * len(questions)
    notes |= {"n08": note(8, WORDS[8]), "n09": note(4, WORDS[4])}  # n09 copies n04: exact ties
    check("notes added")
    del notes["n04"], notes["n01"]
    check("notes deleted")
    assert {w for w, _, _ in scored} == {"merge"}  # the lists kept enough survivors
    kept_notes = dict(notes)
    notes = {n: notes[n] for n in ["n00", "n05", "n09"]}
    check("most notes deleted")
    assert "all" in {w for w, _, _ in scored}  # lists that lost over half: searched again
    notes = kept_notes | {"n10": note(10, WORDS[0])}
    check("notes back")
    questions[1] = "40P05 のエラー"
    check("question changed")
    chunker = strategy(55)
    check("chunker change")
    index = check("no change")
    assert {w for w, _, _ in scored} <= {"merge"} and reads == []
    with pytest.raises(ValueError, match="only the columns of the terms it was built for"):
        index.bm25(False).search(["未知の語"], 3)  # it holds the questions' terms only: no silent zero


def test_ties_go_to_the_lower_chunk_id_whatever_the_row_order():
    index = index_of({"a": note(1, "索引"), "b": note(1, "索引")}, strategy(40))  # identical texts
    shuffled = index_of({"b": note(1, "索引"), "a": note(1, "索引")}, strategy(40))
    query = EMBEDDER.embed(["索引の設定"], "query")
    for retriever in ("dense", "bm25"):
        runs = [
            retrieve(i, [retriever], Queries(["q"], query, ["索引の設定"]), SETTINGS)[["chunk_id", "score"]]
            for i in (index, shuffled)
        ]
        pd.testing.assert_frame_equal(*runs)
        pairs = list(runs[0].itertuples(index=False))
        assert pairs == sorted(pairs, key=lambda p: (-p.score, p.chunk_id))


@pytest.mark.parametrize("change", ["embedding version", "cache lost"])
def test_other_inputs_or_a_lost_cache_mean_a_full_recompute(tmp_path, change):
    index = index_of({f"n{i}": note(i, WORDS[i]) for i in range(3)}, strategy(40))
    vectors = EMBEDDER.embed(QUESTIONS, "query")
    queries = Queries(list(map(str, range(len(QUESTIONS)))), vectors, QUESTIONS)
    args = (index, ["dense", "bm25+ctx"], queries, SETTINGS)
    retrieve_incremental(*args, cache_dir=tmp_path, version="v1")
    # lists kept for other vectors must not be merged with: fake a run with others' scores
    kept = incremental_retrieval.load_candidates(tmp_path / "dense.arrow", stamp := stamp_of("v1"))
    kept.lists = {q: (ids, scores + 1) for q, (ids, scores) in kept.lists.items()}
    incremental_retrieval.save_candidates(tmp_path / "dense.arrow", stamp, kept)
    if change == "cache lost":
        (tmp_path / "dense.arrow").unlink()
    got = retrieve_incremental(
        *args, cache_dir=tmp_path, version="v2" if change == "embedding version" else "v1"
    )
    pd.testing.assert_frame_equal(got, retrieve(*args))


def stamp_of(version: str) -> str:
    return incremental_retrieval.cache_stamp("dense", version, incremental_retrieval.KEEP * SETTINGS.depth)


def test_a_kept_list_is_trusted_only_down_to_its_last_survivor(tmp_path):
    """Lists keep 2 x depth chunks; after a loss, a new chunk merged below the last survivor may
    rank below chunks the list never held, and must not be kept as if it did not."""
    settings = RetrievalSettings(candidate_k=1, depth=1, rerank_k=1, context_k=1)  # lists of 2
    cosine = {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6, "e": 0.5, "f": 0.4, "n": 0.45}

    def run(ids: list[str]) -> None:
        chunks = pd.DataFrame(
            {
                "chunk_id": ids,
                "note": ids,
                "start": 0,
                "end": 1,
                "n_chars": 1,
                "heading_path": "h",
                "parent_id": ids,
                "parent_start": 0,
                "parent_end": 1,
                "text": ids,
            }
        )
        vectors = np.array([[cosine[i], np.sqrt(1 - cosine[i] ** 2)] for i in ids], np.float32)
        index = ChunkIndex(chunks, vectors, make_analyzer("char"))
        args = (index, ["dense"], Queries(["q"], np.array([[1, 0]], np.float32), ["q"]), settings)
        got = retrieve_incremental(*args, cache_dir=tmp_path, version="v1")
        pd.testing.assert_frame_equal(got, retrieve(*args))

    run(["a", "b", "c", "d", "e", "f"])  # kept: a, b
    run(["b", "c", "d", "e", "f", "n"])  # a gone, n new: c, d, e rank between b and n
    run(["c", "d", "e", "f", "n"])  # b gone: the answer is c, which the list never held


@pytest.mark.parametrize("store", [False, True])
def test_bm25_counted_in_batches_scores_as_counted_at_once(tmp_path, monkeypatch, store):
    """The term columns are counted a batch of texts at a time (memory follows the batch): the
    scores are those of one BM25 over every text."""
    notes = {f"n{i}": note(i, w) for i, w in enumerate(WORDS)}
    analyzer = make_analyzer("char")
    tokens = [analyzer.tokens(q) for q in QUESTIONS]
    extra = {"token_store": TokenStore(tmp_path / "tokens", analyzer)} if store else {}
    index = index_of(notes, strategy(40), analyzer=analyzer, **extra)
    assert len(index.chunks) > 3 * 5
    monkeypatch.setattr(bm25_terms, "BATCH", 5)
    batched = question_bm25(index, False, tokens, tmp_path / "terms.arrow").score_matrix(tokens)
    whole = BM25.from_tokens([analyzer.tokens(t) for t in index.texts(False)]).score_matrix(tokens)
    assert np.array_equal(batched, whole)


def test_kept_bm25_columns_follow_the_rows_when_the_same_texts_come_in_another_order(tmp_path):
    notes = {f"n{i}": note(i, w) for i, w in enumerate(WORDS)}
    analyzer = make_analyzer("char")
    tokens = [analyzer.tokens(q) for q in QUESTIONS]
    question_bm25(index_of(notes, strategy(40), analyzer=analyzer), False, tokens, tmp_path / "t.arrow")
    moved = index_of(notes, strategy(40), shuffle=3, analyzer=analyzer)  # the same texts, rows shuffled
    kept = question_bm25(moved, False, tokens, tmp_path / "t.arrow").score_matrix(tokens)
    whole = BM25.from_tokens([analyzer.tokens(t) for t in moved.texts(False)]).score_matrix(tokens)
    assert np.array_equal(kept, whole)
