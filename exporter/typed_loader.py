"""A YAML document checked against typed frozen dataclasses, every error named by its key path at once.

The machinery behind the config file (`exporter.config`) and the web config file (`exporter.webconfig`):
read the text, read the YAML, then walk the document against a dataclass schema. Each unknown or ill-typed
key is an error naming its path (`engines.targets[0].url`); all errors of a document are collected, so one
edit fixes them all. A dataclass may add:

- `validate(self) -> list[str]`: checks across its fields, each error starting with the key it names; called
  when every field of the object was built;
- `REFUSED_KEYS: ClassVar[Mapping[str, str]]`: keys of a wider format that are named and refused with a
  reason rather than reported as unknown;

and a field typed `Annotated[T, Check(fn)]` has `fn(value) -> list[str]` run on its built value.

Supported field types: dataclasses, bool, int, float, str, `Literal[...]` of strings, `list[T]`,
`dict[str, str]`, `dict[str, T]`, `T | None`, `Annotated[T, Check(...)]`, and `object` (any value, unchecked).
"""

from __future__ import annotations

import dataclasses
import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml

from exporter import userinfo


class ConfigError(Exception):
    """One or more configuration errors, each naming its key."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("invalid configuration:\n" + "\n".join(f"  - {e}" for e in errors))


@dataclass(frozen=True)
class Check:
    """Field metadata (`Annotated[T, Check(fn)]`): `fn` returns the errors of a built value, each starting with
    the key below the field that it names (or empty)."""

    fn: Callable[[Any], list[str]]


class _Invalid:
    """What a value that failed its type builds to (None is a valid value of `T | None`)."""


INVALID: Any = _Invalid()


def read_text(path: str | Path) -> str:
    """A config file's text; unreadable or non-UTF-8 files are a ConfigError naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror}"]) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError([f"{path}: not UTF-8 text: byte {exc.object[exc.start]:#04x} at offset {exc.start}"]) from exc


