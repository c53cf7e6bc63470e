"""Label selectors: a metav1.LabelSelector from an object, and `kubectl -l` text (pure).

Services, PodDisruptionBudgets and InferencePools pick pods with them; the cluster role's engine-pod watch
takes one from its configuration.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exporter.k8s.fields import as_dict, as_list, strs


@dataclass(frozen=True)
class Selector:
    """A label selector: matchLabels and the In / NotIn / Exists / DoesNotExist expressions."""

    match_labels: dict[str, str]
    expressions: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if not self.match_labels and not self.expressions:
            return False  # an empty selector selects nothing here (a Service without one has manual endpoints)
        if any(labels.get(k) != v for k, v in self.match_labels.items()):
            return False
        for key, op, values in self.expressions:
            if op == "In" and labels.get(key) not in values:
                return False
            if op == "NotIn" and labels.get(key) in values:
                return False
            if op == "Exists" and key not in labels:
                return False
            if op == "DoesNotExist" and key in labels:
                return False
        return True


_SET_TERM = re.compile(r"^\s*([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def parse_label_selector(text: str) -> Selector:
    """A label selector as `kubectl -l` writes it: `a=b,c!=d,e in (f,g),h notin (i),j,!k`; ValueError if bad."""
    labels: dict[str, str] = {}
    expressions: list[tuple[str, str, tuple[str, ...]]] = []
    for raw in re.split(r",(?![^()]*\))", text):
        term = raw.strip()
        if not term:
            continue
        if found := _SET_TERM.match(term):
            values = tuple(v.strip() for v in found.group(3).split(",") if v.strip())
            expressions.append((found.group(1), "In" if found.group(2) == "in" else "NotIn", values))
        elif "!=" in term:
            key, value = (p.strip() for p in term.split("!=", 1))
            expressions.append((key, "NotIn", (value,)))
        elif "=" in term:
            key, value = (p.strip() for p in term.replace("==", "=").split("=", 1))
            labels[key] = value
        elif term.startswith("!"):
            expressions.append((term[1:].strip(), "DoesNotExist", ()))
        elif re.fullmatch(r"[\w./-]+", term):
            expressions.append((term, "Exists", ()))
        else:
            raise ValueError(f"not a label selector term: {term!r}")
    return Selector(labels, tuple(expressions))


def label_selector(obj: Any) -> Selector:
    raw = as_dict(obj)
    expressions = tuple(
        (str(e.get("key")), str(e.get("operator")), tuple(str(v) for v in as_list(e.get("values"))))
        for e in (as_dict(x) for x in as_list(raw.get("matchExpressions")))
    )
    return Selector(strs(raw.get("matchLabels")), expressions)
