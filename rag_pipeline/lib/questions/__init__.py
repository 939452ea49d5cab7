"""Gold questions: their labels, their split (dev or test), the gold status of each label at the
indexed commit, the drift report and its suggestions, the refresh of a questions file, generated
drafts, and whether a question quotes a note its asker may not read."""

from rag_pipeline.lib.questions.drafts import CATEGORIES, Draft, draft
from rag_pipeline.lib.questions.evidence import evidence_problems, invalid_gold_message
from rag_pipeline.lib.questions.fields import ASKED, awaiting_evidence
from rag_pipeline.lib.questions.generate import OFFLINE_CATEGORIES, Candidate, Note, notes_at
from rag_pipeline.lib.questions.gold_file import (
    QUESTIONS,
    Evidence,
    Question,
    QuestionsError,
    asker_groups,
    askers,
    check_notes_exist,
    load_questions,
    parse_questions,
    question_splits,
    questions_bytes,
    questions_frame,
    questions_from_frame,
    usable,
    with_access,
)
from rag_pipeline.lib.questions.history import assess, note_versions, resolve_label_commits
from rag_pipeline.lib.questions.located import Located, Notes, locate_questions
from rag_pipeline.lib.questions.prompted import LLM_CATEGORIES, Asker
from rag_pipeline.lib.questions.quoting import MIN_RUN, QuoteCheck, quoting_warnings
from rag_pipeline.lib.questions.refresh import RELABEL_THRESHOLD, drift_md, refresh, stale_suggestions
from rag_pipeline.lib.questions.similarity import SENTENCE, WORD, cut_level, dice, most_similar_span
from rag_pipeline.lib.questions.splits import DEV, SPLITS, TEST, TEST_SHARE, stratified_splits
from rag_pipeline.lib.questions.status import (
    DRIFT_COLUMNS,
    DRIFT_SCHEMA,
    current_versions,
    gold_counts,
    gold_problems,
)
from rag_pipeline.lib.questions.verify import N_CHARS, N_WORDS, Verified, shared_run, verify

__all__ = [
    "ASKED",
    "CATEGORIES",
    "DEV",
    "DRIFT_COLUMNS",
    "DRIFT_SCHEMA",
    "LLM_CATEGORIES",
    "MIN_RUN",
    "N_CHARS",
    "N_WORDS",
    "OFFLINE_CATEGORIES",
    "QUESTIONS",
    "RELABEL_THRESHOLD",
    "SENTENCE",
    "SPLITS",
    "TEST",
    "TEST_SHARE",
    "WORD",
    "Asker",
    "Candidate",
    "Draft",
    "Evidence",
    "Located",
    "Note",
    "Notes",
    "Question",
    "QuestionsError",
    "QuoteCheck",
    "Verified",
    "asker_groups",
    "askers",
    "assess",
    "awaiting_evidence",
    "check_notes_exist",
    "current_versions",
    "cut_level",
    "dice",
    "draft",
    "drift_md",
    "evidence_problems",
    "gold_counts",
    "gold_problems",
    "invalid_gold_message",
    "load_questions",
    "locate_questions",
    "most_similar_span",
    "note_versions",
    "notes_at",
    "parse_questions",
    "question_splits",
    "questions_bytes",
    "questions_frame",
    "questions_from_frame",
    "quoting_warnings",
    "refresh",
    "resolve_label_commits",
    "shared_run",
    "stale_suggestions",
    "stratified_splits",
    "usable",
    "verify",
    "with_access",
]
