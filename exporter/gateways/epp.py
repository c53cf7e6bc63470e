"""The endpoint picker's (EPP, Gateway API Inference Extension) flow control queue, read per tenant (pure: a body
in, a Reading out).

With its flow control layer on (feature gate `flowControl`; before, the environment variable
ENABLE_EXPERIMENTAL_FLOW_CONTROL_LAYER), the EPP holds requests in front of its pool, one queue per flow, and
exposes `inference_extension_flow_control_queue_size{fairness_id, priority}`: the requests of a flow it manages
now, from the start of EnqueueAndWait until their outcome (dispatched to an endpoint, rejected or evicted)
(kubernetes-sigs/gateway-api-inference-extension v1.1.0, the first release with it,
pkg/epp/metrics/metrics.go:252; incremented and decremented around EnqueueAndWait, v1.5.0
pkg/epp/flowcontrol/controller/controller.go:228). The flow's id is the request header
`x-gateway-inference-fairness-id` (v1.1.0 pkg/epp/metadata/consts.go:30), "default-flow" for a request without
it (v1.1.0 pkg/epp/handlers/request.go:35): the tenant. From v1.3.0 the gauge also carries `inference_pool`,
`model_name` (the model the client asked for) and `target_model_name` (the model sent to the pool, after a
rewrite: the engine's name, v1.3.0 pkg/epp/metrics/metrics.go:64,408); the model read is the target, else the
asked one, else "" (v1.1.0 and v1.2: no model label). tests/fixtures/epp/PROVENANCE.json has bodies written by
the v1.1.0 and v1.5.0 metrics packages.

The EPP is recognised by `inference_extension_info`, which it sets at start whatever is enabled. It serves its
metrics over HTTP at `/metrics` on port 9090 (v1.5.0 pkg/epp/server/options.go:112), behind Kubernetes
authentication and authorisation (`--metrics-endpoint-auth`, on by default, options.go:116): a target needs a
bearer_token_file of a service account allowed to get `/metrics`.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.engines import parser
from exporter.gateways.reading import NO_SPLIT, KindSplit, Reading

PREFIX = "inference_extension_"
METRICS_PATH = "/metrics"
INFO = "inference_extension_info"
QUEUE = "inference_extension_flow_control_queue_size"
FAIRNESS = "fairness_id"
MODELS = ("target_model_name", "model_name")  # the first set names the model


def detect(body: str) -> bool:
    """True for a body of the EPP (its info gauge is set at start; the queue only with flow control on)."""
    return INFO in body


def read(body: str, tenant_labels: Sequence[str] = (), split: KindSplit = NO_SPLIT) -> Reading:
    """The requests each tenant (fairness id) has in the EPP's flow control now, by model and priority;
    ParseError for a body that is not the text format. The tenant is the fairness id whatever
    `gateways.tenant_labels` names (the EPP has no other tenant), and the EPP counts no tokens (`split` unused)."""
    del tenant_labels, split
    reading = Reading()
    for pairs, value in parser.parse(body, frozenset({QUEUE}), PREFIX).samples.get(QUEUE, ()):
        labels = dict(pairs)
        tenant = labels.get(FAIRNESS, "")
        if not tenant:  # never written by the EPP ("default-flow" without the header); a relabelled body
            reading.dropped["no_tenant"] += 1
            continue
        model = next((labels[n] for n in MODELS if labels.get(n)), "")
        ident = (model, reading.tenant(tenant), labels.get("priority", ""))
        reading.queued[ident] = reading.queued.get(ident, 0.0) + value
    return reading
