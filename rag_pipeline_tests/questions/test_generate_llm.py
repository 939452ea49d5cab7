"""`gold generate --llm` against a chat server on 127.0.0.1. fakes/llm.py is a protocol fake of an
OpenAI-compatible server (no LLM can be installed here): its replies below are made from the prompt,
some good and some malformed, and it records every prompt it receives."""

import hashlib
import json
import re

import git
import pytest

from rag_pipeline.cli.gold import main
from rag_pipeline.lib.questions import notes_at
from rag_pipeline.lib.questions.generate import OFFLINE
from rag_pipeline.lib.questions.prompted import GENERATOR
from rag_pipeline.lib.sources import build_repository
from rag_pipeline.settings import BUNDLED_CORPUS
from rag_pipeline_tests.fakes.llm import MODEL, FakeLLM

GLOB = "content/notes/**/index.md"


@pytest.fixture(scope="module")
def bundled(tmp_path_factory) -> git.Repo:
    return build_repository(BUNDLED_CORPUS, tmp_path_factory.mktemp("bundled") / "notes")


PASSAGE = re.compile(r"^<passage-([0-9a-f]{16}) [^>\n]*>\n(.*?)\n</passage-\1>$", re.S | re.M)


def passages(prompt: str) -> list[str]:
    """The fenced passages of a prompt, in order."""
    return [m.group(2) for m in PASSAGE.finditer(prompt)]


def first_words(excerpt: str) -> str:
    """A phrase copied from an excerpt's text (the line after its `[title > heading]` line)."""
    return excerpt.split("]\n", 1)[1].split("\n", 1)[0][:18]


class Replies:
    """What the fake model answers: every 4th reply is not JSON, every 6th has the wrong keys, one
    unanswerable question in two has an answer pattern the notes contain."""

    def __init__(self):
        self.n = 0

    def __call__(self, prompt: str) -> str:
        self.n += 1
        if self.n % 4 == 0:
            return "Sure! Here is a question about the section."
        if self.n % 6 == 0:
            return json.dumps({"q": "wrong keys"})
        question = hashlib.sha1(prompt.encode()).hexdigest()[:16] + "?"
        if "does NOT answer" in prompt:
            pattern = "TTL" if self.n % 2 else r"zq-absent-\d+"
            return json.dumps({"question": question, "answer_pattern": pattern})
        quoted = passages(prompt)
        reply = {"question": question, "evidence": first_words(quoted[0])}
        if len(quoted) == 2:
            reply["evidence2"] = first_words(quoted[1])
        return json.dumps(reply, ensure_ascii=False)


def env(monkeypatch, bundled, tmp_path, server, **extra):
    values = {
        "RAG_QUESTIONS": str(tmp_path / "questions.json"),
        "RAG_NOTES_REPO": bundled.working_tree_dir,
        "RAG_DATA_DIR": str(tmp_path / "data"),
        "RAG_LLM": "openai",
        "RAG_LLM_URL": server.url,
        "RAG_LLM_MODEL": MODEL,
    } | extra
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_llm_generation_verifies_counts_malformed_replies_and_asks_once(
    bundled, tmp_path, monkeypatch, capsys
):
    with FakeLLM() as server:
        server.answer = Replies()
        env(monkeypatch, bundled, tmp_path, server)
        args = ["generate", "--llm", "--commit", "HEAD", "--n", "12", "--unauthorized", "2"]
        assert main(args) == 0
        printed = capsys.readouterr().out
        sent = len(server.requests)
        assert sent > 0 and f"{sent} prompt(s) sent to openai model {MODEL!r}" in printed
        assert re.search(r"^  reply is not valid JSON: [1-9]\d*$", printed, re.M)
        assert re.search(r"^  reply is not in the asked form: [1-9]\d*$", printed, re.M)
        assert re.search(
            r"^  unanswerable but its answer pattern is found in a note: [1-9]\d*$", printed, re.M
        )
        items = json.loads((tmp_path / "questions.generated.json").read_text(encoding="utf-8"))
        assert {q["category"] for q in items} == {
            "paraphrase",
            "multi-section",
            "unanswerable",
            "unauthorized",
        }
        notes = {n.slug: n for n in notes_at(bundled.head.commit, GLOB, ["_index.md"])}
        for q in items:
            if q["category"] == "unauthorized":
                assert q["generator"] == OFFLINE  # leak tests are never prompted for
                continue
            assert q["generator"].startswith(f"{GENERATOR} openai:{MODEL}@")
            if q["slug"]:
                assert notes[q["slug"]].text.count(q["evidence"]) == 1
            else:
                assert not any(re.search(q["answer_pattern"], n.text) for n in notes.values())
        # a rerun reads every reply from the cache
        assert main(args) == 0
        assert len(server.requests) == sent and "0 prompt(s) sent" in capsys.readouterr().out


def test_no_restricted_text_reaches_a_prompt_for_another_group(bundled, tmp_path, monkeypatch, capsys):
    with FakeLLM() as server:
        server.answer = Replies()
        env(monkeypatch, bundled, tmp_path, server)
        assert main(["generate", "--llm", "--commit", "HEAD", "--n", "60", "--unauthorized", "3"]) == 0
        prompts = [r["messages"][-1]["content"] for r in server.requests]
    notes = notes_at(bundled.head.commit, GLOB, ["_index.md"])
    restricted = [n for n in notes if n.access]
    assert restricted and len(prompts) > 40
    lines = {
        n.slug: [line for line in n.text.split("\n") if len(line) >= 20 and not line.startswith("#")]
        for n in notes
    }
    for prompt in prompts:
        holding = {n.slug: n.access for n in notes if any(line[:40] in prompt for line in lines[n.slug])}
        # one asker may read every note a prompt quotes: the notes share their groups
        assert len(set(holding.values())) <= 1, (set(holding), prompt[:200])
        if "does NOT answer" in prompt:
            assert not any(n.title in prompt for n in restricted)
    assert any(any(line[:40] in p for p in prompts for line in lines[n.slug]) for n in restricted)


def test_llm_generation_honours_timeout_and_retries(bundled, tmp_path, monkeypatch, capsys):
    with FakeLLM() as server:
        server.answer = Replies()
        server.faults = ["503"]
        env(monkeypatch, bundled, tmp_path, server, RAG_LLM_RETRIES="1")
        assert main(["generate", "--llm", "--commit", "HEAD", "--n", "3"]) == 0
        assert server.requests  # the 503 was retried
        capsys.readouterr()
        server.faults = ["slow"]
        server.slow_seconds = 1.0
        env(monkeypatch, bundled, tmp_path, server, RAG_LLM_RETRIES="0", RAG_LLM_TIMEOUT="0.2")
        monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "fresh"))  # no cached reply
        assert main(["generate", "--llm", "--commit", "HEAD", "--n", "3"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "timed out" in err