def read_yaml(text: str, source: str) -> Any:
    """The YAML document in `text`; anything PyYAML cannot build is a ConfigError naming `source`."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:  # its text quotes the line it stopped at: a URL there may hold a password
        raise ConfigError([f"{source}: not valid YAML: {userinfo.masked(str(exc))}"]) from exc
    except (ValueError, LookupError, AttributeError, OverflowError) as exc:
        # PyYAML's constructors raise these, not YAMLError, for scalars they cannot build: `2001-13-45` and
        # `0000-01-01` (datetime), `!!int abc`, an int of more than 4300 digits (Python's int-from-text
        # limit): ValueError; `!!bool x`: KeyError; `!!int ''`: IndexError; `!!timestamp x`: AttributeError.
        raise ConfigError([f"{source}: not valid YAML: {type(exc).__name__}: {exc}"]) from exc
    except RecursionError as exc:  # PyYAML's composer recurses once per level: `[[[[…`
        raise ConfigError([f"{source}: not valid YAML: nested too deeply"]) from exc


@dataclass(frozen=True)
class Loader:
    """How errors are worded and ordered; the checks are the same for every setting.

    sort_known: an unknown key's message lists the known keys sorted (else in declaration order).
    unknown_first: a mapping's unknown and refused keys are reported before the errors of its known keys
    (else each where it stands in the document).
    root: the name of the document itself, for an error about its top level.
    """

    sort_known: bool = True
    unknown_first: bool = False
    root: str = "config"

    def load(self, schema: type[Any], data: Any) -> Any:
        """`data` (a YAML document, None for an empty one) as an instance of the dataclass `schema`."""
        errors: list[str] = []
        value = self.build(schema, {} if data is None else data, "", errors)
        if errors:
            raise ConfigError(errors)
        return value

    def build(self, tp: Any, value: Any, path: str, errors: list[str]) -> Any:
        """Check `value` against type `tp`, recording errors under `path`; the typed value, or INVALID."""
        where = path or self.root
        origin = get_origin(tp)
        if dataclasses.is_dataclass(tp):
            return self._dataclass(typing.cast(type[Any], tp), value, path, errors)
        if origin is Annotated:
            inner, *extras = get_args(tp)
            built = self.build(inner, value, path, errors)
            if built is not INVALID:
                for check in (e for e in extras if isinstance(e, Check)):
                    errors.extend(join(path, msg) for msg in check.fn(built))
            return built
        if origin is Literal:
            allowed = get_args(tp)
            text = literal_text(value)
            if text not in allowed:
                errors.append(f"{where}: must be one of {', '.join(map(str, allowed))}, got {quote(value)}")
                return INVALID
            return text
        if origin is list:
            if not isinstance(value, list):
                errors.append(f"{where}: expected a list, got {kind(value)}")
                return INVALID
            (item_tp,) = get_args(tp)
            return [self.build(item_tp, item, join(path, i), errors) for i, item in enumerate(value)]
        if origin is dict:
            if not isinstance(value, Mapping):
                errors.append(f"{where}: expected a mapping, got {kind(value)}")
                return INVALID
            _, item_tp = get_args(tp)
            if item_tp is not str:  # keys are strings; values of their own type, checked under their key
                keys = [k for k in value if not isinstance(k, str)]
                errors.extend(f"{join(path, key_text(k))}: keys must be strings" for k in keys)
                items = {
                    k: self.build(item_tp, v, join(path, k), errors) for k, v in value.items() if isinstance(k, str)
                }
                return INVALID if keys or INVALID in items.values() else items
            bad = [k for k, v in value.items() if not isinstance(k, str) or not isinstance(v, str)]
            for key in bad:
                errors.append(f"{join(path, key_text(key))}: keys and values must be strings")
            return INVALID if bad else dict(value)
        if origin in (Union, types.UnionType):
            if value is None and type(None) in get_args(tp):
                return None
            (inner,) = [a for a in get_args(tp) if a is not type(None)]
            return self.build(inner, value, path, errors)
        if tp is object:
            return value
        return scalar(tp, value, where, errors)

    def _dataclass(self, tp: type[Any], value: Any, path: str, errors: list[str]) -> Any:
        if not isinstance(value, Mapping):
            errors.append(f"{path or self.root}: expected a mapping, got {kind(value)}")
            return INVALID
        hints = typing.get_type_hints(tp, include_extras=True)
        fields = {f.name: f for f in dataclasses.fields(tp)}
        refused: Mapping[str, str] = getattr(tp, "REFUSED_KEYS", {})
        known = ", ".join(sorted(fields) if self.sort_known else fields)

        def stray(key: Any) -> None:
            reason = refused.get(key) if isinstance(key, str) else None
            errors.append(f"{join(path, key_text(key))}: {reason or f'unknown key (known: {known})'}")

        if self.unknown_first:
            for key in value:
                if key not in fields:
                    stray(key)
        kwargs: dict[str, Any] = {}
        for key, item in value.items():
            if key not in fields:
                if not self.unknown_first:
                    stray(key)
                continue
            kwargs[key] = self.build(hints[key], item, join(path, key), errors)
        missing = [
            name
            for name, f in fields.items()
            if name not in kwargs and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        ]
        errors.extend(f"{join(path, name)}: required key missing" for name in missing)
        if missing or any(v is INVALID for v in kwargs.values()):
            return INVALID  # the errors are recorded; do not build a half-valid object
        obj = tp(**kwargs)
        validate = getattr(obj, "validate", None)
        if validate is not None:
            errors.extend(join(path, msg) for msg in validate())
        return obj


def join(path: str, key: str | int) -> str:
    """The path of `key` below `path`: `a.b`, `a[0]`."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def literal_text(value: Any) -> Any:
    """A value as a Literal of strings compares it: YAML reads `enabled: true` as a bool."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def scalar(tp: Any, value: Any, where: str, errors: list[str]) -> Any:
    """`value` as a bool, int, float or str, or INVALID with the error recorded."""
    if tp is bool:
        if isinstance(value, bool):
            return value
    elif tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:  # an int beyond 1.8e308
                errors.append(f"{where}: expected float, got an int too large for a float")
                return INVALID
    elif tp is str:
        if isinstance(value, str):
            return value
    else:  # pragma: no cover - a field type this loader does not know
        raise TypeError(f"unsupported config type {tp!r}")
    errors.append(f"{where}: expected {tp.__name__}, got {kind(value)}")
    return INVALID


_REPR = reprlib.Repr()  # Python 3.11's Repr takes no keyword arguments
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 2, 4, 4
_REPR.maxstring = _REPR.maxother = _REPR.maxlong = 60


def quote(value: Any) -> str:
    """repr(value), bounded: a YAML alias bomb is small as text but astronomically large written out. A URL's
    password is masked (`http://user:***@host`), in a string before it is cut short (the cut could keep part
    of it but not the "@" that marks it)."""
    try:
        text = _REPR.repr(userinfo.masked(value) if isinstance(value, str) else value)
    except ValueError:  # an int of more than 4300 digits (YAML reads `0x…` of any length) has no decimal repr
        return f"<{type(value).__name__} too large to write out>"
    text = userinfo.masked(text)
    return text if len(text) <= 80 else text[:77] + "..."


def key_text(key: Any) -> str:
    """A mapping key as an error's path names it: str(key), or quote's placeholder where str() refuses."""
    try:
        return str(key)
    except ValueError:
        return quote(key)


def kind(value: Any) -> str:
    """A value's type and bounded repr, for "expected X, got ..."."""
    return "null" if value is None else f"{type(value).__name__} {quote(value)}"[:80]
