"""`llm-exporter diagnose`: the walk of a slow request, stage by stage, as verdicts with evidence and an owner.

The walk follows the request's path: `telemetry` (can the series be trusted?), `waiting` (is anyone waiting?),
`routing`, `scaling`, `placement`, `engine`, `ingress`. Each verdict is one module of `verdicts/`, listed in
`registry.VERDICTS`: the PromQL it reads (`queries`) and a pure `judge` from those results to findings.

Nobody waiting ends the walk with a clean bill (exit 0); findings exit 1; a telemetry problem (an exporter
down, a renamed engine metric, a stale cluster view) exits 2 and names what is missing, whatever else was
found, because every later verdict rests on those series.

Ranking: a finding ranks by how much of the user's wait it explains. Telemetry problems come first: until
they are fixed no share of the wait can be attributed at all. The causes follow in the order of the request's
path, because a cause upstream holds up everything after it: a request sent to the wrong replica waits
whatever capacity exists; capacity the autoscaler never asks for cannot be placed; a replica that is never
placed cannot serve; only then does the engine's own resource bind; and the ingress cuts what the engine has
already produced. Within a stage the finding with the larger measure (requests waiting, GPUs pending, share of
the queue) ranks first. A wait that no stage explains comes last: it is the symptom, not a cause.
"""
