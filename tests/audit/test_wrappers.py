"""Servers that wrap an engine: Triton with the TensorRT-LLM backend, llama-swap (its config from a mounted
ConfigMap, llama-swap's own published example) and NIM images; each audited as the engine it runs, and the
engine-specific check judged only where the wrapper's settings say it."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from exporter.audit import inventory
from exporter.audit.base import Measured
from exporter.audit.run import audit_workload, engines
from exporter.audit.wrappers import wrapper
from exporter.k8s import environment, workloads

Obj = dict[str, Any]
NS = "llm"
EXAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "llama_swap" / "config.example.yaml"


def deployment(container: Obj, volumes: list[Obj] | None = None) -> Obj:
    spec: Obj = {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "1"}},
                                 "ports": [{"name": "http", "containerPort": 8080}], **container}]}  # fmt: skip
    if volumes:
        spec["volumes"] = volumes
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "server", "namespace": NS},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "server"}},
                     "template": {"metadata": {"labels": {"app": "server"}}, "spec": spec}}}  # fmt: skip


def llama_swap(config: str | None, **container: Any) -> list[Obj]:
    """llama-swap as its README runs it (`ghcr.io/mostlygeek/llama-swap:cuda`, its config at /app/config.yaml),
    the config a ConfigMap mounted with subPath."""
    objs = [deployment({"name": "llama-swap", "image": "ghcr.io/mostlygeek/llama-swap:cuda",
                        "volumeMounts": [{"name": "config", "mountPath": "/app/config.yaml",
                                          "subPath": "config.yaml"}], **container},
                       [{"name": "config", "configMap": {"name": "llama-swap"}}])]  # fmt: skip
    if config is not None:
        objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "llama-swap", "namespace": NS},
                     "data": {"config.yaml": config}})  # fmt: skip
    return objs


def context(objs: list[Obj], used: float | None = None) -> tuple[str, str, str]:
    inv = inventory.build(objs)
    (w,) = engines(inv.workloads)
    (found,) = [
        f for f in audit_workload(w, inv.around, Measured(context_tokens=used)) if f.check.id == "context-oversized"
    ]
    return found.engine, found.outcome.status, found.outcome.detail


def test_the_example_is_as_published() -> None:
    digest = hashlib.sha256(EXAMPLE.read_bytes()).hexdigest()
    assert digest == "b20aa56d3c5750ec8fb243a08208df92c7d33b914759871517a2fd54f095e2a4"


def test_llama_swap_reads_each_models_llama_server_command_from_its_configmap() -> None:
    example = EXAMPLE.read_text(encoding="utf-8")
    # the published example: two llama-server models without --ctx-size (and an sd-server model, not llama.cpp)
    assert context(llama_swap(example)) == (
        "llamacpp",
        "fail",
        "llama-swap model qwen2.5: no -c/--ctx-size: the model's full context is reserved",
    )
    sized = example.replace('--port 9999\n\n  "smollm2"', '--port 9999 --ctx-size 32768\n\n  "smollm2"').replace(
        "SmolLM2-135M-Instruct-GGUF:Q4_K_M\n      --port 9999",
        "SmolLM2-135M-Instruct-GGUF:Q4_K_M\n      --port 9999 -c 8192",
    )
    assert context(llama_swap(sized)) == ("llamacpp", "pass", "llama-swap model qwen2.5: --ctx-size 32768")
    over = "llama-swap model qwen2.5: --ctx-size 32768, over 4× the 2000 tokens used per request"
    assert context(llama_swap(sized), used=2000.0) == ("llamacpp", "fail", over)
    # llama-swap's own macros fill the value in at load time
    macro = sized.replace("--ctx-size 32768", "--ctx-size ${default_ctx}")
    assert context(llama_swap(macro))[1:] == (
        "unknown",
        "llama-swap model qwen2.5: --ctx-size ${default_ctx} is filled in by llama-swap",
    )


def test_llama_swap_without_its_configmap_is_unknown_not_absent() -> None:
    assert context(llama_swap(None)) == ("llamacpp", "unknown", "llama-swap's config /app/config.yaml is not among "
                                         "the objects read: its models' commands are unknown")  # fmt: skip
    # the config path its flag gives
    moved = llama_swap(None, args=["--config", "/etc/llama-swap/config.yaml", "--listen", ":8080"])
    assert "/etc/llama-swap/config.yaml is not among" in context(moved)[2]


def test_triton_tensorrt_llm_by_image_and_command() -> None:
    triton = {"name": "triton", "image": "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3",
              "command": ["tritonserver", "--model-repository=/models/ensemble", "--http-port=8080"]}  # fmt: skip
    engine, status, detail = context([deployment(triton)])
    assert (engine, status) == ("trtllm", "unknown") and detail.startswith("Triton's TensorRT-LLM backend:")
    # Triton with another backend, or only named by its image, is not TensorRT-LLM
    python_backend = {**triton, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
    assert context([deployment(python_backend)])[0] == "unknown"
    c = workloads.container({**triton, "image": "registry.example.com/serving:1",
                             "command": ["python3", "/opt/tritonserver/tensorrtllm_backend/scripts/"
                                         "launch_triton_server.py", "--model_repo=/models"]})  # fmt: skip
    assert wrapper(c) is not None and wrapper(c) == wrapper(workloads.container(triton))


def test_a_nim_image_is_a_nim() -> None:
    nim = {"name": "nim", "image": "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.8.4"}
    engine, status, detail = context([deployment(nim)])
    assert (engine, status) == ("nim", "unknown")
    assert detail == "nim chooses its engine at start-up: the audit knows no context flag for it"


def test_llama_swap_without_an_accelerator_still_runs_its_engine() -> None:
    """llama-swap starts llama-server in its own container: no client of an engine, GPU or not."""
    (objs,) = [llama_swap(None)]
    objs[0]["spec"]["template"]["spec"]["containers"][0]["resources"] = {}
    assert context(objs)[:2] == ("llamacpp", "unknown")


def test_triton_s_client_sdk_is_no_engine() -> None:
    """genai-perf in Triton's SDK image, benchmarking a TensorRT-LLM model: a client, no accelerator."""
    client = workloads.container({"name": "genai-perf", "image": "nvcr.io/nvidia/tritonserver:25.01-py3-sdk",
                                  "command": ["genai-perf", "profile", "-m", "ensemble", "--service-kind", "triton",
                                              "--backend", "tensorrtllm", "--url", "tritonserver:8001"]})  # fmt: skip
    assert wrapper(client) is None


def test_a_client_of_llama_swap_is_no_engine() -> None:
    client = workloads.container({"name": "bench", "image": "python:3.12-slim",
                                  "command": ["python", "bench.py", "--url", "http://llama-swap:8080/v1"]})  # fmt: skip
    assert wrapper(client) is None
    server = {"name": "s", "image": "registry.example.com/llm:1", "command": ["/app/llama-swap", "-config", "/c.yaml"]}
    assert wrapper(workloads.container(server)) is not None


def test_llama_swap_with_a_config_over_the_limit_says_so() -> None:
    config = EXAMPLE.read_text(encoding="utf-8") + "#" * environment.VALUE_LIMIT
    why = "llama-swap's config /app/config.yaml is over the 64 KiB read of a ConfigMap value"
    assert context(llama_swap(config)) == ("llamacpp", "unknown", why + ": its models' commands are unknown")
