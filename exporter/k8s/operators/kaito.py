"""KAITO `Workspace` (kaito.sh/v1beta1, v1alpha1) as the StatefulSet KAITO v0.12.0 generates for it.

Cited from github.com/kaito-project/kaito at tag v0.12.0 (0894eb2b567d48cd2d66afe579acb1542b226af4):

- pkg/workspace/manifests/manifests.go:135-184 `GenerateStatefulSetManifest`: a StatefulSet named after the
  Workspace, `replicas` the target node count (`resource.count`, `+kubebuilder:default:=1`,
  api/v1beta1/workspace_types.go:30), pods labelled `kaito.sh/workspace: <name>` (api/v1beta1/labels.go:38);
  the Service of the same name selects that label (manifests.go, `GenerateServiceManifest`);
- pkg/workspace/inference/preset_inferences.go:52-108: the inference server listens on 5000
  (pkg/utils/consts/consts.go:141), readiness `/health` after 30 s every 10 s, liveness every 10 s × 3;
  :403-422 `buildStartupProbe`: every 10 s for the model's readiness timeout, 30 minutes by default (:56);
  :111-136 `defaultTolerations`: `nvidia.com/gpu` Exists and `sku=gpu`, both NoSchedule;
- the preset's runtime is vLLM unless the Workspace's `kaito.sh/runtime` annotation says `transformers`
  (pkg/model/interface.go: `BaseCommand: "python3 /workspace/vllm/inference_api.py"`), launched as
  `/bin/sh -c` (preset_inferences_test.go:1556); no preStop hook and no terminationGracePeriodSeconds are set
  (the API's 30 s), and none of them is a field of the Workspace.

The GPUs per pod come from KAITO's SKU table or the nodes' labels (`getGPUConfig`), which an input does not
carry: the pod is read as requesting `nvidia.com/gpu`, at least one. A Workspace with `inference.template`
runs that pod template as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.fields import Source, as_dict, as_int, meta
from exporter.k8s.operators.base import Derived, Refs
from exporter.k8s.scheduling import Constraints
from exporter.k8s.workloads import Container, PodTemplate, Probe, Workload, pod_template

RELEASE = "KAITO v0.12.0"
WORKSPACE_LABEL = "kaito.sh/workspace"
PORT = 5000
STARTUP_TIMEOUT_SECONDS = 30 * 60
COMMANDS = {
    "vllm": "python3 /workspace/vllm/inference_api.py",
    "transformers": "accelerate launch /workspace/tfs/inference_api.py",
}
TOLERATIONS = (("nvidia.com/gpu", "Exists", "", "NoSchedule"), ("sku", "Equal", "gpu", "NoSchedule"))
FIELDS = {
    "replicas": "resource.count",
    "autoscaler": "",  # scaled by an InferenceSet, not by the Workspace
    "readinessProbe": "",
    "startupProbe": "",
    "terminationGracePeriodSeconds": "",
    "preStop": "",
    "tolerations": "",
    "args": "inference.config (the ConfigMap's vllm section, e.g. max-model-len)",
}
TEMPLATE_FIELDS = {
    "replicas": "resource.count",
    "autoscaler": "",
    "readinessProbe": "inference.template.spec.containers[].readinessProbe",
    "startupProbe": "inference.template.spec.containers[].startupProbe",
    "terminationGracePeriodSeconds": "inference.template.spec.terminationGracePeriodSeconds",
    "preStop": "inference.template.spec.containers[].lifecycle.preStop",
    "tolerations": "inference.template.spec.tolerations",
    "args": "inference.template.spec.containers[].args",
}


def preset_pod(name: str, runtime: str) -> PodTemplate:
    engine = "vllm" if runtime == "vllm" else ""
    server = Container(
        name=name,
        image="",  # kaito-base, tagged per release (presets/workspace/models/supported_models.yaml)
        command=("/bin/sh", "-c", COMMANDS.get(runtime, COMMANDS["vllm"])),
        args=(),
        ports=(("http", PORT),),
        env=(),
        readiness=Probe(30, 10, 3, "httpGet"),
        liveness=Probe(0, 10, 3, "httpGet"),
        startup=Probe(0, 10, -(-STARTUP_TIMEOUT_SECONDS // 10), "httpGet"),
        prestop=False,
        gpus=(("nvidia.com/gpu", 1.0),),
        engine=engine,
    )
    return PodTemplate({WORKSPACE_LABEL: name}, {}, (server,), (), None, Constraints(tolerations=TOLERATIONS))


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, name, labels, annotations = meta(obj, default_namespace)
    inference = as_dict(obj.get("inference")) or as_dict(as_dict(obj.get("spec")).get("inference"))
    resource = as_dict(obj.get("resource")) or as_dict(as_dict(obj.get("spec")).get("resource"))
    if not inference:
        return Derived(note="a Workspace without inference (a tuning Workspace): no inference server")
    count = as_int(resource.get("count"))
    template = as_dict(inference.get("template"))
    if template:
        pod = pod_template(template)
        pod = PodTemplate({**pod.labels, WORKSPACE_LABEL: name}, *_rest(pod))
        fields = TEMPLATE_FIELDS
    else:
        runtime = annotations.get("kaito.sh/runtime", "vllm")
        pod, fields = preset_pod(name, runtime), FIELDS
    workload = Workload(
        "Workspace",
        namespace,
        name,
        labels,
        annotations,
        count if count is not None else 1,
        (pod,),
        source,
        fields={**fields, "release": RELEASE},
    )
    return Derived((workload,), (), ((namespace, name, {WORKSPACE_LABEL: name}),))


def _rest(pod: PodTemplate) -> tuple[Any, ...]:
    return pod.annotations, pod.containers, pod.init_containers, pod.grace_period, pod.constraints
