"""The answer backends' one small interface (`LLM`), and the chat backends behind it: Ollama's
`/api/chat` and the `/v1/chat/completions` of any OpenAI-compatible server (`extractive.py`: no model).

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

from rag_pipeline.lib.answers.prompts import PROMPT_VERSION, Prompt
from rag_pipeline.lib.answers.scoring import Reply
from rag_pipeline.lib.core import JsonClient, ServerError, bearer, without_v1
from rag_pipeline.lib.core.fingerprint import code_of

THINK_BLOCK = re.compile(r"<think>(.*?)</think>", re.S)


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
