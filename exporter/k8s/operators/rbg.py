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
- `scalingAdapter.enable: true` makes the role's RoleBasedGroupScalingAdapter `<group>-<role>`
  (pkg/scale/scaling_adapter.go:25-27; internal/controller/workloads/rolebasedgroup_controller.go:820-877: made
  with an ownerReference to the group, unless one of that name exists), whose scale subresource sets the role's
  `replicas` (rolebasedgroupscalingadapter_controller.go:217-230, api/workloads/v1alpha2/
  rolebasedgroupscalingadapter_types.go: `spec.scaleTargetRef` {name: the group, role}): an autoscaler on it
  (an HPA, a KEDA ScaledObject) is the role's (`Workload.scaled_through`). An adapter no ownerReference ties to
  the group is skipped (rolebasedgroupscalingadapter_controller.go:113-119, pkg/scale/scaling_adapter.go:29-38):
  one written in the input scales nothing (a note), and one written as `<group>-<role>` keeps RBG from making its own.

`customComponentsPattern` roles are named in a note and not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from exporter.k8s import owner_refs
from exporter.k8s.fields import Source, as_dict, as_int, as_list, meta, strs
from exporter.k8s.operators.base import Derived, Refs, listed, merge
from exporter.k8s.workloads import PodTemplate, Workload, pod_template

RELEASE = "RBG v0.7.0"
GROUP_LABEL = "rbg.workloads.x-k8s.io/group-name"
ROLE_LABEL = "rbg.workloads.x-k8s.io/role-name"
ADAPTER = "RoleBasedGroupScalingAdapter"


def adapter_name(group: str, role: str) -> str:
    """The adapter RBG makes for a role, `<group>-<role>` (pkg/scale/scaling_adapter.go:25-27), named from the
    role's pod labels as the cluster role names it (`owner_refs.SCALED_THROUGH`); "" without both names."""
    named = owner_refs.scaled_through({GROUP_LABEL: group, ROLE_LABEL: role})
    return next((name for (kind, name), _ in named if kind == ADAPTER), "")


def _fields(at: str, group: str, role: str) -> dict[str, str]:
    pod = f"{at}.template.spec"
    return {
        "replicas": f"spec.roles[{role}].replicas",
        "autoscaler": f"spec.roles[{role}].scalingAdapter (an HPA on {ADAPTER} {adapter_name(group, role)})",
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


def written_adapters(refs: Refs, group: str, namespace: str) -> list[tuple[str, str, bool]]:
    """(name, role, owned) of each RoleBasedGroupScalingAdapter of the input whose `spec.scaleTargetRef` names the
    group; `owned`: an ownerReference names the group (RBG reconciles no other adapter)."""
    out = []
    for adapter in refs.get(ADAPTER, ()):
        metadata = as_dict(adapter.get("metadata"))
        target = as_dict(as_dict(adapter.get("spec")).get("scaleTargetRef"))
        if str(metadata.get("namespace") or namespace) != namespace or target.get("name") != group:
            continue
        owned = any(
            as_dict(r).get("kind") == "RoleBasedGroup" and as_dict(r).get("name") == group
            for r in as_list(metadata.get("ownerReferences"))
        )
        out.append((str(metadata.get("name") or ""), str(target.get("role") or ""), owned))
    return out


def _inert(name: str, role: str, group: str) -> str:
    made = adapter_name(group, role)
    why = (
        "RBG finds it and makes none of its own, and reconciles only an adapter the group owns"
        if name == made
        else f"RBG scales a role only through the adapter the group owns, {made}, made for scalingAdapter.enable: true"
    )
    return f"{ADAPTER} {name} (spec.roles[{role}]) is not owned by the group: {why}; an autoscaler on {name} " \
        "scales nothing"  # fmt: skip


def read(obj: Mapping[str, Any], default_namespace: str, source: Source, refs: Refs) -> Derived:
    namespace, group, labels, annotations = meta(obj, default_namespace)
    spec = as_dict(obj.get("spec"))
    roles = listed(spec.get("roles"))
    if not roles:
        return Derived(note="no spec.roles: RBG generates nothing")
    written = written_adapters(refs, group, namespace)
    workloads: list[Workload] = []
    odd: list[str] = []
    for role in roles:
        name = str(role.get("name") or "")
        pods, where, why = role_pods(role, spec, group, name)
        if why:
            odd.append(why)
            continue
        made = adapter_name(group, name)
        through = [(ADAPTER, n) for n, r, owned in written if owned and r == name]
        taken = any(n == made and not owned for n, _, owned in written)  # RBG then makes none (a note below)
        if as_dict(role.get("scalingAdapter")).get("enable") is True and made and not taken:
            through.append((ADAPTER, made))
        replicas = as_int(role.get("replicas"))
        workloads.append(
            Workload(
                "RoleBasedGroup", namespace, group if len(roles) == 1 else f"{group}/{name}", labels, annotations,
                1 if replicas is None else replicas, pods, source, fields=_fields(where, group, name),
                scaled_through=tuple(dict.fromkeys(through)),
            )
        )  # fmt: skip
    odd += [_inert(n, r, group) for n, r, owned in written if not owned]
    return Derived(tuple(workloads), note="; ".join(odd))
