"""An httpx transport that refuses a model reply past a byte cap without reading the rest of it.

The openai client reads a whole reply into memory before parsing it, so a 60 MB reply costs
hundreds of MB. `CappedTransport` wraps the real transport: a `Content-Length` over the cap is
refused before the body is read, and a body without one is counted as it streams in and cut off
at the cap, closing the connection. The refusal is `ReplyTooLarge` (an `openai.OpenAIError`, which
the client passes through unwrapped), holding the first bytes and the size for the transcript.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import openai

HEAD_BYTES = 4096  # how much of a refused reply the transcript keeps


class ReplyTooLarge(openai.OpenAIError):
    """A reply body over the cap: `size` is its Content-Length, or None when it was cut off while
    streaming (`read` bytes were read); `head` is its first bytes."""

    def __init__(self, cap: int, *, size: int | None, read: int, head: bytes) -> None:
        shown = f"{size} bytes" if size is not None else f"over {read} bytes (cut off there)"
        super().__init__(f"the endpoint's reply is {shown}, over the cap of {cap} bytes")
        self.cap = cap
        self.size = size
        self.read = read
        self.head = head


class _CappedStream(httpx.SyncByteStream):
    """The body of one response, counted as it streams; raises ReplyTooLarge past the cap."""

    def __init__(self, inner: httpx.SyncByteStream, cap: int) -> None:
        self._inner = inner
        self._cap = cap

    def __iter__(self) -> Iterator[bytes]:
        read, head = 0, b""
        for chunk in self._inner:
            read += len(chunk)
            if len(head) < HEAD_BYTES:
                head += chunk[:HEAD_BYTES - len(head)]
            if read > self._cap:
                raise ReplyTooLarge(self._cap, size=None, read=read, head=head)
            yield chunk

    def close(self) -> None:
        self._inner.close()


class CappedTransport(httpx.BaseTransport):
    """Sends through `inner` (default: a plain `httpx.HTTPTransport`) and caps each reply body."""

    def __init__(self, cap_bytes: int, inner: httpx.BaseTransport | None = None) -> None:
        self.cap_bytes = cap_bytes
        self._inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """The response, its body capped; ReplyTooLarge at once when Content-Length is over the cap."""
        response = self._inner.handle_request(request)
        length = response.headers.get("content-length", "")
        if length.isdigit() and int(length) > self.cap_bytes:
            response.close()
            raise ReplyTooLarge(self.cap_bytes, size=int(length), read=0, head=b"")
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(status_code=response.status_code, headers=response.headers,
                              stream=_CappedStream(response.stream, self.cap_bytes),
                              extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()


def capped_client(cap_bytes: int, timeout_s: float) -> httpx.Client:
    """An httpx client for the openai SDK whose replies are capped at `cap_bytes`."""
    return httpx.Client(transport=CappedTransport(cap_bytes), timeout=timeout_s, follow_redirects=True)
