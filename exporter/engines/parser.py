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
            value = value.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")
        pairs.append((match.group(1), value))
        pos = match.end()
    return tuple(pairs)


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
    for line in body.split("\n"):
        if not line:
            continue
        if line[0] == "#":
            if line.startswith(type_prefix):
                parts = line.split(" ", 3)
                if len(parts) >= 3:
                    result.families.add(parts[2])
            continue
        brace = line.find("{")
        space = line.find(" ")
        if brace != -1 and (space == -1 or brace < space):
            name = line[:brace]
            if name not in wanted:
                seen_data = True
                continue
            close = line.rfind("}")
            if close < brace:
                raise ParseError(f"unclosed label set: {line[:80]!r}")
            labels = parse_labels(line[brace + 1 : close])
            rest = line[close + 1 :].split()
        else:
            if space == -1:
                raise ParseError(f"not a sample line: {line[:80]!r}")
            name = line[:space]
            if not seen_data and ("<" in name or "(" in name):
                raise ParseError(f"not a sample line: {line[:80]!r}")
            if name not in wanted:
                seen_data = True
                continue
            labels = ()
            rest = line[space + 1 :].split()
        if not rest:
            raise ParseError(f"sample without a value: {line[:80]!r}")
        seen_data = True
        samples.setdefault(name, []).append((labels, parse_value(rest[0])))
    if not seen_data and not result.families and body.strip():
        raise ParseError("no samples in body")
    return result
