"""Inference engines: scraping their /metrics and re-exporting them under stable `llm_*` names."""
