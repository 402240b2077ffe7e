"""What every local test server shares: a quiet handler that answers JSON, and a serving thread."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class JsonHandler(BaseHTTPRequestHandler):
    """A request handler that logs nothing and replies with JSON bodies."""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
        return

    def reply_json(self, code: int, body: object) -> None:
        """Send `body` as JSON with status `code`."""
        self.reply_bytes(code, json.dumps(body).encode())

    def reply_bytes(self, code: int, data: bytes) -> None:
        """Send `data` as an application/json body with status `code`."""
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[ThreadingHTTPServer]:
    """Serve `server` on a daemon thread for the block's duration, then shut it down and close it."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
