import itertools
import random

import pandas as pd
import pytest

from rag_pipeline.lib.chunking import (
    STRATEGIES,
    chunk_note,
    contextual_text,
    coverage_problems,
    fixed_spans,
    recursive_spans,
    section_split_spans,
    with_text_hashes,
)
from rag_pipeline.lib.core import text_hash
from rag_pipeline.lib.sources import clean_note, sections_of

LONG = (
    "---\ntitle: T\n---\n前書きの文です。\n### A\n"
    + "これは一つ目の段落の文です。" * 80
    + "\n"
    + "二つ目の段落。" * 30
    + "\n#### 深い節\nさらに続きます。\n### B\nおわり。\nEnglish sentence one. English sentence two.\n"
)


def chunks_of(name: str, md: str = LONG, source_version: str = "blob1") -> tuple[str, list[dict]]:
    note = clean_note(md, "T")
    rows = chunk_note(
        STRATEGIES[name],
        note="n",
        source_version=source_version,
        commit="c1",
        cleaner_version="v",
        text=note.text,
        sections=note.sections,
    )
    return note.text, rows


@pytest.mark.parametrize("name", list(STRATEGIES))
def test_offsets_reproduce_the_text_and_cover_it(name):
    text, rows = chunks_of(name)
    assert rows
    assert all(text[r["start"] : r["end"]] == r["text"] and r["n_chars"] == len(r["text"]) for r in rows)
    assert coverage_problems(rows, {"n": text}, STRATEGIES[name].overlapping) == []
    assert len({r["chunk_id"] for r in rows}) == len(rows)


def test_fixed_sizes():
    text, rows = chunks_of("fixed-500")
    assert [r["end"] - r["start"] for r in rows[:-1]] == [500] * (len(rows) - 1)
    assert rows[-1]["end"] == len(text)


def test_section_chunks_follow_level_3_headings():
    text, rows = chunks_of("section")
    assert [r["heading_path"] for r in rows] == ["T", "T > A", "T > B"]
    assert "#### 深い節" in rows[1]["text"]  # deeper headings stay in their ### section
    assert len({r["parent_id"] for r in rows}) == 3
    assert all((r["parent_start"], r["parent_end"]) == (r["start"], r["end"]) for r in rows)
    # a chunk crossing headings stands for every ### section it overlaps
    whole = chunks_of("fixed-2000")[1][0]
    assert (whole["parent_start"], whole["parent_end"]) == (0, len(text))
    first = chunks_of("fixed-200")[1][0]
    assert (first["parent_start"], first["parent_end"]) == (rows[0]["start"], rows[1]["end"])


def test_section_split_limits_length_and_overlaps_slightly():
    text, rows = chunks_of("section-split")
    limit = 800
    assert max(r["n_chars"] for r in rows) <= limit
    a_pieces = [r for r in rows if r["heading_path"].startswith("T > A")]
    assert len(a_pieces) >= 2
    for first, second in itertools.pairwise(a_pieces):
        assert 0 < first["end"] - second["start"] <= 120  # overlap
        assert text[second["start"] - 1] in "。\n"  # starts on a sentence or paragraph boundary
    assert len({r["parent_id"] for r in a_pieces}) == 1


def test_section_split_hard_cuts_a_sentence_longer_than_the_limit():
    text = "x" * 2500 + "\n"
    spans = section_split_spans(text, sections_of(text, "T"), limit=800, overlap=100)
    assert all(e - s <= 800 for s, e in spans)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)


def test_chunk_ids_are_deterministic_and_change_with_version_and_source():
    _, a = chunks_of("fixed-200")
    _, b = chunks_of("fixed-200")
    assert [r["chunk_id"] for r in a] == [r["chunk_id"] for r in b]
    _, other = chunks_of("fixed-200", source_version="blob2")
    assert not {r["chunk_id"] for r in a} & {r["chunk_id"] for r in other}


