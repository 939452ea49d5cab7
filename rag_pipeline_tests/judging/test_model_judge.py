"""A model judge against the judge stand-in on 127.0.0.1 (fakes/judge.py: a protocol fake, since no judge
model can be installed here), through the answerer's client and cache."""

import re

import pandas as pd

from rag_pipeline.defs.resources import DataStore, JudgeResource
from rag_pipeline.lib.answers import AnswerCache, OllamaLLM
from rag_pipeline.lib.core.fingerprint import fingerprint
from rag_pipeline.lib.judging import ModelJudge, item_scores, judge_all, make_judge
from rag_pipeline.lib.judging.rubric import MAX_REASON
from rag_pipeline.settings import Settings
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
        # the reversed prompt of 10 answers at every repeat
        assert judged.asked == len(server.requests) == 60 * 3 * 5 + 10 * 5
        scores = item_scores(judged.rows).set_index(["question_id", "criterion"])["score"]
        majority = [
            (scores[(i.question_id, "faithful")] > 0.5) == (int(i.question_id) % 3 != 0) for i in ITEMS
        ]
        assert sum(majority) >= 0.9 * len(ITEMS)
        # each repeat was its own request: its own seed
        seeds = {r["seed"] for r in server.requests if "question 7\n" in r["messages"][-1]["content"]}
        assert seeds == {0, 1, 2, 3, 4}
        again = judge_all(make_judge("openai", tmp_path / "cache", url=server.url, model=MODEL), ITEMS, 5, 10)
        assert again.asked == 0 and len(server.requests) == 950
        assert again.rows.equals(judged.rows) and again.flips == judged.flips


def first_listed(prompt: str) -> bool:
    """A judge swayed by order alone: yes when passage [1] is listed first (`correct` shows none)."""
    return prompt.find("[1] passage a") <= prompt.find("[2] passage b")


def test_position_bias_is_measured_net_of_the_judges_own_noise(tmp_path):
    """An order-ignoring judge saying yes at random 70% of the time disagrees with itself on 42% of
    pairs in either order: its position bias reads about 0. A judge swayed by order alone flips all."""
    with FakeJudge(yes=0.7) as server:
        judge = make_judge("openai", tmp_path / "random", url=server.url, model=MODEL)
        flips = judge_all(judge, ITEMS, repeats=3, bias_sample=60).flips
    (random,) = flips.values()
    assert 0.3 < random.across < 0.55 and 0.3 < random.same < 0.55 and abs(random.rate) < 0.1
    with FakeJudge(first_listed) as server:
        judge = make_judge("openai", tmp_path / "order", url=server.url, model=MODEL)
        (swayed,) = judge_all(judge, ITEMS, repeats=2, bias_sample=20).flips.values()
        (once,) = judge_all(judge, ITEMS, repeats=1, bias_sample=20).flips.values()
    assert (swayed.across, swayed.same, swayed.rate) == (1.0, 0.0, 1.0)
    assert once.across == 1.0 and pd.isna(once.rate)  # one repeat: no same-order baseline


def test_an_unparsable_reply_is_invalid_and_no_score(tmp_path):
    with FakeJudge(invalid=1.0) as server:
        judge = make_judge("openai", tmp_path / "cache", url=server.url, model=MODEL)
        judged = judge_all(judge, ITEMS[:3], repeats=2, bias_sample=0)
    assert set(judged.rows["verdict"]) == {"invalid"}
    assert judged.rows["reason"].str.startswith("not one JSON object").all()
    scores = item_scores(judged.rows)
    assert scores["score"].isna().all() and (scores["n_invalid"] == 2).all()


def test_a_flood_is_not_read_past_the_limit_and_a_reason_is_kept_short(tmp_path):
    """A judge replying 20 MB per verdict: read up to RAG_MAX_REPLY (64 KB), an invalid verdict that
    says why; a valid verdict's reason of 20 KB is kept to MAX_REASON characters."""
    with FakeJudge(pad=4 * 2**20) as server:  # " very" x 4 Mi: 20 MB
        env = {"RAG_JUDGE": "openai", "RAG_JUDGE_URL": server.url, "RAG_JUDGE_MODEL": MODEL}
        settings = Settings.from_env(env | {"RAG_DATA_DIR": str(tmp_path)})
        store = DataStore.from_settings(settings)
        judge = JudgeResource.from_settings(settings, store=store).get()  # as the pipeline makes it
        judged = judge_all(judge, ITEMS[:2], repeats=1, bias_sample=0)
    rows = judged.rows
    assert set(rows["verdict"]) == {"invalid"} and len(rows) == 2 * 3
    said = (
        f"reply not read: openai model '{MODEL}' {server.url}/v1/chat/completions: the reply is longer than"
    )
    assert rows["reason"].str.startswith(f"{said} 65,536 bytes (RAG_MAX_REPLY)").all(), rows[
        "reason"
    ].tolist()
    assert rows["reason"].str.len().max() <= MAX_REASON
    assert len(AnswerCache(tmp_path / "judge_cache", judge.judge_version)) == 6  # a rerun asks nothing
    with FakeJudge(pad=4000) as server:  # 20 KB of reason, under the limit: a valid verdict
        judge = make_judge("openai", tmp_path / "cache", url=server.url, model=MODEL, max_bytes=2**20)
        rows = judge_all(judge, ITEMS[:2], repeats=1, bias_sample=0).rows
    assert set(rows["verdict"]) <= {"yes", "no"} and 990 < rows["reason"].str.len().max() <= MAX_REASON
    assert rows["reason"].str.startswith("the fake judge says very very").all()
    assert rows["reason"].str.endswith(" very…").all()  # cut at a word
    assert "|reply=1048576|" in judge.judge_version  # another limit is another judge


def test_judge_version_names_backend_model_digest_and_code(tmp_path):
    """The model as its server names it, and the code that prompts it and reads its replies."""
    with FakeJudge() as server:
        judge = make_judge("ollama", tmp_path / "cache", url=server.url, model=MODEL)
    assert judge.judge_version.startswith(f"ollama:{MODEL}@{DIGEST}|")
    assert judge.judge_version.endswith(f"|judge@{fingerprint([ModelJudge, OllamaLLM])[:12]}")
