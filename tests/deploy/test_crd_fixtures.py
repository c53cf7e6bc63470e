"""The stored upstream CRDs are what their README says: each file listed with its source, unmodified
(SHA-256 as recorded), and each one the CRD of the kind it is named after."""

from __future__ import annotations

import hashlib
import re

import jsonschema
import pytest
import yaml

from tests.deploy import crd_schemas
from tests.deploy.manifests import ROOT

CRDS = ROOT / "tests" / "fixtures" / "crds"
README = (CRDS / "README.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| (\S+\.yaml) \| (\S+/\S+) \| (\S+) \| (v[0-9.]+) \| ([0-9a-f]{40}) \|$", re.M)
SUM = re.compile(r"^([0-9a-f]{64})  (\S+\.yaml)$", re.M)


def test_every_file_has_its_provenance_and_checksum() -> None:
    files = {p.name for p in CRDS.glob("*.yaml")}
    assert {m.group(1) for m in ROW.finditer(README)} == files
    sums = {name: digest for digest, name in SUM.findall(README)}
    assert set(sums) == files
    for name in files:
        assert hashlib.sha256((CRDS / name).read_bytes()).hexdigest() == sums[name], f"{name} was modified"


def test_each_file_is_the_crd_it_is_named_after() -> None:
    for path in CRDS.glob("*.yaml"):
        crd = yaml.safe_load(path.read_text(encoding="utf-8"))
        group, plural = path.stem.split("_")
        assert crd["kind"] == "CustomResourceDefinition"
        assert (crd["spec"]["group"], crd["spec"]["names"]["plural"]) == (group, plural)


def test_the_derived_schemas_are_as_strict_as_the_api_server() -> None:
    """Closed objects and typed maps: what strict field validation on the server rejects fails offline."""
    scaled = yaml.safe_load((ROOT / "deploy" / "examples" / "keda-scaledobject.yaml").read_text(encoding="utf-8"))
    crd_schemas.validate(scaled)
    scaled["spec"]["triggers"][0]["metadata"]["ignoreNullValues"] = False  # KEDA metadata values are strings
    with pytest.raises(jsonschema.ValidationError):
        crd_schemas.validate(scaled)
    rule = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": {"name": "r"}}
    crd_schemas.validate({**rule, "spec": {"groups": [{"name": "g", "partial_response_strategy": "WARN"}]}})
    with pytest.raises(jsonschema.ValidationError):
        crd_schemas.validate({**rule, "spec": {"groups": [{"name": "g", "rule": []}]}})
