"""A judge model's stand-in on 127.0.0.1: the chat server of fakes/llm.py (OpenAI's
`/v1/chat/completions`, Ollama's `/api/chat`) replying with verdicts of a known noise.

No judge model can be installed on the test machines, so this protocol fake stands in for one. Its
verdicts follow a hidden truth (`truth(prompt)`), each flipped with probability `flip`; without a truth
they are "yes" with probability `yes`. A share `invalid` of the replies is not JSON; `pad` words
lengthen every reason (a judge that floods). Every draw is
seeded by the prompt and the request's seed (the judge sends seed + repeat), so one request always
gets one reply, a repeat another draw, and a rerun can be counted on `requests`.
"""

import hashlib
import json
import random
from collections.abc import Callable

from rag_pipeline_tests.fakes.llm import FakeLLM

JUDGE_PROMPT = "Reply with exactly one JSON object"  # what tells a judge prompt from an answer prompt


def criterion_of(prompt: str) -> str:
    return prompt.split("Criterion: ", 1)[1].split("\n", 1)[0]


class FakeJudge(FakeLLM):
    def __init__(
        self,
        truth: Callable[[str], bool] | None = None,
        flip: float = 0.0,
        yes: float = 0.7,
        invalid: float = 0.0,
        pad: int = 0,
    ):
        super().__init__()
        self.truth, self.flip, self.yes, self.invalid = truth, flip, yes, invalid
        self.padding = " very" * pad

    def respond(self, body: dict) -> str:
        prompt = body["messages"][-1]["content"]
        if JUDGE_PROMPT not in prompt:  # an answer prompt: the answerer may share the server
            return self.answer(prompt)
        seed = body.get("seed", body.get("options", {}).get("seed"))
        draw = random.Random(hashlib.sha256(f"{seed}\0{prompt}".encode()).digest())
        if draw.random() < self.invalid:
            return "I would say yes, mostly."
        if self.truth is None:
            said = draw.random() < self.yes
        else:
            said = self.truth(prompt) != (draw.random() < self.flip)
        verdict = "yes" if said else "no"
        return json.dumps({"verdict": verdict, "reason": f"the fake judge says{self.padding} {verdict}"})
