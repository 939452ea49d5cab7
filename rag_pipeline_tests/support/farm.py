"""A generated repository of notes for the experiment-ledger tests: N_NOTES notes of one fact each,
questions whose words the fact shares, the settings of a run that evaluates fixed-200 dense on it, and
the experiments CLI run in this process."""

import json
from pathlib import Path

from rag_pipeline.cli.experiments import main
from rag_pipeline_tests.support.repos import make_notes_repo

COLORS = ["red", "blue", "green", "grey", "white"]
ANIMALS = ["goat", "horse", "duck", "sheep"]
PLACES = ["Aberdeen", "Bergen", "Cork", "Dundee", "Esbjerg"]
THINGS = ["lanterns", "buckets", "ropes", "ladders", "kettles"]
N_NOTES = 20


def fact(i: int) -> tuple[str, str]:
    """Note i's fact: (the evidence phrase, a question whose words it shares)."""
    color, animal = COLORS[i % 5], ANIMALS[i // 5]
    place, thing = PLACES[(i * 3) % 5], THINGS[(i * 2 + i // 5) % 5]
    return (
        f"the {color} {animal} of {place} keeps {i + 3} {thing} in the barn",
        f"How many {thing} does the {color} {animal} of {place} keep in the barn?",
    )


def note(i: int, evidence: str) -> str:
    filler = " ".join(
        f"Line {n} of note {i} is about weather, tides and the price of bread." for n in range(4)
    )
    return f'---\ntitle: "farm {i}"\n---\n{filler}\n\n## Facts\nIt is known that {evidence}.\n'


def question(i: int, **changes) -> dict:
    evidence, q = fact(i)
    return {"id": i + 1, "q": q, "slug": f"farm-{i}", "evidence": evidence, "category": "count"} | changes


def write_questions(path: Path, questions: list[dict]) -> str:
    path.write_text(json.dumps(questions), encoding="utf-8")
    return str(path)


def make_farm(tmp_path: Path):
    """(the repository, its settings, the ledger's folder)."""
    files = {f"content/notes/farm/farm-{i}/index.md": note(i, fact(i)[0]) for i in range(N_NOTES)}
    repo = make_notes_repo(tmp_path / "notes", files)
    env = {
        "RAG_NOTES_REPO": repo.working_tree_dir,
        "RAG_QUESTIONS": write_questions(tmp_path / "q.json", [question(i) for i in range(N_NOTES)]),
        "RAG_DATA_DIR": str(tmp_path / "out"),
        "RAG_EMBEDDER": "hashing",
        "RAG_STRATEGIES": "fixed-200",
        "RAG_RETRIEVERS": "dense",
    }
    return repo, env, tmp_path / "out" / "experiments"


def files_of(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }


def cli(monkeypatch, capsys, root: Path, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setenv("RAG_DATA_DIR", str(root.parent))
    capsys.readouterr()  # what came before: a run's log
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err
