"""Property tests of the exposition parser (exporter/engines/parser.py) and of map_body on top of it.

Three contracts:
- any text is either parsed or rejected with ParseError, never another exception (parse and map_body);
- on a valid exposition, the samples we parse agree with prometheus_client's parser, sample for sample;
- label pairs rendered with the exporter's escaping parse back to themselves.
"""

from __future__ import annotations

import contextlib
import functools
import math
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from exporter.engines import mapping, parser, releases, vllm
from exporter.exposition import escape_label_value, render_labels

# Sized for the whole of tests/fuzz to run in well under 30 s on a slow 2-core machine; fuzz/ runs longer.
SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PREFIX = "vllm:"
RELEASES = releases.load("vllm")
IDENTITY = {"namespace": "n", "pod": "p", "engine": "vllm"}
WANTED = mapping.wanted_samples(vllm.SPEC)

# ---------------------------------------------------------------------------------------------- strategies

# Any character but surrogates (not encodable, so never in a fetched body), with the characters the
# format gives a meaning to drawn often.
SPECIAL = '\\"\n{}=, #\t'
ANY_CHAR = st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from(SPECIAL))
BLANKS = st.text(alphabet=" \t", min_size=1, max_size=3)  # the format allows runs of blanks and tabs
OPT_BLANKS = st.text(alphabet=" \t", max_size=2)

# Legacy (unquoted) names only. The quoted UTF-8 names of the newer format (`{"my.metric"}`) are outside
# what the parser promises: vLLM's prometheus_client emits legacy names, and names come from vllm.SOURCES.
_WORD = string.ascii_letters + string.digits + "_"
METRIC_NAME = st.builds(
    lambda prefix, head, tail: prefix + head + tail,
    st.sampled_from(["", PREFIX]),
    st.sampled_from(string.ascii_letters + "_:"),
    st.text(_WORD + ":", max_size=12),
)
# `__`-prefixed label names are reserved (prometheus_client rejects them); label names are unique within a
# sample (both parsers reject or keep duplicates differently, and no exposer emits them).
LABEL_NAME = st.builds(str.__add__, st.sampled_from(string.ascii_letters + "_"), st.text(_WORD, max_size=10)).filter(
    lambda name: not name.startswith("__")
)
LABEL_VALUE = st.text(ANY_CHAR, max_size=12)
LABELS = st.lists(st.tuples(LABEL_NAME, LABEL_VALUE), max_size=4, unique_by=lambda pair: pair[0])

# Values as Go's ParseFloat and prometheus_client both read them. Not `1_000` (Python's float takes it,
# the format does not) nor hex floats (Go takes them, Python does not): neither is emitted by an exposer.
VALUE = st.one_of(
    st.sampled_from(["NaN", "+Inf", "-Inf", "0", "-0", "1e3", "1E-3", "1.5e+10", ".5", "5.", "-1.0", "Inf"]),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:e}"),
    st.integers(-(10**20), 10**20).map(str),
)
TIMESTAMP = st.none() | st.integers(-(2**62), 2**62).map(str)
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
SUFFIXES = {"counter": [""], "gauge": [""], "untyped": [""], "histogram": ["_bucket", "_sum", "_count"]}
SUFFIXES["summary"] = ["", "_sum", "_count"]


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


@st.composite
def label_block(draw: st.DrawFn, pairs: list[tuple[str, str]]) -> str:
    """`{a="1",b="2"}` with optional blanks around every token and an optional trailing comma."""
    terms = [
        draw(OPT_BLANKS) + name + draw(OPT_BLANKS) + "=" + draw(OPT_BLANKS) + f'"{escape_label_value(value)}"'
        for name, value in pairs
    ]
    body = ("," + draw(OPT_BLANKS)).join(terms)
    if bool(terms) and draw(st.booleans()):
        body += draw(OPT_BLANKS) + ","
    return draw(OPT_BLANKS) + "{" + body + draw(OPT_BLANKS) + "}"


@st.composite
def sample_line(draw: st.DrawFn, name: str) -> str:
    pairs = draw(LABELS)
    if bool(pairs) or draw(st.booleans()):
        line = name + draw(label_block(pairs)) + draw(OPT_BLANKS)
        if not line.endswith((" ", "\t")):
            line += draw(BLANKS) if draw(st.booleans()) else ""
    else:
        line = name + draw(BLANKS)
    line += draw(VALUE)
    timestamp = draw(TIMESTAMP)
    if timestamp is not None:
        line += draw(BLANKS) + timestamp
    return line


