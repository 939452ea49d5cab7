"""A small local chat server speaking OpenAI's `/v1/chat/completions` and Ollama's `/api/chat` and `/api/show`.

No LLM can be installed on the test machines, so this protocol server stands in for one. Its
answer comes from `answer(prompt)`; faults can be injected per chat request (slow, 5xx, 400) and
every chat request is recorded, so a test can count what reached "the model".
"""

from collections.abc import Callable

from rag_pipeline_tests.fakes.json_server import LocalServer, ModelHandler

MODEL = "qwen3:4b"
DIGEST = "sha256:fedcba987654"


class FakeLLM(LocalServer):
    """Start with `with FakeLLM() as server:`; `server.faults` is consumed one per chat request."""

    def __init__(self):
        self.answer: Callable[[str], str] = lambda prompt: "The answer is 42 [1]."
        self.thinking = ""  # Ollama: sent in `message.thinking` when the request asks `think: true`
        self.faults: list[str] = []
        self.slow_seconds = 1.0
        self.requests: list[dict] = []  # chat requests only
        self.digest, self.shown = DIGEST, 0  # the model's digest Ollama's `/api/show` says; shows asked
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(ModelHandler):
            def do_POST(self):
                body = self.read_json()
                if self.unknown_model(body, MODEL):
                    return None
                if self.path == "/api/show":
                    outer.shown += 1
                    return self.reply(
                        200, {"digest": outer.digest, "template": "{{ .Prompt }}", "model_info": {}}
                    )
                if self.path not in ("/api/chat", "/v1/chat/completions"):
                    return self.reply(404, {"error": "no such endpoint"})
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                if self.fault(outer.faults.pop(0) if outer.faults else "", outer.slow_seconds):
                    return None
                prompt = body["messages"][-1]["content"]
                content = outer.respond(body)
                if self.path == "/api/chat":
                    message = {"role": "assistant", "content": content}
                    if body.get("think") and outer.thinking:
                        message["thinking"] = outer.thinking
                    return self.reply(
                        200,
                        {
                            "model": MODEL,
                            "message": message,
                            "done": True,
                            "prompt_eval_count": len(prompt),
                            "eval_count": len(content),
                        },
                    )
                return self.reply(
                    200,
                    {
                        "object": "chat.completion",
                        "model": MODEL,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(content)},
                    },
                )

        self.serve(Handler)

    def respond(self, body: dict) -> str:
        """The reply's content to a chat request (`answer` of its last message)."""
        return self.answer(body["messages"][-1]["content"])
