"""What `experiments compare` compares when no configuration is named: two experiments that differ
only in settings that move some configurations (the embedder, the BM25 analyzer, a fusion's or the
reranker's settings) are compared on every configuration those settings reach (Holm-corrected), not on
each side's best, which may be a configuration the change does not touch; otherwise on B's best
configuration on the development questions (`chosen_on: "dev"`: no test question chooses what is
compared); an experiment compared with itself has nothing to compare."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rag_pipeline.lib.core import AnyPath
from rag_pipeline.lib.evaluation.experiments import read_index
from rag_pipeline.lib.evaluation.ranking import HIT
from rag_pipeline.lib.evaluation.settings_diff import changed
from rag_pipeline.lib.evaluation.versus import Comparison, compare, experiment_sides, holm_corrected
from rag_pipeline.lib.retrieval import RetrieverSpec, parse_retriever

# what each recorded setting (as `settings_diff.changed` names it) can move: the configurations whose
# ranking reads it; a setting not named here (the commit, the questions, a strategy, the code) may
# move any configuration
REACHES: dict[str, Callable[[RetrieverSpec], bool]] = {
    "embedding_version": lambda spec: spec.uses_embedder,
    "analyzer": lambda spec: spec.uses_analyzer,
    "reranker": lambda spec: spec.rerank,
    "test_share": lambda spec: True,
}
RETRIEVAL = "retrieval."  # a `RetrievalSettings` field, read by the configurations `settings_read` says


@dataclass
class Pairing:
    """`kind`: `same` (one experiment and configuration on both sides), `reached` (the experiments
    differ in settings that reach some configurations: `comparisons` holds every shared one they
    reach, `what` names the settings), or `one` (compare the references as `resolve_pair` resolves
    them: a configuration named, or B's best on the development questions)."""

    kind: str
    a: str = ""  # the experiment ids
    b: str = ""
    comparisons: list[Comparison] = field(default_factory=list)
    what: list[str] = field(default_factory=list)


def _configuration(name: str) -> str:
    return name if "/" in name or not name else f"{name}/dense"


def reaches(setting: str, configuration: str) -> bool:
    """Whether a change of the recorded `setting` can move `configuration`'s ranking (an answers'
    baseline, `-/none` or `-/oracle`, retrieves nothing: any change may move its answers)."""
    try:
        spec = parse_retriever(configuration.split("/", 1)[1])
    except ValueError:
        return True
    if setting.startswith(RETRIEVAL):
        return setting.removeprefix(RETRIEVAL) in spec.settings_read
    return REACHES.get(setting, lambda _: True)(spec)


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
    diff = changed(one.settings, other.settings)
    if conf_a or conf_b or not diff or any(None in v for v in diff.values()):  # None: a folder repaired
        return Pairing("one", *ids)
    shared = [c for c in left if c in right]
    reached = [c for c in shared if any(reaches(s, c) for s in diff)]
    if not reached or len(reached) == len(shared):  # the change moves every configuration, or none
        return Pairing("one", *ids)
    comparisons = holm_corrected([compare(left[c], right[c]) for c in reached])
    return Pairing("reached", *ids, comparisons, list(diff))
