"""An HTTP cross-encoder reranker: Text Embeddings Inference's `/rerank`, or the Cohere-style
`/v1/rerank` that Infinity, Jina and vLLM also serve."""

from __future__ import annotations

from rag_pipeline.lib.core import JsonClient


class RerankError(RuntimeError):
    """The reranker's answer cannot be used."""


class HttpReranker:
    def __init__(
        self, url: str, model: str = "", protocol: str = "tei", timeout: float = 60.0, max_retries: int = 4
    ):
        if protocol not in ("tei", "cohere"):
            raise ValueError(f"unknown reranker protocol {protocol!r}; choose 'tei' or 'cohere'")
        self.model, self.protocol = model, protocol
        self.http = JsonClient(url, f"reranker ({protocol})", timeout=timeout, max_retries=max_retries)

    @property
    def version(self) -> str:
        return f"{self.protocol}:{self.model or 'served-model'}"

    def scores(self, query: str, texts: list[str]) -> list[float]:
        """One relevance score per text, in the order given."""
        if not texts:
            return []
        if self.protocol == "tei":
            answer = self.http.post("/rerank", {"query": query, "texts": texts, "truncate": False})
            items, key = answer, "score"
        else:
            body = {"query": query, "documents": texts} | ({"model": self.model} if self.model else {})
            answer = self.http.post("/v1/rerank", body)
            items, key = answer.get("results", []) if isinstance(answer, dict) else [], "relevance_score"
        scores: dict[int, float] = {}
        for item in items if isinstance(items, list) else []:
            scores[int(item["index"])] = float(item[key])
        if sorted(scores) != list(range(len(texts))):
            raise RerankError(
                f"{self.http.url}: asked to score {len(texts)} texts, got indices {sorted(scores)[:10]}"
            )
        return [scores[i] for i in range(len(texts))]
