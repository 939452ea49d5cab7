"""Questions that quote a note their asker may not read: the check (8 characters of its text, headings,
title or slug, width, case, spaces and punctuation set aside; its slug whole), generated questions
rejected by it, leak tests worded from public terms only, and hand-written questions warned about
when loaded."""

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
from rag_pipeline.lib.questions.drafts import SHORT
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
CHECK = QuoteCheck((n.slug, n.access, n.text, n.title) for n in NOTES)


def quoted(question: str, groups=("payments",)):
    return CHECK.quotes([(question, groups)])[0]


def test_eight_characters_of_a_hidden_body_are_a_quote_whatever_their_spacing_width_or_case():
    assert quoted("金庫室の HSM にだけ置く鍵は？").note == "keys"  # 金庫室のhsmにだけ: 11 characters
    assert quoted("金庫室の ＨＳＭ に、だけ置く？").chars >= 8  # full width, spaces, punctuation
    assert quoted("Who rotates the ROOT-PASSWORD?").note == "keys"  # rootpassword
    assert quoted("金庫室の鍵は？") is None  # 金庫室の + 鍵: no run of 8 in the body


def test_a_hidden_notes_headings_title_and_slug_are_quoted_too():
    secret = "### SECRETHEAD-OOM merger plan\nThe platform team takes the cluster in March.\n"
    notes = [note("merger-plan", "Incident review board", ("sre",), secret), *NOTES[1:]]
    check = QuoteCheck((n.slug, n.access, n.text, n.title) for n in notes)

    def found(question: str):
        quote = check.quotes([(question, ("payments",))])[0]
        return quote and (quote.note, quote.chars)

    assert found("SECRETHEAD-OOM merger plan?") == ("merger-plan", 23)  # a heading
    assert found("What did the incident review board say?") == ("merger-plan", 19)  # the title
    assert found("merger-plan?") == ("merger-plan", 10)  # the slug
    assert found("What is the plan?") is None
    assert check.quotes([("SECRETHEAD-OOM merger plan?", ("sre",))]) == [None]  # its reader
    # a slug of 4 characters or more is a quote when held whole; `鍵の保管` (4) is no run of 8
    assert quoted("Where are the keys?").note == "keys"
    assert quoted("「鍵の保管」について") is None
    short = QuoteCheck([("sre", ("sre",), "x", "x"), ("ops", (), "y", "y")])
    assert short.quotes([("Who is sre?", ("payments",))]) == [None]  # a group's name, no slug


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


def leak_tests(notes) -> tuple[dict[str, list], dict]:
    """The leak tests of `notes`, by the note they are about, and the rejections."""
    check = QuoteCheck((n.slug, n.access, n.text, n.title) for n in notes)
    texts = {n.slug: n.text for n in notes}
    made, rejected = leak_candidates(notes, random.Random(0), lambda cs: verify(cs, texts, quoting=check))
    by_note: dict[str, list] = {}
    for c in made:
        by_note.setdefault(c.about, []).append(c)
    assert all(q is None for q in check.quotes([(c.q, c.groups) for c in made]))
    assert all((c.slug, c.section, c.evidence) == (None, None, None) for c in made)  # name no note
    return by_note, dict(rejected)


def test_leak_tests_are_worded_from_terms_public_notes_use():
    by_note, rejected = leak_tests(NOTES)
    # the terms keys shares with the public note (2-character kanji words count, `to` would not)
    assert [(c.q, c.groups) for c in by_note["keys"]] == [
        (wording(["every", "quarter", "二人"], True), ("payments",))
    ]
    assert "billing" not in by_note and not rejected  # it shares no term with a public note


def test_nothing_that_names_the_note_is_in_its_leak_tests():
    secret = (
        "The on-call engineer restarted the memory hungry workers after the OOM killer hit the cluster.\n"
        "## SECRETHEAD-OOM merger plan\nThe merger moves the cluster under the platform team; memory "
        "limits double for the workers.\n"
    )
    public = (
        "### Memory limits\nContainers are killed by the OOM killer when they exceed their memory limit. "
        "A merger of two clusters doubles the workers; the platform team owns the incident review.\n"
    )
    notes = [
        note("merger-plan", "Incident review", ("sre",), secret),
        note("limits", "Limits", (), public),
        note("payouts", "Payouts", ("payments",), "### Payouts\nPayouts are batched nightly.\n"),
    ]
    by_note, _ = leak_tests(notes)
    asked = [c.q for c in by_note["merger-plan"]]
    # `memory, workers, killer?` is dropped: its `ryworkers` is in `memory hungry workers`
    assert asked == ["limits, platform, team?"]  # 3 terms each, public ones, the most distinctive first
    # never the heading's SECRETHEAD, OOM, merger or plan, the title's incident or review, the slug
    words = {w for q in asked for w in q.rstrip("?").split(", ")}
    assert not {"SECRETHEAD", "OOM", "merger", "plan", "incident", "review"} & words


def test_a_draft_holds_only_leak_tests_that_quote_nothing():
    made = draft(NOTES, "c" * 40, n=5, n_unauthorized=3)
    leaks = [q for q in made.items if q["category"] == "unauthorized"]
    assert len(leaks) == 1 and all(quoted(q["q"], q["groups"]) is None for q in leaks)
    assert made.rejected[SHORT] == 2  # billing shares no term with a public note
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
