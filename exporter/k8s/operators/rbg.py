"""RBG `RoleBasedGroup` (workloads.x-k8s.io/v1alpha2, v1alpha1) as the workload RBG v0.7.0 generates for
each of its roles.

Cited from github.com/sgl-project/rbg at tag v0.7.0 (01df6fc39e3e979b4adade9ceef16d9fdaa3b48e):

- api/workloads/v1alpha2/rolebasedgroup_types.go:176-226: each role has `replicas` (`+kubebuilder:default=1`,
  :191) and one pattern: `standalonePattern` (one pod per replica) or `leaderWorkerPattern` (`size` pods per
  replica, `+kubebuilder:default=1`, :312, the template patched by `leaderTemplatePatch` and
  `workerTemplatePatch`), each a `template` or a `templateRef` to `spec.roleTemplates` with a `patch`
  (:31-60, :290-298; a strategic merge patch, pkg/reconciler/pod_reconciler.go:369); :229-243: the workload
  kind is the role's `rbg.workloads.x-k8s.io/role-workload-type` annotation, else RBG's own RoleInstanceSet;
  v1alpha1 roles carry `template` (or `templateRef` and `templatePatch`), `leaderWorkerSet` (`size`,
  `patchLeaderTemplate`, `patchWorkerTemplate`) and `workload` (default apps/v1 StatefulSet),
  api/workloads/v1alpha1/rolebasedgroup_types.go:39-65, 323-429;
- api/workloads/v1alpha2/helper.go:34-42, 82-95: the workload is `<group>-<role>`, its pods labelled
  `rbg.workloads.x-k8s.io/group-name: <group>` and `rbg.workloads.x-k8s.io/role-name: <role>`;
  pkg/reconciler/deploy_reconciler.go:121-165: the role's `replicas` as written, the pod template as written
  plus those labels and RBG's discovery environment (pod_reconciler.go:64-145): RBG adds no probe, no preStop
  hook, no toleration and no grace period (the API's 30 s), so each is the role template's;
- helper.go:101-110: the Service `s-<group>-<role>` is headless (each replica is addressed by name), so no
  Service spreads requests round-robin over a role's replicas;
- `scalingAdapter` makes a RoleBasedGroupScalingAdapter that an HPA of the user's may target
  (api/workloads/v1alpha2/rolebasedgroupscalingadapter_types.go): that HPA is not matched to the role (a note).

`customComponentsPattern` roles are named in a note and not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s.fields import Source, as_dict, as_int, meta, strs
from exporter.k8s.operators.base import Derived, Refs, listed, merge
from exporter.k8s.workloads import PodTemplate, Workload, pod_template

RELEASE = "RBG v0.7.0"
GROUP_LABEL = "rbg.workloads.x-k8s.io/group-name"
ROLE_LABEL = "rbg.workloads.x-k8s.io/role-name"


def _fields(at: str, role: str) -> dict[str, str]:
    pod = f"{at}.template.spec"
    return {
        "replicas": f"spec.roles[{role}].replicas",
        "autoscaler": f"spec.roles[{role}].scalingAdapter (an HPA on its RoleBasedGroupScalingAdapter)",
        "readinessProbe": f"{pod}.containers[].readinessProbe",
        "startupProbe": f"{pod}.containers[].startupProbe",
        "terminationGracePeriodSeconds": f"{pod}.terminationGracePeriodSeconds",
        "preStop": f"{pod}.containers[].lifecycle.preStop",
        "tolerations": f"{pod}.tolerations",
        "args": f"{pod}.containers[].args",
        "release": RELEASE,
    }


def _template(source: Mapping[str, Any], spec: Mapping[str, Any], at: str) -> tuple[dict[str, Any], str]:
    """A pattern's (or a v1alpha1 role's) pod template and where it is written: its own, else its
    `templateRef` patched (v1alpha2 `templateRef.patch`, v1alpha1 `templatePatch`)."""
    own = as_dict(source.get("template"))
    if own:
        return own, at
    ref = as_dict(source.get("templateRef"))
    name = str(ref.get("name") or "")
    for entry in listed(spec.get("roleTemplates")):
        if name and entry.get("name") == name:
            base = as_dict(entry.get("template"))
            patch = ref.get("patch") or source.get("templatePatch")
            return (as_dict(merge(base, patch)) if isinstance(patch, dict) else base), f"spec.roleTemplates[{name}]"
    return {}, at


def _labelled(template: Mapping[str, Any], group: str, role: str) -> PodTemplate:
    metadata = as_dict(template.get("metadata"))
    labels = {**strs(metadata.get("labels")), GROUP_LABEL: group, ROLE_LABEL: role}
    return pod_template({**template, "metadata": {**metadata, "labels": labels}})


def role_pods(
    role: Mapping[str, Any], spec: Mapping[str, Any], group: str, name: str
) -> tuple[tuple[PodTemplate, ...], str, str]:
    """The pod templates of one role (a leader-worker role's leader, then its worker), where they are written,
    and why none is read."""
    at = f"spec.roles[{name}]"
    if isinstance(role.get("customComponentsPattern"), dict):
        return (), at, f"{at}.customComponentsPattern is not read"
    standalone = as_dict(role.get("standalonePattern"))
    lw, old = role.get("leaderWorkerPattern"), role.get("leaderWorkerSet")  # v1alpha2, v1alpha1
    if isinstance(lw, dict) or isinstance(old, dict):
        if isinstance(lw, dict):
            base, where = _template(lw, spec, f"{at}.leaderWorkerPattern")
            patches = (lw.get("leaderTemplatePatch"), lw.get("workerTemplatePatch"))
        else:
            lw = as_dict(old)
            base, where = _template(role, spec, at)
            patches = (lw.get("patchLeaderTemplate"), lw.get("patchWorkerTemplate"))
        if not base:
            return (), at, f"{at} has no pod template"
        leader, worker = (merge(base, p) if isinstance(p, dict) else base for p in patches)
        size = as_int(lw.get("size"))
        pods = [_labelled(leader, group, name)]
        if (1 if size is None else size) > 1:  # `+kubebuilder:default=1`: the leader alone
            pods.append(_labelled(worker, group, name))
        return tuple(pods), where, ""
    template, where = _template(standalone, spec, f"{at}.standalonePattern")
    if not template and not standalone:  # v1alpha1: the role's own template or templateRef
        template, where = _template(role, spec, at)
    if not template:
        return (), at, f"{at} has no pod template"
    return (_labelled(template, group, name),), where, ""


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, group, labels, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    roles = listed(spec.get("roles"))
    if not roles:
        return Derived(note="no spec.roles: RBG generates nothing")
    workloads: list[Workload] = []
    odd: list[str] = []
    for role in roles:
        name = str(role.get("name") or "")
        pods, where, why = role_pods(role, spec, group, name)
        if why:
            odd.append(why)
            continue
        adapter = as_dict(role.get("scalingAdapter"))
        if adapter.get("enable") is True:
            odd.append(f"spec.roles[{name}].scalingAdapter: an HPA on its RoleBasedGroupScalingAdapter is not read")
        replicas = as_int(role.get("replicas"))
        workloads.append(
            Workload(
                "RoleBasedGroup", namespace, group if len(roles) == 1 else f"{group}/{name}", labels, annotations,
                1 if replicas is None else replicas, pods, source, fields=_fields(where, name),
            )
        )  # fmt: skip
    return Derived(tuple(workloads), note="; ".join(odd))
