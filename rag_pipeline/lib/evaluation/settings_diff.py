"""What differs between two experiments' settings, as people read it."""

from __future__ import annotations


def embedder_name(embedding_version: str) -> str:
    """`backend:model` of an `embedding_version`, without the model's version and digest."""
    return ", ".join(v.split("@", 1)[0].split("/", 1)[0] for v in embedding_version.split(", "))


def _flat(settings: dict, prefix: str = "") -> dict[str, object]:
    flat = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            flat |= _flat(value, f"{prefix}{key}.")
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def changed(a: dict, b: dict) -> dict[str, tuple[object, object]]:
    """{setting: (a's value, b's value)} for every setting that differs (missing: None)."""
    fa, fb = _flat(a), _flat(b)
    return {k: (fa.get(k), fb.get(k)) for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k)}
