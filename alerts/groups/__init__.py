"""Alert groups, one module each: `alerts(t: Thresholds) -> list[Alert]`."""