def test_coverage_problems_reports_gaps_and_overlaps():
    text = "abcdefghij\n"
    rows = [
        {"chunk_id": "1", "note": "n", "start": 0, "end": 4, "text": "abcd"},
        {"chunk_id": "2", "note": "n", "start": 6, "end": 11, "text": "ghij\n"},
    ]
    assert coverage_problems(rows, {"n": text}, False) == ["note 'n': text [4, 6) is in no chunk"]
    rows[1] = {"chunk_id": "2", "note": "n", "start": 3, "end": 11, "text": "defghij\n"}
    assert coverage_problems(rows, {"n": text}, False) == ["note 'n': chunks overlap at offset 3"]
    assert coverage_problems(rows, {"n": text}, True) == []


ENGLISH = clean_note(
    "---\ntitle: E\n---\n# Intro\n"
    + " ".join(f"Sentence {i} says a little about topic {i % 7}." for i in range(40))
    + "\nA short paragraph!\n## Details\n"
    + " ".join(f"Why does step {i} matter? Because it feeds step {i + 1}." for i in range(25))
    + "\n## End\nDone.\n",
    "E",
)


def spans_hold(spans: list[tuple[int, int]], text: str, size: int, overlap: int) -> None:
    """Spans in order, each at most `size`, from the start to the end of the text, with no gap and at
    most `overlap` characters shared by neighbours."""
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(0 < e - s <= size for s, e in spans)
    for (s1, e1), (s2, e2) in itertools.pairwise(spans):
        assert s1 < s2 <= e1 < e2 and e1 - s2 <= overlap


@pytest.mark.parametrize(("size", "overlap"), [(7, 0), (7, 1), (7, 6), (10, 3), (5, 4), (1, 0), (11, 0)])
def test_fixed_overlap_steps_by_size_less_overlap_and_ends_at_the_text_end(size, overlap):
    text = "0123456789abcdefghijklmnopqrstuvwxyz\n"
    spans = fixed_spans(text, [], size, overlap)
    spans_hold(spans, text, size, overlap)
    assert all(e - s == size for s, e in spans[:-1])
    assert all(e1 - s2 == overlap for (_, e1), (s2, _) in itertools.pairwise(spans))
    if overlap == 0:
        assert spans == [(i, min(i + size, len(text))) for i in range(0, len(text), size)]


def test_fixed_last_chunk_is_not_a_repeat_and_bad_overlap_is_refused():
    assert fixed_spans("abcdefgh", [], 5, 2) == [(0, 5), (3, 8)]  # the text ends there: no (6, 8)
    assert fixed_spans("abcdefghi", [], 5, 2) == [(0, 5), (3, 8), (6, 9)]
    assert fixed_spans("", [], 5, 2) == []
    with pytest.raises(ValueError, match="overlap 5 must be >= 0 and smaller than size 5"):
        fixed_spans("abc", [], 5, 5)


def recursive_of(note, size: int, overlap: int) -> list[tuple[int, int]]:
    spans = recursive_spans(note.text, note.sections, size=size, overlap=overlap)
    spans_hold(spans, note.text, size, overlap)
    # a heading inside a chunk only where whole sections are packed: the chunk starts at a heading
    heads = {s.start for s in note.sections} | {len(note.text)}
    for s, e in spans:
        if any(s < h < e for h in heads):
            assert s in heads and e in heads, (s, e)
    return spans


@pytest.mark.parametrize(("size", "overlap"), [(300, 0), (300, 60), (120, 119), (40, 10), (15, 14)])
def test_recursive_on_japanese_breaks_at_headings_then_sentences(size, overlap):
    note = clean_note(LONG, "T")
    text = note.text
    spans = recursive_of(note, size, overlap)
    # every sentence here is 14 characters or fewer: only a size below heading + sentence hard-cuts
    assert all(text[e - 1] in "。\n " for _, e in spans) == (size >= 40)
    if size >= 40:  # chunks start at `### A` and at `#### 深い節` (`### B` is packed with the latter)
        assert {text.index("### A"), text.index("#### 深い節")} <= {s for s, _ in spans}
    if size >= 40 and (overlap >= 14 or overlap == 0):
        assert all(text[s - 1] in "。\n " for s, _ in spans[1:])  # whole sentences repeated
    else:  # no whole sentence fits in the overlap: its last characters are repeated
        assert any(text[s - 1] not in "。\n " for s, _ in spans[1:])
    if overlap:
        assert any(e1 > s2 for (_, e1), (s2, _) in itertools.pairwise(spans))


