"""The exporter's HTTP server on a free loopback port, in a thread, for the tests that talk to it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from exporter import server
from exporter.collect import CollectorSet
from exporter.demo.vllm_env import free_port
from exporter.webconfig import WebConfig


@contextmanager
def serving(
    collectors: CollectorSet, *, web: WebConfig | None = None, max_connections: int = server.MAX_CONNECTIONS
) -> Iterator[int]:
    """Serve `collectors` until the block ends; yields the port once it accepts connections."""
    port = free_port()
    stop = threading.Event()
    thread = threading.Thread(
        target=server.serve, args=(collectors, "node", f"127.0.0.1:{port}", stop, web, max_connections)
    )
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or not thread.is_alive():
                    raise
                time.sleep(0.05)
        yield port
    finally:
        stop.set()
        thread.join(10)
