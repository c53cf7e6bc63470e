"""One side of bench_parse.py's comparison with an earlier revision of the exporter.

    python bench/parse_worker.py ROOT REPEAT BODY_FILE...

Imports the `exporter` package found under ROOT, maps each body as vLLM 0.32.0 and prints, as JSON, the fastest of
REPEAT runs of parse + map and of parse + map + render, in ms. bench_parse.py runs one process per revision, so that
two revisions of the package never share an interpreter, and alternates them.

It speaks the engine API of both sides: before the engine seam (the revisions of 2026-12-02) the release table was
vLLM's alone, `load()`, and `map_body` mapped vLLM without an `engine` argument.
"""

from __future__ import annotations

import inspect
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from timing import timings

WARM_UP = 20  # runs before the timed ones: the label caches filled as at a steady-state scrape


def _fastest(fn: Callable[[], object], repeat: int) -> float:
    return min(timings(fn, repeat)) * 1e3


def main() -> None:
    root, repeat, paths = Path(sys.argv[1]).resolve(), int(sys.argv[2]), sys.argv[3:]
    sys.path.insert(0, str(root))

    import exporter
    from exporter.engines import mapping
    from exporter.engines.collector import Outcome, build_families
    from exporter.engines.releases import load
    from exporter.engines.targets import from_url
    from exporter.exposition import render

    if not Path(exporter.__file__).resolve().is_relative_to(root):
        raise SystemExit(f"imported {exporter.__file__}, not the package under {root}")
    engine: dict[str, Any] = {}
    if "engine" in inspect.signature(mapping.map_body).parameters:
        from exporter.engines import vllm

        engine = {"engine": vllm.SPEC}
    releases = load(*(["vllm"] if engine else []))
    target = from_url("http://10.0.0.1:8000", "ns", "pod", "vllm")
    limits = mapping.Limits(max_series=10**6)

    result = {}
    for path in paths:
        body = Path(path).read_text()

        def mapped(body: str = body) -> Any:
            return mapping.map_body(body, target.identity, "0.32.0", releases, limits, **engine)

        def rendered() -> str:
            return render(build_families([Outcome(target, mapped(), "", 0.0)]))

        for _ in range(WARM_UP):
            rendered()
        result[path] = {"map": _fastest(mapped, repeat), "render": _fastest(rendered, repeat)}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
