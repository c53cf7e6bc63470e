"""A series the running release never had (llama.cpp's first-token and request-duration histograms, TGI's
first-token one) is a caveat of the report, not "cannot tell"; the walk goes on with the queue."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from exporter.diagnose import render
from exporter.diagnose.model import Caveat
from exporter.diagnose.verdicts import waiting
from exporter.diagnose.walk import walk
from exporter.engines.lacking import never_had, release_named
from exporter.engines.registry import ENGINES as KNOWN
from tests.diagnose.test_verdicts import AT, readings

ROOT = Path(__file__).resolve().parents[2]
TTFT, WAITING, DURATION, ITL = (
    "llm_time_to_first_token_seconds",
    "llm_requests_waiting",
    "llm_request_duration_seconds",
    "llm_inter_token_latency_seconds",
)
NS = {"namespace": "e2e"}
# what Prometheus answers for an idle llama.cpp namespace scraped by the exporter: one engine up, its queue
# gauge there, no first-token or request-duration series (llama.cpp labels no model)
IDLE: dict[str, Any] = {
    "scope.namespaces": [(NS, 1)],
    "scope.targets": [({}, 1)],
    "scope.models": [({**NS, "model": ""}, 1)],
    "telemetry.series_missing.ttft": [(NS, 1)],
    "telemetry.series_missing.duration": [(NS, 1)],
    "telemetry.series_missing.engines": [({**NS, "engine": "llamacpp", "version": "b11434"}, 1)],
    "waiting.unexplained.models": [({**NS, "model": ""}, 1)],
    "waiting.unexplained.queue_max": [({**NS, "model": ""}, 0)],
}
LLAMA_CAVEATS = [
    Caveat("e2e", "llamacpp", "b11434", TTFT, "llama.cpp b11434 has no first-token histogram: TTFT not judged"),
    Caveat(
        "e2e",
        "llamacpp",
        "b11434",
        ITL,
        "llama.cpp b11434 has no inter-token histogram: inter-token latency not judged",
    ),
    Caveat(
        "e2e",
        "llamacpp",
        "b11434",
        DURATION,
        "llama.cpp b11434 has no request-duration histogram: answers cut by a route timeout not judged",
    ),
]


def test_the_release_tables_say_what_each_release_never_had() -> None:
    judged = (TTFT, WAITING, DURATION, ITL)

    def lacks(engine: str, version: str) -> list[str]:
        return [m for m in judged if never_had(engine, version, m)]

    # llama.cpp maps no latency histogram in any release, whatever its build says
    assert lacks("llamacpp", "b11434") == lacks("llamacpp", "0c1e57098") == [TTFT, DURATION, ITL]
    assert lacks("tgi", "3.3.7") == [TTFT, ITL]
    assert lacks("tgi", "0.4.0") == [TTFT, DURATION, ITL]  # a summary before 0.5: no histogram to read
    assert lacks("trtllm", "1.2.1") == [WAITING, ITL]
    assert lacks("vllm", "0.32.0") == lacks("sglang", "0.5.23") == []
    assert lacks("unknown", "") == []  # an engine no body identified: not known, so not excused


def test_a_llama_cpp_version_label_is_placed_as_the_mapping_placed_it() -> None:
    llama = KNOWN["llamacpp"]
    assert release_named(llama, "0c1e57098") == llama.releases().newest  # an inferred release's own name
    placed = release_named(llama, "b11434")  # a release build, by its number
    assert placed is not None and (placed.version, placed.build) == ("0c1e57098", 11312)
    assert release_named(llama, "b9000") is None  # below every known build: not placed
    assert release_named(KNOWN["vllm"], "0.32.0") is not None and release_named(KNOWN["vllm"], "main") is None


def test_an_idle_llama_cpp_is_healthy_with_its_caveats() -> None:
    report = walk(readings(IDLE), AT)
    assert (report.status, report.exit_code, report.telemetry, report.findings) == ("healthy", 0, (), ())
    assert list(report.caveats) == LLAMA_CAVEATS


def test_the_caveats_in_every_output() -> None:
    report = walk(readings(IDLE), AT)
    assert render.text(report).splitlines()[:4] == [
        "llm-exporter diagnose: healthy: nobody waits (all namespaces, 15m up to 2026-01-31T14:15:00Z)",
        "caveat: e2e: llama.cpp b11434 has no first-token histogram: TTFT not judged",
        "caveat: e2e: llama.cpp b11434 has no inter-token histogram: inter-token latency not judged",
        "caveat: e2e: llama.cpp b11434 has no request-duration histogram: answers cut by a route timeout not judged",
    ]
    assert "> Caveat: e2e: llama.cpp b11434 has no first-token histogram: TTFT not judged" in render.markdown(report)
    body = render.as_json(report)
    jsonschema.validate(body, json.loads((ROOT / "exporter/diagnose/schema.json").read_text()))
    assert body["caveats"][0] == {
        "caveat": "llama.cpp b11434 has no first-token histogram: TTFT not judged",
        "namespace": "e2e",
        "engine": "llamacpp",
        "version": "b11434",
        "metric": TTFT,
    }
    assert (body["status"], body["telemetry"], body["findings"]) == ("healthy", [], [])


def test_a_burst_beyond_the_slots_is_a_finding_from_the_queue() -> None:
    results = {**IDLE, "waiting.unexplained.queue_max": [({**NS, "model": ""}, 8)]}
    report = walk(readings(results), AT)
    assert (report.status, report.exit_code, report.telemetry) == ("findings", 1, ())
    [f] = report.findings
    assert (f.verdict_id, f.namespace, f.owner, f.fix) == ("waiting.unexplained", "e2e", "platform", waiting.FIX_QUEUE)
    assert f.verdict == "users of e2e/ wait (queue) and no stage explains it: up to 8 waiting"
    assert list(report.caveats) == LLAMA_CAVEATS


def test_a_series_one_engine_of_the_namespace_should_have_is_still_cannot_tell() -> None:
    both = [({**NS, "engine": "llamacpp", "version": "b11434"}, 1), ({**NS, "engine": "vllm", "version": "0.32.0"}, 1)]
    report = walk(readings({**IDLE, "telemetry.series_missing.engines": both}), AT)
    assert (report.status, report.exit_code) == ("unknown", 2)
    assert [f.verdict for f in report.telemetry] == [
        "llm_time_to_first_token_seconds has no series in e2e although 1 engine(s) there are up: the verdicts that "
        "read it cannot tell",
        "llm_request_duration_seconds has no series in e2e although 1 engine(s) there are up: the verdicts that "
        "read it cannot tell",
    ]
    assert list(report.caveats) == LLAMA_CAVEATS  # the llama.cpp part is still not judged on TTFT


def test_an_engine_release_that_should_have_the_series_is_cannot_tell() -> None:
    vllm = {**IDLE, "telemetry.series_missing.engines": [({**NS, "engine": "vllm", "version": "0.32.0"}, 1)]}
    report = walk(readings(vllm), AT)
    assert (report.status, len(report.telemetry), report.caveats) == ("unknown", 2, ())
