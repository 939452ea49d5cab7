"""The embeddings lane planned without Dagster: what is embedded, what an error names, the
characters the store lacks, and what the lane's data version is of."""

import pandas as pd

from rag_pipeline.lib.embedding import HashingEmbedder, plan_lane

CHUNKS = pd.DataFrame(
    {
        "chunk_id": ["c1", "c2", "c3"],
        "note": ["a", "a", "b"],
        "text": ["same text", "same text", "other"],
        "heading_path": ["A", "A", "B"],
    }
)


def test_a_new_lane_needs_every_text_and_the_store_s_missing_ones_are_counted_once(tmp_path):
    model = HashingEmbedder()
    plan = plan_lane(model, CHUNKS, contextual=True, directory=tmp_path / "lane")
    assert len(plan.texts) == 6 and sorted(plan.needed) == list(range(6))  # plain, then with context
    texts, labels = plan.missing()
    assert texts[:3] == ["same text", "same text", "other"]
    assert labels[0] == "chunk c1" and labels[3] == "chunk c1 (with context)"
    distinct = {plan.hashes[i]: texts[k] for k, i in enumerate(plan.needed)}
    assert plan.new_chars(lambda keys: [False] * len(keys)) == sum(len(t) for t in distinct.values())
    assert plan.new_chars(lambda keys: [True] * len(keys)) == 0
    index = plan.index(model.embedding_version)
    assert index["chunk_id"].tolist() == ["c1", "c2", "c3"] * 2 and set(index["version"]) == {
        model.embedding_version
    }
    plain = plan_lane(model, CHUNKS, contextual=False, directory=tmp_path / "plain")
    assert len(plain.texts) == 3 and plain.missing()[1] == ["chunk c1", "chunk c2", "chunk c3"]
