"""Property tests of the config loader (exporter/config.py): a document is a Config or a ConfigError.

Whatever the document (any YAML value, the real keys with wrong types or values, text that is not YAML,
bytes that are not UTF-8), `config.parse` / `config.load` return a Config or raise ConfigError whose errors
are strings that each name a key path (or the document) — never a TypeError, ValueError or KeyError.
"""

from __future__ import annotations

import dataclasses
import math
import string
import tempfile
import time
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from exporter import config

# Sized for the whole of tests/fuzz to run in well under 30 s on a slow 2-core machine; fuzz/ runs longer.
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SOURCE = "fuzz.yaml"

# ---------------------------------------------------------------------------------------------- strategies

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**400),  # too large for a float
    st.floats(),  # NaN and infinities included
    st.text(max_size=20),
    st.sampled_from(["auto", "true", "false", "vllm", "http://127.0.0.1:8000", "namespace", "pod", ""]),
)
KEYS = st.one_of(st.text(max_size=10), st.integers(), st.booleans(), st.none())
YAML_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=12,
)


def _acceptable(tp: Any, value: Any) -> bool:
    """Whether `value` has the YAML type the loader accepts for a field of type `tp` (not its range)."""
    if dataclasses.is_dataclass(tp) or get_origin(tp) is dict:
        return isinstance(value, Mapping)
    if get_origin(tp) is list:
        return isinstance(value, list)
    if get_origin(tp) is Literal:
        return config._literal_text(value) in get_args(tp)
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    assert tp is str, tp  # a new field type: teach this test (and the strategies below) about it
    return isinstance(value, str)


def for_type(tp: Any) -> st.SearchStrategy[Any]:
    """Values for a field of type `tp`: mostly well typed (so deeper keys are reached), sometimes anything."""
    origin = get_origin(tp)
    if dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        optional = {f.name: for_type(hints[f.name]) for f in dataclasses.fields(tp)}
        well_typed = st.fixed_dictionaries({}, optional=optional)
        with_unknown = st.builds(
            lambda d, k, v: {**d, k: v}, well_typed, st.text(string.ascii_lowercase, max_size=8), SCALARS
        )
        return st.one_of(well_typed, well_typed, with_unknown, YAML_VALUES)
    if origin is list:
        return st.lists(for_type(get_args(tp)[0]), max_size=3) | YAML_VALUES
    if origin is dict:
        return st.dictionaries(st.sampled_from(["namespace", "pod", "team"]) | KEYS, SCALARS, max_size=3)
    if origin is Literal:
        return st.sampled_from(get_args(tp)) | st.booleans() | SCALARS
    if tp is bool:
        return st.booleans() | SCALARS
    if tp is int:
        return st.integers(-(2**40), 2**40) | SCALARS
    if tp is float:
        return st.floats() | st.integers(-100, 100) | SCALARS
    if tp is str:
        return (
            st.sampled_from(["http://127.0.0.1:8000", "https://[::1]:8000", "http://[::1", "ftp://x", "http://"])
            | SCALARS
        )
    raise AssertionError(f"a config field type this test does not know: {tp!r}")


CONFIG_DOCUMENTS = for_type(config.Config)

# Text in YAML's own tokens, with the tags and scalars whose PyYAML constructors raise plain exceptions.
YAML_TOKENS = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "engines",
                "targets",
                "url",
                "labels",
                "gpu",
                "enabled",
                "cluster",
                "page_size",
                "timeout_seconds",
                ":",
                ": ",
                " ",
                "  ",
                "\n",
                "\n  ",
                "- ",
                "[",
                "]",
                "{",
                "}",
                ",",
                "'",
                '"',
                "#",
                "? ",
                "|",
                ">",
                "&a ",
                "*a",
                "<<: ",
                "!!int ",
                "!!float ",
                "!!timestamp ",
                "!!binary ",
                "!!str ",
                "!!bool ",
                "!!set ",
                "!!omap ",
                "!!python/name:os.system ",
                "!foo ",
                "2001-13-45",
                "0000-01-01",
                "1e999",
                ".nan",
                ".inf",
                "0x1F",
                "0o17",
                "1_000",
                "1:20",
                "~",
                "null",
                "yes",
                "1" * 5000,
                "%YAML 1.1\n",
                "---\n",
                "...\n",
            ]
        ),
        st.text(max_size=4),
    ),
    max_size=30,
).map("".join)
ANY_TEXT = st.one_of(st.text(max_size=200), YAML_TOKENS)

