"""The web config file (`--web-config`): TLS and basic auth for the HTTP endpoints, off by default.

The format is the Prometheus exporter-toolkit's, so one file serves this exporter and node_exporter alike:

    tls_server_config:
      cert_file: /etc/llm-exporter/tls.crt
      key_file: /etc/llm-exporter/tls.key
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (default), VerifyClientCertIfGiven
      client_ca_file: /etc/llm-exporter/ca.crt
      min_version: TLS12                             # TLS12 (default) or TLS13; max_version likewise
    http_server_config:
      headers: {Strict-Transport-Security: max-age=31536000}
    basic_auth_users:
      prometheus: $2y$10$...                         # bcrypt hashes only, never clear text

Every error of the file is reported at once, naming its key (the walk is `exporter.typed_loader`'s, as for
the config file). Certificates are re-read when their files
change (cert-manager rotates them in place), so a rotation needs no restart.
"""

from __future__ import annotations

import hashlib
import logging
import os
import ssl
import threading
import typing
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, ClassVar

import bcrypt

from exporter.sources import tls
from exporter.typed_loader import Check, ConfigError, Loader, read_text, read_yaml

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
# exporter-toolkit keys that Python's ssl module cannot honour the same way: named, refused, not ignored
UNSUPPORTED = {
    "cipher_suites": "Go cipher suite names do not map onto OpenSSL's; the defaults exclude weak suites",
    "curve_preferences": "not configurable here",
    "prefer_server_cipher_suites": "not configurable here",
    "client_allowed_sans": "not supported yet",
}
VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
# headers the server itself sets: a config must not override them (exporter-toolkit refuses them too)
RESERVED_HEADERS = {"authorization", "content-length", "content-type", "www-authenticate", "connection"}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TlsConfig:
    cert_file: Path
    key_file: Path
    client_auth: ssl.VerifyMode = ssl.CERT_NONE
    client_ca_file: Path | None = None
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3

    def files(self) -> tuple[Path, ...]:
        return (self.cert_file, self.key_file) + ((self.client_ca_file,) if self.client_ca_file else ())

    def build_context(self) -> ssl.SSLContext:
        """A server context from the files as they are now. Raises TlsFileError naming the key and file."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = self.min_version
        context.maximum_version = self.max_version
        section = "tls_server_config"
        tls.load_pair(context, f"{section}.cert_file", self.cert_file, f"{section}.key_file", self.key_file)
        context.verify_mode = self.client_auth
        if self.client_ca_file is not None:
            tls.load_ca(context, f"{section}.client_ca_file", self.client_ca_file)
        return context


@dataclass(frozen=True)
class WebConfig:
    tls: TlsConfig | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # user → bcrypt hash
    headers: dict[str, str] = field(default_factory=dict)


def load(path: str | Path) -> WebConfig:
    """The web config in `path`; its TLS files are loaded once here so that a bad file fails at start."""
    web = parse(read_text(path), base=Path(path).parent, source=str(path))
    if web.tls is not None:
        try:
            web.tls.build_context()
        except tls.TlsFileError as exc:
            raise ConfigError([f"{path}: {exc}"]) from exc
    return web


@dataclass(frozen=True)
class _TlsSection:
    """`tls_server_config` as written (fields in the order its unknown-key message lists them).

    Its choices are checked in `validate`, not as Literal fields, so that a file's errors come in the order
    of the checks: the files, then the client auth, then the versions.
    """

    REFUSED_KEYS: ClassVar[Mapping[str, str]] = UNSUPPORTED

    cert_file: str | None = None
    client_auth_type: str | None = None
    client_ca_file: str | None = None
    key_file: str | None = None
    max_version: str | None = None
    min_version: str | None = None

    def configured(self) -> bool:
        """A section with no value set (`{}`, or every key null) leaves TLS off."""
        return self != _TlsSection()

    def validate(self) -> list[str]:
        if not self.configured():
            return []
        errors = [
            f"{key}: required when TLS is configured" for key in ("cert_file", "key_file") if not getattr(self, key)
        ]
        auth = self.auth_type()
        if auth not in CLIENT_AUTH:
            errors.append(f"client_auth_type: must be one of {', '.join(CLIENT_AUTH)}, got {auth!r}")
        elif auth != "NoClientCert" and not self.client_ca_file:
            errors.append(f"client_ca_file: required when client_auth_type is {auth}")
        versions = self.versions()
        for key, text in versions.items():
            if text not in VERSIONS:
                errors.append(f"{key}: must be one of {', '.join(VERSIONS)}, got {text!r}")
        if (
            set(versions.values()) <= set(VERSIONS)
            and VERSIONS[versions["min_version"]] > VERSIONS[versions["max_version"]]
        ):
            errors.append("min_version: is above max_version")
        return errors

    def auth_type(self) -> str:
        return "NoClientCert" if self.client_auth_type is None else self.client_auth_type

    def versions(self) -> dict[str, str]:
        return {
            "min_version": "TLS12" if self.min_version is None else self.min_version,
            "max_version": "TLS13" if self.max_version is None else self.max_version,
        }

    def tls(self, base: Path) -> TlsConfig | None:
        """The TLS settings, file names relative to `base`; None when the section sets nothing."""
        if not self.configured():
            return None
        assert self.cert_file and self.key_file  # validate() holds
        versions = {key: VERSIONS[text] for key, text in self.versions().items()}
        ca = base / self.client_ca_file if self.client_ca_file else None
        return TlsConfig(base / self.cert_file, base / self.key_file, CLIENT_AUTH[self.auth_type()], ca, **versions)


def _users(users: dict[str, str]) -> list[str]:
    errors = []
    for user, hashed in users.items():
        if not user or ":" in user:
            errors.append(f"{user}: a user name is a non-empty string without ':'")
        elif not hashed.startswith(("$2a$", "$2b$", "$2y$")) or len(hashed) != 60:
            errors.append(f"{user}: expected a bcrypt hash ($2y$…, 60 characters), never a clear-text password")
    return errors


def _headers(headers: dict[str, str]) -> list[str]:
    errors = []
    for name, text in headers.items():
        if "\n" in text or "\r" in text:
            errors.append(f"{name}: a header is a string name and a one-line string value")
        elif name.lower() in RESERVED_HEADERS:
            errors.append(f"{name}: set by the server, cannot be configured")
    return errors


@dataclass(frozen=True)
class _HttpSection:
    headers: Annotated[dict[str, str], Check(_headers)] | None = None
    http2: object = None  # accepted for compatibility: this server speaks HTTP/1.1


@dataclass(frozen=True)
class _File:
    """The web config file as written (exporter-toolkit's keys)."""

    tls_server_config: _TlsSection | None = None
    http_server_config: _HttpSection | None = None
    basic_auth_users: Annotated[dict[str, str], Check(_users)] | None = None


def parse(text: str, base: Path = Path("."), source: str = "<web config>") -> WebConfig:
    """Parse and check a web config; relative file names are relative to `base` (the file's folder)."""
    loader = Loader(sort_known=False, unknown_first=True, root=source)
    file = typing.cast(_File, loader.load(_File, read_yaml(text, source)))
    tls = file.tls_server_config.tls(base) if file.tls_server_config else None
    users = {user: hashed.encode("ascii", errors="replace") for user, hashed in (file.basic_auth_users or {}).items()}
    headers = file.http_server_config.headers if file.http_server_config else None
    return WebConfig(tls=tls, users=users, headers=dict(headers or {}))


class TlsContexts:
    """The current SSLContext, rebuilt when the certificate, key or CA file changes on disk."""

    def __init__(self, config: TlsConfig) -> None:
        self._tls = config
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._failed: tuple[tuple[int, int], ...] | None = None  # the files' state last found unloadable
        self._context = config.build_context()

    def _stat(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in self._tls.files():
            try:
                st = os.stat(path)
                stamps.append((st.st_mtime_ns, st.st_size))
            except OSError:
                stamps.append((0, 0))
        return tuple(stamps)

    def current(self) -> ssl.SSLContext:
        stamp = self._stat()
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._context = self._tls.build_context()
                except tls.TlsFileError as exc:
                    # a rotation half-written: keep serving the old pair, retry at the next connection; said
                    # once per state of the files, not at every connection
                    if stamp != self._failed:
                        self._failed = stamp
                        log.warning("TLS files changed but cannot be loaded, serving the previous ones: %s", exc)
                else:
                    self._stamp = stamp
            return self._context


class BasicAuth:
    """Checks `Authorization: Basic` credentials against bcrypt hashes.

    bcrypt is slow on purpose (tens of milliseconds), so successful checks are remembered, keyed by a hash
    of the credentials; an unknown user still costs one bcrypt check, so timing does not tell which users
    exist.
    """

    CACHE = 256

    def __init__(self, users: dict[str, bytes]) -> None:
        self._users = users
        self._dummy = bcrypt.hashpw(b"not a password", bcrypt.gensalt(rounds=10))
        self._ok: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, user: str, password: str) -> bool:
        key = hashlib.sha256(f"{user}\0{password}".encode("utf-8", errors="surrogatepass")).digest()
        with self._lock:
            if key in self._ok:
                self._ok.move_to_end(key)
                return True
        hashed = self._users.get(user)
        valid = bcrypt.checkpw(password.encode("utf-8", errors="surrogatepass"), hashed or self._dummy)
        if not valid or hashed is None:
            return False
        with self._lock:
            self._ok[key] = None
            while len(self._ok) > self.CACHE:
                self._ok.popitem(last=False)
        return True
