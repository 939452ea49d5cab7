"""What users asked, kept as safely as the notes: the ask log (one record per question `ask`
answered, readable only with the asker's groups), flags on the failures found in use, and those
failures as candidate gold questions with personal data removed."""

from rag_pipeline.lib.asks.candidates import ID_PREFIX, candidate, candidates, hints
from rag_pipeline.lib.asks.log import (
    ASKS_DIR,
    OFF,
    AskLogError,
    Visible,
    append,
    flag,
    log_location,
    new_record,
    notes_access,
    read_log,
    visible,
)
from rag_pipeline.lib.asks.redact import Redactor, RedactTermsError, read_terms

__all__ = [
    "ASKS_DIR",
    "ID_PREFIX",
    "OFF",
    "AskLogError",
    "RedactTermsError",
    "Redactor",
    "Visible",
    "append",
    "candidate",
    "candidates",
    "flag",
    "hints",
    "log_location",
    "new_record",
    "notes_access",
    "read_log",
    "read_terms",
    "visible",
]