def test_recursive_packs_whole_lines_and_small_sections():
    note = clean_note(LONG, "T")
    spans = recursive_of(note, 300, 60)
    tail = note.text[spans[-1][0] : spans[-1][1]]
    assert tail.startswith("#### 深い節\n") and "### B\nおわり。" in tail  # two short sections in one chunk
    # the second paragraph (210 characters) is whole in one chunk: a line end beats a sentence end
    second = note.text.index("二つ目の段落")
    assert any(note.text[s:e].count("二つ目") == 30 and note.text[e - 1] == "\n" for s, e in spans)
    assert any(s < second and e == second + 1 + note.text[second:].index("\n") for s, e in spans)


@pytest.mark.parametrize(("size", "overlap"), [(200, 0), (200, 50), (90, 30), (60, 59)])
def test_recursive_on_english_breaks_after_sentence_ends(size, overlap):
    text = ENGLISH.text
    spans = recursive_of(ENGLISH, size, overlap)
    assert all(text[e - 1] == "\n" or text[e - 2 : e] in (". ", "? ", "! ") for _, e in spans)
    chunks = [text[s:e] for s, e in spans]
    assert any(c.startswith("## Details\nWhy does step 0") for c in chunks)
    assert chunks[-1] == "## End\nDone.\n"


def test_recursive_hard_cuts_text_without_breaks():
    text = "x" * 1000 + "\n"
    sections = sections_of(text, "T")
    assert recursive_spans(text, sections, 300, 50) == [(0, 300), (250, 550), (500, 800), (750, 1001)]
    assert recursive_spans(text, sections, 300, 0) == [(0, 300), (300, 600), (600, 900), (900, 1001)]
    assert recursive_spans("", [], 300, 0) == []


def test_recursive_overlap_never_crosses_a_heading():
    note = clean_note("# A\n" + "Alpha beta gamma. " * 5 + "\n# B\n" + "Delta. " * 5 + "\n", "T")
    spans = recursive_of(note, 70, 30)
    b = note.text.index("# B")
    assert b in {s for s, _ in spans} and all(not s < b < e for s, e in spans)


def test_recursive_holds_on_random_notes():
    rng = random.Random(16)
    words = ["データ", "の", "索引。", "です！", "word", "end.", "why?", "x" * 40, "「引用。」", " "]
    for _ in range(300):
        lines = [
            rng.choice(["# H", "## Sub", "#### Deep"])
            if rng.random() < 0.2
            else "".join(rng.choices(words, k=rng.randint(1, 12)))
            for _ in range(rng.randint(1, 12))
        ]
        note = clean_note("\n".join(lines) + "\n", "R")
        size = rng.randint(2, 120)
        overlap = rng.randint(0, size - 1)
        if note.text:
            spans = recursive_of(note, size, overlap)
            rows = [
                {"chunk_id": str(i), "note": "n", "start": s, "end": e, "text": note.text[s:e]}
                for i, (s, e) in enumerate(spans)
            ]
            assert coverage_problems(rows, {"n": note.text}, overlap > 0) == []


def test_chunks_carry_the_hashes_of_their_plain_and_contextual_texts():
    _, rows = chunks_of("section-split")
    frame = pd.DataFrame(rows)
    assert frame["text_hash"].tolist() == [text_hash(t) for t in frame["text"]]
    contextual = [contextual_text(h, t) for h, t in zip(frame["heading_path"], frame["text"])]
    assert frame["ctx_text_hash"].tolist() == [text_hash(t) for t in contextual]
    assert len(set(frame["ctx_text_hash"]) | set(frame["text_hash"])) == 2 * len(frame)
    # a file written before chunks carried them gets the very same values
    old = frame.drop(columns=["text_hash", "ctx_text_hash"])
    pd.testing.assert_frame_equal(with_text_hashes(old), frame)
