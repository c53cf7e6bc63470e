"""One list+watch per resource for the whole process: `shared(api, "pods", field_selector=...)` hands every
collector built against the same API server and identity the same not-yet-started reflector, so that the
cluster role lists and watches each resource once. Each collector reads it through its own
`reflector.view(transform)`; the views start the reflector with the first reader and stop it with the last.
"""

from __future__ import annotations

import threading
from typing import Any

from exporter.sources.kube_reflector import Reflector


def _keep_nothing(obj: dict[str, Any]) -> None:
    return None


_shared_lock = threading.Lock()
_shared: dict[tuple[Any, ...], Reflector[None]] = {}


def _identity(api: Any) -> tuple[Any, ...]:
    """The API server and the credentials of `api`: clients that see the same objects."""
    c = api.configuration
    keys = tuple(sorted((c.api_key or {}).items()))
    return (c.host, keys, c.cert_file, c.key_file, c.username)


def shared(
    api: Any,
    resource: str,
    *,
    field_selector: str | None = None,
    label_selector: str | None = None,
    namespace: str | None = None,
    **options: Any,
) -> Reflector[None]:
    """The one list+watch of `resource` (with these selectors) for every reader built against the same API
    server and identity before it starts; read it through `view()`. It keeps no records of its own. A
    reflector already started is not joined (a view added then would miss the objects listed): the next
    caller gets a new one. The watch is optional (a 403 or 404 reads as none) only while every reader says
    so: one that needs the resource makes a refusal a failure to report, and the optional readers' views
    are then unavailable until it lists. The other `options` (page size, backoff) are the first caller's."""
    key = (_identity(api), resource, field_selector, label_selector, namespace)
    with _shared_lock:
        reflector = _shared.get(key)
        if reflector is not None and not reflector.started:
            if not options.get("optional"):
                reflector.require()
        else:
            reflector = _shared[key] = Reflector(
                api,
                resource,
                transform=_keep_nothing,
                field_selector=field_selector,
                label_selector=label_selector,
                namespace=namespace,
                **options,
            )
        return reflector
