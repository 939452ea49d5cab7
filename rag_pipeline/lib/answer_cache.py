"""Answers cached by (llm_version, sha256 of the exact prompt text), and `answer_all` over them.

Each flush is a new immutable Parquet segment written atomically (as in lib/vectorstore.py), so a
run that fails half-way keeps every answer it got, a re-run asks nothing, and a changed chunk
re-asks only the questions whose prompt text changed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

import pyarrow as pa

from rag_pipeline.lib.answers import Prompt, Reply
from rag_pipeline.lib.llm import LLM, LLMError
from rag_pipeline.lib.storage import AnyPath, as_path, read_table, write_bytes, write_table
from rag_pipeline.lib.vectorstore import version_key

Progress = Callable[[int, int], None]  # (answers received, answers to ask for)

SCHEMA = pa.schema(
    [
        ("prompt_hash", pa.string()),
        ("text", pa.string()),
        ("thinking", pa.string()),
        ("prompt_tokens", pa.int64()),
        ("completion_tokens", pa.int64()),
        ("latency_s", pa.float64()),
    ]
)


def prompt_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class AnswerCache:
    """One folder per llm_version under `root` (the full string is kept in version.json)."""

    MAX_SEGMENTS = 32

    def __init__(self, root: str | AnyPath, llm_version: str):
        self.llm_version = llm_version
        self.dir = as_path(root) / version_key(llm_version)
        self._replies: dict[str, Reply] | None = None
        manifest = self.dir / "version.json"
        if not manifest.exists():
            write_bytes(json.dumps({"llm_version": llm_version}, indent=1).encode(), manifest)

    def _segments(self) -> list[AnyPath]:
        return sorted(self.dir.glob("segment-*.parquet"))

    def _load(self) -> dict[str, Reply]:
        if self._replies is None:
            self._replies = {}
            for path in self._segments():
                for row in read_table(path).to_pylist():
                    key = row.pop("prompt_hash")
                    self._replies[key] = Reply(**row)
        return self._replies

    def __len__(self) -> int:
        return len(self._load())

    def get(self, hashes: Sequence[str]) -> dict[str, Reply]:
        stored = self._load()
        return {h: stored[h] for h in hashes if h in stored}

    def _write(self, replies: dict[str, Reply]) -> None:
        rows = [{"prompt_hash": h, **dataclasses.asdict(r)} for h, r in replies.items()]
        write_table(pa.Table.from_pylist(rows, schema=SCHEMA), self.dir / f"segment-{time.time_ns()}.parquet")

    def put(self, replies: dict[str, Reply]) -> None:
        if not replies:
            return
        self._write(replies)
        self._load().update(replies)
        if len(self._segments()) > self.MAX_SEGMENTS:
            self.compact()

    def compact(self) -> None:
        """Fold every segment into one; the new one lands before the old ones go."""
        old = self._segments()
        self._write(self._load())
        for path in old:
            path.unlink()


def answer_all(
    llm: LLM,
    prompts: Sequence[Prompt],
    cache_dir: Path,
    *,
    flush_every: int = 8,
    progress: Progress | None = None,
) -> tuple[list[Reply], int]:
    """Replies to `prompts` (in their order) and how many were asked of the backend.

    Only prompts whose text the cache lacks under `llm.llm_version` are asked, `llm.concurrency` at
    a time; replies are flushed to the cache every `flush_every`, and on a failure, whose LLMError
    names the question. A reply's latency is the wall time of its first asking, retries included.
    """
    cache = AnswerCache(cache_dir, llm.llm_version)
    hashes = [prompt_hash(p.text) for p in prompts]
    have = cache.get(hashes)
    todo = {h: p for h, p in zip(hashes, prompts) if h not in have}
    pending: dict[str, Reply] = {}
    running: dict[Future, str] = {}
    received = 0

    def ask(prompt: Prompt) -> Reply:
        started = time.perf_counter()
        reply = llm.answer(prompt)
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
