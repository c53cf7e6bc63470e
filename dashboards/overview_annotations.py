"""The overview's annotations: moments worth a mark on every time series panel.

"Model changed": another checkpoint, revision or image began serving a model (`llm_model_info`, cluster role),
the same change `llm-exporter diagnose` reports as `engine.model_changed`. A (model, revision, image, digest)
that serves a model now and did not 5 minutes ago, for a model that was served 5 minutes ago (a first rollout is
no change, nor is a scale-up of the revision already serving): Grafana marks the 5 minutes from the first
scrape that saw it.
"""

from __future__ import annotations

from typing import Any

from dashboards.lib import DATASOURCE

# what tells one checkpoint and image from another, of one served model (exporter/diagnose/verdicts/model_changed)
WHAT = "namespace, served_model_name, model, revision, image, image_digest"
SERVED = "namespace, served_model_name"
SINCE = "5m"
_INFO = 'llm_model_info{namespace=~"$namespace"}'


def _model_changed() -> str:
    now, then = f"group by ({WHAT}) ({_INFO})", f"group by ({WHAT}) ({_INFO} offset {SINCE})"
    served_then = f"group by ({SERVED}) ({_INFO} offset {SINCE})"
    return f"({now} unless {then}) and on ({SERVED}) {served_then}"


MODEL_CHANGED = _model_changed()


def queries() -> list[dict[str, Any]]:
    """The Grafana annotation queries of the overview (Prometheus data source, the dashboard's variable)."""
    return [
        {
            "datasource": DATASOURCE,
            "enable": True,
            "expr": MODEL_CHANGED,
            "iconColor": "orange",
            "name": "Model changed",
            "step": "1m",
            "titleFormat": "{{namespace}}/{{served_model_name}}: the model changed",
            "textFormat": "now {{model}} revision {{revision}}, image {{image}} {{image_digest}}",
            "tagKeys": "namespace,served_model_name",
            "useValueForTime": False,
        }
    ]
