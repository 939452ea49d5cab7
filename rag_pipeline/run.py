"""`python -m rag_pipeline.run`: what `make run` does. Observes the notes head, then runs the
`index_and_evaluate` job on what is stale only, hop by hop, in the instance `DAGSTER_HOME` names,
so the runs show in the UI under the job and a no-op run executes nothing but the observation."""

import sys

import dagster as dg

from rag_pipeline.definitions import defs, index_and_evaluate
from rag_pipeline.defs.staleness import run_stale


def main() -> int:
    with dg.DagsterInstance.get() as instance:
        hops = run_stale(defs, instance, index_and_evaluate.name)
    for n, assets in enumerate(hops, 1):
        print(f"run {n}: {', '.join(assets)}")
    if len(hops) == 1:
        print("nothing was stale: the observation of notes_head was the only step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
