"""Where sentences end, for the three stages that cut text at them; each keeps its own rule on
purpose (changing one changes chunk ids or answers), so they live side by side here.
"""

import re

PARAGRAPH_END = re.compile(r"\n")
# section-split packs sentences: a cut after Japanese or ASCII sentence punctuation, or a period and a space
SENTENCE_SPLIT = re.compile(r"(?<=[。．！？!?])|(?<=[.] )")
# the recursive splitter's sentence end: a full stop and its closing brackets (not at a line end, which
# breaks there anyway), or `.!?` and the spaces after
SENTENCE_BREAK = re.compile(r"[。．！？]+[」』）)]*(?![。．！？」』）)\n])|[.!?]+[\"')\]]*[ \t]+")
# the extractive answerer's sentences: 。！？ always end one; ASCII . ! ? only before whitespace, so
# 15.6 and v1.2 stay whole; a line end too
SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])(?=\s)|\n")


def clipped(text: str, limit: int) -> str:
    """`text` on one line (its whitespace runs as one space), at most `limit` characters: cut at the
    last space before the limit (a word is never cut in two; a text without spaces, Japanese say, at
    the limit), `…` marking the cut."""
    line = " ".join(str(text).split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    space = cut.rfind(" ")
    return f"{cut[:space] if space > limit // 2 else cut}…"
