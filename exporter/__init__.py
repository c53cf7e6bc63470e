"""llm-inference-exporter: stable `llm_*` metrics for LLM inference on Kubernetes."""

__version__ = "0.1.0"
