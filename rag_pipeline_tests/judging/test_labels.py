"""People's labels: the file read strictly, a label of a changed answer stale, the labelling order a
stratified sample, and `python -m rag_pipeline.judge label` recording and resuming."""

import io
import json

import pandas as pd
import pytest

from rag_pipeline.cli.judge import main
from rag_pipeline.lib.judging import LabelsError, answer_sha256, attach_labels, label_order, read_labels
from rag_pipeline_tests.support.errors import one_line_error
from rag_pipeline_tests.support.runs import cli

ITEMS = pd.DataFrame(
    {
        "question_id": [str(n % 40) for n in range(60)],
        "strategy": ["section"] * 40 + ["-"] * 20,
        "retriever": ["dense"] * 40 + ["oracle"] * 20,
        "llm_version": "llm",
        "question": [f"question {n % 40}" for n in range(60)],
        "kind": "answerable",
        "passages": [["passage"]] * 60,
        "evidence": [["evidence"]] * 60,
        "answer": [f"answer {n}" for n in range(60)],
        "answer_sha256": [answer_sha256(f"answer {n}") for n in range(60)],
    }
)


def label(n: int, value, criterion: str = "faithful", answer: str | None = None) -> dict:
    row = ITEMS.iloc[n]
    return {
        "question_id": row["question_id"],
        "strategy": row["strategy"],
        "retriever": row["retriever"],
        "criterion": criterion,
        "label": value,
        "answer_sha256": answer_sha256(answer or row["answer"]),
    }


def test_labels_name_an_answer_and_a_changed_one_is_stale(tmp_path):
    path = tmp_path / "labels.json"
    unknown = [label(0, True) | {"question_id": "999"}, label(1, False) | {"strategy": "nosuch"}]
    path.write_text(
        json.dumps(
            [
                label(0, True),
                label(1, False, "correct"),
                label(2, True, answer="old"),
                label(3, None),
                *unknown,
            ]
        )
    )
    items, counts = attach_labels(ITEMS, read_labels(path))
    assert (counts.used, counts.stale, counts.skipped) == (2, 1, {("section", "dense", "faithful"): 1})
    assert counts.warning() == "2 labels name no judged answer: question 999, strategy nosuch"
    assert items["faithful_label"].astype(object).iloc[:4].tolist() == [True, pd.NA, pd.NA, pd.NA]
    assert items["correct_label"].astype(object).iloc[:2].tolist() == [pd.NA, False]


@pytest.mark.parametrize(
    "entries, said",
    [
        ("{}", "not a JSON list"),
        ("[1]", "label 1: not a JSON object"),
        (
            json.dumps([{"question_id": "1"}]),
            "label 1: missing strategy, retriever, criterion, label, answer_sha256",
        ),
        (
            json.dumps([label(0, True, "faithfull")]),
            "criterion 'faithfull' is none of faithful, correct, cites_support",
        ),
        (json.dumps([label(0, "yes")]), "label 'yes' is not true, false or null"),
        (json.dumps([label(0, True) | {"answer_sha256": "abc"}]), "answer_sha256 is not 64 lowercase hex"),
        (
            json.dumps([label(0, True), label(0, False)]),
            "question 0 (section/dense, faithful) is labelled both",
        ),
    ],
)
def test_a_bad_labels_file_is_one_line_naming_it(tmp_path, entries, said):
    assert said in one_line_error(tmp_path / "labels.json", entries, read_labels, LabelsError)


def test_the_order_samples_each_run_in_proportion_and_the_served_run_first():
    order = label_order(ITEMS, seed=3)
    assert sorted(order) == list(range(60)) and order != list(range(60))
    first = ITEMS.loc[order[:30], "retriever"].value_counts()
    assert first["dense"] == 20 and first["oracle"] == 10
    assert label_order(ITEMS, seed=3) == order
    served = label_order(ITEMS, seed=3, first="-/oracle")
    assert set(ITEMS.loc[served[:20], "retriever"]) == {"oracle"} and sorted(served) == list(range(60))


def test_label_records_each_answer_and_resumes_where_it_stopped(tmp_path, monkeypatch):
    data = tmp_path / "data"
    (data / "answers").mkdir(parents=True)
    ITEMS.to_parquet(data / "answers" / "judged_items.parquet")
    monkeypatch.setenv("RAG_DATA_DIR", str(data))
    out = tmp_path / "labels.json"
    args = ["label", "--criterion", "correct", "--n", "4", "--out", str(out)]
    shown = io.StringIO()
    assert main(args, io.StringIO("y\nwhat\ns\nn\n"), shown) == 0  # then the input ends: stop
    first = json.loads(out.read_text())
    assert [e["label"] for e in first] == [True, None, False]
    assert "Reference (gold evidence):\nevidence" in shown.getvalue()
    assert "2 of 4 labels of correct" in shown.getvalue()
    assert main(args, io.StringIO("y\ny\ny\n"), io.StringIO()) == 0
    labels = json.loads(out.read_text())
    assert labels[:3] == first and [e["label"] for e in labels[3:]] == [True, True]
    done = [(e["question_id"], e["strategy"]) for e in labels]
    assert len(set(done)) == 5  # no answer shown twice
    assert main(["label", "--criterion", "correct", "--n", "0", "--out", str(out)]) == 2


def test_a_bad_labels_file_stops_make_run_with_one_line(small_env, tmp_path):
    bad = tmp_path / "labels.json"
    bad.write_text(json.dumps([label(0, "yes")]))
    for path, said in [
        (bad, "RAG_JUDGE_LABELS: labels.json: label 1: label 'yes'"),  # from where the command starts
        (tmp_path / "no.json", "error: RAG_JUDGE_LABELS=no.json: no such file"),
        (tmp_path, "error: RAG_JUDGE_LABELS: .: is a directory, not a labels file"),
    ]:
        done = cli("rag_pipeline.run", [], small_env | {"RAG_JUDGE_LABELS": str(path)}, tmp_path)
        assert done.returncode == 2 and said in done.stderr
        assert len([line for line in done.stderr.splitlines() if line.startswith("error")]) == 1
