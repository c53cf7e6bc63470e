"""The one loopback fake engine of the tests: an HTTP server on 127.0.0.1 whose GET answers come from a function.

    with FakeEngine(lambda path: (200, body) if path == "/metrics" else (404, "")) as engine:
        engine.url          # http://127.0.0.1:PORT
        engine.requested    # every path asked, in order
        engine.stopping     # set when the server stops: ends a hanging or dripping answer early

`answer(path)` is a `(status, text or bytes)` pair (sent with its Content-Length), a `Stream` (headers at once,
then chunks, each after a pause: a slow or unbounded body) or `HANG` (no answer at all until the server stops,
30 s at most). Each engine's shape — its metrics path, its version endpoint, a recorded body replayed, a fault —
is the function the test passes (tests/engines/engine_servers.py, tests/engines/engine_fakes.py,
tests/bundle/replay.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Final, Literal, Self


@dataclass(frozen=True)
class Stream:
    chunks: Iterable[bytes]
    length: int | None = None  # the Content-Length announced; None: none, the body ends with the connection
    pause: float = 0.0  # seconds before each chunk


HANG: Final = "hang"
# the text format's type, on every answer (the engines' JSON endpoints included, which the exporter reads as
# JSON whatever the header says): Prometheus 3 refuses to scrape a body without one
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
Answer = tuple[int, str | bytes] | Stream | Literal["hang"]


class FakeEngine:
    def __init__(self, answer: Callable[[str], Answer]) -> None:
        self.answer = answer
        self.requested: list[str] = []
        self.stopping = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _handler(engine: FakeEngine) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            engine.requested.append(self.path)
            answer = engine.answer(self.path)
            if answer == HANG:
                engine.stopping.wait(30)
            elif isinstance(answer, Stream):
                self._stream(answer)
            else:
                status, body = answer
                data = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def _stream(self, stream: Stream) -> None:
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE)
            if stream.length is not None:
                self.send_header("Content-Length", str(stream.length))
            self.end_headers()
            try:
                for chunk in stream.chunks:
                    if engine.stopping.wait(stream.pause):
                        return
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError:  # the client gave up (a size cap, a deadline): what the stream is there to cause
                return

    return Handler
