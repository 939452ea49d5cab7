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
from collections.abc import Callable

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


def paired(
    a: tuple[str, list[str]], b: tuple[str, list[str]], pairs: int, check: Callable[[str], None]
) -> None:
    """The commands `a` and `b` (each a name and its command line) in turn, `pairs` times after one
    pair not counted (it warms the disk cache and the fingerprints' cache), `check` given what `a`
    printed; prints their CPU and wall times and the ratio a / b pair by pair."""
    rows = []
    for pair in range(pairs + 1):
        a_cpu, a_wall, said = timed(a[1])
        check(said)
        b_cpu, b_wall, _ = timed(b[1])
        if pair:
            rows.append((a_cpu, b_cpu, a_wall, b_wall))
    a_cpu, b_cpu, a_wall, b_wall = (list(c) for c in zip(*rows))
    width = max(len(a[0]), len(b[0]))
    print(f"{pairs} pairs, median (min, max); load average {os.getloadavg()[0]:.1f}")
    print(f"{a[0]:{width}}  CPU s {spread(a_cpu)}  wall s {spread(a_wall)}")
    print(f"{b[0]:{width}}  CPU s {spread(b_cpu)}  wall s {spread(b_wall)}")
    print(f"{'ratio, pair by pair':{width}}  CPU {spread([x / y for x, y in zip(a_cpu, b_cpu)])}  ", end="")
    print(f"wall {spread([x / y for x, y in zip(a_wall, b_wall)])}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=7, help="counted pairs, after one not counted")
    args = parser.parse_args(argv)

    def noop(said: str) -> None:
        if "nothing is stale" not in said:
            raise SystemExit(f"not a no-op (run `make run` first, in this environment):\n{said[-2000:]}")

    paired(("no-op make run", NOOP), ("python -c 'import dagster'", DAGSTER), args.pairs, noop)


if __name__ == "__main__":
    main()
