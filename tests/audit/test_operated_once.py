"""A dump of a namespace (`kubectl get -o yaml`) holds both an operator's resource and the workload the operator
generated from it: the workload is audited once, as the resource the user edits, each finding with the field to
change there; where the resource is not in the input, or derives nothing, the workload is audited as itself."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from exporter.audit import inventory
from tests.audit.generated import inference_service, predictor
from tests.audit.test_command import audit_files

ISVC = inference_service("llama", "llm")
DEPLOYMENT = predictor(ISVC)


def subjects(*objs: dict[str, object]) -> list[tuple[str, str]]:
    inv = inventory.build(objs)
    return [(w.kind, w.name) for w in inv.workloads]


def test_the_generated_deployment_is_audited_as_its_inference_service(tmp_path: Path) -> None:
    dump = tmp_path / "dump.yaml"
    dump.write_text(yaml.safe_dump_all([DEPLOYMENT, ISVC]), encoding="utf-8")  # in either order
    rc, found, err, _ = audit_files(dump)
    assert (rc, err) == (1, "")
    assert list(found) == [("InferenceService", "llama")]
    checks = found[("InferenceService", "llama")]
    assert checks["no-readiness-probe"] == ("fail", "spec.predictor.containers[].readinessProbe")
    assert checks["fixed-replicas"] == ("pass", "spec.predictor.minReplicas")
    inv = inventory.build([ISVC, DEPLOYMENT])
    assert [(w.kind, w.name) for w in inv.around.workloads] == [("InferenceService", "llama")]


def test_the_deployment_alone_or_of_another_resource_is_audited_as_itself(tmp_path: Path) -> None:
    assert subjects(DEPLOYMENT) == [("Deployment", "llama-predictor")]
    other = copy.deepcopy(ISVC)
    other["metadata"]["name"] = "mistral"
    assert subjects(DEPLOYMENT, other) == [("Deployment", "llama-predictor"), ("InferenceService", "mistral")]
    elsewhere = copy.deepcopy(ISVC)
    elsewhere["metadata"]["namespace"] = "other"
    assert subjects(elsewhere, DEPLOYMENT) == [("Deployment", "llama-predictor"), ("InferenceService", "llama")]
    unowned = copy.deepcopy(DEPLOYMENT)
    del unowned["metadata"]["ownerReferences"]
    assert subjects(ISVC, unowned) == [("Deployment", "llama-predictor"), ("InferenceService", "llama")]


def test_a_resource_that_derives_nothing_leaves_its_deployment_audited() -> None:
    """A model-format InferenceService whose runtime is not in the input derives no workload: the Deployment
    KServe made stays audited as itself, the InferenceService noted."""
    by_format = copy.deepcopy(ISVC)
    by_format["spec"]["predictor"] = {"model": {"modelFormat": {"name": "vLLM"}}}
    inv = inventory.build([by_format, DEPLOYMENT])
    assert [(w.kind, w.name) for w in inv.workloads] == [("Deployment", "llama-predictor")]
    assert inv.notes == [
        "InferenceService llm/llama: a runtime for model format vLLM is not in the input: "
        "add its ServingRuntime or ClusterServingRuntime"
    ]


def test_a_workspace_an_inference_set_in_the_input_made_is_derived_from_the_inference_set() -> None:
    """KAITO v0.12.0: an InferenceSet controls the Workspaces it creates (owner_refs.THROUGH_LABELS); the dump
    holds both, and the StatefulSet of each Workspace: all are the InferenceSet's."""
    corpus = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus" / "kaito-inferenceset"
    sample = (corpus / "kaito_inferenceset_llama-3.1_8b_instruct.yaml").read_text(encoding="utf-8")
    (inference_set,) = [d for d in yaml.safe_load_all(sample) if d and d.get("kind") == "InferenceSet"]
    inference_set["metadata"].setdefault("namespace", "default")
    name = inference_set["metadata"]["name"]
    alone = [(w.kind, w.name) for w in inventory.build([inference_set]).workloads]
    workspace = {
        "apiVersion": "kaito.sh/v1beta1",
        "kind": "Workspace",
        "metadata": {"name": f"{name}-0", "namespace": "default",
                     "labels": {"inferenceset.kaito.sh/created-by": name},
                     "ownerReferences": [{"apiVersion": "kaito.sh/v1beta1", "kind": "InferenceSet", "name": name,
                                          "uid": "u", "controller": True}]},
        "resource": {"instanceType": "Standard_NC24ads_A100_v4"},
        "inference": {"preset": {"name": "llama-3.1-8b-instruct"}},
    }  # fmt: skip
    assert [(w.kind, w.name) for w in inventory.build([workspace, inference_set]).workloads] == alone
    assert alone and {kind for kind, _ in alone} == {"InferenceSet"}