# A comment must not read as a HELP or TYPE line (those are checked by prometheus_client).
COMMENT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\n"), max_size=20).filter(
    lambda text: text.split()[:1] not in (["TYPE"], ["HELP"])
)


@st.composite
def family(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    """(lines, sample names) of one family: optional HELP and TYPE lines, then its samples."""
    kind = draw(st.sampled_from(TYPES))
    name = draw(METRIC_NAME)
    if kind == "counter":
        # prometheus_client renames the samples of a counter declared without `_total` (it appends the
        # suffix, the OpenMetrics convention); the text format does not, and exposers declare `X_total`.
        name += "_total"
    lines = []
    if draw(st.booleans()):
        lines.append(f"# HELP {name} {_escape_help(draw(st.text(ANY_CHAR, max_size=20)))}".rstrip())
    typed = draw(st.booleans())
    if typed:
        lines.append(f"# TYPE {name} {kind}")
    names = []
    for _ in range(draw(st.integers(0, 4))):
        sample = name + draw(st.sampled_from(SUFFIXES[kind] if typed else [""]))
        names.append(sample)
        lines.append(draw(sample_line(sample)))
    return lines, names


@st.composite
def exposition(draw: st.DrawFn) -> tuple[str, set[str], set[str]]:
    """(body, wanted sample names, TYPE-declared family names with PREFIX)."""
    lines: list[str] = []
    names: list[str] = []
    for family_lines, family_names in draw(st.lists(family(), max_size=6)):
        lines += family_lines
        names += family_names
        if draw(st.booleans()):
            lines.append(draw(st.sampled_from(["", " ", "\t", "#"])) or "")
        if draw(st.integers(0, 5)) == 0:
            lines.append("#" + draw(COMMENT))
    # Leading blanks are allowed before any token, the first included.
    lines = [draw(st.sampled_from(["", "", "", " ", "\t "])) + line for line in lines]
    body = "\n".join(lines) + draw(st.sampled_from(["", "\n"]))
    wanted = set(draw(st.lists(st.sampled_from(names), max_size=len(names)))) if names else set()
    wanted |= draw(st.sets(METRIC_NAME, max_size=2))
    families = {line.split()[2] for line in lines if line.split()[:2] == ["#", "TYPE"]}
    return body, wanted, {f for f in families if f.startswith(PREFIX)}


@st.composite
def mutated_exposition(draw: st.DrawFn) -> str:
    """A valid exposition with a few characters inserted, deleted or replaced: mostly not valid any more."""
    body = list(draw(exposition())[0])
    for _ in range(draw(st.integers(1, 4))):
        if not body:
            break
        at = draw(st.integers(0, len(body) - 1))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        if action == "delete":
            del body[at]
        else:
            char = draw(ANY_CHAR)
            body[at : at + (action == "replace")] = [char]
    return "".join(body)


ARBITRARY_BODY = st.one_of(
    st.text(ANY_CHAR, max_size=200),
    st.binary(max_size=200).map(lambda data: data.decode("utf-8", errors="replace")),
    mutated_exposition(),
    # Lines made of the format's own tokens: reaches far more of the parser than random characters.
    st.lists(
        st.sampled_from(
            [
                "vllm:x",
                "vllm:num_requests_waiting",
                "{",
                "}",
                '"',
                "\\",
                "=",
                ",",
                " ",
                "\t",
                "\n",
                "#",
                "# TYPE ",
                "vllm:",
                "le",
                "NaN",
                "+Inf",
                "1",
                "1e3",
                "<html>",
                "(",
                "a",
                "_bucket",
            ]
        ),
        max_size=40,
    ).map("".join),
)

# ------------------------------------------------------------------------------------------------ helpers


def _same_value(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


def _peer_samples(body: str, wanted: set[str]) -> dict[str, list[tuple[dict[str, str], float]]]:
    peer: dict[str, list[tuple[dict[str, str], float]]] = {}
    for metric in text_string_to_metric_families(body):
        for sample in metric.samples:
            if sample.name in wanted:
                peer.setdefault(sample.name, []).append((sample.labels, float(sample.value)))
    return peer


def _only_parse_error(call: Any, *args: Any) -> None:
    with contextlib.suppress(parser.ParseError):
        call(*args)


# ------------------------------------------------------------------------------------------------- tests


@SETTINGS
@given(ARBITRARY_BODY)
@example("x\t1\n")
@example("\t\n")
def test_any_text_parses_or_is_a_parse_error(body: str) -> None:
    _only_parse_error(parser.parse, body, {"x", "vllm:x", "a"}, PREFIX)
    _only_parse_error(
        functools.partial(mapping.map_body, engine=vllm.SPEC), body, IDENTITY, None, RELEASES
    )  # parses with WANTED


@settings(SETTINGS, max_examples=200)
@given(exposition())
def test_agrees_with_prometheus_client_on_valid_expositions(case: tuple[str, set[str], set[str]]) -> None:
    body, wanted, families = case
    peer = _peer_samples(body, wanted)  # raises if the generated body is not valid: a strategy bug
    if not families and not any(metric.samples for metric in text_string_to_metric_families(body)):
        # By design (parse's docstring): a body with neither a sample nor a TYPE line of the prefix is not
        # an engine's exposition (an empty 200, an error page made of `#` lines), even if it is valid.
        if body.strip():
            with pytest.raises(parser.ParseError, match="no samples"):
                parser.parse(body, wanted, PREFIX)
        return
    ours = parser.parse(body, wanted, PREFIX)
    assert set(ours.samples) == set(peer)
    for name, samples in ours.samples.items():
        assert len(samples) == len(peer[name]), name
        for (labels, value), (peer_labels, peer_value) in zip(samples, peer[name], strict=True):
            assert dict(labels) == peer_labels and len(labels) == len(peer_labels), name
            assert _same_value(value, peer_value), (name, value, peer_value)
    assert ours.families == families


@SETTINGS
@given(st.lists(st.tuples(LABEL_NAME, LABEL_VALUE), max_size=6))
def test_rendered_labels_parse_back(pairs: list[tuple[str, str]]) -> None:
    parser.parse_labels.cache_clear()  # exercise the parse, not the cache
    rendered = render_labels(pairs)
    assert parser.parse_labels(rendered[1:-1]) == tuple(pairs)


# ------------------------------------------------------------------ regressions: inputs the fuzzers found


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ("\\n", '"\\\\n"'),  # a backslash then `n`: was read back as a backslash then a newline
        ('\\"', '"\\\\\\""'),  # a backslash then a quote
        ("a\\\\nb", '"a\\\\\\\\nb"'),
        ("\n\\", '"\\n\\\\"'),
    ],
)
def test_escaped_backslash_before_n_or_quote(value: str, rendered: str) -> None:
    assert f'"{escape_label_value(value)}"' == rendered
    assert parser.parse_labels(f"a={rendered}") == (("a", value),)


