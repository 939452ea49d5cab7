"""`content_version`: equal values give an equal version whatever their dtype; any change gives another."""

import numpy as np
import pandas as pd
import pyarrow as pa

from rag_pipeline.lib.core import content_version

FRAME = pd.DataFrame(
    {
        "chunk_id": ["a", "b", None, "ｄ"],
        "start": [0, 5, 9, 12],
        "kept": [True, False, True, True],
        "score": [0.5, 0.25, 0.125, 1 / 3],
    }
)
PLAIN = ["chunk_id", "start", "kept"]


def test_equal_values_in_other_dtypes_or_a_slice_give_the_same_version():
    version = content_version(FRAME, PLAIN)
    as_objects = FRAME.astype(object)
    from_arrow = pa.Table.from_pandas(FRAME).to_pandas(types_mapper=pd.ArrowDtype)
    nullable = FRAME.astype({"start": "Int64", "kept": "boolean", "chunk_id": "string"})
    for frame in (as_objects, from_arrow, nullable):
        assert content_version(frame, PLAIN) == version
    # a slice of an Arrow column starts inside its buffers
    doubled = pd.concat([FRAME, FRAME], ignore_index=True)
    sliced = pa.Table.from_pandas(doubled).slice(4).to_pandas(types_mapper=pd.ArrowDtype)
    assert content_version(sliced, PLAIN) == version


def test_any_change_gives_another_version():
    version = content_version(FRAME, PLAIN)
    changes = [
        FRAME.assign(chunk_id=["a", "b", "", "ｄ"]),  # a null is not an empty string
        FRAME.assign(chunk_id=["ab", "", None, "ｄ"]),  # the same characters split otherwise
        FRAME.assign(start=[0, 5, 9, 13]),
        FRAME.assign(kept=[True, False, True, False]),
        FRAME.iloc[::-1],
        FRAME.iloc[:3],
    ]
    assert len({version, *(content_version(f, PLAIN) for f in changes)}) == len(changes) + 1
    assert content_version(FRAME, ["start", "chunk_id", "kept"]) != version


def test_floats_count_to_six_decimals():
    version = content_version(FRAME, [*PLAIN, "score"])
    nudged = FRAME.assign(score=FRAME["score"] + np.array([0, 0, 0, 1e-12]))
    assert content_version(nudged, [*PLAIN, "score"]) == version
    assert content_version(FRAME.assign(score=FRAME["score"] + 1e-3), [*PLAIN, "score"]) != version


def test_a_column_of_arrow_chunks_is_hashed_as_its_values():
    table = pa.concat_tables([pa.Table.from_pandas(FRAME.iloc[:2]), pa.Table.from_pandas(FRAME.iloc[2:])])
    chunked = table.to_pandas(types_mapper=pd.ArrowDtype, split_blocks=True)
    assert content_version(chunked, PLAIN) == content_version(FRAME, PLAIN)
