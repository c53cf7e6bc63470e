"""The live audit reads ConfigMaps as the manifest audit does: on a real control plane, vLLM Deployments whose
`--max-model-len $(MAX_LEN)` comes from a ConfigMap (by `envFrom`, by `configMapKeyRef`, one value over the
limit) and llama-swap with its config mounted from one get the command's and the cluster role's verdicts of
the same objects as manifests. Without the grant for ConfigMaps the audit says so, the variables are unknown
with that reason, and nothing else changes."""

from __future__ import annotations

import argparse
import io
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.audit import cli
from exporter.config import Cluster, Replicas, Routes
from exporter.exposition import render
from exporter.k8s import environment
from tests.audit import objects as o
from tests.audit.grants import kubeconfig_without
from tests.audit.test_audit_real import failing
from tests.collectors import build_engine_pod_collectors
from tests.kubecluster import Cluster as ControlPlane
from tests.kubecluster import wait_for

ROOT = Path(__file__).resolve().parents[2]
LLAMA_SWAP_EXAMPLE = ROOT / "tests" / "fixtures" / "llama_swap" / "config.example.yaml"
ARGS = ("--model", "Qwen/Qwen2.5-7B-Instruct", "--max-model-len", "$(MAX_LEN)")
UNKNOWN = "context limit set from a variable not known here: --max-model-len $(MAX_LEN): MAX_LEN "
UNREAD = "not read: configmaps not granted or not served"
TOKEN = "hf_QzXq7sNotForAnyLogLine"  # a token a team put in the ConfigMap beside the settings
Records = dict[str, tuple[str, str]]


def config_map(ns: str, name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data}


def objects(ns: str) -> list[dict[str, Any]]:
    """The engines and the ConfigMaps they read, as a team writes them."""
    from_key = {"name": "MAX_LEN", "valueFrom": {"configMapKeyRef": {"name": "vllm-limits", "key": "max-len"}}}
    swap = o.engine("llama-swap", ns, image="ghcr.io/mostlygeek/llama-swap:cuda", args=())
    mount = {"name": "config", "mountPath": "/app/config.yaml", "subPath": "config.yaml"}
    swap = o.changed(swap, ports=[{"name": "http", "containerPort": 8080}], volumeMounts=[mount])
    swap["spec"]["template"]["spec"]["volumes"] = [{"name": "config", "configMap": {"name": "llama-swap"}}]
    return [
        o.changed(o.engine("from-envfrom", ns, args=ARGS), envFrom=[{"configMapRef": {"name": "vllm-settings"}}]),
        o.changed(o.engine("from-key", ns, args=ARGS), env=[from_key]),
        o.changed(o.engine("over-limit", ns, args=ARGS), envFrom=[{"configMapRef": {"name": "vllm-large"}}]),
        swap,
        config_map(ns, "vllm-settings", MAX_LEN="8192", HF_TOKEN=TOKEN),
        config_map(ns, "vllm-limits", **{"max-len": "16384"}),
        # digits first: read whole, it would pass as 32768
        config_map(ns, "vllm-large", MAX_LEN="32768" + " " * environment.VALUE_LIMIT),
        config_map(ns, "llama-swap", **{"config.yaml": LLAMA_SWAP_EXAMPLE.read_text(encoding="utf-8")}),
    ]


def audit(files: list[str], kubeconfig: str | None, ns: str) -> tuple[Records, str]:
    """The command's (status, detail) of each workload/check, and its notes."""
    args = argparse.Namespace(files=files, kubeconfig=kubeconfig, namespace=ns, prometheus=None, window="7d",
                              timeout=60.0, output="json", verbose=False)  # fmt: skip
    out, err = io.StringIO(), io.StringIO()
    cli.run(args, out, err)
    assert TOKEN not in out.getvalue() + err.getvalue()
    records = {f"{r['name']}/{r['check']}": (r["status"], r["detail"]) for r in json.loads(out.getvalue())}
    return records, err.getvalue()


EXPECTED = {
    "from-envfrom": ("pass", "--max-model-len 8192"),
    "from-key": ("pass", "--max-model-len 16384"),
    "over-limit": ("unknown", UNKNOWN + "is read from ConfigMap vllm-large (key MAX_LEN), " + environment.WITHHELD),
    "llama-swap": ("fail", "llama-swap model qwen2.5: no -c/--ctx-size: the model's full context is reserved"),
}


