"""Alert group `llm-inference.budgets`: a tenant's budget, as the gateway states it, runs out soon at the
current spend.

The gateway's remaining budget (`llm_gateway_budget_remaining`, LiteLLM's team, key, user and end-user
budgets) is extrapolated from its trend over `budget_trend_window`. A holder without a budget has no series and
never fires; a budget that the gateway resets (LiteLLM's `budget_duration`) jumps up, which holds the
extrapolation above 0 until the window has passed the reset.
"""

from __future__ import annotations

from alerts.model import Alert
from alerts.thresholds import Thresholds

GROUP = "llm-inference.budgets"
HOLDER = "gateway, scope, tenant, currency"


def alerts(t: Thresholds) -> list[Alert]:
    return [
        Alert(
            name="LLMTenantBudgetExhaustion",
            group=GROUP,
            # the lowest of the exporters that read one gateway (each node-role pod may): one alert per holder
            query=(
                f"min by ({HOLDER}) (predict_linear(llm_gateway_budget_remaining[{t.budget_trend_window}], "
                f"{t.budget_horizon_seconds:g}))"
            ),
            op="<",
            threshold=0,
            for_=t.budget_exhaustion_for,
            severity="warning",
            summary=(
                "The {{ $labels.scope }} budget of {{ $labels.tenant }} at gateway {{ $labels.gateway }} runs out "
                f"within {t.budget_horizon_seconds / 3600:g}h at its current spend."
            ),
            description=(
                "At the spend rate of the last "
                f"{t.budget_trend_window} the gateway's remaining budget reaches 0 within "
                f"{t.budget_horizon_seconds / 3600:g}h; then the gateway refuses the holder's requests. Raise "
                "the budget or find what spends it (llm:tenant_cost_per_second, llm_gateway_spend_total)."
            ),
        ),
    ]
