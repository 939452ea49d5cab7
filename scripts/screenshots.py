"""Screenshots of the Dagster UI on a built data directory (a script, not a test).

When `make dev` is running (a webserver answers on 127.0.0.1:3000), its pages are saved and nothing
else is started. Otherwise it starts `dagster dev` on a free port with `RAG_DATA_DIR` set, waits
until the webserver has loaded the code location, saves PNGs of the asset graph, one strategy's
lane and the `evaluation_summary` asset page (at 1280x800 and 1920x1080) with headless Chromium,
then stops dagster. Needs Debian's `chromium` on the PATH
(`apt-get update && apt-get install -y chromium`).

    .venv/bin/python scripts/screenshots.py --data-dir data/build --out data/build/screenshots \
        [--dagster-home DIR] [--budget-ms 20000] [--no-reuse]

The pages only show materializations when `DAGSTER_HOME` is the instance the data directory was
built with (`make run` uses data/dagster_home); without `--dagster-home` or `$DAGSTER_HOME` a
temporary, empty instance is used. The script marks Dagster's first-visit community dialog as seen
in that instance (what its *Skip* button does), so the dialog does not cover the pages.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import matplotlib.image
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# file name -> (page of the UI (dagster 1.13), window size)
PAGES = {
    # the global lineage, one box per group: sources -> chunks -> embeddings -> retrieval -> evaluation
    "asset-groups.png": ("/asset-groups", "1400,1000"),
    # one strategy's lane, everything upstream of its evaluation: few enough nodes that the zoom to
    # fit keeps their labels readable (the whole graph, 40 nodes, does not)
    "asset-lineage.png": (
        "/assets/evaluation_section?view=lineage&lineageScope=upstream&lineageDepth=100",
        "1400,1000",
    ),
    # the summary page as a laptop and a desktop screen show it
    "evaluation-summary.png": ("/assets/evaluation_summary", "1280,800"),
    "evaluation-summary-1920.png": ("/assets/evaluation_summary", "1920,1080"),
    # the release decision, its reasons and the release_gate check
    "release.png": ("/assets/release", "1400,1000"),
    # make run's runs are runs of the job: its page and the timeline list them
    "job-runs.png": (
        "/locations/__repository__@rag_pipeline.definitions/jobs/index_and_evaluate/runs",
        "1400,1000",
    ),
    "timeline.png": ("/overview/activity/timeline", "1400,1000"),
}
# where `make dev` serves the UI: when it answers, its webserver is used and no second one is started
MAKE_DEV = "http://127.0.0.1:3000"
LOCATIONS_QUERY = (
    "{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus "
    "locationOrLoadError { __typename ... on PythonError { message } } } } } }"
)
SUMMARY_QUERY = (
    '{ assetOrError(assetKey: {path: ["evaluation_summary"]}) { __typename '
    "... on Asset { assetMaterializations(limit: 1) { timestamp } } } }"
)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def graphql(base: str, query: str) -> dict:
    request = urllib.request.Request(
        f"{base}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["data"]


def wait_until_loaded(base: str, dagster: subprocess.Popen, timeout: float = 300) -> None:
    """Until the webserver answers and every code location is loaded; a failed load raises."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if dagster.poll() is not None:
            raise RuntimeError(f"dagster dev exited with code {dagster.returncode}")
        try:
            workspace = graphql(base, LOCATIONS_QUERY)["workspaceOrError"]
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(1)
            continue
        entries = workspace.get("locationEntries") or []
        for entry in entries:
            error = entry["locationOrLoadError"]
            if error and error["__typename"] == "PythonError":
                raise RuntimeError(f"code location {entry['name']} failed to load: {error['message']}")
        if entries and all(e["loadStatus"] == "LOADED" for e in entries):
            return
        time.sleep(1)
    raise TimeoutError(f"the Dagster webserver at {base} did not load the code location in {timeout:.0f} s")


def looks_blank(png: Path) -> bool:
    """A page still loading is mostly one colour; a rendered page has text, lines and badges."""
    pixels = matplotlib.image.imread(io.BytesIO(png.read_bytes()), format="png")
    return len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) < 50


def screenshot(chromium: str, url: str, window: str, path: Path, budget_ms: int, profile: Path) -> None:
    command = [
        chromium,
        "--headless",
        "--disable-gpu",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--window-size={window}",
        # virtual time runs only while the page is idle, so the UI's queries and layout get done first
        f"--virtual-time-budget={budget_ms}",
        f"--screenshot={path}",
        url,
    ]
    if os.geteuid() == 0:
        command.insert(1, "--no-sandbox")  # Chromium refuses to start as root with its sandbox
    path.unlink(missing_ok=True)
    subprocess.run(command, check=True, capture_output=True, timeout=budget_ms / 1000 + 120)
    if not path.exists():
        raise RuntimeError(f"chromium wrote no screenshot for {url}")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(dagster: subprocess.Popen, timeout: float = 60) -> None:
    """Ctrl-C, which dagster dev answers by shutting its webserver, daemon and code servers down; what
    is left of its process group (its own session) after `timeout` seconds is killed."""
    if dagster.poll() is None:
        dagster.send_signal(signal.SIGINT)
    deadline = time.monotonic() + timeout
    # the code servers exit a little after dagster dev itself; poll() reaps dagster dev, whose
    # zombie would otherwise keep the group alive
    while dagster.poll() is None or group_alive(dagster.pid):
        if time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if group_alive(dagster.pid):
        os.killpg(dagster.pid, signal.SIGKILL)
    dagster.wait()


