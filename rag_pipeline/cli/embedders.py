"""`python -m rag_pipeline.experiments run-embedders` (`make compare`): the current settings built
and evaluated under each embedder in turn (vectors are kept per embedding_version, so an embedder's
second turn embeds only new texts), then one table: configuration by embedder."""

import os
import subprocess
import sys
from collections.abc import Sequence

import pandas as pd

from rag_pipeline.cli.release import decision_lines
from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.embedding import parse_embedder_spec
from rag_pipeline.lib.evaluation import compare, to_markdown
from rag_pipeline.lib.evaluation.experiments import NOT_RECORDED, read_current, read_index
from rag_pipeline.lib.evaluation.verdict import MEASURE
from rag_pipeline.lib.evaluation.versus import experiment_sides, holm_corrected
from rag_pipeline.lib.release import REJECTED, RELEASE_DIR, read_history

REJECTED_EXIT = 3  # `rag_pipeline.run`: everything ran, and the release gate held the new index back


def embedder_env(spec: str, env: dict[str, str]) -> dict[str, str]:
    """The environment of a run under `spec`; without `@url`, RAG_EMBED_URL (or the backend's default)."""
    backend, model, url = parse_embedder_spec(spec)
    return env | {
        "RAG_EMBEDDER": backend,
        "RAG_EMBED_MODEL": model,
        "RAG_EMBED_URL": url or env.get("RAG_EMBED_URL", ""),
    }


def embedders_table(root: AnyPath, runs: list[tuple[str, str]]) -> str:
    """Configuration by embedder: each one's headline value, and for all but the first the paired
    difference from the first on the questions both scored, with its p-value Holm-corrected across
    the whole table."""
    index = read_index(root)
    sides = [experiment_sides(root, experiment, index) for _, experiment in runs]
    shared = [c for c in sides[0] if all(c in other for other in sides[1:])]
    cells = {(c, n): compare(sides[0][c], sides[n][c]) for c in shared for n in range(1, len(runs))}
    holm_corrected(list(cells.values()))
    table = pd.DataFrame({"configuration": shared})
    for n, (spec, experiment) in enumerate(runs):
        table[f"{spec} ({experiment})"] = [
            f"{sides[n][c].value:.3f}"
            + (f" ({cells[c, n].delta:+.3f}, p = {cells[c, n].p_value:.2g})" if n else "")
            for c in shared
        ]
    return (
        f"{MEASURE}, configuration by embedder; in brackets the paired difference from {runs[0][0]} on "
        f"the questions both scored and its randomisation p-value, Holm-corrected for the {len(cells)} "
        f"comparisons\n\n{to_markdown(table)}"
    )


def run_shown(spec: str) -> tuple[int, list[str]]:
    """`python -m rag_pipeline.run` under `spec`, its output passed through as it comes; its exit
    status and the lines that say why it failed (a failed step, an error, an unrecorded experiment)."""
    print(f"== {spec}: python -m rag_pipeline.run", flush=True)
    why = []
    with subprocess.Popen(
        [sys.executable, "-m", "rag_pipeline.run"],
        env=embedder_env(spec, dict(os.environ)),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        bufsize=1,
    ) as child:
        for line in child.stdout:
            print(line, end="", flush=True)
            if line.lstrip().startswith(("FAILED", "error:")) or NOT_RECORDED in line:
                why.append(" ".join(line.split()))
    return child.returncode, why


def gate_decision(data: AnyPath, decided: int) -> list[str] | None:
    """The release gate's rejection, when it is the newest decision and newer than the `decided`
    first ones: what exit 3 means; None otherwise (the release step failed some other way)."""
    history = read_history(data / RELEASE_DIR)
    if len(history) <= decided or history.iloc[-1]["decision"] != REJECTED:
        return None
    return decision_lines(history)


def run_embedders(root: AnyPath, specs: Sequence[str]) -> tuple[int, str]:
    """Build and evaluate under each embedder in turn; (exit status, the table or what failed). A run
    the release gate rejected counts (its reports and experiment are fresh), and the gate's decision
    is printed; any other failure stops the comparison, saying why."""
    runs = []
    for spec in specs:
        decided = len(read_history(root.parent / RELEASE_DIR))
        status, why = run_shown(spec)
        rejected = gate_decision(root.parent, decided) if status == REJECTED_EXIT else None
        if rejected is not None:
            print("\n".join([f"== {spec}: the release gate held the new index back", *rejected]))
        cause = "; ".join(why) or "its output is above"
        if status != 0 and rejected is None:
            return 1, f"error: the run under {spec} failed (exit {status}): {cause}"
        if any(NOT_RECORDED in line for line in why):  # the table would compare another experiment
            return 1, f"error: the run under {spec} recorded no experiment: {cause}"
        runs.append((spec, read_current(root)["id"]))
    return 0, embedders_table(root, runs)
