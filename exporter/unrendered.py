"""Unrendered Helm templates: a chart's `templates/` given where rendered manifests are expected (pure).

A template is rarely YAML (`{{- if … }}` lines, `{{ .Values.x }}` as a flow mapping), so the parser's own
error ("found unhashable key", "expected the node content") would be all a reader got. Only Helm's actions
count: a Grafana legend such as `{{pod}}` is text a dashboard keeps after rendering.
"""

from __future__ import annotations

import re

_ACTION = re.compile(
    r"\{\{-?\s*(?:[.$]|/\*|(?:include|template|if|else|end|range|with|define|toYaml|tpl|required|default|printf|"
    r"quote|nindent|indent)\b)"
)


# any other action but a bare name: a function with arguments (`{{ lower .Values.x }}`), a pipeline, a
# parenthesised or quoted operand (`{{ (.Files.Glob "d/*").AsConfig }}`); `{{ pod }}` stays a legend
_CALL = re.compile(r"\{\{-?\s*(?![A-Za-z_][A-Za-z0-9_]*\s*-?\}\})[A-Za-z_(\"'`]")


def helm_action(text: str) -> tuple[int, str] | None:
    """(line number, the line) of the first Helm template action in `text`; None when it has none."""
    for number, line in enumerate(text.splitlines(), 1):
        if _ACTION.search(line) or _CALL.search(line):
            return number, line.strip()[:80]
    return None


def hint(name: str, text: str, render: str) -> str | None:
    """The error for `name` when `text` is an unrendered Helm template, None otherwise; `render` is the
    command line that renders it for the tool that read it."""
    found = helm_action(text)
    if found is None:
        return None
    number, line = found
    return f"{name}: an unrendered Helm template (line {number}: {line}), not YAML; render it first: {render}"
