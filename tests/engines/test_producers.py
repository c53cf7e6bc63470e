"""llm-d's endpoint picker per router release (data/engine_metrics_by_version.json, llmd_epp): the legacy
GIE families, the v0.9.0 dual-write and the renames its sources declare, checked against the EPP's own
expected exposition on both sides of the rename (tests/fixtures/epp, stored as found)."""

from __future__ import annotations

from pathlib import Path

from exporter.engines import parser
from exporter.engines.engine_releases import producer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "epp"
OLD, NEW = "inference_extension_scheduler_attempts_total", "llm_d_epp_scheduler_attempts_total"


def families(version: str) -> frozenset[str]:
    return next(r for r in producer("llmd_epp").releases.releases if r.version == version).expected


def test_the_legacy_families_until_v0_8_then_both_names() -> None:
    assert OLD in families("v0.8.0") and not {f for f in families("v0.8.0") if f.startswith("llm_d_epp_")}
    for version in ("v0.9.0", "v0.10.0"):  # dual-write: the legacy family and its successor
        assert {OLD, NEW, "inference_extension_flow_control_queue_size", "llm_d_epp_flow_control_queue_size"} <= (
            families(version)
        )
    # the intermediate subsystem lived on main only: known, in no release
    epp = producer("llmd_epp")
    assert "llm_d_router_epp_flow_control_queue_size" in epp.releases.known
    assert not any("llm_d_router_epp_flow_control_queue_size" in r.expected for r in epp.releases.releases)


def test_renames_as_the_sources_declare_them() -> None:
    epp = producer("llmd_epp")
    assert epp.renamed[OLD] == NEW
    assert epp.renamed["inference_extension_flow_control_queue_size"] == "llm_d_epp_flow_control_queue_size"
    assert epp.renamed["inference_pool_average_queue_size"] == "llm_d_epp_average_queue_size"
    assert epp.renamed["llm_d_router_epp_flow_control_queue_size"] == "llm_d_epp_flow_control_queue_size"
    assert epp.label_renames == {OLD: {"pod_name": "endpoint_name"}}
    assert all(new in epp.releases.known for new in epp.renamed.values())
    assert not set(epp.renamed) & set(epp.renamed.values()), "no successor is itself renamed"


def parsed(name: str, family: str) -> list[tuple[tuple[tuple[str, str], ...], float]]:
    body = (FIXTURES / name).read_text(encoding="utf-8")
    return parser.parse(body, {family}, family.split("_", maxsplit=1)[0]).samples[family]


def test_the_epps_own_bodies_on_both_sides_of_the_rename() -> None:
    epp = producer("llmd_epp")
    old = parsed("gie-v1.5.0-scheduler_attempts_total_metrics", OLD)
    still = parsed("router-v0.9.0-scheduler_attempts_total_metrics", OLD)
    new = parsed("router-v0.9.0-llm_d_scheduler_attempts_total_metrics", NEW)
    assert OLD in families("v0.8.0") and {OLD, NEW} <= families("v0.9.0")
    assert old == still, "v0.9.0 still writes the legacy family as v0.8.0 did"
    swap = epp.label_renames[OLD]
    renamed = sorted((tuple(sorted((swap.get(k, k), v) for k, v in labels)), value) for labels, value in old)
    assert renamed == sorted((tuple(sorted(labels)), value) for labels, value in new)
    assert {k for labels, _ in old for k, _ in labels} == {"namespace", "pod_name", "port", "status",
                                                         "target_model_name"}  # fmt: skip
