"""A local OpenAI-compatible chat server for tests: scripted replies, every request recorded.

    with FakeOpenAI([error(500), completion("hi")]) as server:
        Context(model="fake-model", base_url=server.url, api_key="test")
        ...
        server.requests  # the JSON bodies POSTed to /v1/chat/completions, in order

Each request takes the next scripted Reply; when the script is spent, `default` answers (a
fixed outage, say), else a 500 that names the spent script, counted in `unscripted`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCHEMA_REJECTED = "'response_format' of type 'json_schema' is not supported with this model"


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status, a body (a dict is sent as JSON, a str as it is), headers."""

    status: int = 200
    body: dict[str, Any] | str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # wait before answering: longer than the client's timeout makes it time out
    reject_json_schema: bool = False  # answer 400 when the request asks for a json_schema response_format


def completion(content: str, prompt_tokens: int = 100, completion_tokens: int = 50, *,
               finish_reason: str = "stop", delay_s: float = 0.0) -> Reply:
    """A normal chat completion with `usage`, as OpenAI's server sends it."""
    body = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fake-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
    return Reply(200, body, delay_s=delay_s)


def error(status: int, message: str = "scripted failure", *, retry_after_s: float | None = None) -> Reply:
    """An error in OpenAI's shape; with `retry_after_s`, a Retry-After header (429s carry one)."""
    headers = {} if retry_after_s is None else {"Retry-After": f"{retry_after_s:g}"}
    body = {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error",
                      "param": None, "code": None}}
    return Reply(status, body, headers)


def malformed_body() -> Reply:
    """A 200 whose body is not JSON (a proxy's HTML page, a cut connection)."""
    return Reply(200, '{"id": "chatcmpl-fake", "choices": [{"message": ', {"Content-Type": "application/json"})


def rejects_json_schema(then: Reply) -> Reply:
    """400 for a request with a json_schema response_format (as older vLLM and Ollama do); else `then`."""
    return Reply(then.status, then.body, then.headers, then.delay_s, reject_json_schema=True)


class FakeOpenAI:
    """A threaded HTTP server on 127.0.0.1 at a free port, answering POST /v1/chat/completions."""

    def __init__(self, replies: Iterable[Reply] = (), default: Reply | None = None) -> None:
        self.replies: deque[Reply] = deque(replies)
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.request_times: list[float] = []
        self.unscripted = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL to give the client: http://127.0.0.1:PORT/v1."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def prompts(self) -> list[str]:
        """The text of each request's messages, in order."""
        return ["\n".join(str(m.get("content", "")) for m in r.get("messages", [])) for r in self.requests]

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _next(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            self.request_times.append(time.monotonic())
            if self.replies:
                reply = self.replies.popleft()
            elif self.default is not None:
                reply = self.default
            else:
                self.unscripted += 1
                return error(500, f"fake server: script spent after {len(self.requests) - 1} requests")
        wants_schema = (request.get("response_format") or {}).get("type") == "json_schema"
        if reply.reject_json_schema and wants_schema:
            with self._lock:  # the same reply answers the retry without response_format
                self.replies.appendleft(reply)
            return error(400, SCHEMA_REJECTED)
        return reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(error(404, f"no route {self.path}"))
                    return
                self._send(fake._next(json.loads(raw or b"{}")))

            def _send(self, reply: Reply) -> None:
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                body = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = body.encode()
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": "application/json", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up waiting
                    pass

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler
