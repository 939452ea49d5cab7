"""Personal data out of what users asked, before it becomes a candidate question: e-mail addresses,
IP addresses, strings that look like keys or tokens, phone numbers, and the terms of the user's own
list (`RAG_REDACT_TERMS`), each replaced by a placeholder naming what was there.

The patterns lean towards removing: a 40-digit commit sha reads as a token and goes, as a wrongly
kept key would cost far more than a question reworded. Japanese text sits right against ASCII
without a space, so a match is delimited by ASCII letters and digits, never by `\\b`.
"""

from __future__ import annotations

import ipaddress
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

_ALNUM_BEFORE, _ALNUM_AFTER = r"(?<![A-Za-z0-9])", r"(?![A-Za-z0-9])"
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")
KNOWN_KEYS = re.compile(
    _ALNUM_BEFORE
    + r"(?:(?:sk|pk|rk)[-_][A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}"
    r"|[Bb]earer\s+[A-Za-z0-9._~+/-]{8,}=*)"
)
TOKEN_LIKE = re.compile(r"(?<![A-Za-z0-9_+/=-])[A-Za-z0-9_+/=-]{20,}(?![A-Za-z0-9_+/=-])")
IPV4 = re.compile(r"(?<![0-9.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?!\d|\.\d)")
IPV6_LIKE = re.compile(r"(?<![0-9A-Za-z:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![0-9A-Za-z:])")
PHONE = re.compile(
    r"(?<![0-9A-Za-z+])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?|\d{1,4}[ .-])\d{2,4}[ .-]\d{3,4}"
    + _ALNUM_AFTER
    + r"|"
    + _ALNUM_BEFORE
    + r"(?:\+\d{9,15}|0\d{9,10})"
    + _ALNUM_AFTER
)
MIN_PHONE_DIGITS = 9  # fewer: a version, a size or a count


def _token(found: str) -> bool:
    """A run of 20+ key characters that mixes digits into lower case (and upper case, or is long)."""
    digits = sum(c.isdigit() for c in found)
    lower, upper = any(c.islower() for c in found), any(c.isupper() for c in found)
    return digits >= 2 and lower and (upper or len(found) >= 32)


def _ipv6(found: str) -> bool:
    try:
        ipaddress.IPv6Address(found)
    except ValueError:
        return False
    return any(c not in ":0" for c in found)  # `::` alone is no address a person wrote


def _phone(found: str) -> bool:
    return sum(c.isdigit() for c in found) >= MIN_PHONE_DIGITS


@dataclass(frozen=True)
class Kind:
    label: str  # what one is called in the count line
    placeholder: str
    pattern: re.Pattern
    accept: Callable[[str], bool] | None = None


# in this order: an e-mail address holds dots and digits the later patterns would take apart
KINDS = (
    Kind("e-mail address", "[email]", EMAIL),
    Kind("key or token", "[key]", KNOWN_KEYS),
    Kind("key or token", "[key]", TOKEN_LIKE, _token),
    Kind("IP address", "[ip]", IPV4),
    Kind("IP address", "[ip]", IPV6_LIKE, _ipv6),
    Kind("phone number", "[phone]", PHONE, _phone),
)
TERM = "listed term"
PLURALS = {
    "e-mail address": "e-mail addresses",
    "key or token": "keys or tokens",
    "IP address": "IP addresses",
    "phone number": "phone numbers",
    TERM: "listed terms",
}


class RedactTermsError(ValueError):
    """The terms file cannot be read; the message names it."""


def read_terms(path: str) -> tuple[str, ...]:
    """The terms of `RAG_REDACT_TERMS`: one a line; blank lines and lines starting with `#` are not terms."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RedactTermsError(f"RAG_REDACT_TERMS={path}: cannot be read ({exc})") from None
    return tuple(t.strip() for t in text.splitlines() if t.strip() and not t.strip().startswith("#"))


@dataclass
class Redactor:
    """Replaces personal data in each text it is given, counting what it removed."""

    terms: Sequence[str] = ()
    counts: Counter = field(default_factory=Counter)

    def __call__(self, text: str) -> str:
        for kind in KINDS:
            text = self._replace(text, kind.pattern, kind.label, kind.placeholder, kind.accept)
        if self.terms:  # the longest first: a term inside another is not left half
            listed = sorted(set(self.terms), key=len, reverse=True)
            terms = re.compile("|".join(re.escape(t) for t in listed), re.IGNORECASE)
            text = self._replace(text, terms, TERM, "[term]", None)
        return text

    def _replace(self, text: str, pattern: re.Pattern, label: str, placeholder: str, accept) -> str:
        def one(match: re.Match) -> str:
            if accept is not None and not accept(match.group()):
                return match.group()
            self.counts[label] += 1
            return placeholder

        return pattern.sub(one, text)

    def summary(self) -> str:
        """One line: how many pieces of personal data were removed, of which kinds."""
        total = sum(self.counts.values())
        if not total:
            return "personal data removed: none found"
        kinds = [f"{n} {PLURALS[label] if n > 1 else label}" for label, n in self.counts.items()]
        return f"personal data removed: {total} ({', '.join(kinds)})"
