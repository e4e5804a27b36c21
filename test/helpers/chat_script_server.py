"""A scripted stand-in for an OpenAI-compatible chat server (not a model), on loopback.

It speaks the real wire protocol (``POST /v1/chat/completions``, JSON body with ``model`` and
``messages`` whose user content has ``text`` and ``image_url`` parts; the reply's
``choices[0].message.content``), records every request, and answers from ``script(request,
index) -> str | int``: a string is the answer's content; an int is an HTTP error status.
"""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any, Callable


class ScriptedChatServer:
    """``with ScriptedChatServer(script) as server: server.endpoint`` -> ``http://.../v1``."""

    def __init__(self, script: Callable[[dict[str, Any], int], str | int]) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._lock = threading.Lock()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                if self.path != '/v1/chat/completions':
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                with outer._lock:
                    index = len(outer.requests)
                    outer.requests.append(body)
                    outer.headers.append(dict(self.headers))
                answer = outer.script(body, index)
                if isinstance(answer, int):
                    self.send_error(answer)
                    return
                data = json.dumps({
                    'id': f'scripted-{index}', 'object': 'chat.completion',
                    'model': body.get('model'),
                    'choices': [{'index': 0, 'finish_reason': 'stop',
                                 'message': {'role': 'assistant', 'content': answer}}],
                }).encode()
                self.send_response(200)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.endpoint = f'http://127.0.0.1:{self.httpd.server_address[1]}/v1'
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> 'ScriptedChatServer':
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def images_in(request: dict[str, Any]) -> int:
    """Return how many image parts the user message of a chat request carries."""
    user = next(m for m in request['messages'] if m['role'] == 'user')
    return sum(part.get('type') == 'image_url' for part in user['content'])


def text_of(request: dict[str, Any]) -> str:
    """Return every text part of a chat request, joined."""
    parts = []
    for message in request['messages']:
        content = message['content']
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [p['text'] for p in content if p.get('type') == 'text']
    return '\n'.join(parts)
