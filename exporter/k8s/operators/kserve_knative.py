"""KServe `InferenceService` in Knative (serverless) mode: the Knative Service KServe v0.20.0 makes for the
predictor, as Knative Serving v0.48.1 (the version KServe v0.20.0's go.mod requires) runs its Revision.

From github.com/kserve/kserve at tag v0.20.0 (1fb781055dd1567164358233e1125142ca6ef1fe):

- pkg/controller/v1beta1/inferenceservice/reconcilers/knative/ksvc_reconciler.go:88-224 `createKnativeService`:
  the Knative Service `<name>-predictor` runs the same predictor pod spec as Standard mode, with
  `containerConcurrency` and `timeoutSeconds` from the predictor's `containerConcurrency` and `timeout`,
  and the InferenceService's annotations on the Revision template;
- pkg/controller/v1alpha1/utils/utils.go:48-83 `SetAutoScalingAnnotations`: `autoscaling.knative.dev/class`
  `kpa.autoscaling.knative.dev` unless set, `min-scale` the predictor's `minReplicas` (1 when unset,
  constants.go:223), `max-scale` its `maxReplicas` unless 0 (then Knative's own limit, unlimited by
  default), `target` its `scaleTarget` and `metric` its `scaleMetric` where set.

From github.com/knative/serving at tag v0.48.1 (69aa052f143657969e5f0d7e0902088da6f22566):

- pkg/reconciler/revision/resources/deploy.go:285-296, 309-324: the serving container (the one with a port)
  has the one port `user-port`, its own first or 8080 (pkg/apis/serving/v1/revision_helpers.go:30-35);
- deploy.go:101-112, 261-283: every user container gets a preStop hook
  that waits on the queue-proxy's drain (whatever lifecycle it had), and its HTTP, TCP or gRPC readiness
  probe is run by the queue-proxy instead; :299-302 the pod's terminationGracePeriodSeconds is the
  Revision's timeoutSeconds (whatever the pod spec said);
- pkg/apis/serving/v1/revision_defaults.go:160-170: a container without a readiness probe gets a TCP probe
  on its port; a startup probe is the container's own (none by default);
- config/core/configmaps/defaults.yaml:46 `revision-timeout-seconds` 300; autoscaler.yaml: the KPA scales on
  `concurrency` (:77 target 100 per pod, :58 at 70 %), averaged over the 60 s `stable-window` (:105), with
  no `scale-down-delay` (:203); both can be set per Revision as `autoscaling.knative.dev/window` and
  `autoscaling.knative.dev/scale-down-delay`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.autoscalers import Autoscaler
from exporter.k8s.durations import duration_seconds
from exporter.k8s.fields import Source, as_dict, as_int
from exporter.k8s.operators.base import listed

RELEASE = "KServe v0.20.0 on Knative Serving v0.48.1"
KNATIVE = "autoscaling.knative.dev/"
KPA = "kpa.autoscaling.knative.dev"
REVISION_TIMEOUT_SECONDS = 300
STABLE_WINDOW_SECONDS = 60
DEFAULT_METRIC = "concurrency"
USER_PORT = 8080
DRAIN = {"preStop": {"httpGet": {"port": 8022, "path": "/wait-for-drain"}}}


def fields(base: Mapping[str, str]) -> dict[str, str]:
    """Where each aspect is set on a Knative-mode InferenceService (Standard mode's `base` otherwise)."""
    return {
        **base,
        "autoscaler": "spec.predictor.minReplicas, maxReplicas, scaleTarget, scaleMetric "
        "(and autoscaling.knative.dev/ annotations)",
        "terminationGracePeriodSeconds": "spec.predictor.timeout",
        "preStop": "",  # Knative's drain hook, whatever the container says
        "release": RELEASE,
    }


def revision_pod(pod: Mapping[str, Any], predictor: Mapping[str, Any]) -> dict[str, Any]:
    """The pod of the Revision's Deployment: Knative's drain hook and default readiness, its grace period."""
    spec = as_dict(pod.get("spec"))
    raw = listed(spec.get("containers"))
    serving = next((i for i, c in enumerate(raw) if listed(c.get("ports"))), 0)
    containers = []
    for i, c in enumerate(raw):
        ready = c.get("readinessProbe")
        container = {**c, "lifecycle": DRAIN, "readinessProbe": ready or {"tcpSocket": {"port": 0}}}
        if i == serving:
            port = next((as_int(p.get("containerPort")) for p in listed(c.get("ports"))), None) or USER_PORT
            container["ports"] = [{"name": "user-port", "containerPort": port}]
        containers.append(container)
    timeout = as_int(predictor.get("timeout"))
    grace = REVISION_TIMEOUT_SECONDS if timeout is None else timeout
    return {**pod, "spec": {**spec, "containers": containers, "terminationGracePeriodSeconds": grace}}


def kpa(
    name: str, namespace: str, predictor: Mapping[str, Any], annotations: Mapping[str, str], source: Source
) -> Autoscaler | None:
    """Knative's autoscaler of the Revision, None when `autoscaling.knative.dev/class` names another class."""
    if annotations.get(KNATIVE + "class", KPA) != KPA:
        return None
    minimum = as_int(predictor.get("minReplicas"))
    low = 1 if minimum is None else minimum
    high = as_int(predictor.get("maxReplicas")) or 0
    metric = str(predictor.get("scaleMetric") or annotations.get(KNATIVE + "metric") or DEFAULT_METRIC)
    window = duration_seconds(annotations.get(KNATIVE + "window", ""))
    delay = duration_seconds(annotations.get(KNATIVE + "scale-down-delay", ""))
    wait = (STABLE_WINDOW_SECONDS if window is None else window) + (delay or 0)
    return Autoscaler(
        kind="knative", namespace=namespace, name=f"{name}-predictor", target_kind="InferenceService",
        target_name=name, min_replicas=low, max_replicas=max(high, low) if high else None,
        signals=(f"knative:{metric}",), scale_down_window=int(wait), cooldown=None, source=source,
        annotations=dict(annotations),
    )  # fmt: skip