# ------------------------------------------------------------------------------------------------ helpers


def _errors_of(text: str) -> list[str] | None:
    """The errors of `text` (None when it is a valid Config), asserting the ConfigError contract."""
    try:
        result = config.parse(text, source=SOURCE)
    except config.ConfigError as exc:
        assert exc.errors and all(isinstance(e, str) and e for e in exc.errors), exc.errors
        return exc.errors
    assert isinstance(result, config.Config)
    return None


def _names_a_path(error: str, document: Any) -> bool:
    """Whether `error` starts with the document's name, `config`, or a key path rooted at a top-level key."""
    if error.startswith((f"{SOURCE}: ", "config: ")):
        return True
    roots = [config._key_text(key) for key in document] if isinstance(document, Mapping) else []
    return any(error.startswith((f"{root}: ", f"{root}.", f"{root}[")) for root in roots)


def _assert_faithful(value: Any, document: Any) -> None:
    """A Config built from `document` holds exactly the document's values (defaults elsewhere)."""
    if dataclasses.is_dataclass(value):
        for key, item in document.items():
            _assert_faithful(getattr(value, key), item)
    elif isinstance(value, list):
        assert len(value) == len(document)
        for built, item in zip(value, document, strict=True):
            _assert_faithful(built, item)
    elif isinstance(value, float):
        assert math.isclose(value, document) and not isinstance(document, bool)
    elif isinstance(document, bool) and isinstance(value, str):
        assert value == ("true" if document else "false")  # a Literal spelled as a YAML bool
    else:
        assert value == document and type(value) is type(document)


def _dump(document: Any) -> tuple[str, Any]:
    """(YAML text, the document as it reads back). Not always `document`: PyYAML folds a NEL (U+0085) in a
    plain key into a space, for one; errors name the keys as read."""
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
    return text, yaml.safe_load(text)


# ------------------------------------------------------------------------------------------------- tests


@SETTINGS
@given(YAML_VALUES)
def test_any_yaml_document_is_a_config_or_a_config_error(document: Any) -> None:
    text, read = _dump(document)
    for error in _errors_of(text) or []:
        assert _names_a_path(error, read), error


@SETTINGS
@given(CONFIG_DOCUMENTS)
@example({"engines": {"timeout_seconds": 10**400}})
@example({"engines": {"targets": [{"url": "http://[::1"}]}})
@example({"engines": {"targets": [{"url": "http://\uff03x"}]}})
def test_documents_of_the_real_keys(document: Any) -> None:
    text, read = _dump(document)
    errors = _errors_of(text)
    if errors is None:
        _assert_faithful(config.parse(text), read if read is not None else {})
    for error in errors or []:
        assert _names_a_path(error, read), error


def _fields() -> list[tuple[str, Any]]:
    """(key path, type) of every leaf and nested field of Config."""
    out = []

    def walk(tp: Any, path: str) -> None:
        for f in dataclasses.fields(tp):
            hint = typing.get_type_hints(tp)[f.name]
            out.append((f"{path}{f.name}", hint))
            if dataclasses.is_dataclass(hint):
                walk(hint, f"{path}{f.name}.")

    walk(config.Config, "")
    return out


@SETTINGS
@given(st.sampled_from(_fields()).flatmap(lambda field: st.tuples(st.just(field), YAML_VALUES)))
def test_an_ill_typed_key_is_an_error_naming_it(case: tuple[tuple[str, Any], Any]) -> None:
    (path, tp), value = case
    if _acceptable(tp, value):
        return
    document: Any = value
    for key in reversed(path.split(".")):
        document = {key: document}
    errors = _errors_of(_dump(document)[0])
    assert errors is not None, (path, value)
    assert any(e.startswith((f"{path}: ", f"{path}.", f"{path}[")) for e in errors), errors


@SETTINGS
@given(ANY_TEXT)
@example("a: 2001-13-45")
@example("a: !!int abc")
@example("!!bool")
@example("!!timestamp x")
@example("a: " + "1" * 5000)
def test_any_text_is_a_config_or_a_config_error(text: str) -> None:
    for error in _errors_of(text) or []:
        assert error.startswith(f"{SOURCE}: ") or ": " in error, error


