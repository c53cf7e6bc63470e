"""Moved to `exporter.check.inputs`; kept so existing imports keep working."""

from exporter.check.inputs import SUFFIXES, BadFileError, Query, dashboard_queries, expand, file_queries, rule_queries

__all__ = ["SUFFIXES", "BadFileError", "Query", "dashboard_queries", "expand", "file_queries", "rule_queries"]
