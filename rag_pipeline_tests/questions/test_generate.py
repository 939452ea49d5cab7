"""`gold generate`: offline drafts on the bundled corpus, verification, and generated questions
following the notes' edits through `gold status` and `refresh` like hand-written ones."""

import json
import re
import unicodedata
from pathlib import Path

import git
import pytest

from rag_pipeline.cli.gold import main
from rag_pipeline.lib.core import may_read
from rag_pipeline.lib.questions import (
    OFFLINE_CATEGORIES,
    Candidate,
    QuoteCheck,
    assess,
    draft,
    gold_counts,
    load_questions,
    notes_at,
    parse_questions,
    quoting_warnings,
    refresh,
    shared_run,
    verify,
    with_access,
)
from rag_pipeline.lib.questions.generate import OFFLINE
from rag_pipeline.lib.sources import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS, BUNDLED_QUESTIONS
from rag_pipeline_tests.support.gold import EXCLUDE, GLOB

WORDS = "content/notes/**/index.md"


@pytest.fixture(scope="module")
def bundled(tmp_path_factory) -> git.Repo:
    return build_repository(BUNDLED_CORPUS, tmp_path_factory.mktemp("bundled") / "notes")


def test_offline_generate_writes_100_verified_questions_on_the_bundled_corpus(
    bundled, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("RAG_QUESTIONS", str(BUNDLED_QUESTIONS))
    monkeypatch.setenv("RAG_NOTES_REPO", bundled.working_tree_dir)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    out = tmp_path / "generated.json"
    assert main(["generate", "--commit", "HEAD", "--out", str(out), "--unauthorized", "4"]) == 0
    printed = capsys.readouterr().out
    items = json.loads(out.read_text(encoding="utf-8"))
    head = bundled.head.commit.hexsha
    notes = {n.slug: n for n in notes_at(bundled.head.commit, WORDS, ["_index.md"])}
    kept = [q for q in items if q["category"] != "unauthorized"]
    leaks = [q for q in items if q["category"] == "unauthorized"]
    assert len(kept) == 100 and len(leaks) == 4
    assert {q["category"] for q in kept} == set(OFFLINE_CATEGORIES)
    for q in items:
        assert q["generated"] is True and q["generator"] == OFFLINE
        if q["slug"] is None:  # a leak test, or an unanswerable question
            continue
        assert q["commit"] == head and notes[q["slug"]].text.count(q["evidence"]) == 1, q
        assert q.get("groups", []) == list(notes[q["slug"]].access), q  # asked by a member of its groups
    # a leak test names no note, and holds 8 characters of no note its asker may not read (its text,
    # headings, title, slug) that the notes they may read do not hold too
    for q in leaks:
        assert (q["slug"], q["section"], q["evidence"]) == (None, None, None), q
        hidden = [n for n in notes.values() if not may_read(q["groups"], n.access)]
        seen = [
            plain(f"{n.text} {n.title} {n.slug}") for n in notes.values() if may_read(q["groups"], n.access)
        ]
        assert hidden and not any(shares(q["q"], f"{n.text} {n.title} {n.slug}", seen) for n in hidden), q
    for category in OFFLINE_CATEGORIES:
        assert re.search(rf"^  {category}: \d+$", printed, re.M)
    assert re.search(r"^  near-duplicate question: \d+$", printed, re.M)  # of the hand-written ones
    questions = parse_questions(items, str(out))
    assert {q.source for q in questions} == {"generated"}
    # the same file goes through `gold status` like a hand-written one: every label ok at its commit
    monkeypatch.setenv("RAG_QUESTIONS", str(out))
    assert main(["status", "--commit", "HEAD"]) == 0
    assert f"{len(items)} questions at {head[:12]}: {len(items)} ok" in capsys.readouterr().out


def plain(s: str) -> str:
    """Width and case folded, only letters and digits."""
    return "".join(c for c in unicodedata.normalize("NFKC", s).lower() if c.isalnum())


def shares(question: str, text: str, readable: list[str], n: int = 8) -> bool:
    """Does `question` share n characters with `text` that no `readable` text holds?"""
    q, body = plain(question), plain(text)
    runs = [q[i : i + n] for i in range(len(q) - n + 1)]
    return any(r in body and not any(r in seen for seen in readable) for r in runs)


def test_generate_refuses_to_write_over_the_questions_file(bundled, tmp_path, monkeypatch, capsys):
    questions = tmp_path / "questions.json"
    questions.write_text("[]", encoding="utf-8")  # an empty file is where a new user starts
    monkeypatch.setenv("RAG_QUESTIONS", str(questions))
    monkeypatch.setenv("RAG_NOTES_REPO", bundled.working_tree_dir)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    assert main(["generate", "--commit", "HEAD", "--out", str(questions)]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {questions} is the questions file (RAG_QUESTIONS); write the draft to another file\n"
    )
    assert main(["generate", "--commit", "HEAD", "--n", "10", "--merge"]) == 0
    written = json.loads((tmp_path / "questions.generated.json").read_text(encoding="utf-8"))
    assert len(written) == 10 and questions.read_text(encoding="utf-8") == "[]"
    assert main(["generate", "--commit", "HEAD", "--categories", "keyword-lookup,paraphrase"]) == 2
    assert "need a chat model: pass --llm" in capsys.readouterr().err


def test_generated_questions_follow_edits_through_status_and_refresh(history):
    repo, c1, _, c3 = history
    made = draft(notes_at(repo.commit(c1), GLOB, EXCLUDE), c1, n=40)
    assert made.items and all(q["commit"] == c1 for q in made.items)
    questions = parse_questions(made.items, "generated.json")
    statuses, drift = assess(repo, questions, c3, GLOB, EXCLUDE, "generated.json")
    counts = gold_counts(statuses)
    # tcp-handshake was deleted, deadlock edited: its questions moved or went stale; none is invalid
    assert counts["invalid"] == 0 and counts["carried"] > 0 and counts["stale"] > 0
    stale_notes = set(drift.loc[drift["evidence_status"] == "stale", "slug"])
    assert "tcp-handshake" in stale_notes
    refreshed, changes = refresh(made.items, drift, c3)
    carried = [q for q, s in zip(refreshed, statuses.values()) if s.status == "carried"]
    assert carried and all(q["commit"] == c3 and q["generated"] for q in carried)
    assert any("carried to" in line for line in changes)


def candidate(**fields) -> Candidate:
    base = {"category": "paraphrase", "q": "x", "slug": "n", "section": "s", "evidence": None}
    return Candidate(**(base | {"generator": "test"} | fields))


def test_verify_rejects_each_kind_of_bad_question():
    texts = {
        "n": "ロックを待ち続けて進めなくなる状態です。同じ文。同じ文。\nEach side must learn the sequence number.\n",
        "m": "TTL は 60 秒です。\n",
    }
    good_ja = candidate(
        q="処理が止まるのはどんなとき？", evidence="ロックを待ち続けて進めなくなる", paraphrase=True
    )
    good_en = candidate(
        q="What does every peer need to know?", evidence="must learn the sequence number", paraphrase=True
    )
    bad = [
        candidate(q="a", evidence="存在しない文"),
        candidate(q="b", evidence="同じ文"),
        candidate(q="c", slug="gone", evidence="文"),
        candidate(q="ロックを待つと？", evidence="ロックを待ち続けて進めなくなる", paraphrase=True),
        candidate(
            q="Why learn the sequence number?", evidence="must learn the sequence number", paraphrase=True
        ),
        candidate(q="TTL は？", slug=None, evidence=None, category="unanswerable", answer_pattern="60 ?秒"),
        candidate(q="e", slug=None, evidence=None, category="unanswerable", answer_pattern="(unclosed"),
        candidate(q="f", slug=None, evidence=None, category="unanswerable"),
        candidate(
            q="処理が止まるのはどんなとき?", evidence="ロックを待ち続けて進めなくなる", paraphrase=True
        ),
        candidate(q="g", evidence="ロックを待ち続けて進めなくなる", evidence2="同じ文", slug2="n"),
    ]
    got = verify([good_ja, good_en, *bad], texts, existing=["What does every peer need to know ?"])
    assert got.kept == [good_ja]
    assert dict(got.rejected) == {
        "evidence absent from its note": 1,
        "evidence found more than once": 2,
        "note not at the commit": 1,
        "paraphrase shares wording with its evidence": 2,
        "unanswerable but its answer pattern is found in a note": 1,
        "answer pattern is not a valid regex": 1,
        "unanswerable without an answer pattern": 1,
        "near-duplicate question": 2,  # of a hand-written one, and of the kept Japanese one
    }


def test_shared_run_counts_characters_in_japanese_and_words_in_english():
    assert shared_run("ロックを待つ", "ロックを待ち続け") == "ロックを"
    assert shared_run("ロック を待つ", "ロックを待ち続け", n_chars=5) == "ロックを待"  # spaces ignored
    assert shared_run("ロックで待つ", "ロックを待ち続け") is None
    assert shared_run("Which sequence number matters?", "learn the sequence number") is None
    assert (
        shared_run("Which sequence number matters?", "learn the sequence number", n_words=2)
        == "sequence number"
    )
    assert shared_run("Learn THE Sequence?", "must learn the sequence number") == "learn the sequence"


def test_a_seed_gives_the_same_draft(history):
    repo, c1, _, _ = history
    notes = notes_at(repo.commit(c1), GLOB, EXCLUDE)
    assert draft(notes, c1, n=10, seed=3).items == draft(notes, c1, n=10, seed=3).items


def test_the_cli_reads_the_indexed_commit_by_default(bundled, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_QUESTIONS", str(tmp_path / "missing.json"))  # no questions yet
    monkeypatch.setenv("RAG_NOTES_REPO", bundled.working_tree_dir)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    assert main(["generate"]) == 2
    assert "no index yet; run `make run` first or pass --commit" in capsys.readouterr().err
    assert not Path(tmp_path / "missing.generated.json").exists()


def test_generate_names_the_option_that_is_wrong(bundled, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("RAG_QUESTIONS", str(tmp_path / "q.json"))
    monkeypatch.setenv("RAG_NOTES_REPO", bundled.working_tree_dir)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    for argv, said in [
        (["--n", "-1"], "error: --n -1: give a number of questions, 0 or more\n"),
        (["--unauthorized", "-2"], "error: --unauthorized -2: give a number of questions, 0 or more\n"),
        (
            ["--commit", "nosuch"],
            f"error: --commit=nosuch: names no commit of {bundled.working_tree_dir}; "
            "set it to a branch, tag or commit there\n",
        ),
    ]:
        assert main(["generate", *argv]) == 2
        assert capsys.readouterr() == ("", said)
    assert not (tmp_path / "q.generated.json").exists()
    monkeypatch.setenv("RAG_QUESTIONS", str(BUNDLED_QUESTIONS))
    assert main(["status", "--commit", "nosuch"]) == 2
    assert capsys.readouterr().err.startswith("error: --commit=nosuch: names no commit of ")


def test_no_bundled_question_quotes_a_note_its_asker_may_not_read(bundled):
    notes = notes_at(bundled.head.commit, WORDS, ["_index.md"])
    questions = with_access(load_questions(BUNDLED_QUESTIONS), {n.slug: n.access for n in notes}, "q")
    assert sum(q.category == "unauthorized" for q in questions) == 5  # the leak tests are there
    check = QuoteCheck((n.slug, n.access, n.text, n.title) for n in notes)
    assert quoting_warnings(questions, check, "data/questions.json") == []
