"""Structured, rate-limited, redacted logs.

    ts=2026-12-02T16:20:50.123Z level=warn logger=exporter.server msg="TLS handshake failed: SSLError"

One line per event, logfmt (or JSON with `--log-format json`), values quoted and escaped so that nothing a
peer sends can forge a line. The same message from the same place is logged at most `BURST` times per
`WINDOW_SECONDS`; the rest are counted in `llm_exporter_log_messages_suppressed_total{level}`, so a broken
engine polled every 15 s cannot flood the node's logs. A call that reports on many objects passes
`extra={LIMIT_KEY: "<the object>"}`: the limit then applies per object, so that one noisy object cannot spend
the lines of the others. Credentials in URLs (`https://user:pass@host`) and
`Authorization` values are masked before anything is written. The exporter never logs response bodies:
engine bodies are metrics, but a misconfigured target could serve anything.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Callable

from exporter.catalogue import exporter_self
from exporter.exposition import Family

WINDOW_SECONDS = 60.0
BURST = 5
LIMIT_KEY = "limit_key"  # a LogRecord attribute: the object a line is about, limited on its own
LEVELS = {"DEBUG": "debug", "INFO": "info", "WARNING": "warn", "ERROR": "error", "CRITICAL": "error"}

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_AUTH = re.compile(r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)(?:(basic|bearer)\s+)?[^\s\"',}]+")
_TOKEN = re.compile(r"(?i)\b(token|password|secret|api[_-]?key)=([^\s&\"']+)")

_suppressed: Counter[str] = Counter()
_suppressed_lock = threading.Lock()


def redact(text: str) -> str:
    """`text` with URL credentials, Authorization values and key=value secrets masked."""
    text = _USERINFO.sub(r"\1***@", text)
    text = _AUTH.sub(lambda m: m.group(1) + (f"{m.group(2)} " if m.group(2) else "") + "***", text)
    return _TOKEN.sub(r"\1=***", text)


def _quote(value: str) -> str:
    if value and not any(c in value for c in ' "=\\') and value.isprintable():
        return value
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return '"' + "".join(c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" for c in escaped) + '"'


def _fields(record: logging.LogRecord, formatter: logging.Formatter) -> dict[str, str]:
    fields = {
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
        "level": LEVELS.get(record.levelname, record.levelname.lower()),
        "logger": record.name,
        "msg": redact(record.getMessage()),
    }
    if record.exc_info:
        fields["exc"] = redact(formatter.formatException(record.exc_info))
    return fields


class LogfmtFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_quote(value)}" for key, value in _fields(record, self).items())


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(_fields(record, self), ensure_ascii=False)


class RateLimit(logging.Filter):
    """At most BURST lines per WINDOW_SECONDS for each (logger, call site, message template, object named by
    LIMIT_KEY); debug passes."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._windows: dict[tuple[str, int, str, str], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO:
            return True
        key = (record.name, record.lineno, str(record.msg), str(getattr(record, LIMIT_KEY, "")))
        now = self._clock()
        with self._lock:
            start, count = self._windows.get(key, (now, 0))
            if now - start >= WINDOW_SECONDS:
                start, count = now, 0
            if count >= BURST:
                with _suppressed_lock:
                    _suppressed[LEVELS.get(record.levelname, "error")] += 1
                return False
            self._windows[key] = (start, count + 1)
            if len(self._windows) > 10_000:  # call sites are few; messages with a variable template are not
                self._windows.clear()
        return True


def configure(level: str = "info", fmt: str = "logfmt") -> None:
    """Route every logger through one redacting, rate-limited handler on stderr."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else LogfmtFormatter())
    handler.addFilter(RateLimit())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


def suppressed_family() -> Family:
    family = Family(exporter_self.LOG_SUPPRESSED)
    with _suppressed_lock:
        for level in ("info", "warn", "error"):
            family.add((level,), float(_suppressed[level]))
    return family
