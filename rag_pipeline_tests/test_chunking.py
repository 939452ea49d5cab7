import itertools

import pytest

from rag_pipeline.lib.chunking import STRATEGIES, chunk_note, coverage_problems, section_split_spans
from rag_pipeline.lib.cleaning import clean_note

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
    from rag_pipeline.lib.cleaning import sections_of

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
