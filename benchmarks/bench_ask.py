"""`python -m rag_pipeline.ask` against `python -c "import lancedb"`, paired: the two commands in turn
(A B A B ...), each a whole process, its CPU (user + system) and wall time from the operating system's
accounting (`bench_noop.timed`); the ratio is taken pair by pair, so it holds when the machine's speed
drifts. `ask` builds its embedder and answerer from the settings and the release record alone, so
what it pays beyond LanceDB is the project's libraries, the search and the answer, not Dagster.

Run it after a `make run` with the embedder the release used, in the same environment (`RAG_*`);
the questions are recorded in a temporary ask log, not the data directory's:

    RAG_EMBEDDER=hashing .venv/bin/python benchmarks/bench_ask.py --pairs 7
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from bench_noop import paired

ASK = [sys.executable, "-m", "rag_pipeline.ask", "How does the TCP handshake work?"]
LANCEDB = [sys.executable, "-c", "import lancedb"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=7, help="counted pairs, after one not counted")
    args = parser.parse_args(argv)
    os.environ["RAG_ASK_LOG"] = tempfile.mkdtemp(prefix="bench-ask-")

    def answered(said: str) -> None:
        if "answer (" not in said:
            raise SystemExit(f"`ask` answered nothing (run `make run` first, in this environment):\n{said}")

    paired(("ask", ASK), ("python -c 'import lancedb'", LANCEDB), args.pairs, answered)


if __name__ == "__main__":
    main()
