"""Front matter Hugo accepts restricts a note end to end: a blank line before the fence, JSON front
matter, `params.access` (YAML and TOML), a section's `cascade`. One small real repository holds one `sre` note per form; one
`make run` builds, evaluates and releases it; then no chunk, served row, retrieval row, prompt or `ask`
output shows a restricted note's text to an asker outside `sre`, and the front matter is never text.

The chat server is the protocol stand-in of `fakes/llm.py` (no LLM can be installed here): it records
every prompt sent."""

import json

import dagster as dg
import pandas as pd
import pytest

from rag_pipeline.cli import ask
from rag_pipeline.lib.serving import open_live
from rag_pipeline_tests.fakes.llm import FakeLLM
from rag_pipeline_tests.support.repos import make_notes_repo
from rag_pipeline_tests.support.runs import hashing_env, make_run, project_definitions

# form -> (front matter, as written before the text); each note's sentences carry its marker
FORMS = {
    "blank line before ---": "\n\n---\ntitle: Blank\naccess: [sre]\n---\n",
    "JSON": '{"title": "Json", "access": ["sre"]}\n',
    "params.access": "---\ntitle: Params\nparams: {access: [sre]}\n---\n",
    "blank line before +++, [params]": "\n \n+++\ntitle = 'Toml'\n[params]\naccess = ['sre']\n+++\n",
    "a section's cascade": "---\ntitle: Cascaded\n---\n",  # its groups come from SECTION
}
SLUGS = dict(zip(FORMS, ("blank", "json", "params", "toml", "cascaded")))
PATHS = {form: f"content/notes/{slug}/index.md" for form, slug in SLUGS.items()}
PATHS["a section's cascade"] = "content/notes/section/cascaded/index.md"
SECTION = {
    "content/notes/section/_index.md": "---\ntitle: Section\ncascade:\n  params: {access: [sre]}\n---\n"
}
TOPICS = {
    "blank": "給与計算バッチの暗号鍵は金庫の三段目にある",
    "json": "障害時の緊急連絡網は夜間当番の私用電話に回る",
    "params": "本番データベースの管理者パスワードは月初に替わる",
    "toml": "監査ログの保管先バケットは別アカウントにある",
    "cascaded": "人事評価の原本は四階の書庫に保管する",
}


def marker(slug: str) -> str:
    return f"mk{slug}z"


def note_text(form: str) -> str:
    slug = SLUGS[form]
    return f"{FORMS[form]}{TOPICS[slug]} {marker(slug)}。\n\n### 詳細\n手順は {marker(slug)} に従う。\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The settings, the data directory and the chat server of one `make run` over the repository."""
    root = tmp_path_factory.mktemp("front-matter")
    files = {PATHS[form]: note_text(form) for form in FORMS} | SECTION
    files["content/notes/public/index.md"] = (
        "---\ntitle: Public\n---\n公開の手順書はウィキの一覧から辿れる。\n"
    )
    files["content/notes/pay/index.md"] = (
        "---\ntitle: Pay\naccess: payments\n---\n返金は三営業日で処理する。\n"
    )
    make_notes_repo(root / "notes", files)
    questions = [
        {"id": 1, "q": "公開の手順書はどこから辿れる?", "slug": "public", "evidence": "ウィキの一覧"}
    ]
    # per restricted note, an outsider (payments) asks its very words, without the marker
    questions += [
        {
            "id": i,
            "q": f"[Q{i}] {TOPICS[slug]}?",
            "slug": slug,
            "evidence": TOPICS[slug],
            "groups": ["payments"],
        }
        for i, slug in enumerate(TOPICS, 2)
    ]
    (root / "questions.json").write_text(json.dumps(questions, ensure_ascii=False), encoding="utf-8")
    with FakeLLM() as llm:
        more = {"RAG_DATA_DIR": str(root / "data"), "RAG_LLM": "ollama", "RAG_LLM_URL": llm.url}
        env = hashing_env(root / "notes", root / "questions.json", "section,fixed-200", "dense,bm25", **more)
        _, result = make_run(project_definitions(env), dg.DagsterInstance.ephemeral())
        assert result.success
        yield env, root / "data", llm


def prompts(llm: FakeLLM, since: int = 0) -> list[str]:
    return [r["messages"][-1]["content"] for r in llm.requests[since:]]


@pytest.mark.parametrize("form", FORMS)
def test_the_note_is_restricted_in_every_output(world, form):
    _, data, llm = world
    slug, mark = SLUGS[form], marker(SLUGS[form])
    notes = pd.read_parquet(data / "notes" / "source_notes.parquet")
    assert list(notes.set_index("note").loc[slug, "access"]) == ["sre"]
    for strategy in ("section", "fixed-200"):
        chunks = pd.read_parquet(data / "chunks" / f"{strategy}.parquet")
        mine = chunks[chunks["note"] == slug]
        assert len(mine) and all(list(a) == ["sre"] for a in mine["access"])
        assert not mine["text"].str.contains("access|title", regex=True).any()  # front matter is no text
        assert all(list(a) == ["sre"] for a in chunks.loc[chunks["text"].str.contains(mark), "access"])
        served = open_live(data, strategy).table.read(["text", "access"]).to_pandas()
        assert all(list(a) == ["sre"] for a in served.loc[served["text"].str.contains(mark), "access"])
        ranked = pd.read_parquet(data / "retrieval" / f"{strategy}.parquet")
        outsiders = ranked[ranked["question_id"] != "1"]
        assert len(outsiders) and slug not in set(outsiders["note"])
    asked = [p for p in prompts(llm) if "[Q" in p]  # the outsiders' prompts
    assert len(asked) and not [p for p in asked if mark in p]


@pytest.mark.parametrize("form", FORMS)
def test_ask_shows_the_note_only_to_its_group(world, form, monkeypatch, capsys):
    env, _, llm = world
    mark = marker(SLUGS[form])
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    shown = {}
    for groups in ("", "payments", "sre"):
        sent = len(llm.requests)
        assert ask.main([TOPICS[SLUGS[form]], "--groups", groups, "--k", "10"]) == 0
        shown[groups] = capsys.readouterr().out + "\n".join(prompts(llm, sent))
    assert mark not in shown[""] and mark not in shown["payments"]
    assert mark in shown["sre"]  # the check can see the note where it belongs
    # `ask` builds the answers' prompt: the passages fenced, the question after the last fence
    last = prompts(llm)[-1]
    assert "\n<passage-" in last and last.endswith(f">\n\nQuestion: {TOPICS[SLUGS[form]]}\nAnswer:")


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ("SRE", "the group 'SRE'; did you mean 'sre'?"),
        ("ｓｒｅ", "the group 'ｓｒｅ'; did you mean 'sre'?"),
        ("ser", "the group 'ser'; did you mean 'sre'?"),
        ("payments,auditors", "the group 'auditors'"),
    ],
)
def test_ask_refuses_a_group_no_note_and_no_question_names(world, groups, message, monkeypatch, capsys):
    env, _, _ = world
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert ask.main([TOPICS["blank"], "--groups", groups]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"error: --groups: no note and no question names {message} (known groups: payments, sre)\n"
