"""Engine replicas as the cluster sees them: how long each takes to start, phase by phase (cluster role)."""
