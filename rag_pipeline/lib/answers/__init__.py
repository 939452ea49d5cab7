"""Answers with citations: prompts, the answer backends, the answer cache, scoring."""

from rag_pipeline.lib.answers.answering import (
    ANSWER_COLUMNS,
    Answered,
    answer_runs,
    answered_runs,
    answers_md,
    run_units,
)
from rag_pipeline.lib.answers.cache import AnswerCache, answer_all, reply_texts, reuse_line
from rag_pipeline.lib.answers.extractive import ANSWERERS, ExtractiveLLM, make_llm, sentences
from rag_pipeline.lib.answers.llm import (
    LLM,
    ChatLLM,
    LLMError,
    OllamaLLM,
    OpenAILLM,
    Sampling,
    split_thinking,
)
from rag_pipeline.lib.answers.prompts import ABSTAIN, PROMPT_VERSION, Prompt, make_prompt
from rag_pipeline.lib.answers.scoring import (
    BASELINE_STRATEGY,
    SHORT_KEY,
    Reply,
    answer_summary,
    answer_table,
    parse_reply,
    score_answers,
    without_citations,
)
from rag_pipeline.lib.answers.units import NONE, ORACLE, Unit, context_units, oracle_units, prompt_units

__all__ = [
    "ABSTAIN",
    "ANSWERERS",
    "ANSWER_COLUMNS",
    "BASELINE_STRATEGY",
    "LLM",
    "NONE",
    "ORACLE",
    "PROMPT_VERSION",
    "SHORT_KEY",
    "AnswerCache",
    "Answered",
    "ChatLLM",
    "ExtractiveLLM",
    "LLMError",
    "OllamaLLM",
    "OpenAILLM",
    "Prompt",
    "Reply",
    "Sampling",
    "Unit",
    "answer_all",
    "answer_runs",
    "answer_summary",
    "answer_table",
    "answered_runs",
    "answers_md",
    "context_units",
    "make_llm",
    "make_prompt",
    "oracle_units",
    "parse_reply",
    "prompt_units",
    "reply_texts",
    "reuse_line",
    "run_units",
    "score_answers",
    "sentences",
    "split_thinking",
    "without_citations",
]
