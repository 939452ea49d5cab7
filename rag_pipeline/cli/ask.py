"""`python -m rag_pipeline.ask "QUESTION" [--groups g1,g2] [--k 5] [--strategy S]`: ask the live
release. Searches the live table of the release run (or of `--strategy`) with the asker's groups as a
pre-filter (no groups: public notes only), without the notes a newer commit restricted or deleted
since (`release/revoked.json`), prints the ranked passages and an answer with citations
from the configured `RAG_LLM`. Exits 2 on a bad setting or argument (a question longer than
RAG_ASK_MAX_CHARS), when nothing is released, the
configured embedder is not the one the live release was embedded with, or a group is named by no
note and no question; 1 when the embedding or chat server or the object store fails."""

import argparse
import os
import sys
import time

import pyarrow.compute as pc

from rag_pipeline.cli.asks import keep
from rag_pipeline.lib.answers import LLMError, make_prompt, parse_reply
from rag_pipeline.lib.answers.units import Unit
from rag_pipeline.lib.asks import new_record
from rag_pipeline.lib.core import AnyPath, StorageError, location, read_frame, shown_path, unknown_group
from rag_pipeline.lib.embedding import EmbeddingError
from rag_pipeline.lib.release import RELEASE_DIR, ReleaseError, read_current, released_table
from rag_pipeline.lib.serving import LiveTable, RevokedError, ServedTable, search_rows, table_key
from rag_pipeline.settings import Settings, SettingsError

COLUMNS = ["chunk_id", "note", "heading_path", "text", "commit"]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m rag_pipeline.ask", description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument(
        "--groups", default="", help="the asker's groups, comma-separated (none: public notes only)"
    )
    parser.add_argument("--k", type=int, default=5, help="passages to retrieve (default 5)")
    parser.add_argument("--strategy", default=None, help="a served strategy (default: the release run's)")
    return parser.parse_args(argv)


def known_groups(table: ServedTable, data_dir: AnyPath) -> set[str]:
    """Every group a note of the live table or a question of the last build names."""
    from rag_pipeline.defs.platform.lanes import QUESTIONS  # Dagster is loaded by now: `build_resources`

    access = table.read(["access"])["access"]
    known = set(pc.unique(pc.list_flatten(access)).to_pylist())
    if (data_dir / QUESTIONS).exists():
        for groups in read_frame(data_dir / QUESTIONS, columns=["groups"])["groups"]:
            known.update(() if groups is None else groups)
    return known


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.k < 1:
        print(f"error: --k {args.k}: ask for one passage or more (--k 1 or higher)", file=sys.stderr)
        return 2
    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(args.question) > settings.ask_max_chars:  # sent to the embedder and the answerer: refused
        print(
            f"error: the question is {len(args.question):,} characters long, more than "
            f"RAG_ASK_MAX_CHARS={settings.ask_max_chars:,}; shorten it, or raise RAG_ASK_MAX_CHARS",
            file=sys.stderr,
        )
        return 2
    try:
        return answer(args, settings)
    except (EmbeddingError, LLMError, StorageError) as exc:  # a server down or misbehaving: its line names it
        print(f"error: {exc}", file=sys.stderr)
        return 1


def answer(args: argparse.Namespace, settings: Settings) -> int:
    """Search the live release and answer; returns the exit status."""
    from rag_pipeline.definitions import build_resources

    data_dir = location(settings.data_dir)
    try:
        current = read_current(data_dir / RELEASE_DIR)  # what is live: the tags may lag behind it
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if current is None:
        print(
            f"{shown_path(data_dir / RELEASE_DIR)}: nothing is released yet; run `make run` first",
            file=sys.stderr,
        )
        return 2
    strategy = args.strategy or current["run"].split("/", 1)[0]
    if table_key(strategy) not in current["table_versions"]:
        print(
            f"strategy {strategy!r} is not served; live: {', '.join(current['table_versions'])}",
            file=sys.stderr,
        )
        return 2
    resources = build_resources(settings)
    embedder = resources["embedder"].get()
    if embedder.embedding_version != current["embedding_version"]:
        print(
            f"the live release was embedded with {current['embedding_version']!r}, but RAG_EMBEDDER "
            f"configures {embedder.embedding_version!r}: set the embedder the release used",
            file=sys.stderr,
        )
        return 2
    try:
        table = released_table(data_dir, current, table_key(strategy))
    except ReleaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    groups = [g.strip() for g in args.groups.split(",") if g.strip()]
    problem = groups and unknown_group(groups, known_groups(table, data_dir))
    if problem:
        print(f"error: --groups: {problem}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    vector = embedder.embed([args.question], "query")[0]
    try:  # without what a newer commit narrowed since the release (release/revoked.json)
        hits = search_rows(LiveTable(table, data_dir), vector, args.k, groups, COLUMNS).to_pylist()
    except RevokedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    retrieved = time.perf_counter()
    who = f"groups {', '.join(groups)}" if groups else "public notes only"
    print(f"live {strategy} (commit {current['commit'][:12]}, table version {table.version}), {who}:")
    for rank, hit in enumerate(hits, 1):
        first = next((line for line in hit["text"].splitlines() if line.strip()), "")[:100]
        print(
            f"  [{rank}] {hit['note']} > {hit['heading_path']}  score {1 - hit['_distance']:.3f}\n      {first}"
        )
    units = [Unit(h["chunk_id"], h["note"], 0, len(h["text"]), h["text"]) for h in hits]
    llm = resources["answerer"].get()
    reply = parse_reply(llm.answer(make_prompt("ask", args.question, units)).text, len(units))
    answered = time.perf_counter()
    print(f"\nanswer ({llm.llm_version}):\n  {'(abstained)' if reply.abstained else reply.answer}")
    for n in reply.numbers:
        print(f"  [{n}] {units[n - 1].note} > {hits[n - 1]['heading_path']}")
    served = {
        "configuration": f"{strategy}/dense",
        "commit": current["commit"],
        "table_version": table.version,
    }
    said = {"answer": reply.answer, "abstained": reply.abstained, "citations": list(reply.numbers)}
    timed = {"retrieval": (retrieved - started) * 1000, "answer": (answered - retrieved) * 1000}
    served |= {"embedding_version": embedder.embedding_version, "llm_version": llm.llm_version}
    return keep(settings, new_record(args.question, groups, served, hits, said, timed))


if __name__ == "__main__":
    raise SystemExit(main())
