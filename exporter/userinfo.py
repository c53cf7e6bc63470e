"""Credentials in a URL's userinfo (`http://user:pass@host`): taken out of the URL, and masked in any text that
shows one.

An engine target may carry basic-auth credentials in its URL. They are sent as an Authorization header and
nothing else: every identity derived from the URL (the `pod` label, log lines, the collector's keys) is the
URL without them, and an error that must show a URL shows it masked.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
# a run of characters that can sit in a URL's authority, ending with "@" (greedy: up to its last "@", which is
# where a URL's host starts, as urlsplit reads it)
_BEFORE_AT = re.compile(r"[^\s'\"`{}\[\],<>]*@")


def split(url: str) -> tuple[str, tuple[str, str] | None]:
    """(`url` without its userinfo, the (username, password) it carried, percent-decoded, or None).

    Raises ValueError as urlsplit does, for a URL it cannot read."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url, None
    stripped = urlunsplit(parts._replace(netloc=host))
    if not userinfo:  # "http://@host": an empty userinfo carries nothing
        return stripped, None
    username, _, password = userinfo.partition(":")
    return stripped, (unquote(username), unquote(password))


def has_userinfo(url: str) -> bool:
    """Whether `url` carries credentials (False for a URL urlsplit cannot read)."""
    try:
        return split(url)[1] is not None
    except ValueError:
        return False


def masked_url(url: str) -> str:
    """`url` as given, valid or not, for an error that must show it: everything before its last "@" but a
    scheme (`http://`) and a user name followed by ":" is masked as `***` (a lone user part may be a token:
    it is masked whole). Idempotent."""
    before, at, after = url.rpartition("@")
    return _mask(before + at) + after if at else url


def masked(text: str) -> str:
    """Free text (a YAML error quoting a line) with `masked_url` applied to each run of URL characters that
    ends with "@". Idempotent."""
    return _BEFORE_AT.sub(lambda m: _mask(m.group(0)), text)


def _mask(run: str) -> str:
    scheme, sep, userinfo = run[:-1].rpartition("://")
    user, colon, _ = userinfo.partition(":")
    return f"{scheme}{sep}{user}{colon}{MASK}@" if colon else f"{scheme}{sep}{MASK}@"
