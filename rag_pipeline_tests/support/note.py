"""A note of the differential test's world: its sentences by section, each carrying the note's marker
(`mk<uid>z`), so a prompt or an answer that shows the note can be told."""

from dataclasses import dataclass, field

SECTION = "team"  # notes may lie in this section, whose `_index.md` may cascade groups onto them


@dataclass
class Note:
    uid: int
    slug: str
    sentences: list[list[str]]  # per section
    access: list[str] = field(default_factory=list)
    fixed: bool = False  # the notes that keep each group known: never deleted, renamed or opened
    in_section: bool = False  # under SECTION

    def marker(self) -> str:
        return f"mk{self.uid}z"

    def text(self) -> str:
        head = f'---\ntitle: "{self.slug}"\n' + (
            f"access: [{', '.join(self.access)}]\n" if self.access else ""
        )
        body = [f"{self.slug} のノートです。"]
        for i, section in enumerate(self.sentences):
            body.append(f"\n### 節 {i + 1}\n" + "\n".join(section))
        return head + "---\n" + "\n".join(body) + "\n"

    def all_sentences(self) -> list[str]:
        return [s for section in self.sentences for s in section]
