"""A report as text (a terminal), Markdown (to paste into an incident channel) or JSON (for bots; the shape is
schema.json's)."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

from exporter.diagnose import panels
from exporter.diagnose.model import Evidence, Finding, number
from exporter.diagnose.walk import Report

Linker = Callable[[Finding], str]


def _ms(rfc3339: str) -> int:
    return int(datetime.datetime.fromisoformat(rfc3339.replace("Z", "+00:00")).timestamp() * 1000)


def linker(report: Report, grafana_url: str) -> Linker:
    """The finding's panel: a link to it on `grafana_url` with the window and scope, else its title."""
    if not grafana_url:
        return lambda f: f.panel
    start, end = _ms(report.start), _ms(report.end)
    return lambda f: panels.link(grafana_url, f.panel, start, end, f.namespace or report.namespace, f.model, f.cluster)


def _scope(report: Report) -> str:
    parts = [f"{report.cluster.label} {report.cluster.value}"] if report.cluster is not None else []
    parts.append(f"namespace {report.namespace}" if report.namespace else "all namespaces")
    if report.model:
        parts.append(f"model {report.model}")
    return ", ".join(parts)


def _headline(report: Report) -> str:
    n = len(report.findings)
    if report.status == "healthy":
        return "healthy: nobody waits"
    if report.status == "unknown":
        p = len(report.telemetry)
        return f"the telemetry cannot tell: {p} problem{'s' if p != 1 else ''} to fix first"
    return f"{n} finding{'s' if n != 1 else ''}"


def _evidence_line(e: Evidence) -> str:
    return f"{e.query} = {number(e.value)} at {e.at}"


def text(report: Report, grafana_url: str = "") -> str:
    link = linker(report, grafana_url)
    lines = [f"llm-exporter diagnose: {_headline(report)} ({_scope(report)}, {report.window} up to {report.end})"]
    for wait in report.waits:
        lines.append(f"waiting: {wait.summary()}")
    lines += [f"caveat: {c.namespace}: {c.text}" for c in report.caveats]
    for i, f in enumerate(report.findings, 1):
        lines += [
            "",
            f"{i}. [{f.stage}] {f.verdict}",
            *([f"   {report.cluster.label}: {f.cluster}"] if report.cluster is not None else []),
            f"   owner: {f.owner}",
            f"   fix: {f.fix}",
            f"   panel: {link(f)}",
        ]
        lines += [f"   evidence: {_evidence_line(e)}" for e in f.evidence]
    return "\n".join(lines) + "\n"


def _cell(value: str) -> str:
    return value.replace("|", "\\|")


def markdown(report: Report, grafana_url: str = "") -> str:
    link = linker(report, grafana_url)
    lines = [f"**LLM diagnosis: {_headline(report)}** ({_scope(report)}, {report.window} up to {report.end})", ""]
    if report.waits:
        lines += [f"> Waiting: {wait.summary()}" for wait in report.waits]
        lines.append("")
    if report.caveats:
        lines += [f"> Caveat: {c.namespace}: {c.text}" for c in report.caveats]
        lines.append("")
    if not report.findings:
        return "\n".join(lines)
    lines += ["| # | Stage | Verdict | Owner |", "|---|---|---|---|"]
    lines += [f"| {i} | {f.stage} | {_cell(f.verdict)} | {f.owner} |" for i, f in enumerate(report.findings, 1)]
    for i, f in enumerate(report.findings, 1):
        panel = link(f)
        shown = f"[{f.panel}]({panel})" if panel != f.panel else f.panel
        lines += ["", f"**{i}. {f.stage}** ({f.owner}): {f.verdict}", ""]
        if report.cluster is not None:
            lines.append(f"- {report.cluster.label.capitalize()}: {f.cluster}")
        lines += [f"- Fix: {f.fix}", f"- Panel: {shown}"]
        lines += [f"- Evidence: `{e.query}` = `{number(e.value)}` at {e.at}" for e in f.evidence]
    return "\n".join(lines) + "\n"


def _evidence(f: Finding) -> list[dict[str, Any]]:
    return [{"query": e.query, "value": e.value, "at": e.at} for e in f.evidence]


def as_json(report: Report, grafana_url: str = "") -> dict[str, Any]:
    link = linker(report, grafana_url)
    return {
        "status": report.status,
        "window": {"start": report.start, "end": report.end, "duration": report.window},
        "cluster": report.cluster.value if report.cluster is not None else "",
        "telemetry": [{"problem": f.verdict, "evidence": _evidence(f)} for f in report.telemetry],
        "caveats": [
            {"caveat": c.text, "namespace": c.namespace, "engine": c.engine, "version": c.version, "metric": c.metric}
            for c in report.caveats
        ],
        "findings": [
            {
                "stage": f.stage,
                "verdict": f.verdict,
                "evidence": _evidence(f),
                "fix": f.fix,
                "owner": f.owner,
                "namespace": f.namespace,
                "model": f.model,
                "cluster": f.cluster,
                "panel": link(f),
            }
            for f in report.findings
        ],
    }


def json_text(report: Report, grafana_url: str = "") -> str:
    return json.dumps(as_json(report, grafana_url), indent=2) + "\n"


RENDERERS: dict[str, Callable[[Report, str], str]] = {"text": text, "markdown": markdown, "json": json_text}
