"""A generated repository of notes, one fact each, and questions whose words they share; the
experiments CLI run in this process."""

import json
from pathlib import Path

from rag_pipeline.cli.experiments import main

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


def cli(monkeypatch, capsys, root: Path, *argv: str) -> tuple[int, str, str]:
    monkeypatch.setenv("RAG_DATA_DIR", str(root.parent))
    capsys.readouterr()  # what came before: a run's log
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err
