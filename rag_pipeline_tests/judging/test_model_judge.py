"""A model judge against the judge stand-in on 127.0.0.1 (fakes/judge.py: a protocol fake, since no judge
model can be installed here), through the answerer's client and cache."""

import re

from rag_pipeline.lib.answers import OllamaLLM
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.judging import ModelJudge, item_scores, judge_all, make_judge
from rag_pipeline_tests.fakes.judge import FakeJudge
from rag_pipeline_tests.fakes.llm import DIGEST, MODEL
from rag_pipeline_tests.judging.conftest import item

ITEMS = [
    item(f"answer {n} [1]", ("passage a", "passage b"), question_id=str(n), question=f"question {n}")
    for n in range(60)
]


def truth(prompt: str) -> bool:
    """The hidden truth of an item: two in three are good."""
    return int(re.search(r'name="question">\nquestion (\d+)', prompt).group(1)) % 3 != 0


def test_the_majority_of_five_repeats_recovers_the_truth_and_a_rerun_asks_nothing(tmp_path):
    with FakeJudge(truth, flip=0.2) as server:
        judge = make_judge("openai", tmp_path / "cache", url=server.url, model=MODEL)
        judged = judge_all(judge, ITEMS, repeats=5, bias_sample=10)
        assert judged.asked == len(server.requests) == 60 * 3 * 5 + 10
        scores = item_scores(judged.rows).set_index(["question_id", "criterion"])["score"]
        majority = [
            (scores[(i.question_id, "faithful")] > 0.5) == (int(i.question_id) % 3 != 0) for i in ITEMS
        ]
        assert sum(majority) >= 0.9 * len(ITEMS)
        # each repeat was its own request: its own seed
        seeds = {r["seed"] for r in server.requests if "question 7\n" in r["messages"][-1]["content"]}
        assert seeds == {0, 1, 2, 3, 4}
        again = judge_all(make_judge("openai", tmp_path / "cache", url=server.url, model=MODEL), ITEMS, 5, 10)
        assert again.asked == 0 and len(server.requests) == 910
        assert again.rows.equals(judged.rows) and again.flips == judged.flips


def test_an_unparsable_reply_is_invalid_and_no_score(tmp_path):
    with FakeJudge(invalid=1.0) as server:
        judge = make_judge("openai", tmp_path / "cache", url=server.url, model=MODEL)
        judged = judge_all(judge, ITEMS[:3], repeats=2, bias_sample=0)
    assert set(judged.rows["verdict"]) == {"invalid"}
    assert judged.rows["reason"].str.startswith("not one JSON object").all()
    scores = item_scores(judged.rows)
    assert scores["score"].isna().all() and (scores["n_invalid"] == 2).all()


def test_judge_version_names_backend_model_digest_and_code(tmp_path):
    """The model as its server names it, and the code that prompts it and reads its replies."""
    with FakeJudge() as server:
        judge = make_judge("ollama", tmp_path / "cache", url=server.url, model=MODEL)
    assert judge.judge_version.startswith(f"ollama:{MODEL}@{DIGEST}|")
    assert judge.judge_version.endswith(f"|judge@{fingerprint([ModelJudge, OllamaLLM])[:12]}")
