from rag_pipeline.lib.questions import SENTENCE, WORD, cut_level, dice, most_similar_span


def test_dice_over_character_ngrams():
    assert dice("abc", "abc") == 1.0
    assert dice("abcd", "wxyz") == 0.0
    assert 0 < dice("SQLSTATE 40P01", "SQLSTATE 40001") < 1


def test_cut_levels():
    text = "One two. Three、四。"
    assert cut_level(text, 0) == SENTENCE and cut_level(text, 7) == SENTENCE  # before ". "
    assert cut_level(text, 9) == SENTENCE  # after ". "
    assert cut_level(text, 3) == WORD and cut_level(text, 14) == WORD  # a space, before 、
    assert cut_level(text, 1) == 0


def test_an_edited_tail_is_kept_and_the_cut_follows_the_old_evidence():
    old_text = "中止された側には SQLSTATE 40P01 が返ります。\n"
    new_text = "中止された側には SQLSTATE 40P01 が通知されます。\n"
    match = most_similar_span("SQLSTATE 40P01 が返ります", old_text, new_text)
    assert match.text == "SQLSTATE 40P01 が通知されます"  # not truncated before the edit
    english = most_similar_span(
        "learn that the other received its initial sequence number",
        "Each side must learn that the other received its initial sequence number.\n",
        "Each side must confirm that the other got its initial sequence number.\n",
    )
    assert english.text == "confirm that the other got its initial sequence number"


def test_only_a_span_found_once_is_proposed():
    old_text = "最大 3 回まで再試行します。"
    match = most_similar_span(
        "最大 3 回まで再試行します", old_text, "最大 3 回まで再試行します。最大 3 回まで再試行します。ほか。"
    )
    assert match is None  # the evidence is there twice; no other span of one sentence is like it
    assert most_similar_span("abc", "abc", "") is None
