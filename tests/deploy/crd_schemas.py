"""JSON schemas for the custom resources in deploy/ and the chart, derived from the upstream CRDs stored
unmodified in tests/fixtures/crds/ (Prometheus Operator monitoring.coreos.com/v1, KEDA keda.sh/v1alpha1).

A CRD's openAPIV3Schema leaves objects open; the API server rejects unknown fields itself (strict field
validation) or prunes them. To fail the same way offline, every object that lists its properties and does
not preserve unknown fields is closed here with additionalProperties: false, so a misspelt field
(`honorlabel`) or a wrong type (KEDA metadata values are strings) fails before an apply would.
CEL rules (x-kubernetes-validations) are the API server's alone: tests/deploy_real applies to a real one.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRDS = Path(__file__).resolve().parents[1] / "fixtures" / "crds"

LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
META = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 253},
        "namespace": {"type": "string"},
        "labels": LABELS,
        "annotations": LABELS,
    },
    "additionalProperties": False,
}


def _closed(schema: Any) -> Any:
    """The schema with every object that names its properties closed to others, recursively, and its
    patterns in Python's regular expression syntax."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _closed(v) for k, v in schema.items()}
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and "(?i)" in pattern:
        # Go's RE2 takes a flag group anywhere ("^(?i)(abort|warn)?$"); Python only at the start
        out["pattern"] = "(?i)" + pattern.replace("(?i)", "")
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def _from_crd(crd: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """One closed schema per served version of the CRD, keyed by (apiVersion, kind)."""
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    out = {}
    for version in crd["spec"]["versions"]:
        if not version.get("served"):
            continue
        schema = _closed(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
        api_version = f"{group}/{version['name']}"
        schema["properties"]["apiVersion"] = {"const": api_version}
        schema["properties"]["kind"] = {"const": kind}
        schema["properties"]["metadata"] = META
        schema["required"] = sorted({"apiVersion", "kind", "metadata", *schema.get("required", [])})
        out[(api_version, kind)] = schema
    return out


@functools.cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(CRDS.glob("*.yaml")):
        out.update(_from_crd(yaml.load(path.read_text(encoding="utf-8"), Loader=loader)))
    return out


SCHEMAS = _schemas()


def validate(obj: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError (or KeyError for a kind not listed) for a custom resource."""
    schema = SCHEMAS[(obj.get("apiVersion", ""), obj.get("kind", ""))]
    jsonschema.validate(obj, schema)


def schemas_of(crd: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The closed schema of each served version of a CRD that is not among tests/fixtures/crds/ (which a real
    API server gets installed), keyed by (apiVersion, kind)."""
    return _from_crd(crd)
