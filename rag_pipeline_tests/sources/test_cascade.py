"""Hugo's `cascade`: a section's `_index.md` gives the notes below it their `access` as Hugo applies
it (a note's own groups win, the closest section wins, `target` narrows by path and kind), and
whatever of it cannot be read stops the build with one line naming the `_index.md`. A note whose
file is unchanged but whose cascaded groups change gets a new version, in a fresh read and in one
that reuses the last build's notes, and so do its versions at label commits (gold status)."""

import git
import pytest

from rag_pipeline.lib.questions.history import note_versions
from rag_pipeline.lib.sources import NotesSourceError, hugo_glob, logical_path, read_notes, readable_access
from rag_pipeline_tests.support.repos import commit_files, make_notes_repo

GLOB = "content/notes/**/index.md"
PUBLIC = "---\ntitle: {0}\n---\n{0} の本文。\n"
NOTES = {
    "content/notes/db/deadlock/index.md": PUBLIC.format("Deadlock"),
    "content/notes/db/vacuum/index.md": "---\ntitle: Vacuum\naccess: [payments]\n---\n本文。\n",
    "content/notes/net/tcp/index.md": PUBLIC.format("TCP"),
}


def read(repo: git.Repo, known=None) -> dict:
    return {n.note: n for n in read_notes(repo.head.commit, GLOB, ["_index.md"], known)}


def access(repo: git.Repo) -> dict[str, tuple[str, ...]]:
    return {slug: n.access for slug, n in read(repo).items()}


def repo_with(tmp_path, indexes: dict[str, str]) -> git.Repo:
    return make_notes_repo(tmp_path / "notes", NOTES | indexes)


@pytest.mark.parametrize(
    "front_matter",
    [
        "---\ntitle: DB\ncascade:\n  params:\n    access: [sre]\n---\n",
        "---\ncascade: {access: sre}\n---\n",
        "+++\ntitle = 'DB'\n[cascade.params]\naccess = ['sre']\n+++\n",
        "+++\n[[cascade]]\n[cascade.params]\naccess = ['sre']\n+++\n",
        '{"cascade": [{"params": {"access": ["sre"]}, "target": {"kind": "{page,section}"}}]}\n',
        "---\ncascade:\n  access: [sre]\n  _target: {path: '/notes/db/**'}\n---\n",
        "---\ncascade:\n  - params: {banner: a.png}\n    target: {environment: production}\n  - access: [sre]\n---\n",
    ],
)
def test_a_section_cascades_its_groups_onto_the_notes_below(tmp_path, front_matter):
    repo = repo_with(tmp_path, {"content/notes/db/_index.md": front_matter})
    notes = read(repo)
    assert notes["deadlock"].access == ("sre",)
    assert notes["deadlock"].cascade == "content/notes/db/_index.md"
    assert notes["vacuum"].access == ("payments",) and notes["vacuum"].cascade == ""  # its own groups win
    assert notes["tcp"].access == () and notes["tcp"].cascade == ""  # not below the section


def test_the_closest_matching_section_wins_and_targets_narrow(tmp_path):
    indexes = {
        "content/_index.md": "---\ncascade: {params: {access: [ops]}}\n---\n",
        "content/notes/_index.md": (
            "---\ncascade:\n  - access: [sre]\n    target: {path: '/notes/db/**'}\n"
            "  - access: [hr]\n    target: {path: '/notes/{net,hr}/*/'}\n---\n"
        ),
        "content/notes/db/_index.md": "---\ncascade: {access: [dba], target: {kind: section}}\n---\n",
    }
    repo = repo_with(tmp_path, indexes)
    commit_files(repo, {"content/notes/misc/index.md": PUBLIC.format("Misc")}, "a note elsewhere")
    # db's own cascade targets sections only; the notes section's first entry matches deadlock;
    # tcp's path has no trailing slash, so only the home page's cascade reaches it
    assert access(repo) == {"deadlock": ("sre",), "vacuum": ("payments",), "tcp": ("ops",), "misc": ("ops",)}