def test_unknown_escapes_are_kept_as_prometheus_client_does() -> None:
    assert parser.parse_labels('a="x\\ty"') == (("a", "x\\ty"),)


@pytest.mark.parametrize(
    "body",
    [
        "vllm:x\t1\n",  # a tab between name and value: was "not a sample line", failing the whole scrape
        "vllm:x\t1 1700000000000\n",  # was silently skipped (read as a sample named "vllm:x\t1")
        'vllm:x {a="1"} 1\n',  # a blank before the label set: was "bad sample value"
        'vllm:x\t{a="1"}\t1\n',  # was silently skipped
        ' vllm:x{a="1"} 1\n',  # leading blanks: was silently skipped
        "\t\nvllm:x 1\n",  # a blank line holding a tab: was "not a sample line"
    ],
)
def test_blanks_and_tabs_between_tokens(body: str) -> None:
    peer = [(tuple(labels.items()), value) for labels, value in _peer_samples(body, {"vllm:x"})["vllm:x"]]
    assert parser.parse(body, {"vllm:x"}, PREFIX).samples == {"vllm:x": peer}


@pytest.mark.parametrize(
    "line", ["# TYPE  vllm:x gauge", "#\tTYPE vllm:x gauge", "# TYPE vllm:x\tgauge", " # TYPE vllm:x gauge"]
)
def test_type_lines_with_blanks(line: str) -> None:
    assert parser.parse(line + "\nvllm:x 1\n", {"vllm:x"}, PREFIX).families == {"vllm:x"}


def test_a_type_line_of_another_prefix_is_not_recorded() -> None:
    assert parser.parse("# TYPE  other gauge\nother 1\n", set(), PREFIX).families == set()


def test_printable_ascii_body_smoke() -> None:
    # Deterministic: every printable ASCII character alone on a line after a valid sample.
    for char in string.printable:
        _only_parse_error(parser.parse, "vllm:x 1\n" + char + "\n", WANTED, PREFIX)
