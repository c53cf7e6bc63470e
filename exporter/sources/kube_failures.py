"""What a failed list or watch of the API server says: short and stable, so that the same outage reads the
same at every retry (and is logged once, not at each), and the short form names no user, token or address
(it is shown on /readyz, which answers without credentials)."""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass

import urllib3
from kubernetes.client.exceptions import ApiException

from exporter.logs import LIMIT_KEY

log = logging.getLogger("exporter.sources.kube")  # the reflectors' lines, as before

_ERRNO = re.compile(r"\[Errno -?\d+\] (?P<text>[^'\")]+)")
_SOURCE_LINE = re.compile(r"\s*\(_ssl\.c:\d+\)")


@dataclass(frozen=True)
class Failure:
    short: str  # "403 Forbidden", "cannot connect: Connection refused"
    detail: str = ""  # what the API server said beside it (which user may not list what), for the log

    def __str__(self) -> str:
        return f"{self.short}: {self.detail}" if self.detail else self.short


def describe(exc: BaseException) -> Failure:
    """The failure `exc` of a list or watch, in words that do not change from one retry to the next."""
    if isinstance(exc, ApiException):
        if not exc.status:  # the client's own: a TLS failure is "SSLError\n<what OpenSSL said>"
            kind, _, text = str(exc.reason or "").partition("\n")
            return Failure(f"TLS: {_clean(text)}" if kind == "SSLError" else _clean(kind or "no answer"))
        return Failure(f"{exc.status} {exc.reason}", _message(exc.body))
    if isinstance(exc, urllib3.exceptions.MaxRetryError) and exc.reason is not None:
        return describe(exc.reason)
    if isinstance(exc, urllib3.exceptions.SSLError):
        return Failure(f"TLS: {_clean(str(exc))}")
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return Failure("no answer in time")
    if isinstance(exc, urllib3.exceptions.NewConnectionError):  # before timeouts: it is a ConnectTimeoutError
        found = _ERRNO.search(str(exc))
        return Failure(f"cannot connect: {found.group('text') if found else 'refused'}")
    if isinstance(exc, (urllib3.exceptions.ConnectTimeoutError, TimeoutError)):
        return Failure("cannot connect: timed out")
    if isinstance(exc, urllib3.exceptions.ProtocolError):
        return Failure("connection lost")
    if isinstance(exc, OSError) and exc.strerror:
        return Failure(exc.strerror)
    if isinstance(exc, ValueError):  # a body that is not JSON
        return Failure("an answer that is not JSON")
    return Failure(_clean(str(exc)) or type(exc).__name__)


def _message(body: object) -> str:
    """The `message` of a Status body ("" when there is none)."""
    try:
        status = json.loads(body) if isinstance(body, (str, bytes)) else None
    except ValueError:
        return ""
    message = status.get("message") if isinstance(status, dict) else None
    return message if isinstance(message, str) else ""


def _clean(text: str) -> str:
    """One line, without OpenSSL's source line (which differs between builds)."""
    return _SOURCE_LINE.sub("", text.strip().splitlines()[0] if text.strip() else "")


class Failures:
    """A reflector's failed attempts, said once: a warning at the first, again only when the error changes
    (each retry in between at debug), and one line when the API server answers again."""

    def __init__(self, resource: str, host: str) -> None:
        self._resource = resource
        self._host = host
        self._limit = {LIMIT_KEY: resource}  # the log's rate limit per resource: each one's first line is said
        self.last: Failure | None = None  # of the last attempt, None once one succeeded
        self._count = 0  # attempts failed in a row

    @property
    def short(self) -> str:
        last = self.last
        return last.short if last is not None else ""

    def failed(self, exc: BaseException) -> None:
        failure, self._count = describe(exc), self._count + 1
        said = self.last is not None and self.last.short == failure.short
        level = logging.DEBUG if said else logging.WARNING
        how = "still failing" if said else "retrying with backoff; said again only when the error changes"
        args = (self._resource, self._host, failure, how)
        log.log(level, "%s: cannot list or watch at %s: %s (%s)", *args, extra=self._limit)
        self.last = failure

    def absent(self, exc: BaseException) -> None:
        """An optional resource not served or not granted (403, 404): read as none, said once."""
        failure = describe(exc)
        if self.last is None or self.last.short != failure.short:
            log.info("%s: not available (%s); treating as empty", self._resource, failure.short, extra=self._limit)
        self.last = failure

    def answered(self) -> None:
        """The API server answered: the failure said before is over."""
        if self._count:
            args = (self._resource, self._count)
            log.info("%s: answered again after %d failed attempts", *args, extra=self._limit)
        self.last, self._count = None, 0