@pytest.mark.parametrize(
    ("front_matter", "message"),
    [
        ("---\ncascade: {params: {access: [sre]}\n---\n", "invalid YAML front matter"),
        ("---\ncascade: sre\n---\n", "`cascade` must be a mapping or a list of mappings, got 'sre'"),
        (
            "---\ncascade: {params: {acess: [sre]}}\n---\n",
            "key 'cascade.params.acess' is not read; did you mean",
        ),
        ("---\ncascade: [{Access: [sre]}]\n---\n", "key 'cascade[0].Access' is not read; write `access`"),
        ("---\ncascade: {Params: {access: [sre]}}\n---\n", "key 'cascade.Params.access' is not read"),
        ("---\ncascade: {access: []}\n---\n", "`cascade.access` is empty ([])"),
        ("---\ncascade: {access: [sre], params: {access: [hr]}}\n---\n", "name different groups"),
        (
            "---\ncascade: {access: sre, target: {environment: production}}\n---\n",
            "`cascade.target.environment` is not read (it depends on how Hugo builds the site)",
        ),
        ("---\ncascade: {access: sre, _target: {lang: en}}\n---\n", "`cascade._target.lang` is not read"),
        ("---\ncascade: {access: sre, target: {sites: {matrix: {}}}}\n---\n", "`cascade.target.sites`"),
        ("---\ncascade: {access: sre, target: {pth: /notes}}\n---\n", "`cascade.target.pth` is not read"),
        ("---\ncascade: {access: sre, target: {path: '/a/{b'}}\n---\n", "`{` is never closed"),
        ("---\ncascade: {access: sre, target: {kind: pages}}\n---\n", "matches no page kind"),
        ("---\ncascade: {access: sre, target: sre}\n---\n", "`cascade.target` must be a mapping"),
        ("---\ncascade: {access: sre, target: {}, _target: {}}\n---\n", "both `target` and `_target`"),
        ("---\ncascade: {access: sre, Target: {path: /notes/db/**}}\n---\n", "`cascade.Target` is not read"),
        ("---\ncascade: {access: sre, path: /x}\n---\n", "Hugo refuses `path` in a cascade"),
        ("---\nCascade: {access: sre}\n---\n", "front matter key 'Cascade' is not read; write `cascade`"),
        ("---\ncascades: [{access: sre}]\n---\n", "front matter key 'cascades' is not read"),
        ("---\naccess: [sre]\n---\n", "`access` here restricts the section page only, which is no note"),
        ("---\nparams: {acess: [sre]}\n---\n", "key 'params.acess' is not read"),
        (
            "---\ncascade: [{access: sre}, {access: hr, target: {path: '/notes/**'}}]\n---\n",
            "two `cascade` entries give content/notes/db/deadlock/index.md different groups",
        ),
    ],
)
def test_what_cannot_be_read_stops_the_build_naming_the_index(tmp_path, front_matter, message):
    repo = repo_with(tmp_path, {"content/notes/db/_index.md": front_matter})
    with pytest.raises(NotesSourceError) as error:
        read(repo)
    where = f"content/notes/db/_index.md at commit {repo.head.commit.hexsha[:12]}: "
    assert str(error.value).startswith(where) and message in str(error.value), str(error.value)


def test_only_the_sections_above_notes_are_read(tmp_path):
    broken = "---\ncascade: {access: [sre]\n---\n"
    # the repository root lies outside Hugo's content directory
    repo = repo_with(tmp_path, {"content/blog/_index.md": broken, "_index.md": broken})
    assert access(repo)["deadlock"] == ()
    (tmp_path / "notes" / "content" / "notes" / "_index.md").write_bytes(b"---\ntitle: \xff\n---\n")
    repo.index.add(["content/notes/_index.md"])
    repo.index.commit("not UTF-8")
    with pytest.raises(NotesSourceError, match=r"^content/notes/_index.md at commit \w{12}: not UTF-8"):
        read(repo)


