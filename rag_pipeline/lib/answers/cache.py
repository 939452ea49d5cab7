"""Answers cached by (llm_version, hash of the exact prompt text and the repeat), and `answer_all`
over them.

Each flush is a new immutable Parquet segment written atomically (a `SegmentStore`), so a
run that fails half-way keeps every answer it got, a re-run asks nothing, and a changed chunk
re-asks only the questions whose prompt text changed. The store's key is the llm_version (the model
as its server names it, and the answerer's code) and the code that writes and reads its rows; each
row names the server that replied, so replies reused from another server are said.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

import pyarrow as pa

from rag_pipeline.lib.answers.llm import LLM, LLMError
from rag_pipeline.lib.answers.prompts import Prompt
from rag_pipeline.lib.answers.scoring import Reply
from rag_pipeline.lib.core import AnyPath, SegmentStore, text_hash, version_dir
from rag_pipeline.lib.core.fingerprint import fingerprint

Progress = Callable[[int, int], None]  # (answers received, answers to ask for)

SCHEMA = pa.schema(
    [
        ("text_hash", pa.string()),  # of the exact prompt text
        ("text", pa.string()),
        ("thinking", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("latency_s", pa.float64()),
        ("server", pa.string()),  # the URL of the server that replied ("" for no server)
    ]
)
REPLY = [name for name in SCHEMA.names if name not in ("text_hash", "server")]
log = logging.getLogger("rag_pipeline.answers")


def prompt_hash(text: str, repeat: int = 0) -> str:
    """The cache key of a prompt's `repeat`-th asking (the first's is the text's own hash)."""
    return text_hash(text if repeat == 0 else f"{text}\0repeat {repeat}")


class AnswerCache(SegmentStore):
    """Replies of one llm_version asked of `server`, in content-addressed segments (see
    core/segments.py): a flush is a new segment, compaction folds them. `elsewhere` counts, by
    server, the replies read that another server gave."""

    def __init__(self, root: str | AnyPath, llm_version: str, server: str = ""):
        self.llm_version, self.server = llm_version, server
        self.elsewhere: Counter[str] = Counter()
        # a new row format (what `put` writes and `get` reads) is a new store
        key = f"{llm_version}|rows@{fingerprint([AnswerCache.get, AnswerCache.put])[:12]}"
        super().__init__(version_dir(root, key, {"llm_version": llm_version}))

    def get(self, hashes: Sequence[str]) -> dict[str, Reply]:
        have = [h for h, found in zip(hashes, self.contains(list(hashes))) if found]
        replies: dict[str, Reply] = {}
        for table, positions in self.read(have, [*REPLY, "server"]):
            for position, row in zip(positions, table.to_pylist()):
                server = row.pop("server")
                if server != self.server:
                    self.elsewhere[server] += 1
                replies[have[position]] = Reply(**row)
        return replies

    def put(self, replies: dict[str, Reply]) -> None:
        rows = [{"text_hash": h, **dataclasses.asdict(r), "server": self.server} for h, r in replies.items()]
        self.append(pa.Table.from_pylist(rows, schema=SCHEMA))


def answer_all(
    llm: LLM,
    prompts: Sequence[Prompt],
    cache_dir: Path,
    *,
    repeat: int = 0,
    version: str | None = None,
    reused: Counter[str] | None = None,
    flush_every: int = 8,
    progress: Progress | None = None,
) -> tuple[list[Reply], int]:
    """Replies to `prompts` (in their order), asked for the `repeat`-th time, and how many were
    asked of the backend.

    Only prompts whose text the cache lacks under `version` (default `llm.llm_version`) and `repeat`
    are asked, `llm.concurrency` at a time; replies are flushed to the cache every `flush_every`,
    and on a failure, whose LLMError names the question. A reply's latency is the wall time of its
    first asking, retries included. Replies read that another server gave are counted by server in
    `reused`, or said at once (`reuse_line`).
    """
    cache = AnswerCache(cache_dir, version or llm.llm_version, getattr(llm, "url", ""))
    hashes = [prompt_hash(p.text, repeat) for p in prompts]
    have = cache.get(hashes)
    if reused is not None:
        reused.update(cache.elsewhere)
    elif cache.elsewhere:
        log.warning(reuse_line(cache.elsewhere, cache.server, cache.llm_version))
    todo = {h: p for h, p in zip(hashes, prompts) if h not in have}
    pending: dict[str, Reply] = {}
    running: dict[Future, str] = {}
    received = 0

    def ask(prompt: Prompt) -> Reply:
        started = time.perf_counter()
        reply = llm.answer(prompt, repeat)
        return dataclasses.replace(reply, latency_s=time.perf_counter() - started)

    def collect(future: Future) -> None:
        nonlocal received
        h = running.pop(future)
        try:
            reply = future.result()
        except Exception as exc:  # an embedder's error (extractive) as much as a server's
            raise LLMError(f"question {todo[h].question_id}: {exc}", getattr(exc, "status", None)) from exc
        pending[h] = have[h] = reply
        if len(pending) >= flush_every:
            cache.put(dict(pending))
            pending.clear()
        received += 1
        if progress:
            progress(received, len(todo))

    pool = ThreadPoolExecutor(llm.concurrency)
    try:
        for h, prompt in todo.items():
            running[pool.submit(ask, prompt)] = h
            # no more than `concurrency` submitted, so a failure leaves nothing queued behind it
            while len(running) >= llm.concurrency:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    collect(future)
        while running:
            collect(next(iter(running)))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        # after a failure, the prompts still being answered then are kept too
        for future, h in running.items():
            if not future.cancelled() and future.exception() is None:
                pending[h] = future.result()
        cache.put(pending)
    return [have[h] for h in hashes], len(todo)


def reuse_line(reused: Counter[str], server: str, version: str) -> str:
    """What replies of other servers were reused: they stand, as the model is the same (its server
    names it so: `version`)."""
    servers = ", ".join(sorted(reused))
    return (
        f"{sum(reused.values())} cached replies of {servers} reused for {server}: the same model ({version})"
    )


def reply_texts(llm: LLM, texts: Sequence[str], cache_dir: Path) -> tuple[list[str], int]:
    """The replies' texts to plain prompt `texts` (not questions over units, e.g. `gold generate`'s),
    through the same cache as answers; and how many were asked of the backend."""
    prompts = [Prompt(f"prompt {i + 1}", "", (), text) for i, text in enumerate(texts)]
    replies, asked = answer_all(llm, prompts, cache_dir)
    return [r.text for r in replies], asked
