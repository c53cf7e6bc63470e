"""Each check on one engine workload and the objects around it: a healthy set passes every check, and each
mistake the write-ups name fails its check and only that one."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from exporter.audit import inventory, model
from exporter.audit.base import Measured, Threshold
from exporter.audit.checks import BY_ID, CHECKS
from exporter.audit.nodes import node as node_record
from exporter.audit.nodes import pod as pod_record
from exporter.audit.run import audit_workload, engines
from tests.audit import objects as o

NGINX_LONG = {"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600"}


def healthy() -> list[o.Obj]:
    return [o.engine(), o.scaledobject(), o.pdb(), o.service(), o.inference_pool(), o.ingress(annotations=NGINX_LONG)]


NOTHING = Measured()


def verdicts(
    objs: list[o.Obj], measured: Measured = NOTHING, nodes: list[o.Obj] | None = None, pods: list[o.Obj] | None = None
) -> dict[str, str]:
    inv = inventory.build(objs)
    if nodes is not None:
        inv.around.nodes = [n for n in map(node_record, nodes) if n is not None]
        inv.around.pods = [p for p in map(pod_record, pods or []) if p is not None]
    (w,) = engines(inv.workloads)
    return {f.check.id: f.outcome.status for f in audit_workload(w, inv.around, measured)}


def failing(objs: list[o.Obj], **kwargs: Any) -> set[str]:
    return {k for k, v in verdicts(objs, **kwargs).items() if v == "fail"}


HEALTHY_NODES = [o.node("gpu-1", taints=[o.GPU_TAINT]), o.node("cpu-1", gpus=0)]


def test_a_healthy_workload_fails_nothing_on_manifests() -> None:
    v = verdicts(healthy())
    assert {k for k, s in v.items() if s == "fail"} == set()
    assert v["time-slicing-user-facing"] == "unknown"  # a plain GPU request: the node's device plugin decides
    assert v["no-gpu-toleration"] == "pass"
    assert v["gpu-nodes-untainted"] == v["non-gpu-pods-on-gpu-nodes"] == "n/a"
    assert set(v) == {c.id for c in CHECKS}


def test_a_healthy_workload_fails_nothing_with_nodes() -> None:
    v = verdicts(healthy(), nodes=HEALTHY_NODES, pods=[])
    assert {k for k, s in v.items() if s not in ("pass", "n/a")} == set()
    assert v["gpu-nodes-untainted"] == v["time-slicing-user-facing"] == v["non-gpu-pods-on-gpu-nodes"] == "pass"
    assert v["no-gpu-toleration"] == "n/a"


def _replace(objs: list[o.Obj], kind: str, new: o.Obj | None) -> list[o.Obj]:
    out = [x for x in objs if x["kind"] != kind]
    return out + ([new] if new is not None else [])


def _engine(**container: Any) -> list[o.Obj]:
    return _replace(healthy(), "Deployment", o.changed(o.engine(), **container))


def _pod(**pod: Any) -> list[o.Obj]:
    return _replace(healthy(), "Deployment", o.engine(**pod))


CPU_HPA = o.hpa()
LONG_WINDOW = {"scaleDown": {"stabilizationWindowSeconds": 900}}
NULL_AS_ZERO = [{"type": "prometheus", "metadata": {"query": "sum(llm_requests_waiting)", "threshold": "4"}}]
MISTAKES = {
    "autoscaler-utilization-signal": _replace(healthy(), "ScaledObject", o.hpa(behavior=LONG_WINDOW)),
    "autoscaler-scale-to-zero": _replace(
        healthy(), "ScaledObject", o.scaledobject(minReplicaCount=0, cooldownPeriod=900)
    ),
    "autoscaler-cooldown-short": _replace(healthy(), "ScaledObject", o.scaledobject(advanced={})),
    "keda-null-as-zero": _replace(healthy(), "ScaledObject", o.scaledobject(triggers=NULL_AS_ZERO)),
    "fixed-replicas": _replace(healthy(), "ScaledObject", None),
    "no-readiness-probe": _engine(readinessProbe=None),
    "no-startup-probe": _engine(startupProbe=None),  # the liveness probe gives up after 30 s
    "grace-period-short": _pod(terminationGracePeriodSeconds=30),
    "no-prestop": _engine(lifecycle=None),
    "no-pdb": _replace(healthy(), "PodDisruptionBudget", None),
    "round-robin-routing": _replace(healthy(), "InferencePool", None),
    "ingress-timeout-short": _replace(healthy(), "Ingress", o.ingress()),  # ingress-nginx's default: 60 s
    "ingress-buffering": _replace(
        healthy(), "Ingress", o.ingress(annotations={**NGINX_LONG, "nginx.ingress.kubernetes.io/proxy-buffering": "on"})
    ),
    "context-oversized": _engine(args=["--model", "Qwen/Qwen2.5-7B-Instruct"]),
    "time-slicing-user-facing": _engine(resources={"limits": {"nvidia.com/gpu.shared": "1"}}),
}  # fmt: skip


@pytest.mark.parametrize("check", sorted(MISTAKES))
def test_each_mistake_fails_its_check_only(check: str) -> None:
    assert failing(MISTAKES[check]) == {check}


def test_the_node_checks_fail_on_what_the_nodes_show() -> None:
    untainted = [o.node("gpu-1"), o.node("cpu-1", gpus=0)]
    assert failing(healthy(), nodes=untainted, pods=[]) == {"gpu-nodes-untainted"}
    sliced = [
        o.node(
            "gpu-1",
            taints=[o.GPU_TAINT],
            labels={"nvidia.com/gpu.sharing-strategy": "time-slicing", "nvidia.com/gpu.replicas": "4"},
        )
    ]
    assert failing(healthy(), nodes=sliced, pods=[]) == {"time-slicing-user-facing"}
    running = {
        "metadata": {"name": "vllm-abc", "namespace": "inference", "labels": {"app": "vllm"}},
        "spec": {
            "nodeName": "gpu-1",
            "containers": [{"name": "vllm", "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
        },
        "status": {"phase": "Running"},
    }
    logger = {
        "metadata": {
            "name": "log-shipper-1",
            "namespace": "logging",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "log-shipper-5d9f", "controller": True}],
        },
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "fluentd"}]},
        "status": {"phase": "Running"},
    }
    dcgm = {
        "metadata": {
            "name": "dcgm-exporter-x",
            "namespace": "gpu-operator",
            "ownerReferences": [{"kind": "DaemonSet", "name": "dcgm-exporter", "controller": True}],
        },
        "spec": {"nodeName": "gpu-1", "containers": [{"name": "dcgm"}]},
        "status": {"phase": "Running"},
    }
    assert failing(healthy(), nodes=HEALTHY_NODES, pods=[running, dcgm]) == set()  # per-node daemons belong there
    assert failing(healthy(), nodes=HEALTHY_NODES, pods=[running, dcgm, logger]) == {"non-gpu-pods-on-gpu-nodes"}
    assert verdicts(healthy(), nodes=HEALTHY_NODES, pods=[running, logger])["non-gpu-pods-on-gpu-nodes"] == "fail"
    no_toleration = _pod(tolerations=[])
    assert verdicts(no_toleration)["no-gpu-toleration"] == "unknown"  # an admission plugin may add it


def test_cpu_hpa_fails_the_signal_and_its_default_window_the_cooldown() -> None:
    assert failing(_replace(healthy(), "ScaledObject", CPU_HPA)) == {
        "autoscaler-utilization-signal",
        "autoscaler-cooldown-short",
    }
    gpu_util = o.scaledobject(
        triggers=[
            {
                "type": "prometheus",
                "metadata": {"query": "avg(DCGM_FI_DEV_GPU_UTIL)", "threshold": "80", "ignoreNullValues": "false"},
            }
        ]
    )
    assert failing(_replace(healthy(), "ScaledObject", gpu_util)) == {"autoscaler-utilization-signal"}


def test_keda_unset_minimum_is_zero() -> None:
    so = o.scaledobject(cooldownPeriod=900)
    del so["spec"]["minReplicaCount"]
    assert failing(_replace(healthy(), "ScaledObject", so)) == {"autoscaler-scale-to-zero"}


def test_measured_thresholds_replace_the_defaults() -> None:
    slow = Measured(cold_start_seconds=1200.0, starting_seconds=1000.0, request_seconds=700.0)
    found = {f.check.id: f.outcome for f in _audit(healthy(), slow)}
    assert {k for k, v in found.items() if v.status == "fail"} == {
        "autoscaler-cooldown-short",  # a 600 s window < the 1200 s cold start
        "no-startup-probe",  # 0 + 10 × 90 = 900 s < the 1000 s start
        "grace-period-short",  # 600 s < the 700 s request; the 3600 s ingress timeout still passes
    }
    assert found["autoscaler-cooldown-short"].threshold is not None
    assert found["autoscaler-cooldown-short"].threshold_source == "measured"
    assert found["grace-period-short"].threshold == Threshold(700.0, "measured")
    quick = {f.check.id: f.outcome for f in _audit(healthy(), Measured(request_seconds=12.0))}
    assert quick["grace-period-short"].threshold_source == "measured"
    assert quick["no-startup-probe"].threshold_source == "default"


def test_measured_context_use() -> None:
    assert failing(healthy(), measured=Measured(context_tokens=1000.0)) == {"context-oversized"}  # 8192 > 4 × 1000
    assert failing(healthy(), measured=Measured(context_tokens=3000.0)) == set()


def _audit(objs: list[o.Obj], measured: Measured) -> list[Any]:
    inv = inventory.build(objs)
    (w,) = engines(inv.workloads)
    return audit_workload(w, inv.around, measured)


def test_opt_out_annotation() -> None:
    so = o.scaledobject(minReplicaCount=0, cooldownPeriod=900)
    batch = o.engine()
    batch["metadata"]["annotations"] = {"llm-exporter.io/audit-skip": "autoscaler-scale-to-zero, no-pdb"}
    v = verdicts([batch, so, o.service(), o.inference_pool()])
    assert v["autoscaler-scale-to-zero"] == "n/a" and v["no-pdb"] == "n/a"


def test_openshift_route_timeout_default_is_30_seconds() -> None:
    objs = _replace(healthy(), "Ingress", o.route())
    assert failing(objs) == {"ingress-timeout-short"}
    assert failing(_replace(healthy(), "Ingress", o.route(timeout="10m"))) == set()
    assert failing(_replace(healthy(), "Ingress", o.route(timeout="90000"))) == set()  # bare: milliseconds


def test_httproute_timeouts() -> None:
    def httproute(timeout: str | None) -> o.Obj:
        rule: o.Obj = {
            "backendRefs": [{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "vllm"}]
        }
        if timeout:
            rule["timeouts"] = {"request": timeout}
        return {
            "apiVersion": "gateway.networking.k8s.io/v1",
            "kind": "HTTPRoute",
            "metadata": {"name": "llm", "namespace": "inference"},
            "spec": {"rules": [rule]},
        }

    assert verdicts(_replace(healthy(), "Ingress", httproute(None)))["ingress-timeout-short"] == "unknown"
    assert failing(_replace(healthy(), "Ingress", httproute("30s"))) == {"ingress-timeout-short"}
    assert failing(_replace(healthy(), "Ingress", httproute("1h"))) == set()


def test_production_stack_router_logic() -> None:
    router = copy.deepcopy(
        o.engine("router", image="lmcache/lmstack-router:latest", args=("--routing-logic", "roundrobin"))
    )
    objs = [*_replace(healthy(), "InferencePool", None), router]
    assert failing(objs) == {"round-robin-routing"}
    o.container_of(router)["args"] = ["--routing-logic", "prefixaware"]
    assert failing(objs) == set()


def test_every_check_is_documented() -> None:
    for check in CHECKS:
        assert check.reason.endswith(".") and check.fix.endswith((".", ")"))
        assert check.severity in ("warning", "info")
    assert BY_ID["fixed-replicas"].severity == "info"


def test_a_check_that_cannot_read_an_object_is_unknown_alone() -> None:
    from exporter.audit.base import Check, Outcome, Subject

    def broken(subject: Subject, around: model.Surroundings) -> Outcome:
        return BY_ID["no-pdb"].evaluate(subject, None)  # type: ignore[arg-type]

    inv = inventory.build(healthy())
    (w,) = engines(inv.workloads)
    odd = Check("odd", "warning", "Reason.", "Fix.", (), broken, engine_agnostic=True)
    (finding,) = audit_workload(w, inv.around, NOTHING, checks=[odd])
    assert (finding.outcome.status, finding.outcome.detail) == (
        "unknown",
        "cannot evaluate: AttributeError: 'NoneType' object has no attribute 'pdbs'",
    )


def test_a_gpu_server_of_an_unknown_engine_gets_every_engine_agnostic_check() -> None:
    """The same Deployment with vLLM's command and with a script the audit does not know: every engine-agnostic
    check judges both alike; the others are unknown for the unknown engine, never failed or passed."""
    known = o.engine()
    script = o.changed(known, image="registry.example.com/inference/server:2.3",
                       command=["/scripts/entrypoint.sh"], args=[])  # fmt: skip
    around = inventory.build([known]).around
    ours = {f.check.id: f for f in audit_workload(inventory.build([known]).workloads[0], around)}
    theirs = {f.check.id: f for f in audit_workload(inventory.build([script]).workloads[0], around)}
    assert set(ours) == set(theirs) == set(BY_ID)
    assert {f.engine for f in ours.values()} == {"vllm"} and {f.engine for f in theirs.values()} == {"unknown"}
    for check in CHECKS:
        if check.engine_agnostic:
            assert theirs[check.id].outcome.status == ours[check.id].outcome.status, check.id
        else:
            assert theirs[check.id].outcome.status == "unknown", check.id
            assert "engine not recognised" in theirs[check.id].outcome.detail
    assert not BY_ID["context-oversized"].engine_agnostic  # it reads the engine's context flag
    assert ours["context-oversized"].outcome.status == "pass"
