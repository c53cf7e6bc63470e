"""JSON schemas for the custom resources in deploy/ that kubernetes-validate has no schema for.

Written from the CRDs (Prometheus Operator monitoring.coreos.com/v1, KEDA keda.sh/v1alpha1), covering the
fields these manifests may use and closed with additionalProperties: false where the CRD is closed, so a
misspelt field (`honorlabel`) or a wrong type (KEDA metadata values are strings, `ignoreNullValues: false`
is rejected by the API server) fails here instead of on apply.
"""

from __future__ import annotations

from typing import Any

import jsonschema

# The Prometheus Operator's Duration pattern (monitoring.coreos.com/v1 Duration).
DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
LABELS = {"type": "object", "additionalProperties": {"type": "string"}}
META = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "pattern": r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", "maxLength": 253},
        "namespace": {"type": "string"},
        "labels": LABELS,
        "annotations": LABELS,
    },
    "additionalProperties": False,
}
SELECTOR = {
    "type": "object",
    "properties": {"matchLabels": LABELS, "matchExpressions": {"type": "array"}},
    "additionalProperties": False,
}
NAMESPACE_SELECTOR = {
    "type": "object",
    "properties": {"any": {"type": "boolean"}, "matchNames": {"type": "array", "items": {"type": "string"}}},
    "additionalProperties": False,
}
_ENDPOINT_COMMON: dict[str, Any] = {
    "port": {"type": "string"},
    "path": {"type": "string", "pattern": "^/"},
    "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
    "params": {"type": "object"},
    "interval": DURATION,
    "scrapeTimeout": DURATION,
    "honorLabels": {"type": "boolean"},
    "honorTimestamps": {"type": "boolean"},
    "trackTimestampsStaleness": {"type": "boolean"},
    "relabelings": {"type": "array"},
    "metricRelabelings": {"type": "array"},
    "tlsConfig": {"type": "object"},
    "authorization": {"type": "object"},
    "basicAuth": {"type": "object"},
    "oauth2": {"type": "object"},
    "followRedirects": {"type": "boolean"},
    "enableHttp2": {"type": "boolean"},
    "filterRunning": {"type": "boolean"},
    "proxyUrl": {"type": "string"},
}
_MONITOR_COMMON: dict[str, Any] = {
    "jobLabel": {"type": "string"},
    "podTargetLabels": {"type": "array", "items": {"type": "string"}},
    "selector": SELECTOR,
    "namespaceSelector": NAMESPACE_SELECTOR,
    "sampleLimit": {"type": "integer", "minimum": 0},
    "targetLimit": {"type": "integer", "minimum": 0},
    "labelLimit": {"type": "integer", "minimum": 0},
    "attachMetadata": {"type": "object"},
    "scrapeClass": {"type": "string"},
    "scrapeProtocols": {"type": "array", "items": {"type": "string"}},
}


def _resource(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {"const": api_version},
            "kind": {"const": kind},
            "metadata": META,
            "spec": spec,
        },
        "additionalProperties": False,
    }


SERVICE_MONITOR = _resource(
    "monitoring.coreos.com/v1",
    "ServiceMonitor",
    {
        "type": "object",
        "required": ["selector", "endpoints"],
        "properties": {
            **_MONITOR_COMMON,
            "targetLabels": {"type": "array", "items": {"type": "string"}},
            "endpoints": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {**_ENDPOINT_COMMON, "targetPort": {"type": ["string", "integer"]}},
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
)

POD_MONITOR = _resource(
    "monitoring.coreos.com/v1",
    "PodMonitor",
    {
        "type": "object",
        "required": ["selector", "podMetricsEndpoints"],
        "properties": {
            **_MONITOR_COMMON,
            "podMetricsEndpoints": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "properties": {**_ENDPOINT_COMMON, "portNumber": {"type": "integer"}},
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
)

_RULE = {
    "type": "object",
    "required": ["expr"],
    "oneOf": [{"required": ["alert"]}, {"required": ["record"]}],
    "properties": {
        "alert": {"type": "string"},
        "record": {"type": "string"},
        "expr": {"type": ["string", "integer"]},
        "for": DURATION,
        "keep_firing_for": DURATION,
        "labels": LABELS,
        "annotations": LABELS,
    },
    "additionalProperties": False,
}
PROMETHEUS_RULE = _resource(
    "monitoring.coreos.com/v1",
    "PrometheusRule",
    {
        "type": "object",
        "properties": {
            "groups": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "interval": DURATION,
                        "query_offset": DURATION,
                        "limit": {"type": "integer"},
                        "labels": LABELS,
                        "partial_response_strategy": {"type": "string"},
                        "rules": {"type": "array", "items": _RULE},
                    },
                    "additionalProperties": False,
                },
            }
        },
        "additionalProperties": False,
    },
)

SCALED_OBJECT = _resource(
    "keda.sh/v1alpha1",
    "ScaledObject",
    {
        "type": "object",
        "required": ["scaleTargetRef", "triggers"],
        "properties": {
            "scaleTargetRef": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string"},
                    "apiVersion": {"type": "string"},
                    "kind": {"type": "string"},
                    "envSourceContainerName": {"type": "string"},
                },
                "additionalProperties": False,
            },
            "pollingInterval": {"type": "integer"},
            "cooldownPeriod": {"type": "integer"},
            "initialCooldownPeriod": {"type": "integer"},
            "idleReplicaCount": {"type": "integer"},
            "minReplicaCount": {"type": "integer"},
            "maxReplicaCount": {"type": "integer"},
            "fallback": {
                "type": "object",
                "required": ["failureThreshold", "replicas"],
                "properties": {
                    "failureThreshold": {"type": "integer"},
                    "replicas": {"type": "integer"},
                    "behavior": {
                        "enum": ["static", "currentReplicas", "currentReplicasIfHigher", "currentReplicasIfLower"]
                    },
                },
                "additionalProperties": False,
            },
            "advanced": {
                "type": "object",
                "properties": {
                    "restoreToOriginalReplicaCount": {"type": "boolean"},
                    "horizontalPodAutoscalerConfig": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "behavior": {"type": "object"}},
                        "additionalProperties": False,
                    },
                    "scalingModifiers": {"type": "object"},
                },
                "additionalProperties": False,
            },
            "triggers": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["type", "metadata"],
                    "properties": {
                        "type": {"type": "string"},
                        "name": {"type": "string"},
                        "metadata": LABELS,  # map[string]string in the CRD: every value a string
                        "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                        "useCachedMetrics": {"type": "boolean"},
                        "authenticationRef": {"type": "object"},
                    },
                    "additionalProperties": False,
                },
            },
        },
        "additionalProperties": False,
    },
)

SCHEMAS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SERVICE_MONITOR,
    ("monitoring.coreos.com/v1", "PodMonitor"): POD_MONITOR,
    ("monitoring.coreos.com/v1", "PrometheusRule"): PROMETHEUS_RULE,
    ("keda.sh/v1alpha1", "ScaledObject"): SCALED_OBJECT,
}


def validate(obj: dict[str, Any]) -> None:
    """Raise jsonschema.ValidationError (or KeyError for a kind not listed) for a custom resource."""
    schema = SCHEMAS[(obj.get("apiVersion", ""), obj.get("kind", ""))]
    jsonschema.validate(obj, schema)
