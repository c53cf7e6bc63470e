"""Certificates, keys and CAs loaded from files, each failure naming the key it was configured under and the
file: OpenSSL's own errors ("[SSL] PEM lib", "[Errno 2] No such file or directory") name neither."""

from __future__ import annotations

import ssl
from pathlib import Path


class TlsFileError(ValueError):
    """A TLS file that cannot be read or used: `key path: what is wrong`."""


class _Encrypted(Exception):
    """Raised from the password callback: OpenSSL would otherwise prompt on the terminal."""


def _no_password() -> bytes:
    raise _Encrypted


def readable(key: str, path: str | Path) -> None:
    """TlsFileError unless `path` can be opened for reading."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise TlsFileError(f"{key} {path}: cannot read: {exc.strerror or exc}") from exc


def load_ca(context: ssl.SSLContext, key: str, path: str | Path) -> None:
    """The CA certificates of `path` into `context`, else TlsFileError."""
    readable(key, path)
    try:
        context.load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError) as exc:
        raise TlsFileError(f"{key} {path}: no PEM certificate in it{_reason(exc)}") from exc


def load_pair(context: ssl.SSLContext, cert_key: str, cert: str | Path, key_key: str, key: str | Path) -> None:
    """The certificate of `cert` and the private key of `key` into `context`, else TlsFileError naming the
    file at fault: no certificate in `cert`, or a key that is missing, encrypted or of another certificate."""
    readable(cert_key, cert)
    readable(key_key, key)
    try:
        context.load_cert_chain(cert, key, password=_no_password)
    except _Encrypted as exc:
        raise TlsFileError(f"{key_key} {key}: an encrypted private key; give it unencrypted") from exc
    except (ssl.SSLError, OSError) as exc:
        if not _has_certificate(cert):
            raise TlsFileError(f"{cert_key} {cert}: no PEM certificate in it") from exc
        if getattr(exc, "reason", None) == "KEY_VALUES_MISMATCH":
            raise TlsFileError(f"{key_key} {key}: not the private key of the certificate in {cert}") from exc
        raise TlsFileError(f"{key_key} {key}: no PEM private key in it{_reason(exc)}") from exc


def _has_certificate(path: str | Path) -> bool:
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except (ssl.SSLError, OSError):
        return False
    return True


def _reason(exc: BaseException) -> str:
    """OpenSSL's reason in words (" (no certificate or crl found)"); "" when it gives none ("[SSL] PEM lib")."""
    reason = getattr(exc, "reason", None)
    return f" ({str(reason).replace('_', ' ').lower()})" if reason else ""
