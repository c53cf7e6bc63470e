"""Parse-and-map speed of the engine pipeline against prometheus_client's parser, on the same bodies.

    python bench/bench_parse.py [--repeat 200]

Bodies: the recorded vLLM 0.32.0 body, and the same body grown to ~50 KB and ~200 KB with more models (as a
multi-model or LoRA server exposes them). The peer only *parses* (text_string_to_metric_families); ours
parses, maps to llm_* and renders the exposition. Target: ours at least 10x faster in steady state.

The capacity catalogue (KV capacity in tokens, length histograms, waiting by reason, rejections, FLOPs and bytes
read, speculative decoding, LoRA, sleep) is measured beside the catalogue of the 15 request metrics alone, in
the same run on the same bodies: the target is that the larger one costs at most 10 % more per scrape.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from exporter.engines import mapping, vllm
from exporter.engines.collector import Outcome, build_families
from exporter.engines.engine import Engine
from exporter.engines.mapping import map_body
from exporter.engines.parser import parse_labels
from exporter.engines.releases import load
from exporter.engines.targets import from_url
from exporter.exposition import render

BODY = (Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm" / "0.32.0.prom").read_text()


def grown(target_bytes: int) -> str:
    """The recorded body with its vLLM series repeated for more model names, up to `target_bytes`."""
    vllm_lines = [line for line in BODY.splitlines() if line.startswith("vllm:")]
    extra: list[str] = []
    n = 0
    while len(BODY) + sum(map(len, extra)) < target_bytes:
        n += 1
        extra += [re.sub(r'model_name="tiny"', f'model_name="lora-{n}"', line) + "\n" for line in vllm_lines]
    body_lines = BODY.splitlines(keepends=True)
    return "".join(body_lines) + "".join(extra)


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__)
    args.add_argument("--repeat", type=int, default=200)
    repeat = args.parse_args().repeat
    releases = load("vllm")
    target = from_url("http://10.0.0.1:8000", "ns", "pod", "vllm")
    identity = target.identity

    # the catalogue before the capacity metrics: the request metrics alone, nothing derived or behind a flag
    request_only = dataclasses.replace(
        vllm.SPEC, sources=vllm.SOURCES, derived={}, flags={}, counted_with_flag=frozenset()
    )

    def ours(body: str, spec: Engine = vllm.SPEC) -> Callable[[], object]:
        def run() -> str:
            mapped = map_body(body, identity, "0.32.0", releases, mapping.Limits(max_series=10**6), engine=spec)
            return render(build_families([Outcome(target, mapped, "", 0.0)]))

        return run

    def cold(body: str) -> Callable[[], object]:
        def run() -> object:
            parse_labels.cache_clear()  # the first scrape of a target: no label set seen before
            mapping._label_block.cache_clear()
            return ours(body)()

        return run

    def peer(body: str) -> Callable[[], object]:
        return lambda: [list(f.samples) for f in text_string_to_metric_families(body)]

    print("median ms per body; ours = parse + map + render, steady state (label sets seen before) and cold;")
    print("request-only: the same with the 15 request metrics alone; capacity cost = ours / request-only (<= 1.10)")
    print(
        f"{'body':>14} {'peer parse':>11} {'ours':>8} {'speed-up':>9} {'ours cold':>10} {'speed-up':>9}"
        f" {'request-only':>13} {'capacity cost':>14}"
    )
    for label, body in (("recorded", BODY), ("grown", grown(75_000)), ("grown", grown(200_000))):
        theirs, mine, first = best(peer(body), repeat), best(ours(body), repeat), best(cold(body), repeat)
        before = best(ours(body, request_only), repeat)
        verdict = "PASS" if mine / before <= 1.10 else "FAIL"
        print(
            f"{label + f' {len(body) // 1024} KB':>14} {theirs * 1e3:11.2f} {mine * 1e3:8.2f} {theirs / mine:8.1f}x "
            f"{first * 1e3:10.2f} {theirs / first:8.1f}x {before * 1e3:13.2f} {mine / before:9.3f} {verdict}"
        )


if __name__ == "__main__":
    main()
