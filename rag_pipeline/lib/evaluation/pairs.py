"""What `experiments compare` compares when no configuration is named: two experiments that differ
in the embedder are compared on every configuration that uses it (dense and the hybrids, Holm-corrected),
not on each side's best, which may be a BM25 configuration the embedder does not touch; an experiment
compared with itself has nothing to compare."""

from __future__ import annotations

from dataclasses import dataclass, field

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.evaluation.experiments import HIT, read_index
from rag_pipeline.lib.evaluation.versus import Comparison, compare, experiment_sides, holm_corrected
from rag_pipeline.lib.retrieval import parse_retriever


@dataclass
class Pairing:
    """`kind`: `same` (one experiment and configuration on both sides), `embedder` (the experiments
    differ in the embedder: `comparisons` holds every shared configuration that uses it), or `one`
    (compare the references as `resolve_pair` resolves them)."""

    kind: str
    a: str = ""  # the experiment ids
    b: str = ""
    comparisons: list[Comparison] = field(default_factory=list)


def _configuration(name: str) -> str:
    return name if "/" in name or not name else f"{name}/dense"


def pairing(root: AnyPath, a: str, b: str, measure: str = HIT) -> Pairing:
    """How to compare references `a` and `b` on `measure` (see `Pairing`)."""
    (name_a, _, conf_a), (name_b, _, conf_b) = a.partition(":"), b.partition(":")
    conf_a, conf_b = _configuration(conf_a.strip()), _configuration(conf_b.strip())
    index = read_index(root)
    left = experiment_sides(root, name_a, index, a, measure)
    right = experiment_sides(root, name_b, index, b, measure)
    if not left or not right:  # nothing scored: `resolve_pair` says so
        return Pairing("one")
    (one, *_), (other, *_) = left.values(), right.values()
    ids = one.experiment, other.experiment
    named = {c for c in (conf_a, conf_b) if c}
    if ids[0] == ids[1] and len(named) <= 1 and named <= set(left):  # one unknown: `resolve_pair` says so
        return Pairing("same", *ids)
    embedders = one.settings.get("embedding_version"), other.settings.get("embedding_version")
    if conf_a or conf_b or None in embedders or embedders[0] == embedders[1]:  # None: a folder repaired
        return Pairing("one", *ids)
    shared = [c for c in left if c in right and parse_retriever(c.split("/", 1)[1]).uses_embedder]
    if not shared:
        return Pairing("one", *ids)
    return Pairing("embedder", *ids, holm_corrected([compare(left[c], right[c]) for c in shared]))
