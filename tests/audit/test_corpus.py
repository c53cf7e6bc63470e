"""The command on real-world engine deployments, stored as published (fixtures/audit_corpus/PROVENANCE.md):
every check's verdict on every engine workload, written down by hand from reading the manifests."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

from exporter.cli import parser
from tests.audit.test_command import audit

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus"

NA_MANIFEST = {"gpu-nodes-untainted": "n/a", "non-gpu-pods-on-gpu-nodes": "n/a"}
NO_AUTOSCALER = {
    "autoscaler-utilization-signal": "n/a",
    "autoscaler-scale-to-zero": "n/a",
    "autoscaler-cooldown-short": "n/a",
    "keda-null-as-zero": "n/a",
    "fixed-replicas": "fail",
}
NO_FRONTEND = {"ingress-timeout-short": "n/a", "ingress-buffering": "n/a"}
# Every one of them: the default 30 s grace period, no preStop hook, no PodDisruptionBudget
NO_DRAIN = {"grace-period-short": "fail", "no-prestop": "fail", "no-pdb": "fail"}

EXPECTED: dict[str, dict[str, dict[str, str]]] = {
    # A GKE guide: one vLLM replica on an L4 node pool, a ClusterIP Service, no probes at all
    "gke-vllm-gemma": {
        "default/Deployment/vllm-gemma-deployment": {
            **NO_AUTOSCALER, **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "no-readiness-probe": "fail",
            "no-startup-probe": "pass",  # no liveness probe either: nothing kills a loading replica
            "no-gpu-toleration": "unknown",  # GKE's GPU node pools taint, and GKE adds the toleration itself
            "time-slicing-user-facing": "unknown",
            "round-robin-routing": "n/a",  # replicas: 1
            "context-oversized": "fail",  # no --max-model-len
        }
    },
    # AIBrix's autoscaling sample: vLLM with a KPA PodAutoscaler on the KV cache usage, scale-down delay 3m
    "aibrix-autoscaling": {
        "default/Deployment/deepseek-r1-distill-llama-8b": {
            **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "autoscaler-utilization-signal": "pass",  # gpu_cache_usage_perc: KV cache, not utilisation
            "autoscaler-scale-to-zero": "pass",  # minReplicas 1
            "autoscaler-cooldown-short": "fail",  # 180 s < 600 s
            "keda-null-as-zero": "n/a",
            "fixed-replicas": "pass",
            "no-readiness-probe": "pass",
            "no-startup-probe": "fail",  # liveness: 120 + 5 × 3 = 135 s, and no startup probe
            "no-gpu-toleration": "unknown",
            "time-slicing-user-facing": "unknown",
            "round-robin-routing": "fail",  # up to 8 replicas behind a plain Service
            "context-oversized": "pass",  # --max-model-len 12288
        }
    },
    # AIBrix's gateway sample: three (mock) vLLM replicas behind an InferencePool and its endpoint picker;
    # the endpoint picker is a router and is not audited
    "aibrix-inferencepool": {
        "default/Deployment/mock-llama2-7b": {
            **NO_AUTOSCALER, **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "no-readiness-probe": "pass",
            "no-startup-probe": "fail",  # 5 × 30 = 150 s
            "no-gpu-toleration": "n/a",  # the mock asks for no GPU
            "time-slicing-user-facing": "n/a",
            "round-robin-routing": "pass",  # the InferencePool selects its pods
            "context-oversized": "fail",  # the image is vLLM's (a mock) and sets no --max-model-len
        }
    },
    # LeaderWorkerSet's vLLM example: 2 groups of a leader and a worker, 8 GPUs each, tensor × pipeline parallel
    "lws-vllm": {
        "default/LeaderWorkerSet/vllm": {
            **NO_AUTOSCALER, **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "no-readiness-probe": "pass",  # tcpSocket 8080 on the leader
            "no-startup-probe": "pass",  # no liveness probe
            "no-gpu-toleration": "unknown",
            "time-slicing-user-facing": "unknown",
            "round-robin-routing": "fail",  # 2 groups behind a Service (on the name label the LWS controller adds)
            "context-oversized": "fail",
        }
    },
    # GKE's multi-host guide: one LeaderWorkerSet group (2 × 8 GPUs) and an HPA on vLLM's queue (via Managed
    # Prometheus) that may add a second
    "gke-lws-vllm-hpa": {
        "default/LeaderWorkerSet/vllm": {
            **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "autoscaler-utilization-signal": "pass",  # vllm:num_requests_waiting, the queue
            "autoscaler-scale-to-zero": "pass",
            "autoscaler-cooldown-short": "fail",  # the HPA's default 300 s window
            "keda-null-as-zero": "n/a",
            "fixed-replicas": "pass",
            "no-readiness-probe": "pass",
            "no-startup-probe": "pass",
            "no-gpu-toleration": "unknown",
            "time-slicing-user-facing": "unknown",
            "round-robin-routing": "fail",  # up to 2 groups behind the leader Service
            "context-oversized": "fail",
        }
    },
    # GKE's multi-GPU guide: TGI with Llama 3 70B on two L4s, its input capped at 2048 tokens
    "gke-tgi-llama3-70b": {
        "default/Deployment/llm": {
            **NO_AUTOSCALER, **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "no-readiness-probe": "fail",
            "no-startup-probe": "pass",
            "no-gpu-toleration": "unknown",
            "time-slicing-user-facing": "unknown",
            "round-robin-routing": "n/a",
            "context-oversized": "pass",  # MAX_INPUT_TOKENS 2048
        }
    },
    # Data on EKS: vLLM on Trainium, a LeaderWorkerSet of 4 pods × 16 Neuron devices; the image names vLLM as
    # `vllm0.5.0` and the command is the image's own script
    "eks-neuron-vllm-lws": {
        "default/LeaderWorkerSet/llama3-405b-lws": {
            **NO_AUTOSCALER, **NO_FRONTEND, **NA_MANIFEST,
            "grace-period-short": "pass",  # terminationGracePeriodSeconds 90
            "no-prestop": "fail",
            "no-pdb": "fail",
            "no-readiness-probe": "fail",  # no probes at all
            "no-startup-probe": "pass",  # no liveness probe either
            "no-gpu-toleration": "pass",  # tolerates aws.amazon.com/neuron
            "time-slicing-user-facing": "unknown",  # an accelerator request, nodes not visible
            "round-robin-routing": "n/a",  # one group
            # no --max-model-len or VLLM_MAX_MODEL_LEN: its MAX_MODEL_LEN is read by the image's run.sh,
            # which the manifest does not show
            "context-oversized": "fail",
        }
    },
    # GKE's Gemma on Triton with the TensorRT-LLM backend, started by a script from a ConfigMap of the same file
    # (`launch_triton_server.py` of tensorrtllm_backend): engine trtllm, through Triton
    "gke-triton-trtllm-gemma": {
        "default/Deployment/triton-gemma-deployment": {
            **NO_AUTOSCALER, **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "no-readiness-probe": "pass",  # httpGet /v2/health/ready
            "no-startup-probe": "pass",  # no startup probe, the liveness waits 600 + 60 × 5 = 900 s
            "no-gpu-toleration": "unknown",  # tolerates only the key "key"
            "time-slicing-user-facing": "unknown",
            "round-robin-routing": "n/a",  # replicas: 1
            "context-oversized": "unknown",  # built into the TensorRT engine and config.pbtxt, not an argument
        }
    },
    # OPEA's TGI on Gaudi (GenAIInfra v1.1): every setting, the context limit too, from a ConfigMap of the same
    # file through envFrom (and an optional second one the file lacks)
    "opea-tgi-gaudi-envfrom": {
        "default/Deployment/tgi": {
            **NO_AUTOSCALER, **NO_FRONTEND, **NA_MANIFEST, **NO_DRAIN,
            "no-readiness-probe": "pass",  # tcpSocket
            "no-startup-probe": "pass",  # 5 + 5 × 120 = 605 s
            "no-gpu-toleration": "unknown",  # habana.ai/gaudi, no toleration
            "time-slicing-user-facing": "unknown",
            "round-robin-routing": "n/a",  # replicas unset: 1
            "context-oversized": "pass",  # MAX_TOTAL_TOKENS "2048" in tgi-config
        }
    },
}  # fmt: skip


# The engine each audited workload runs, as the records' `engine` field gives it
ENGINE = {"gke-triton-trtllm-gemma": "trtllm", "gke-tgi-llama3-70b": "tgi", "opea-tgi-gaudi-envfrom": "tgi"}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_corpus_verdicts(case: str) -> None:
    rc, out, _err = audit("-f", str(CORPUS / case), "--output", "json")
    records = json.loads(out)
    got: dict[str, dict[str, str]] = {}
    for r in records:
        got.setdefault(f"{r['namespace']}/{r['kind']}/{r['name']}", {})[r["check"]] = r["status"]
    assert got == EXPECTED[case]
    assert rc == 1  # each has a failing check
    assert all(r["threshold_source"] == "default" for r in records)
    assert {r["engine"] for r in records} == {ENGINE.get(case, "vllm")}


def test_triton_with_the_tensorrt_llm_backend_is_trtllm_and_says_why_its_context_is_not_judged() -> None:
    rc, out, _err = audit("-f", str(CORPUS / "gke-triton-trtllm-gemma"), "--output", "json")
    (record,) = [r for r in json.loads(out) if r["check"] == "context-oversized"]
    assert (rc, record["engine"], record["status"]) == (1, "trtllm", "unknown")
    assert record["detail"] == (
        "Triton's TensorRT-LLM backend: the context limit is built into the TensorRT engine (trtllm-build "
        "--max_seq_len) and the model repository's config.pbtxt, which the audit does not read"
    )


def test_an_unknown_gpu_server_says_what_it_could_not_judge(tmp_path: Path) -> None:
    """The same Triton Deployment without the ConfigMap its script comes from: Triton, but which backend is
    not known (`tritonserver:2.42.0`), so a GPU server of an unknown engine."""
    text = (CORPUS / "gke-triton-trtllm-gemma" / "deploy-triton-server.yaml").read_text(encoding="utf-8")
    documents = [d for d in yaml.safe_load_all(text) if d and d["kind"] != "ConfigMap"]
    (tmp_path / "deployment.yaml").write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    rc, out, _err = audit("-f", str(tmp_path / "deployment.yaml"))
    assert rc == 1
    assert "  engine not recognised: not judged: context-oversized\n" in out
    assert "1 engine workload(s) (1 of an unknown engine)" in out


def test_a_context_limit_from_an_envfrom_configmap_is_read() -> None:
    _rc, out, _err = audit("-f", str(CORPUS / "opea-tgi-gaudi-envfrom"), "--output", "json")
    assert "insert-your-huggingface-token-here" not in out  # tgi-config's HF_TOKEN: read, never written out
    (record,) = [r for r in json.loads(out) if r["check"] == "context-oversized"]
    assert (record["status"], record["detail"]) == ("pass", "MAX_TOTAL_TOKENS 2048")  # not MAX_INPUT_LENGTH 1024
    # the Deployment alone: the ConfigMap is not in the input, so the limit is unknown, not absent
    text = (CORPUS / "opea-tgi-gaudi-envfrom" / "tgi_gaudi.yaml").read_text(encoding="utf-8")
    alone = [d for d in yaml.safe_load_all(text) if d and d["kind"] == "Deployment"]
    rc, out, _err = audit("-f", "-", "--output", "json", stdin=yaml.safe_dump_all(alone))
    assert rc == 1  # its failing checks: no PDB, no preStop, ...
    (record,) = [r for r in json.loads(out) if r["check"] == "context-oversized"]
    assert (record["status"], record["detail"]) == ("unknown", "context limit set from a variable not known here: "
                                                    "MAX_TOTAL_TOKENS may be set by ConfigMap tgi-config (envFrom), "
                                                    "not among the objects read")  # fmt: skip


def test_a_client_of_an_engine_is_not_audited() -> None:
    """OPEA's LLM microservice: `opea/llm-tgi`, no accelerator, no engine command: nothing to audit."""
    rc, out, err = audit("-f", str(CORPUS / "opea-llm-uservice"), "--output", "json")
    assert (rc, out) == (2, "")
    assert (
        "no engine workload found (1 Deployment/StatefulSet/LeaderWorkerSet read: default/Deployment/llm-uservice"
        in err
    )


