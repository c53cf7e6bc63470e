"""Generated code; regenerate with `python -m exporter.sources._generated.regenerate` (needs grpcio-tools)."""
