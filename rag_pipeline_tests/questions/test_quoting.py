"""Questions that quote a note their asker may not read: the check (8 characters, width, case, spaces
and punctuation set aside), generated questions rejected by it, leak tests worded from headings,
titles or public topics, and hand-written questions warned about when loaded."""

import random

from rag_pipeline.lib.questions import (
    Candidate,
    Note,
    QuoteCheck,
    draft,
    parse_questions,
    quoting_warnings,
    verify,
)
from rag_pipeline.lib.questions.leaks import leak_candidates, wording
from rag_pipeline.lib.sources import clean_note

SECRET = """### 鍵の保管
本番の署名鍵は金庫室の HSM にだけ置き、取り出せるのは当番の二人だけです。
The root password is rotated by the on-call engineer every quarter.
"""
PUBLIC = """### 運用の基本
当番の二人は毎朝ダッシュボードを確認します。
Every quarter the team reviews the runbook.
"""


def note(slug: str, title: str, access: tuple[str, ...], markdown: str) -> Note:
    cleaned = clean_note(markdown, title)
    return Note(slug, title, access, cleaned.text, tuple(cleaned.sections))


NOTES = [
    note("keys", "鍵の管理", ("sre",), SECRET),
    note("basics", "運用", (), PUBLIC),
    note("billing", "請求", ("payments",), "### 請求書\n請求書は月末に締めて翌月五日に送ります。\n"),
]
CHECK = QuoteCheck((n.slug, n.access, n.text) for n in NOTES)


def quoted(question: str, groups=("payments",)):
    return CHECK.quotes([(question, groups)])[0]


def test_eight_characters_of_a_hidden_body_are_a_quote_whatever_their_spacing_width_or_case():
    assert quoted("金庫室の HSM にだけ置く鍵は？").note == "keys"  # 金庫室のhsmにだけ: 11 characters
    assert quoted("金庫室の ＨＳＭ に、だけ置く？").chars >= 8  # full width, spaces, punctuation
    assert quoted("Who rotates the ROOT-PASSWORD?").note == "keys"  # rootpassword
    assert quoted("金庫室の鍵は？") is None  # 金庫室の + 鍵: no run of 8 in the body
    assert quoted("「鍵の保管」について") is None  # a heading is no body text


def test_a_reader_of_the_note_or_of_a_public_copy_of_the_text_quotes_nothing():
    assert quoted("金庫室の HSM にだけ置く鍵は？", groups=("sre",)) is None
    assert quoted("金庫室の HSM にだけ置く鍵は？", groups=None) is None  # may read every note
    # 当番の二人 and "every quarter" are in a public note too: nothing the asker could not read
    assert quoted("当番の二人は何を?", groups=("payments",)) is None
    assert quoted("What happens every quarter?") is None
    assert quoted("請求書は月末に締めて", groups=("sre",)).note == "billing"


def test_generated_questions_that_quote_a_hidden_note_are_rejected():
    texts = {n.slug: n.text for n in NOTES}
    base = {"category": "paraphrase", "slug": "billing", "section": "請求書", "generator": "llm-v1 test"}
    evidence = "翌月五日に送ります"
    clean = Candidate(q="請求の送付日はいつ？", evidence=evidence, groups=("payments",), **base)
    leaky = Candidate(q="HSM にだけ置き、請求の送付日は？", evidence=evidence, groups=("payments",), **base)
    got = verify([clean, leaky], texts, quoting=CHECK)
    assert got.kept == [clean] and dict(got.rejected) == {"quotes a note its asker may not read": 1}


def test_leak_tests_are_worded_from_clean_headings_or_titles_else_a_public_topic():
    texts = {n.slug: n.text for n in NOTES}
    made, rejected = leak_candidates(NOTES, random.Random(0), lambda cs: verify(cs, texts, quoting=CHECK))
    by_note = {}
    for c in made:
        by_note.setdefault(c.about, []).append(c)
    keys = {c.q for c in by_note["keys"]}
    assert keys == {wording("鍵の保管", True), wording("鍵の管理", True)}
    headed = next(c for c in by_note["keys"] if c.slug)
    assert (headed.section, headed.evidence, headed.groups) == ("鍵の保管", "鍵の保管", ("payments",))
    # billing's heading 請求書 is in its body too, so it names no evidence: its title is asked about
    assert [c.q for c in by_note["billing"]] == [wording("請求", True)]
    assert dict(rejected) == {"evidence found more than once": 1}
    assert all(q is None for q in CHECK.quotes([(c.q, c.groups) for c in made]))


def test_a_note_whose_headings_and_title_carry_its_body_is_asked_about_a_public_topic():
    body = "### 金庫室の HSM にだけ置く鍵\n本番の署名鍵は金庫室の HSM にだけ置きます。キーのローテーションは当番の二人が行います。\n"
    notes = [note("keys", "金庫室の HSM にだけ置く鍵", ("sre",), body), *NOTES[1:]]
    check = QuoteCheck((n.slug, n.access, n.text) for n in notes)
    texts = {n.slug: n.text for n in notes}
    made, rejected = leak_candidates(notes, random.Random(0), lambda cs: verify(cs, texts, quoting=check))
    (topic,) = [c for c in made if c.about == "keys"]
    assert topic.slug is None and topic.evidence is None and "当番" in topic.q
    assert rejected["quotes a note its asker may not read"] == 2  # the heading and the title


def test_a_draft_holds_only_leak_tests_that_quote_nothing():
    made = draft(NOTES, "c" * 40, n=5, n_unauthorized=3)
    leaks = [q for q in made.items if q["category"] == "unauthorized"]
    assert len(leaks) == 3 and all(quoted(q["q"], q["groups"]) is None for q in leaks)
    assert {q["groups"][0] for q in leaks} <= {"payments", "sre"}
    questions = parse_questions(made.items, "draft.json")
    assert {q.category for q in questions if q.id in {x["id"] for x in leaks}} == {"unauthorized"}


def test_hand_written_questions_that_quote_a_hidden_note_are_named():
    items = [
        {"id": 1, "q": "金庫室の HSM にだけ置くものは？", "slug": None, "groups": ["payments"]},
        {"id": 2, "q": "金庫室の HSM にだけ置くものは？", "slug": None, "groups": ["sre"]},
        {"id": 3, "q": "当番の二人は毎朝何を見る？", "slug": None, "groups": ["payments"]},
    ]
    lines = quoting_warnings(parse_questions(items, "q.json"), CHECK, "q.json")
    assert lines == [
        "q.json: question 1 shares 11 characters with note 'keys', which its asker (groups payments) "
        "may not read; word it from what its asker may read"
    ]
