"""One module per alert group, each `alerts(t: Thresholds) -> list[Alert]`; `alerts.rules` assembles them."""
