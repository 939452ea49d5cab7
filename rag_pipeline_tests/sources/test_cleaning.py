from rag_pipeline.lib.sources import clean_markdown, clean_note, split_front_matter

MD = """---
title: "Deadlock"
tags: [db]
---
前文です。[リンクの文字](https://example.com) と ![図](a.png) <span>タグ</span>

## 概要
本文

```mermaid
graph LR
# not a heading
```
{{< figure src="x.png" >}}
---
### DBMS はデッドロックをどう終わらせるか
| a | b |
|---|---|
| 1 | 2 |
#### 詳細
さらに
## 次
終わり
"""


def test_front_matter_title():
    assert split_front_matter(MD)[0]["title"] == "Deadlock"
    assert split_front_matter('+++\ntitle = "TOML"\n+++\nbody') == ({"title": "TOML"}, "body")
    assert split_front_matter("no front matter") == ({}, "no front matter")


def test_clean_removes_markup_keeps_text_and_tables():
    text = clean_markdown(MD)
    assert text.startswith("前文です。リンクの文字 と  タグ\n")
    for gone in (
        "title:",
        "mermaid",
        "not a heading",
        "figure",
        "<span>",
        "a.png",
        "https://",
        "\n\n",
        "\n---\n",
    ):
        assert gone not in text
    assert "| 1 | 2 |" in text
    assert "### DBMS はデッドロックをどう終わらせるか\n" in text


def test_sections_cover_the_text_with_heading_paths():
    note = clean_note(MD, "Deadlock")
    paths = [s.heading_path for s in note.sections]
    assert paths == [
        "Deadlock",
        "Deadlock > 概要",
        "Deadlock > 概要 > DBMS はデッドロックをどう終わらせるか",
        "Deadlock > 概要 > DBMS はデッドロックをどう終わらせるか > 詳細",
        "Deadlock > 次",
    ]
    assert [s.level for s in note.sections] == [0, 2, 3, 4, 2]
    assert note.sections[0].start == 0 and note.sections[-1].end == len(note.text)
    for a, b in zip(note.sections, note.sections[1:]):
        assert a.end == b.start
    assert note.text[note.sections[2].start :].startswith("### DBMS")


def test_note_starting_with_a_heading_has_no_empty_preamble():
    note = clean_note("### Only\nbody\n", "T")
    assert [(s.heading, s.start) for s in note.sections] == [("Only", 0)]
