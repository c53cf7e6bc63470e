"""The pod fields of the start-up measurements, now in `exporter.pod_fields` (read by the engine discovery
too); the names stay importable here."""

from __future__ import annotations

from exporter import pod_fields as _fields

timestamp = _fields.timestamp
condition_since = _fields.condition_since
workload_of = _fields.workload_of
