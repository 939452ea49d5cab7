"""Access markup fails closed: every form `access` can take is either read as the groups it names or
an error naming the note; nothing that could be meant to restrict a note makes it public."""

import pytest
import yaml

from rag_pipeline.lib.sources import NotesSourceError, access_groups, read_notes, split_front_matter
from rag_pipeline_tests.support.repos import make_notes_repo

WHERE = "content/notes/a/index.md at commit 0123456789ab"


def groups(front_matter: str) -> tuple[str, ...]:
    return access_groups(yaml.safe_load(front_matter) or {}, WHERE)


@pytest.mark.parametrize(
    ("front_matter", "expected"),
    [
        ("title: Public", ()),
        ("", ()),
        ("access: sre", ("sre",)),
        ("access: ' sre '", ("sre",)),
        ("access: [sre]", ("sre",)),
        ("access: [sre, payments]", ("payments", "sre")),
        ("access: [sre, sre]", ("sre",)),
        ("access: sre, payments", ("payments", "sre")),
        ("access: 'sre,payments'", ("payments", "sre")),
        ("access: [sre, 'payments, hr']", ("hr", "payments", "sre")),
        ("access:\n  - sre\n  - payments", ("payments", "sre")),
        ("access: 給与チーム", ("給与チーム",)),
    ],
)
def test_accepted_forms(front_matter, expected):
    assert groups(front_matter) == expected


@pytest.mark.parametrize(
    ("front_matter", "message"),
    [
        ("Access: [sre]", r"front matter key 'Access' is not read; write `access` \(lower case\)"),
        ("ACCESS: sre", r"front matter key 'ACCESS' is not read; write `access`"),
        ("access: [sre]\nAccess: [hr]", r"front matter key 'Access' is not read"),
        ("access:", r"`access` is empty \(None\); a public note omits the key"),
        ("access: ~", r"`access` is empty \(None\)"),
        ('access: ""', r"`access` is empty \(''\)"),
        ("access: '  '", r"`access` is empty"),
        ("access: []", r"`access` is empty \(\[\]\)"),
        ("access: sre,", r"`access` holds an empty group name: 'sre,'"),
        ("access: [sre, '']", r"`access` holds an empty group name"),
        ("access: [sre, 7]", r"`access` must be a group name or a list of group names, got \['sre', 7\]"),
        ("access: 7", r"must be a group name or a list of group names, got 7"),
        ("access: yes", r"must be a group name or a list of group names, got True"),
        ("access: [[sre]]", r"must be a group name or a list of group names"),
        ("access: {sre: true}", r"must be a group name or a list of group names"),
    ],
)
def test_rejected_forms_name_the_note(front_matter, message):
    with pytest.raises(NotesSourceError, match=message) as error:
        groups(front_matter)
    assert str(error.value).startswith(f"{WHERE}: ")


@pytest.mark.parametrize(
    ("header", "expected"),
    [('access = "sre, payments"', ("payments", "sre")), ("access = ['sre']", ("sre",))],
)
def test_toml_front_matter_follows_the_same_rule(header, expected):
    fields, _ = split_front_matter(f"+++\n{header}\n+++\nbody\n")
    assert access_groups(fields, WHERE) == expected


@pytest.mark.parametrize("toml", ['access = ""', "access = []", "Access = ['sre']"])
def test_toml_empty_or_miscased_access_is_an_error(toml):
    fields, _ = split_front_matter(f"+++\n{toml}\n+++\nbody\n")
    with pytest.raises(NotesSourceError):
        access_groups(fields, WHERE)


@pytest.mark.parametrize(
    "header",
    ["Access: [sre]", "access:", "access: []"],
)
def test_read_notes_names_the_file_and_the_commit(tmp_path, header):
    files = {
        "content/notes/a/index.md": f"---\ntitle: A\n{header}\n---\n本文\n",
        "content/notes/b/index.md": "---\ntitle: B\n---\n公開\n",
    }
    repo = make_notes_repo(tmp_path / "r", files)
    with pytest.raises(NotesSourceError) as error:
        read_notes(repo.head.commit, "content/notes/**/index.md", [])
    assert str(error.value).startswith(f"content/notes/a/index.md at commit {repo.head.commit.hexsha[:12]}: ")


def test_read_notes_splits_a_comma_list(tmp_path):
    files = {"content/notes/a/index.md": "---\ntitle: A\naccess: sre, payments\n---\n本文\n"}
    repo = make_notes_repo(tmp_path / "r", files)
    (note,) = read_notes(repo.head.commit, "content/notes/**/index.md", [])
    assert note.access == ("payments", "sre")
