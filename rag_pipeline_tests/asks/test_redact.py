"""Personal data out of asked questions: what goes, what a question about the notes keeps, the count."""

import pytest

from rag_pipeline.lib.asks import Redactor, RedactTermsError, read_terms

REMOVED = [
    ("mail me at ops.lead@example.com", "mail me at [email]"),
    ("連絡はops.lead+rag@mail.example.co.jpまで", "連絡は[email]まで"),
    ("電話 03-1234-5678 か 090-1234-5678", "電話 [phone] か [phone]"),
    ("+81 90 1234 5678、(555) 123-4567、+1-555-123-4567、09012345678", "[phone]、[phone]、[phone]、[phone]"),
    ("server 10.0.0.12 and 192.168.1.1.", "server [ip] and [ip]."),
    ("fe80::1ff:fe23:4567:890a と 2001:db8::1 から", "[ip] と [ip] から"),
    ("key sk-proj-abcdEFGH12345678ijkl を使った", "key [key] を使った"),
    ("AKIAIOSFODNN7EXAMPLE と ghp_abcdefghijklmnopqrstuvwxyz0123", "[key] と [key]"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefSIGNATURE12", "[key]"),
    ("Authorization: Bearer abc.def-ghi123", "Authorization: [key]"),
    ("トークンaZ3kQ9xP2mW8vN4tR7yL1で", "トークン[key]で"),
]
KEPT = [
    "2024-01-15 の障害は 12:30:45 に発生した",
    "version 1.22.333 で port 5432、8 GB、recall 0.95、1 000 000 行",
    "RAG_BUDGET_LATENCY_P95_MS を設定すると？",
    "std::vector と SQLSTATE 40P01 の違いは",
    "commit 2947056ae488 の multilingual-e5-small と text-embedding-3-small",
    "WAL を使うと書き込みが速くなるのはなぜですか？",
]


@pytest.mark.parametrize(("text", "redacted"), REMOVED)
def test_personal_data_is_replaced_by_what_it_was(text, redacted):
    assert Redactor()(text) == redacted


@pytest.mark.parametrize("text", KEPT)
def test_a_question_about_the_notes_is_kept(text):
    redact = Redactor()
    assert redact(text) == text and redact.summary() == "personal data removed: none found"


def test_the_user_s_terms_and_one_line_counting_what_went(tmp_path):
    terms = tmp_path / "terms.txt"
    terms.write_text("# people and projects\nTanaka\n\nProject Falcon\nFalcon\n", encoding="utf-8")
    redact = Redactor(read_terms(str(terms)))
    assert redact("tanaka さんの project falcon と Falcon 2") == "[term] さんの [term] と [term] 2"
    assert redact("mail tanaka@example.com") == "mail [email]"  # the address whole, not its name
    assert redact.summary() == "personal data removed: 4 (3 listed terms, 1 e-mail address)"
    with pytest.raises(RedactTermsError, match=f"RAG_REDACT_TERMS={tmp_path / 'none.txt'}: cannot be read"):
        read_terms(str(tmp_path / "none.txt"))