def test_corpus_files_are_as_published() -> None:
    text = (CORPUS / "PROVENANCE.md").read_text()
    sums = dict((path, digest) for digest, path in re.findall(r"^([0-9a-f]{64})  (\S+)$", text, re.M))
    files = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.yaml"))
    assert sorted(sums) == files
    for path, digest in sums.items():
        assert hashlib.sha256((CORPUS / path).read_bytes()).hexdigest() == digest, path
        assert f"| {path} |" in text


def test_sarif_points_at_the_manifest_lines() -> None:
    rc, out, _ = audit("-f", str(CORPUS / "aibrix-inferencepool"), "--output", "sarif")
    log = json.loads(out)
    results = log["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"fixed-replicas", "no-startup-probe", "context-oversized", *NO_DRAIN}
    location = results[0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"].endswith("aibrix-inferencepool/llama-7b.yaml")
    line = location["region"]["startLine"]
    text = (CORPUS / "aibrix-inferencepool" / "llama-7b.yaml").read_text().splitlines()
    assert text[line - 1 : line + 2] == ["apiVersion: apps/v1", "kind: Deployment", "metadata:"]
    levels = {r["ruleId"]: r["level"] for r in results}
    assert levels["fixed-replicas"] == "note" and levels["no-pdb"] == "warning"
    assert rc == 1
    assert parser("audit")  # the command is registered
