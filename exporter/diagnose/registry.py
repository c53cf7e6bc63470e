"""Every verdict, in the order of the walk. A new verdict is its module in `verdicts/` plus one line here.

`waiting.unexplained` is judged last although its stage is second: it reports the waits that no later stage
explains, so it needs their findings. `tenant_share` and `model_changed` come after it: the tenant sending most
of a queue and a change of checkpoint or image are context for a wait, not its explanation, so the unexplained
wait is still reported beside them.
"""

from __future__ import annotations

from exporter.diagnose.model import Verdict
from exporter.diagnose.verdicts import (
    autoscaler_at_max,
    autoscaler_at_min,
    autoscaler_query_empty,
    cluster_view,
    cold_start,
    collector_failing,
    compute,
    engine_down,
    exporter_down,
    finished_skew,
    fragmented,
    kv_capacity,
    memory_bandwidth,
    metric_missing,
    model_changed,
    pending,
    prefix_spread,
    queue_skew,
    route_buffering,
    route_timeout,
    series_missing,
    tenant_share,
    waiting,
)

VERDICTS: tuple[Verdict, ...] = (
    exporter_down.VERDICT,
    collector_failing.VERDICT,
    cluster_view.VERDICT,
    engine_down.VERDICT,
    metric_missing.VERDICT,
    series_missing.VERDICT,
    queue_skew.VERDICT,
    finished_skew.VERDICT,
    prefix_spread.VERDICT,
    autoscaler_query_empty.VERDICT,
    autoscaler_at_max.VERDICT,
    autoscaler_at_min.VERDICT,
    cold_start.VERDICT,
    fragmented.VERDICT,
    pending.VERDICT,
    kv_capacity.VERDICT,
    memory_bandwidth.VERDICT,
    compute.VERDICT,
    route_timeout.VERDICT,
    route_buffering.VERDICT,
    waiting.VERDICT,
    tenant_share.VERDICT,
    model_changed.VERDICT,
)

BY_ID = {v.id: v for v in VERDICTS}
