"""The connection to the Kubernetes API server: a kubeconfig file, the in-cluster service account, or
`~/.kube/config`, read into one `ApiClient` that every list and watch shares.

    api = connect(kubeconfig)          # None: in-cluster config, then ~/.kube/config; raises KubeConfigError
"""

from __future__ import annotations

from typing import Any

import yaml
from kubernetes import client
from kubernetes import config as _config

from exporter import hostile

config: Any = _config  # the config loaders carry no type hints


class KubeConfigError(Exception):
    """No usable Kubernetes configuration: neither in-cluster nor a kubeconfig file."""


CONNECTION_POOL_SIZE = 32


def connect(kubeconfig: str | None = None) -> Any:
    """An `ApiClient` for `kubeconfig`, or the in-cluster service account, or `~/.kube/config`."""
    configuration = client.Configuration()
    try:
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        else:
            try:
                config.load_incluster_config(client_configuration=configuration)
            except config.ConfigException:
                config.load_kube_config(client_configuration=configuration)
    except (config.ConfigException, OSError, TypeError, yaml.YAMLError, *hostile.BUILD_ERRORS) as exc:
        where = kubeconfig or "in-cluster or ~/.kube/config"
        said = hostile.why(exc) if isinstance(exc, (LookupError, AttributeError, RecursionError)) else exc
        raise KubeConfigError(f"no Kubernetes configuration ({where}): {said}") from exc
    # every watch holds one connection for its stream (the cluster role runs about twenty); the client's default
    # pool (5 per CPU) would discard the ones over it at each release and open new ones, TLS handshake and all
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize or 0, CONNECTION_POOL_SIZE)
    return client.ApiClient(configuration)
