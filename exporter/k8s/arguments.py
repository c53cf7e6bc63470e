"""A container's arguments and environment as the program receives them (pure), for the readers of an engine's
flags: the audit's context limit and llm_model_info.

- `$(VAR)` in the command and args is replaced with the container's variable `VAR`, as the kubelet does
  (k8s.io/api core/v1 types.go Container.Args: "Variable references $(VAR_NAME) are expanded using the
  container's environment. If a variable cannot be resolved, the reference in the input string will be
  unchanged. Double $$ are reduced to a single $, which allows for escaping the $(VAR_NAME) syntax");
- the command and args are read as words, also those of a `sh -c "…"` script, quotes removed;
- a flag's value is `--flag=value` or `--flag value`; a value the shell or a template would fill in
  (`$MODEL`, `${MODEL}`, `{{ .Values.model }}`, an unresolved `$(VAR)`) is not known here: None;
- a variable read from another object is known once `exporter.k8s.environment` has resolved it from a
  ConfigMap of the input; else `unknown_reason` names where it comes from (a Secret, a ConfigMap the input
  lacks, the pod's fields), so a reader says "unknown", never "absent".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from exporter.k8s.workloads import Container, EnvRef

_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_UNRESOLVED = re.compile(r"\$|\{\{|\}\}")


def expand(text: str, env: Mapping[str, str]) -> str:
    """`text` with each `$(VAR)` of a variable in `env` replaced by its value and `$$` reduced to `$`."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "$"
        return env.get(name, match.group(0))

    return _REFERENCE.sub(one, text)


def words(c: Container) -> list[str]:
    """The container's command and args, `$(VAR)` expanded, as words (a `sh -c` script's too), quotes removed."""
    env = dict(c.env)
    return [w.strip("\"'") for arg in c.argv for w in expand(arg, env).split() if w.strip("\"'")]


def known(value: str) -> str | None:
    """`value`, or None when something else fills it in at run time (a shell variable, a template)."""
    return None if not value or _UNRESOLVED.search(value) else value


def flag(found: list[str], names: Iterable[str]) -> tuple[str, str] | None:
    """(the flag, its value) of the first of `names` in the words `found` (`--flag=value` or `--flag value`);
    its value "" when it has none. None when none of them is given."""
    wanted = set(names)
    for i, word in enumerate(found):
        name, equals, value = word.partition("=")
        if name in wanted:
            if not equals:
                following = found[i + 1] if i + 1 < len(found) else ""
                value = "" if following.startswith("-") else following
            return name, value.strip("\"'")  # `--flag='value'`: the shell removes the quotes
    return None


def env_value(c: Container, names: Iterable[str]) -> tuple[str, str] | None:
    """(the variable, its value) of the first of `names` the container sets, or None."""
    earlier: dict[str, str] = {}  # a variable's value expands the variables defined before it
    for name, value in c.env:
        earlier[name] = expand(value, earlier)
    return next(((name, earlier[name]) for name in names if name in earlier), None)


def _source(ref: EnvRef) -> str:
    if ref.kind == "Secret":
        return f"Secret {ref.name}, whose values are never read"
    if ref.kind == "ConfigMap":
        key = f" (key {ref.key})" if ref.key else " (envFrom)"
        return f"ConfigMap {ref.name}{key}, {ref.why or 'not among the objects read'}"
    return f"the pod's {ref.kind}"


def _may_set(ref: EnvRef, name: str) -> bool:
    """Whether the `envFrom` reference `ref`, not resolved, may set the variable `name`: any of a source not
    read (an optional one the input lacks is read as absent), or the one key withheld."""
    if ref.after >= 0 or ref.optional:
        return False
    return name == ref.variable if ref.key else name.startswith(ref.variable)


def variable_reason(c: Container, name: str) -> str:
    """Why the variable `name` is not known: where it is read from; "" when the container sets it."""
    if name in dict(c.env):
        return ""
    for ref in reversed(c.env_refs):
        if ref.variable == name and (ref.after >= 0 or ref.key):  # an `env` entry's, or an envFrom key withheld
            return f"{name} is read from {_source(ref)}"
    sources = [_source(r) for r in c.env_refs if _may_set(r, name)]
    if sources:
        return f"{name} may be set by {' or '.join(sources)}"
    return f"no variable {name} is set: $({name}) stays as written"


def unknown_reason(c: Container, value: str) -> str:
    """Why an argument's value is not known: the first `$(VAR)` in it the container does not set; "" for none."""
    for match in _REFERENCE.finditer(value):
        name = match.group(1)
        if name is not None and (why := variable_reason(c, name)):
            return why
    return ""


def env_reason(c: Container, names: Iterable[str]) -> tuple[str, str] | None:
    """(the variable, why its value is unknown) of the first of `names` read from another object and not
    resolved; None when none of them is."""
    env = dict(c.env)
    for name in names:
        if name in env:
            return None  # set: `env_value` reads it
        listed = any(r.after >= 0 and r.variable == name for r in c.env_refs)
        sourced = any(_may_set(r, name) for r in c.env_refs)
        if listed or sourced:
            return name, variable_reason(c, name)
    return None
