"""BM25 for a fixed set of questions that costs what changed.

A question's BM25 scores need every document's length, and the counts of the question's
terms only. Those are kept on disk per text hash, for the terms of the questions asked: after
an edit only new texts' counts are read (from the token store) and N, the average length and
document frequencies are recomputed from the kept columns, which gives the very scores of a
BM25 over all terms.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import scipy.sparse as sp

from rag_pipeline.lib.core import AnyPath, read_arrow, write_arrow
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.retrieval.chunk_index import ChunkIndex
from rag_pipeline.lib.retrieval.lexical import BM25, count_terms, term_matrix


@dataclass
class Columns:
    """Per distinct text: its length and its counts of `terms` (sorted) as a sparse row."""

    hashes: pd.Index
    lengths: np.ndarray
    counts: sp.csr_matrix
    terms: list[str]


def question_bm25(index: ChunkIndex, contextual: bool, queries: list[list[str]], path: Path) -> BM25:
    """A BM25 over the index's texts that can score `queries` (see BM25's `lengths`), from the
    columns kept at `path` plus the counts of texts new since."""
    # distinct texts in order of first appearance (hashing, not sorting, 86,000 strings)
    inverse, unique = pd.factorize(np.asarray(index.text_hashes(contextual), dtype=object))
    first = np.flatnonzero(~pd.Series(inverse).duplicated().to_numpy())
    wanted = sorted({t for q in queries for t in q})
    # the analyzer, and the code that keeps and reads the columns
    code = fingerprint([question_bm25])
    stamp = json.dumps({"analyzer": index.analyzer.version, "contextual": contextual, "code": code})
    kept = load_columns(path, stamp)
    if kept is None or not set(wanted) <= set(kept.terms):
        columns = counted(index, contextual, first, wanted)
        columns.hashes = pd.Index(unique, dtype=object)
        save_columns(path, stamp, columns)
    else:
        at = kept.hashes.get_indexer(unique)
        new = np.flatnonzero(at < 0)
        columns = kept
        if not len(new) and len(kept.hashes) == len(unique):
            inverse = at[inverse]  # the same texts, maybe in another order: the kept rows
        else:
            fresh = counted(index, contextual, first[new], kept.terms)
            old = np.flatnonzero(at >= 0)
            order = np.argsort(np.concatenate([old, new]), kind="stable")
            columns = Columns(
                pd.Index(unique, dtype=object),
                np.concatenate([kept.lengths[at[old]], fresh.lengths])[order],
                sp.vstack([kept.counts[at[old]], fresh.counts]).tocsr()[order],
                kept.terms,
            )
            save_columns(path, stamp, columns)
    return BM25(
        columns.counts[inverse], np.array(columns.terms, dtype=object), lengths=columns.lengths[inverse]
    )


BATCH = 4096  # texts counted at once: a batch's full term matrix is built, then cut to `terms`


def counted(index: ChunkIndex, contextual: bool, rows: np.ndarray, terms: list[str]) -> Columns:
    """Lengths and `terms` columns of the texts at `rows`, from the token store when there is one;
    batch by batch, so memory follows the batch and the questions' terms, not the corpus."""
    wanted = np.array(terms, dtype=object)
    lengths, kept = [np.zeros(0)], [sp.csr_matrix((0, len(terms)), dtype=np.float32)]
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        texts = index.texts_at(contextual, batch)
        if index.token_store is not None:
            hashes = [index.text_hashes(contextual)[r] for r in batch]
            counts, vocabulary = index.token_store.counts(texts, hashes)
        else:
            counts, vocabulary = term_matrix(*count_terms([index.analyzer.tokens(t) for t in texts]))
        # a selection matrix: vocabulary column -> position in `terms` (whole counts: exact)
        at = np.searchsorted(wanted, vocabulary) if len(terms) else np.zeros(0, int)
        hit = np.flatnonzero(at < len(terms))
        hit = hit[wanted[at[hit]] == vocabulary[hit]]
        select = sp.csr_matrix((np.ones(len(hit)), (hit, at[hit])), shape=(len(vocabulary), len(terms)))
        lengths.append(counts @ np.ones(counts.shape[1]))
        kept.append((counts @ select).tocsr().astype(np.float32))
    matrix = sp.vstack(kept).tocsr()
    matrix.sort_indices()
    return Columns(pd.Index([], dtype=object), np.concatenate(lengths), matrix, list(terms))


def load_columns(path: AnyPath, stamp: str) -> Columns | None:
    if not path.exists():
        return None
    table = read_arrow(path)
    metadata = table.schema.metadata or {}
    if metadata.get(b"stamp", b"").decode() != stamp:
        return None
    columns = table.column("columns").combine_chunks()
    counts = table.column("counts").combine_chunks()
    matrix = sp.csr_matrix(
        (counts.values.to_numpy(), columns.values.to_numpy(), columns.offsets.to_numpy()),
        shape=(table.num_rows, len(terms := json.loads(metadata[b"terms"]))),
    )
    hashes = pd.Index(table.column("text_hash").to_numpy(zero_copy_only=False), dtype=object)
    return Columns(hashes, table.column("length").to_numpy(), matrix, terms)


def save_columns(path: Path, stamp: str, columns: Columns) -> None:
    offsets = pa.array(columns.counts.indptr, pa.int64())
    table = pa.table(
        {
            "text_hash": pa.array(columns.hashes.to_numpy(), pa.string()),
            "length": pa.array(columns.lengths, pa.float64()),
            "columns": pa.LargeListArray.from_arrays(offsets, pa.array(columns.counts.indices, pa.int32())),
            "counts": pa.LargeListArray.from_arrays(offsets, pa.array(columns.counts.data, pa.float32())),
        }
    )
    metadata = {"stamp": stamp, "terms": json.dumps(columns.terms, ensure_ascii=False)}
    write_arrow(table.replace_schema_metadata(metadata), path)  # rewritten on each change
