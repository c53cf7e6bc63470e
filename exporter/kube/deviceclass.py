"""Which driver a DRA DeviceClass stands for, read from its CEL selectors.

A claim asks for devices of a class (`gpu.example.com` or any other name an administrator gives it); the
cluster view counts devices per driver. A class's selectors (all must hold) name the driver in a
comparison `device.driver == "name"` (either quote, either operand order) that is one of the top-level
`&&` terms of a selector expression, as NVIDIA's and the example drivers' classes do. This is a
documented subset of CEL, not an evaluator: a class whose selectors name no driver that way (an `||` of
drivers, attribute tests only) is reported under its own name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_DRIVER = re.compile(
    r"""^\(*\s*(?:device\.driver\s*==\s*(['"])([^'"]+)\1|(['"])([^'"]+)\3\s*==\s*device\.driver)\s*\)*$"""
)


def _top_level_and_terms(expression: str) -> list[str] | None:
    """The terms of a top-level `&&` chain; None when the expression has a top-level `||` or `?`."""
    terms, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(expression):
        c = expression[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and expression.startswith("&&", i):
            terms.append(expression[start:i])
            start, i = i + 2, i + 1
        elif depth == 0 and (expression.startswith("||", i) or c == "?"):
            return None
        i += 1
    terms.append(expression[start:])
    return [t.strip() for t in terms]


def driver_of_expression(expression: str) -> str | None:
    """The driver a selector expression requires, when it requires one in the documented form."""
    terms = _top_level_and_terms(expression.strip())
    if terms is None:
        terms = [expression.strip()]  # a bare parenthesised comparison is still one term
    for term in terms:
        found = _DRIVER.match(term)
        if found:
            return found.group(2) or found.group(4)
    return None


def class_driver(obj: Mapping[str, Any]) -> str:
    """A DeviceClass object → the driver its selectors require, or the class's own name."""
    name = str(obj["metadata"]["name"])
    selectors: Iterable[Mapping[str, Any]] = (obj.get("spec") or {}).get("selectors") or ()
    for selector in selectors:
        expression = (selector.get("cel") or {}).get("expression")
        driver = driver_of_expression(expression) if isinstance(expression, str) else None
        if driver:
            return driver
    return name
