"""Outputs changed by hand behind the pipeline's back, as a user or a crash may leave them: each must
be found by `make run` and built again (the differential test's World does one now and then)."""

import shutil
from pathlib import Path

from rag_pipeline_tests.support.served import open_table


def delete_output(world, data: Path) -> str:
    strategy = world.rng.choice(world.env["RAG_STRATEGIES"].split(","))
    table = strategy.replace("-", "_")
    target = world.rng.choice(
        [
            data / "lancedb" / f"{table}.lance",
            data / "reports" / "evaluation_summary.parquet",
            data / "reports" / "serving.parquet",
            data / "answers" / "answers.parquet",
            data / "answers" / "judgments.parquet",
            data / "reports" / "judged_summary.parquet",
            data / "retrieval" / f"{strategy}.parquet",
            data / "chunks" / f"{strategy}.parquet",
        ]
    )
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)
    return f"delete {target.relative_to(data)}"


def damage_output(world, data: Path) -> str:
    """A Parquet output cut short: its asset's blocking `outputs_intact` check fails."""
    strategy = world.rng.choice(world.env["RAG_STRATEGIES"].split(","))
    target = world.rng.choice(
        [data / "retrieval" / f"{strategy}.parquet", data / "notes" / "questions.parquet"]
    )
    with open(target, "r+b") as f:
        f.truncate(100)
    return f"damage {target.relative_to(data)}"


def duplicate_served_row(world, data: Path) -> str:
    """A served table given a second row under one chunk id, as two writers once left it."""
    strategy = world.rng.choice(world.env["RAG_STRATEGIES"].split(","))
    table = open_table(data / "lancedb", strategy.replace("-", "_"))
    table.lance.add(table.lance.to_arrow().slice(0, 1))
    return f"duplicate a row of table {strategy}"