@settings(SETTINGS, max_examples=40)
@given(st.binary(max_size=100))
@example(b"\xff\xfe")
def test_any_file_is_a_config_or_a_config_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_bytes(data)
        try:
            config.load(path)
        except config.ConfigError as exc:
            assert exc.errors and all(isinstance(e, str) for e in exc.errors)


# ------------------------------------------------------------------ regressions: inputs the fuzzers found


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 2001-13-45", "month must be in 1..12"),  # PyYAML builds timestamps with datetime: ValueError
        ("a: 0000-01-01", "year 0 is out of range"),
        ("a: !!int abc", "invalid literal for int()"),
        ("a: !!float abc", "could not convert string to float"),
        ("a: !!bool x", "KeyError: 'x'"),
        ("a: !!int ''", "IndexError"),
        ("a: !!timestamp x", "AttributeError"),
        ("a: " + "1" * 5000, "Exceeds the limit (4300 digits)"),  # Python's int-from-text limit
        ("[" * 1000, "nested too deeply"),  # PyYAML's composer recurses: RecursionError
    ],
)
def test_yaml_the_constructor_rejects_is_not_valid_yaml(text: str, message: str) -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse(text, source=SOURCE)
    assert info.value.errors == [info.value.errors[0]]
    assert info.value.errors[0].startswith(f"{SOURCE}: not valid YAML: ") and message in info.value.errors[0]


def test_an_integer_too_large_for_a_float() -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse(f"engines: {{timeout_seconds: {10**400}}}")
    assert info.value.errors == ["engines.timeout_seconds: expected float, got an int too large for a float"]


@pytest.mark.parametrize("url", ["http://[::1", "http://\uff03x"])
def test_a_url_urlsplit_rejects(url: str) -> None:
    with pytest.raises(config.ConfigError) as info:
        config.parse(yaml.safe_dump({"engines": {"targets": [{"url": url}]}}))
    assert info.value.errors == [f"engines.targets[0].url: {url!r} is not an http(s) URL with a host"]


HEX = "0x1" + "0" * 4000  # PyYAML reads it (the 4300-digit limit is for decimal); str() and repr() refuse
TOO_LONG = "<int too large to write out>"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        (HEX, f"config: expected a mapping, got int {TOO_LONG}"),
        (
            f"? {HEX}\n: 1\n",
            f"{TOO_LONG}: unknown key (known: cluster, cost, engines, gateways, gpu)",
        ),  # `? `: a key > 1024 chars
        (f"gpu: {{enabled: {HEX}}}", f"gpu.enabled: must be one of auto, true, false, got {TOO_LONG}"),
        (
            f"engines:\n  targets:\n  - url: http://x\n    labels:\n      ? {HEX}\n      : a\n",
            f"engines.targets[0].labels.{TOO_LONG}: keys and values must be strings",
        ),
    ],
)
def test_an_int_too_long_to_write_in_decimal(text: str, error: str) -> None:
    # PyYAML reads a hex int of any length (Python's 4300-digit limit is for decimal), and an error quoting
    # it with repr() or str() raised ValueError.
    with pytest.raises(config.ConfigError) as info:
        config.parse(text)
    assert info.value.errors == [error]


def test_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(b"engines: {timeout_seconds: 3}\n# \xff\n")
    with pytest.raises(config.ConfigError) as info:
        config.load(path)
    assert info.value.errors == [f"{path}: not UTF-8 text: byte 0xff at offset 32"]


def test_errors_quote_a_bounded_part_of_a_huge_value() -> None:
    # An alias bomb: nine levels of nine aliases is 9**9 strings when written out. Quoting a value in an
    # error used repr(), which writes all of it out (minutes and gigabytes); it must stay short and quick.
    lines = ['a0: &a0 ["xxxxxxxxxx"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    text = "\n".join(lines) + "\n"
    for key in ("gpu: {enabled: *a9}", "cluster: *a9", "engines: {targets: [*a9]}"):
        started = time.monotonic()
        with pytest.raises(config.ConfigError) as info:
            config.parse(text + key)
        assert time.monotonic() - started < 2
        assert all(len(error) < 300 for error in info.value.errors), info.value.errors
