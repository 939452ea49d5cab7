"""Access markup fails closed: every form `access` can take is either read as the groups it names or
an error naming the note; nothing that could be meant to restrict a note makes it public."""

import pytest
import yaml

from rag_pipeline.lib.sources import (
    FrontMatterError,
    NotesSourceError,
    access_groups,
    clean_markdown,
    read_notes,
    split_front_matter,
)
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
        # under `params`, and keys that only look like `access`
        ("params: {access: [sre]}", ("sre",)),
        ("params:\n  access: sre, payments", ("payments", "sre")),
        ("params: {title: x}", ()),
        ("params:", ()),
        ("access: [sre]\nparams: {access: [sre]}", ("sre",)),
        ("access: sre, payments\nparams: {access: [payments, sre]}", ("payments", "sre")),
        ("accent: blue\naccept: [pdf]\nsuccess: true\nexcess: 2\naliases: [/a]", ()),
        ("params: {accent: blue}", ()),
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
        # keys near `access`, and `params`
        ("acess: [sre]", r"front matter key 'acess' is not read; did you mean `access`\?"),
        ("acces: [sre]", r"key 'acces' is not read; did you mean `access`"),
        ("accesss: [sre]", r"key 'accesss' is not read"),
        ("accsess: [sre]", r"key 'accsess' is not read"),
        ("Acess: [sre]", r"key 'Acess' is not read; did you mean"),
        ("'access ': [sre]", r"key 'access ' is not read; did you mean `access`"),
        ("accessed: 2024-01-01", r"key 'accessed' is not read"),
        ("params: {acess: [sre]}", r"front matter key 'params.acess' is not read; did you mean `access`"),
        ("params: {Access: [sre]}", r"key 'params.Access' is not read; write `access` \(lower case\)"),
        (
            "Params: {access: [sre]}",
            r"key 'Params.access' is not read; groups are read only from `access` at the top level or under `params`",
        ),
        ("param: {access: [sre]}", r"key 'param.access' is not read; groups are read only"),
        ("cascade: {params: {access: [sre]}}", r"key 'cascade.params.access' is not read"),
        ("resources: [{src: a.png, params: {acess: x}}]", r"key 'resources\[0\].params.acess' is not read"),
        ("params: {access: []}", r"`params.access` is empty \(\[\]\)"),
        ("params: {access: [sre, 7]}", r"`params.access` must be a group name or a list of group names"),
        ("params: access=sre", r"`params` must be a mapping of fields, got 'access=sre'"),
        (
            "access: [sre]\nparams: {access: [hr]}",
            r"`access` \['sre'\] and `params.access` \['hr'\] name different groups; give the groups once",
        ),
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


# -- front matter as Hugo reads it