def test_the_live_audit_reads_the_configmaps_as_the_manifests(
    kube_cluster: ControlPlane, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    cluster = kube_cluster
    ns = cluster.namespace("audit-cm")
    objs = objects(ns)
    for obj in objs:
        cluster.apply(obj)
    manifest = tmp_path / "objects.yaml"
    manifest.write_text(yaml.safe_dump_all(objs), encoding="utf-8")
    (audit_collector,) = build_engine_pod_collectors(
        Cluster(routes=Routes(enabled=False), replicas=Replicas(enabled=False)), str(cluster.admin_kubeconfig)
    )
    audit_collector.start()
    try:
        files, _ = audit([str(manifest)], None, ns)
        live, notes = audit([], str(cluster.admin_kubeconfig), ns)
        assert {w: files[f"{w}/context-oversized"] for w in EXPECTED} == EXPECTED
        assert {w: live[f"{w}/context-oversized"] for w in EXPECTED} == EXPECTED
        assert "configmaps" not in notes
        # the cluster role: a pass is 0, a fail 1, an unknown no series
        wait_for(audit_collector.ready, 60, "the first lists")

        def scrape() -> dict[str, float]:
            text = render(audit_collector.collect())
            assert TOKEN not in text
            return failing(text, ns)

        wait_for(lambda: "llama-swap/context-oversized" in scrape(), 60, "the engines audited")
        assert {k: v for k, v in scrape().items() if k.endswith("/context-oversized")} == {
            "from-envfrom/context-oversized": 0, "from-key/context-oversized": 0, "llama-swap/context-oversized": 1,
        }  # fmt: skip
        # a ConfigMap changed is read again (llama-swap's example, its model sized)
        sized = (
            objs[-1]["data"]["config.yaml"]
            .replace('--port 9999\n\n  "smollm2"', '--port 9999 -c 8192\n\n  "smollm2"')
            .replace(
                "SmolLM2-135M-Instruct-GGUF:Q4_K_M\n      --port 9999",
                "SmolLM2-135M-Instruct-GGUF:Q4_K_M\n      --port 9999 -c 8192",
            )
        )
        cluster.apply(config_map(ns, "llama-swap", **{"config.yaml": sized}))
        wait_for(lambda: scrape().get("llama-swap/context-oversized") == 0, 60, "the ConfigMap's change")
        assert TOKEN not in caplog.text
    finally:
        audit_collector.close()
        cluster.must("DELETE", f"/api/v1/namespaces/{ns}", ok=(200, 202))


def test_without_the_grant_for_configmaps_the_variables_are_unknown_and_nothing_else(
    kube_cluster: ControlPlane,
) -> None:
    """The cluster role's grants but configmaps (an upgrade that ships the binary before the ClusterRole)."""
    cluster = kube_cluster
    ns = cluster.namespace("audit-cm-rbac")
    for obj in objects(ns):
        cluster.apply(obj)
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    kubeconfig = kubeconfig_without(cluster, ns, "no-configmaps", lambda g, r: (g, r) == ("", "configmaps"),
                                 "/api/v1/configmaps")  # fmt: skip
    (audit_collector,) = build_engine_pod_collectors(
        Cluster(routes=Routes(enabled=False), replicas=Replicas(enabled=False)), kubeconfig
    )
    audit_collector.start()
    try:
        granted, _ = audit([], str(cluster.admin_kubeconfig), ns)
        refused, notes = audit([], kubeconfig, ns)
        assert "audit: note: configmaps not served or not granted: checks reading them see none\n" in notes
        assert {w: refused[f"{w}/context-oversized"] for w in EXPECTED} == {
            "from-envfrom": ("unknown", UNKNOWN + f"may be set by ConfigMap vllm-settings (envFrom), {UNREAD}"),
            "from-key": ("unknown", UNKNOWN + f"is read from ConfigMap vllm-limits (key max-len), {UNREAD}"),
            "over-limit": ("unknown", UNKNOWN + f"may be set by ConfigMap vllm-large (envFrom), {UNREAD}"),
            "llama-swap": ("unknown", "llama-swap's config /app/config.yaml is not among the objects read: its "
                           "models' commands are unknown"),
        }  # fmt: skip
        others = {k for k in granted if not k.endswith("/context-oversized")}
        assert len(others) > 20 and {k: refused[k] for k in others} == {k: granted[k] for k in others}
        # the cluster role: ready, and every series but the context limits read from ConfigMaps
        wait_for(audit_collector.ready, 60, "the first lists")
        wait_for(lambda: "from-key/no-pdb" in failing(render(audit_collector.collect()), ns), 60, "the audit")
        found = failing(render(audit_collector.collect()), ns)
        assert {k for k in found if k.endswith("/context-oversized")} == set()
        assert found["from-key/no-pdb"] == found["llama-swap/no-pdb"] == 1
    finally:
        audit_collector.close()
        for path in (f"{rbac}/clusterrolebindings/{ns}", f"{rbac}/clusterroles/{ns}", f"/api/v1/namespaces/{ns}"):
            cluster.must("DELETE", path, ok=(200, 202))
