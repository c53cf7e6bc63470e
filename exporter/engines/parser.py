"""A fast, selective parser for the Prometheus text format.

It only fully parses the samples whose names the caller asks for, and otherwise just records the family
names of `# TYPE` lines with a given prefix. vLLM bodies are dominated by HTTP, process and GC series we
never map, so skipping them with one dict lookup per line is where the speed comes from (see
bench/bench_parse.py for the ratio against prometheus_client's parser).
"""

from __future__ import annotations

import re
from collections.abc import Container
from dataclasses import dataclass, field
from functools import lru_cache

_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_ESCAPE = re.compile(r'\\([\\"n])')  # the format's three escapes; any other backslash is kept (as the peer does)
_UNESCAPED = {"\\": "\\", '"': '"', "n": "\n"}


class ParseError(ValueError):
    """The body is not the Prometheus text format (for example, an HTML error page)."""


@dataclass(slots=True)
class ParsedBody:
    # sample name -> [(label pairs, value)]
    samples: dict[str, list[tuple[tuple[tuple[str, str], ...], float]]] = field(default_factory=dict)
    families: set[str] = field(default_factory=set)  # TYPE-declared family names with the prefix


@lru_cache(maxsize=1 << 16)
def parse_labels(text: str) -> tuple[tuple[str, str], ...]:
    """`a="1",b="x\\"y"` → (("a", "1"), ("b", 'x"y')). Raises ParseError on malformed input.

    Cached: an engine exposes the same label sets at every scrape, so steady-state scrapes skip the regex.
    """
    pairs = []
    pos = 0
    end = len(text)
    while pos < end:
        match = _LABEL.match(text, pos)
        if match is None:
            if text[pos:].strip():
                raise ParseError(f"malformed labels: {text[:80]!r}")
            break
        value = match.group(2)
        if "\\" in value:
            # One left-to-right pass: chained str.replace calls read `\\n` (an escaped backslash, then n)
            # as a backslash and a newline.
            value = _ESCAPE.sub(_unescape, value)
        pairs.append((match.group(1), value))
        pos = match.end()
    return tuple(pairs)


def _unescape(match: re.Match[str]) -> str:
    return _UNESCAPED[match.group(1)]


def _type_family(line: str) -> str | None:
    """The family name of a `# TYPE name type` line with any blanks and tabs between its tokens, or None."""
    tokens = line[1:].replace("\t", " ").split(" ")
    tokens = [token for token in tokens if token]
    return tokens[1] if len(tokens) >= 2 and tokens[0] == "TYPE" else None


def parse_value(text: str) -> float:
    try:
        return float(text)  # accepts NaN, +Inf, -Inf as the format spells them
    except ValueError:
        raise ParseError(f"bad sample value {text[:40]!r}") from None


def parse(body: str, wanted: Container[str], family_prefix: str) -> ParsedBody:
    """Parse the samples named in `wanted`, and the TYPE family names starting with `family_prefix`.

    Raises ParseError when the body is not the text format. The body is bounded by the fetch's size cap;
    series-count and label-length caps are the mapping's (it reports what it trims).
    """
    result = ParsedBody()
    samples = result.samples
    type_prefix = "# TYPE " + family_prefix
    seen_data = False
    # The format allows runs of blanks and tabs between tokens and before the first; prometheus_client (so
    # vLLM) writes single spaces. The rarer spellings are handled off the per-line fast path: tabs behind one
    # memchr of the body, indented lines by parsing again with the lines stripped (see _dedented).
    tabs = "\t" in body
    for line in body.split("\n"):
        if not line:
            continue
        if line[0] == "#":
            if line.startswith(type_prefix):
                parts = line.split(" ", 3)
                if len(parts) >= 3 and not (tabs and "\t" in parts[2]):
                    result.families.add(parts[2])
                    continue
            elif line.startswith("# HELP "):
                continue
            elif line.startswith("# TYPE ") and line[7:8] != " " and not tabs:
                continue  # a canonical TYPE line of another prefix
            elif "TYPE" not in line:
                continue  # a comment
            name = _type_family(line)  # a TYPE line with other blanks than single spaces
            if name is not None and name.startswith(family_prefix):
                result.families.add(name)
            continue
        brace = line.find("{")
        if brace != -1 and " " not in (name := line[:brace]):  # `name{`: no blank before the label set
            if name not in wanted:
                if tabs and "\t" in name:  # `name\t{...}`: tabs before the label set
                    if name[0] == "\t":
                        return _dedented(body, wanted, family_prefix)
                    name = name.rstrip("\t")
                if name not in wanted:
                    seen_data = True
                    continue
            labels, close = _labels_at(line, brace)
            try:  # the common line, `name{...} value`: float() takes the blank before the value
                value = float(line[close + 1 :])
            except ValueError:  # a timestamp after the value (or a bad value: parse_value says which)
                rest = line[close + 1 :].split()
            else:
                seen_data = True
                samples.setdefault(name, []).append((labels, value))
                continue
        else:
            space = line.find(" ")
            if space == -1:
                space = line.find("\t")  # `name\tvalue`
                if space == -1:
                    raise ParseError(f"not a sample line: {line[:80]!r}")
            if space == 0:
                return _dedented(body, wanted, family_prefix)
            name = line[:space]
            if tabs and name not in wanted:
                tab = name.find("\t")  # `name\tvalue timestamp`, `name\t {...}`
                if tab == 0:
                    return _dedented(body, wanted, family_prefix)
                if tab != -1:
                    space, name = tab, line[:tab]
            if not seen_data and ("<" in name or "(" in name):
                raise ParseError(f"not a sample line: {line[:80]!r}")
            if name not in wanted:
                seen_data = True
                continue
            rest = line[space + 1 :].split()
            if rest and rest[0][0] == "{":  # `name {...} value`: blanks before the label set
                labels, rest = _label_set(line, line.find("{"))
            else:
                labels = ()
        if not rest:
            raise ParseError(f"sample without a value: {line[:80]!r}")
        seen_data = True
        samples.setdefault(name, []).append((labels, parse_value(rest[0])))
    if not seen_data and not result.families and body.strip():
        raise ParseError("no samples in body")
    return result


def _labels_at(line: str, brace: int) -> tuple[tuple[tuple[str, str], ...], int]:
    """The labels of the set opening at `brace`, and where it closes."""
    close = line.rfind("}")
    if close < brace:
        raise ParseError(f"unclosed label set: {line[:80]!r}")
    return parse_labels(line[brace + 1 : close]), close


def _label_set(line: str, brace: int) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The labels of the set opening at `brace`, and the tokens after it (value, timestamp)."""
    labels, close = _labels_at(line, brace)
    return labels, line[close + 1 :].split()


def _dedented(body: str, wanted: Container[str], family_prefix: str) -> ParsedBody:
    """`parse` of a body with indented lines: the same body with each line's leading blanks removed.

    A label value holds no raw newline (it is escaped), so every line starts with a token or blanks.
    """
    return parse("\n".join(line.lstrip(" \t") for line in body.split("\n")), wanted, family_prefix)
