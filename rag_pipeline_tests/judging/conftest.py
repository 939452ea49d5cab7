"""Items to judge, made by hand."""

from rag_pipeline.lib.judging import ANSWERABLE, Item


def item(answer: str, passages: tuple[str, ...] = (), **changes) -> Item:
    fields = {
        "question_id": "1",
        "split": "dev",
        "strategy": "section",
        "retriever": "dense",
        "llm_version": "llm",
        "repeat": 0,
        "question": "デッドロックを検出した PostgreSQL はどんなエラーコードを返す?",
        "kind": ANSWERABLE,
        "passages": passages,
        "answer": answer,
        "abstained": answer == "ANSWER: NONE",
        "citation_valid": True,
        "evidence": ("SQLSTATE 40P01 が返ります",),
    }
    return Item(**(fields | changes))