def answering(base: str) -> bool:
    """Whether a Dagster webserver answers at `base` with its code locations loaded."""
    try:
        entries = graphql(base, LOCATIONS_QUERY)["workspaceOrError"].get("locationEntries") or []
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)


def save_pages(base: str, out: Path, chromium: str, budget_ms: int, instance: str) -> list[Path]:
    """Every page of PAGES from the webserver at `base` (whose instance is `instance`) as a PNG."""
    graphql(base, "mutation { setNuxSeen }")
    summary = graphql(base, SUMMARY_QUERY)["assetOrError"]
    if not summary.get("assetMaterializations"):
        progress(f"warning: evaluation_summary was never materialized in {instance}")
    saved = []
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        for name, (page, window) in PAGES.items():
            path = out / name
            screenshot(chromium, base + page, window, path, budget_ms, Path(profile))
            if looks_blank(path):
                progress(f"warning: {path} looks blank; try a larger --budget-ms")
            progress(f"saved {path}")
            saved.append(path)
    return saved


def take_screenshots(
    data_dir: Path, out: Path, dagster_home: Path, chromium: str, budget_ms: int, log: Path
) -> list[Path]:
    """The pages from a `dagster dev` of its own on a free port, stopped at the end."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = os.environ | {"RAG_DATA_DIR": str(data_dir), "DAGSTER_HOME": str(dagster_home)}
    dev = ["dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)]
    command = [sys.executable, "-m", "dagster", *dev]
    with log.open("w") as log_file:
        dagster = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True
        )
    started = time.monotonic()
    try:
        wait_until_loaded(base, dagster)
        progress(f"dagster dev on {base} loaded in {time.monotonic() - started:.0f} s")
        return save_pages(base, out, chromium, budget_ms, str(dagster_home))
    finally:
        started = time.monotonic()
        stop(dagster)
        progress(f"dagster dev stopped in {time.monotonic() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="a built data directory (RAG_DATA_DIR)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNGs")
    parser.add_argument(
        "--dagster-home",
        type=Path,
        default=os.environ.get("DAGSTER_HOME") or None,
        help="the Dagster instance with the materializations (default: $DAGSTER_HOME, else a temporary one)",
    )
    parser.add_argument("--chromium", default="chromium", help="the Chromium executable")
    parser.add_argument(
        "--budget-ms", type=int, default=20_000, help="Chromium's virtual time budget per page"
    )
    parser.add_argument(
        "--no-reuse",
        action="store_true",
        help=f"start a dagster dev of its own even when one answers on {MAKE_DEV}",
    )
    args = parser.parse_args()

    chromium = shutil.which(args.chromium)
    if chromium is None:
        sys.exit(f"{args.chromium} not found: apt-get update && apt-get install -y chromium")
    if not (args.data_dir / "reports").is_dir():
        sys.exit(f"{args.data_dir} has no reports/: build it first (make run)")
    args.out.mkdir(parents=True, exist_ok=True)
    # a shell that starts this script in the background makes it ignore SIGINT, and dagster dev
    # would inherit that and ignore the Ctrl-C that stops it; a Python handler is reset on exec
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if not args.no_reuse and answering(MAKE_DEV):
        # a second dagster dev beside it would start a second daemon on the same instance
        progress(f"using the Dagster UI already running on {MAKE_DEV} (make dev) and its instance")
        saved = save_pages(MAKE_DEV, args.out, chromium, args.budget_ms, f"the instance of {MAKE_DEV}")
        print("\n".join(str(p) for p in saved))
        return
    with tempfile.TemporaryDirectory(prefix="dagster-home-") as temporary:
        home = args.dagster_home.resolve() if args.dagster_home else Path(temporary)
        home.mkdir(parents=True, exist_ok=True)
        log = args.out / "dagster-dev.log"
        try:
            saved = take_screenshots(args.data_dir.resolve(), args.out, home, chromium, args.budget_ms, log)
        except (RuntimeError, TimeoutError, subprocess.SubprocessError) as error:
            sys.exit(f"{error} (dagster's output: {log})")
    log.unlink()
    print("\n".join(str(p) for p in saved))


if __name__ == "__main__":
    main()