@pytest.mark.parametrize(
    ("raw", "fields", "body"),
    [
        ("\n\n---\naccess: [sre]\n---\n本文\n", {"access": ["sre"]}, "本文\n"),
        (" \n\t\n  ---\naccess: [sre]\n---\n本文\n", {"access": ["sre"]}, "本文\n"),
        ("\r\n\r\n---\r\naccess: sre\r\n---\r\n本文\r\n", {"access": "sre"}, "本文\n"),
        ("\n+++\naccess = ['sre']\n+++\n本文\n", {"access": ["sre"]}, "本文\n"),
        ('{"title": "x", "access": ["sre"]}\n本文\n', {"title": "x", "access": ["sre"]}, "本文\n"),
        (
            '\n\n{\n  "access": ["sre"],\n  "params": {"a": "{}"}\n}\n本文\n',
            {"access": ["sre"], "params": {"a": "{}"}},
            "本文\n",
        ),
        ("{}\n本文\n", {}, "本文\n"),
        ("本文 {x}\n---\naccess: [sre]\n---\n", {}, "本文 {x}\n---\naccess: [sre]\n---\n"),
        ("- list\n", {}, "- list\n"),
    ],
)
def test_front_matter_after_blank_lines_and_json_is_read(raw, fields, body):
    assert split_front_matter(raw) == (fields, body)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("\n\n---\naccess: [sre]\n本文\n", r"front matter opened with '---' on line 3 is never closed"),
        ("\n+++\naccess = ['sre']\n本文\n", r"front matter opened with '\+\+\+' on line 2 is never closed"),
        (
            '{"access": ["sre"]\n本文\n',
            r"invalid JSON front matter: .* \(a `\{` first on line 1 opens JSON front matter, as in Hugo\)",
        ),
        ("{access: [sre]}\n本文\n", r"invalid JSON front matter: Expecting property name"),
        ("{{< notice >}}\n本文\n", r"invalid JSON front matter"),
        (
            "\n----\naccess: [sre]\n---\n本文\n",
            r"line 2: '----' opens front matter in Hugo; write the fence '---' alone on its line",
        ),
        ("--- access: [sre]\n---\n本文\n", r"write the fence '---' alone"),
        ("+++ x\n+++\n", r"write the fence '\+\+\+' alone"),
        ("#+access: sre\n本文\n", r"Org-mode front matter \(`#\+`\) is not read"),
        ("<!--\n---\naccess: [sre]\n---\n-->\n本文\n", r"front matter inside an HTML comment"),
        ("---\naccess: [sre]\naccess: []\n---\n", r"invalid YAML front matter: .*duplicate key 'access'"),
        ("---\nparams: {access: [sre]}\nparams: {}\n---\n", r"duplicate key 'params'"),
        ('{"access": ["sre"], "access": []}\n', r"invalid JSON front matter: duplicate key 'access'"),
        ("---\n- access\n---\n", r"front matter must be a mapping of fields, got list"),
    ],
)
def test_what_looks_like_front_matter_and_does_not_parse_is_an_error(raw, message):
    with pytest.raises(FrontMatterError, match=message):
        split_front_matter(raw)


def test_the_cleaner_never_makes_front_matter_text():
    for raw in ('\n{"title": "x", "access": ["sre"]}\n本文\n', "\n\n---\naccess: [sre]\n---\n本文\n"):
        assert clean_markdown(raw) == "本文\n"
    with pytest.raises(FrontMatterError):
        clean_markdown("\n---\naccess: [sre]\n本文\n")


@pytest.mark.parametrize(
    "raw",
    [
        "\n\n---\ntitle: A\naccess: [sre]\n---\n本文\n",
        '{"title": "A", "access": ["sre"]}\n本文\n',
        "---\ntitle: A\nparams: {access: [sre]}\n---\n本文\n",
        "+++\ntitle = 'A'\n[params]\naccess = ['sre']\n+++\n本文\n",
    ],
)
def test_read_notes_restricts_every_hugo_form(tmp_path, raw):
    repo = make_notes_repo(tmp_path / "r", {"content/notes/a/index.md": raw})
    (note,) = read_notes(repo.head.commit, "content/notes/**/index.md", [])
    assert note.access == ("sre",) and note.title == "A"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            "---\ntitle: A\nacess: [sre]\n---\n本文\n",
            "front matter key 'acess' is not read; did you mean `access`?",
        ),
        (
            "\n---\ntitle: A\naccess: [sre]\n本文\n",
            "front matter opened with '---' on line 2 is never closed",
        ),
        ('{"title": "A", "access": ["sre"],}\n本文\n', "invalid JSON front matter"),
    ],
)
def test_read_notes_errors_name_the_file_and_the_commit(tmp_path, raw, message):
    repo = make_notes_repo(tmp_path / "r", {"content/notes/a/index.md": raw})
    with pytest.raises(NotesSourceError) as error:
        read_notes(repo.head.commit, "content/notes/**/index.md", [])
    where = f"content/notes/a/index.md at commit {repo.head.commit.hexsha[:12]}: "
    assert str(error.value).startswith(where) and message in str(error.value)
