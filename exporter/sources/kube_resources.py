"""What the reflectors list and watch: the resources the exporter knows, the API path of each collection, and
one GET of a collection that hands back the unread response.

Resources: `nodes`, `pods`, `resourceslices`, `resourceclaims`, `deviceclasses` (the last three from
`resource.k8s.io/v1`), the other built-in ones of `_LISTERS` and the custom resources of `_CUSTOM`.

Responses are read as raw JSON (`_preload_content=False`): the client's `Watch.stream(deserialize=False)`
crashes on ERROR events, and its typed models are heavy and strict (client 37 uses pydantic).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from kubernetes.client.exceptions import ApiException

# built-in resources: resource -> (API group, version, namespaced). Lists and watches are plain GETs of the
# collection's path through the ApiClient: the typed API classes (`CoreV1Api`, ...) cost ~20 MiB of
# resident memory each for methods the reflector never calls.
_LISTERS: dict[str, tuple[str, str, bool]] = {
    "nodes": ("", "v1", False),
    "pods": ("", "v1", True),
    "resourceslices": ("resource.k8s.io", "v1", False),
    "resourceclaims": ("resource.k8s.io", "v1", True),
    "deviceclasses": ("resource.k8s.io", "v1", False),
    "services": ("", "v1", True),
    "configmaps": ("", "v1", True),
    "ingresses": ("networking.k8s.io", "v1", True),
    "horizontalpodautoscalers": ("autoscaling", "v2", True),
    # audit: the engine workloads and the disruption budgets around them
    "deployments": ("apps", "v1", True),
    "statefulsets": ("apps", "v1", True),
    "poddisruptionbudgets": ("policy", "v1", True),
}
# custom resources (CRDs that may be absent: use optional=True): resource -> (group, version, plural)
_CUSTOM: dict[str, tuple[str, str, str]] = {
    "httproutes": ("gateway.networking.k8s.io", "v1", "httproutes"),
    "scaledobjects": ("keda.sh", "v1alpha1", "scaledobjects"),
    "scaledjobs": ("keda.sh", "v1alpha1", "scaledjobs"),
    # audit
    "leaderworkersets": ("leaderworkerset.x-k8s.io", "v1", "leaderworkersets"),
    "podautoscalers": ("autoscaling.aibrix.ai", "v1alpha1", "podautoscalers"),
    "routes": ("route.openshift.io", "v1", "routes"),
    "inferencepools": ("inference.networking.k8s.io", "v1", "inferencepools"),
    # routes and audit: GKE's BackendConfigs (the timeout of a GKE Ingress's backend)
    "backendconfigs": ("cloud.google.com", "v1", "backendconfigs"),
    # replicas: the RayService that controls a RayCluster (the controller of KubeRay's pods)
    "rayclusters": ("ray.io", "v1", "rayclusters"),
    # audit: the serving operators' resources (`exporter.k8s.operators.READERS`), at the version each reader
    # reads, and what they refer to (`REFERRED`); two operators share a plural, hence the keys' prefixes
    "kserve_inferenceservices": ("serving.kserve.io", "v1beta1", "inferenceservices"),
    "kserve_servingruntimes": ("serving.kserve.io", "v1alpha1", "servingruntimes"),
    "kserve_clusterservingruntimes": ("serving.kserve.io", "v1alpha1", "clusterservingruntimes"),  # cluster-scoped
    "workspaces": ("kaito.sh", "v1beta1", "workspaces"),
    "inferencesets": ("kaito.sh", "v1beta1", "inferencesets"),
    "rayservices": ("ray.io", "v1", "rayservices"),
    "nimservices": ("apps.nvidia.com", "v1alpha1", "nimservices"),
    "ome_inferenceservices": ("ome.io", "v1beta1", "inferenceservices"),
    "ome_servingruntimes": ("ome.io", "v1beta1", "servingruntimes"),
    "ome_clusterservingruntimes": ("ome.io", "v1beta1", "clusterservingruntimes"),  # cluster-scoped
    "rolebasedgroups": ("workloads.x-k8s.io", "v1alpha2", "rolebasedgroups"),
    "rolebasedgroupscalingadapters": ("workloads.x-k8s.io", "v1alpha2", "rolebasedgroupscalingadapters"),
    "dynamographdeployments": ("nvidia.com", "v1alpha1", "dynamographdeployments"),
}
RESOURCES = (*_LISTERS, *_CUSTOM)


def stream_lines(response: Any) -> Iterator[bytes]:
    """The newline-delimited lines of a streamed (chunked) response, as they arrive."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk
        while (newline := buffer.find(b"\n")) != -1:
            line, buffer = buffer[:newline], buffer[newline + 1 :]
            if line.strip():
                yield line
    if buffer.strip():
        yield buffer


# the reflector's keyword arguments -> the API's query parameters
_QUERY = {
    "limit": "limit",
    "_continue": "continue",
    "watch": "watch",
    "resource_version": "resourceVersion",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "timeout_seconds": "timeoutSeconds",
    "field_selector": "fieldSelector",
    "label_selector": "labelSelector",
}


def collection_path(resource: str, namespace: str | None) -> str:
    """The API path that lists (and, with `watch=true`, watches) `resource`, cluster-wide or in `namespace`."""
    if resource in _CUSTOM:
        group, version, plural = _CUSTOM[resource]
        namespaced = True  # a cluster-scoped CRD is never asked for in a namespace
    elif resource in _LISTERS:
        group, version, namespaced = _LISTERS[resource]
        plural = resource
    else:
        raise ValueError(f"unknown resource {resource!r} (known: {', '.join(RESOURCES)})")
    if namespace is not None and not namespaced:
        raise ValueError(f"{resource} is not namespaced")
    base = f"/apis/{group}/{version}" if group else f"/api/{version}"
    return f"{base}/namespaces/{namespace}/{plural}" if namespace is not None else f"{base}/{plural}"


def lister(api: Any, resource: str, namespace: str | None) -> Callable[..., Any]:
    """A GET of `resource`'s collection returning the unread response (raising ApiException on non-2xx)."""
    path = collection_path(resource, namespace)

    def list_fn(*, _request_timeout: Any = None, **kwargs: Any) -> Any:
        kwargs.pop("namespace", None)  # already in the path
        kwargs.pop("_preload_content", None)  # the response is always returned unread
        query = [(_QUERY[name], value) for name, value in kwargs.items() if value is not None]
        request = api.param_serialize(
            method="GET",
            resource_path=path,
            query_params=query,
            header_params={"Accept": "application/json"},
            auth_settings=["BearerToken"],
        )
        response = api.call_api(*request, _request_timeout=_request_timeout)
        if not 200 <= response.status <= 299:
            response.read()
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response

    return list_fn
