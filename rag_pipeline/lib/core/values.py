"""Parsers of setting values: each returns the value as the pipeline uses it, or raises ValueError
(its message, if any, says what is wrong) for `rag_pipeline.settings` to name the variable."""

from __future__ import annotations

import math
import zoneinfo
from collections.abc import Callable
from typing import Any


def text(value: str) -> str:
    return value.strip()


def choice(*options: str) -> Callable[[str], str]:
    def parse(value: str) -> str:
        if value.strip().lower() not in options:
            raise ValueError
        return value.strip().lower()

    return parse


def flag(value: str) -> bool:
    lowered = value.strip().lower()
    if lowered not in ("1", "0", "true", "false", "yes", "no", "on", "off", ""):
        raise ValueError
    return lowered in ("1", "true", "yes", "on")


def number(kind: type, low: float, high: float = math.inf) -> Callable[[str], Any]:
    """A number from `low` to `high`: a count without a bound is a run that never ends."""

    def parse(value: str) -> Any:
        number = kind(value)
        if not math.isfinite(number):  # NaN and inf: no deadline, no count
            raise ValueError(f"{value.strip()} is not a finite number")
        if not low <= number <= high:
            raise ValueError
        return number

    return parse


def optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """`parse`, or None for an empty value."""
    return lambda value: parse(value) if value.strip() else None


def timezone(value: str) -> str:
    try:
        zoneinfo.ZoneInfo(value.strip())
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError("not in the time zone database; e.g. UTC, Europe/Berlin, Asia/Tokyo") from None
    return value.strip()


def names(value: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    if not names:
        raise ValueError
    return names


def minutes(value: str) -> tuple[float, ...]:
    """Comma-separated minutes (`1,5,30`), each >= 0, as seconds; `0` alone: none."""
    try:
        found = tuple(float(v) * 60 for v in value.split(",") if v.strip())
    except ValueError:
        raise ValueError from None
    if not found or any(not math.isfinite(v) or v < 0 for v in found):
        raise ValueError
    return () if found == (0.0,) else found


def fraction(value: str) -> float:
    """A share from 0 to 1."""
    number = float(value)
    if not 0.0 <= number <= 1.0:
        raise ValueError
    return number


def tags(value: str) -> tuple[tuple[str, str], ...]:
    """Comma-separated `key=value` pairs, as (key, value) tuples."""
    pairs = []
    for item in (i.strip() for i in value.split(",") if i.strip()):
        key, equals, tag = (part.strip() for part in item.partition("="))
        if not (key and equals and tag):
            raise ValueError(f"{item!r} is not key=value")
        pairs.append((key, tag))
    return tuple(pairs)
