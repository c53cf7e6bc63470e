"""The cluster role's one pod watch: every unfinished pod of the cluster, listed and watched once.

The cluster collector needs every pod that holds or wants resources (GPU requests, and the bound
cpu-only pods the pre-resource filters count); the engine-pod collectors (routes, replicas) need the
engine pods, which are among them. Both read views of this one list+watch (`Reflector.view`), so each pod
of the cluster is sent, decoded and reduced once. A second, server-side filtered watch for the engine
pods would send them a second time and could not express the opt-in at all (the scrape annotation:
annotations are not selectable); `cluster.engine_label_selector` is matched on the view instead.

The other resources more than one collector reads (Services, Ingresses, HTTPRoutes, Routes, HPAs) are
read the same way: views of one `shared` watch each.

Finished pods (Succeeded, Failed) are left to the API server's field selector: they hold no resources,
serve no traffic (a Service's endpoints leave them out) and are not starting; a pod that finishes
arrives as DELETED.
"""

from __future__ import annotations

from typing import Any

from exporter.sources.kube_reflector import Reflector
from exporter.sources.kube_shared import shared

UNFINISHED_PODS = "status.phase!=Succeeded,status.phase!=Failed"


def pod_watch(api: Any, **options: Any) -> Reflector[None]:
    """The role's pod watch for `api` (one per API server and identity, see `shared`); read it through `view`."""
    return shared(api, "pods", field_selector=UNFINISHED_PODS, **options)
