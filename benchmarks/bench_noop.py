"""A no-op `make run` against `python -c "import dagster"`, paired: the two commands in turn (A B A B
...), each a whole process, its CPU (user + system) and wall time from the operating system's own
accounting; the ratio is taken pair by pair, so it holds when the machine's speed drifts.

Run it after a `make run`, in the same environment (`DAGSTER_HOME`, `RAG_*`), so that nothing is
stale; a run that does any work is not a no-op and stops the benchmark:

    .venv/bin/python benchmarks/bench_noop.py --pairs 7
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

NOOP = [sys.executable, "-m", "rag_pipeline.run"]
DAGSTER = [sys.executable, "-c", "import dagster"]


def timed(command: list[str]) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, what it printed) of one whole process."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}:\n{said[-2000:]}")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - started, said


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=7, help="counted pairs, after one not counted")
    args = parser.parse_args(argv)
    rows = []
    for pair in range(args.pairs + 1):
        noop_cpu, noop_wall, said = timed(NOOP)
        if "nothing is stale" not in said:
            raise SystemExit(f"not a no-op (run `make run` first, in this environment):\n{said[-2000:]}")
        dagster_cpu, dagster_wall, _ = timed(DAGSTER)
        if pair:  # the first pair warms the disk cache and the fingerprints' cache
            rows.append((noop_cpu, dagster_cpu, noop_wall, dagster_wall))
    noop_cpu, dagster_cpu, noop_wall, dagster_wall = (list(c) for c in zip(*rows))
    print(f"{args.pairs} pairs, median (min, max)")
    print(f"no-op make run         CPU s {spread(noop_cpu)}  wall s {spread(noop_wall)}")
    print(f"python -c 'import dagster' CPU s {spread(dagster_cpu)}  wall s {spread(dagster_wall)}")
    print(f"ratio, pair by pair    CPU {spread([a / b for a, b in zip(noop_cpu, dagster_cpu)])}  ", end="")
    print(f"wall {spread([a / b for a, b in zip(noop_wall, dagster_wall)])}")


if __name__ == "__main__":
    main()
