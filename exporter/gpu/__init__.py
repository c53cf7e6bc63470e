"""GPU readings through NVML (memory, bandwidth, utilisation, MIG) and GPU-to-pod attribution."""