def test_a_cascade_change_gives_the_unchanged_notes_below_a_new_version(tmp_path):
    repo = repo_with(tmp_path, {"content/notes/db/_index.md": PUBLIC.format("DB")})
    first = read(repo)
    versions = [first["deadlock"].source_version]
    assert versions[0] == repo.head.commit.tree["content/notes/db/deadlock/index.md"].hexsha
    steps = [
        ("---\ncascade: {access: [sre]}\n---\n", ("sre",)),
        ("---\ntitle: Databases\ncascade: {params: {access: [sre]}}\n---\n", ("sre",)),  # same groups
        ("---\ncascade: {access: [sre, payments]}\n---\n", ("payments", "sre")),
        (PUBLIC.format("DB"), ()),
    ]
    known = {(n.path, n.source_version): n for n in first.values()}
    for front_matter, groups in steps:
        commit_files(repo, {"content/notes/db/_index.md": front_matter}, "the section changes")
        fresh, reused = read(repo), read(repo, known)
        assert fresh == reused
        assert fresh["deadlock"].access == groups
        assert fresh["vacuum"].source_version == first["vacuum"].source_version  # its own groups
        assert fresh["tcp"] == reused["tcp"] and fresh["tcp"].source_version == first["tcp"].source_version
        labelled = note_versions(repo.head.commit, GLOB, ["_index.md"])
        assert {slug: v.blob for slug, v in labelled.items()} == {
            s: n.source_version for s, n in fresh.items()
        }
        versions.append(fresh["deadlock"].source_version)
        known = {(n.path, n.source_version): n for n in fresh.values()}
    # a title change keeps the version; a group change or the cascade's removal moves it
    assert versions[1] == versions[2] and len({versions[0], versions[1], versions[3]}) == 3
    assert versions[4] == versions[0]


@pytest.mark.parametrize(
    ("pattern", "matches", "misses"),
    [
        ("/notes/db/**", ["/notes/db/a", "/notes/db/a/b"], ["/notes/db", "/notes/dbx/a"]),
        ("{/notes/db,/notes/db/**}", ["/notes/db", "/notes/db/a"], ["/notes/net/a"]),
        ("/notes/*", ["/notes/a"], ["/notes/a/b"]),
        ("/notes/?b/*", ["/notes/db/a"], ["/notes/dbb/a"]),
        ("/notes/[a-d]b/*", ["/notes/db/a"], ["/notes/eb/a"]),
        ("/notes/[!a-d]b/*", ["/notes/eb/a"], ["/notes/db/a"]),
        ("/Notes/DB/**", ["/notes/db/a"], []),
        ("/notes/\\*", ["/notes/*"], ["/notes/a"]),
    ],
)
def test_hugo_globs(pattern, matches, misses):
    glob = hugo_glob(pattern)
    assert all(glob.match(p) for p in matches) and not any(glob.match(p) for p in misses)


@pytest.mark.parametrize(
    ("path", "logical"),
    [
        ("content/notes/db/deadlock/index.md", "/notes/db/deadlock"),
        ("content/notes/Db/A Note.md", "/notes/db/a-note"),
        ("docs/runbooks/disk/index.md", "/docs/runbooks/disk"),
    ],
)
def test_logical_paths(path, logical):
    assert logical_path(path) == logical


def test_a_commit_that_stops_the_build_still_says_whose_groups_it_cannot_read(tmp_path):
    repo = repo_with(tmp_path, {"content/notes/db/_index.md": "---\ncascade: {access: [sre]\n---\n"})
    commit_files(
        repo, {"content/notes/net/tcp/index.md": "---\ntitle: TCP\nacess: [sre]\n---\n本文。\n"}, "typo"
    )
    commit_files(repo, {"content/notes/misc/ok/index.md": "---\naccess: [hr]\n---\n本文。\n"}, "a good one")
    with pytest.raises(NotesSourceError):
        read(repo)
    # below the broken _index.md, and the note with a typo: unreadable; the others as they are
    readable = readable_access(repo.head.commit, GLOB, ["_index.md"])
    assert readable == {"deadlock": None, "vacuum": None, "tcp": None, "ok": ("hr",)}
