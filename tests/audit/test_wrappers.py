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


NIM_IMAGE = "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.8.4"
NO_NIM_LIMIT = ("no NIM_MAX_MODEL_LEN: the NIM takes the context of its model profile or of the model at start-up, "
                "unknown here: set NIM_MAX_MODEL_LEN to what the product needs")  # fmt: skip


def nim_config(data: dict[str, str]) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nim-config", "namespace": NS},
            "data": data}  # fmt: skip


def test_a_nim_image_is_a_nim() -> None:
    nim = {"name": "nim", "image": NIM_IMAGE}
    assert context([deployment(nim)]) == ("nim", "unknown", NO_NIM_LIMIT)


def test_a_nims_context_is_its_nim_max_model_len() -> None:
    """NIM_MAX_MODEL_LEN is judged as an engine's --max-model-len: from `env`, a ConfigMap key or envFrom."""
    said = "NIM container nim: NIM_MAX_MODEL_LEN"
    over = "over 4× the 6000 tokens used per request"
    env = {"name": "nim", "image": NIM_IMAGE, "env": [{"name": "NIM_MAX_MODEL_LEN", "value": "131072"}]}
    assert context([deployment(env)]) == ("nim", "pass", f"{said} 131072")
    assert context([deployment(env)], used=6000) == ("nim", "fail", f"{said} 131072, {over}")
    assert context([deployment(env)], used=40000) == ("nim", "pass", f"{said} 131072, used 40000 per request")
    ref = {"configMapKeyRef": {"name": "nim-config", "key": "max-len"}}
    keyed = {"name": "nim", "image": NIM_IMAGE, "env": [{"name": "NIM_MAX_MODEL_LEN", "valueFrom": ref}]}
    assert context([deployment(keyed), nim_config({"max-len": "8192"})], used=6000) == (
        "nim", "pass", f"{said} 8192, used 6000 per request")  # fmt: skip
    sourced = {"name": "nim", "image": NIM_IMAGE, "envFrom": [{"configMapRef": {"name": "nim-config"}}]}
    assert context([deployment(sourced), nim_config({"NIM_MAX_MODEL_LEN": "32768"})], used=6000) == (
        "nim", "fail", f"{said} 32768, {over}")  # fmt: skip
    # the ConfigMap not in the input: unknown, naming where the limit is read from
    unread = "context limit set from a variable not known here: NIM_MAX_MODEL_LEN"
    absent = "not among the objects read"
    assert context([deployment(keyed)]) == (
        "nim", "unknown", f"{unread} is read from ConfigMap nim-config (key max-len), {absent}")  # fmt: skip
    assert context([deployment(sourced)]) == (
        "nim", "unknown", f"{unread} may be set by ConfigMap nim-config (envFrom), {absent}")  # fmt: skip
    # a ConfigMap without the key: the NIM chooses
    assert context([deployment(sourced), nim_config({"NIM_MAX_NUM_SEQS": "64"})]) == ("nim", "unknown", NO_NIM_LIMIT)
    odd = {**env, "env": [{"name": "NIM_MAX_MODEL_LEN", "value": "128k"}]}
    assert context([deployment(odd)]) == ("nim", "unknown", f"{said} 128k is no number of tokens")
    empty = {**env, "env": [{"name": "NIM_MAX_MODEL_LEN", "value": ""}]}
    assert context([deployment(empty)]) == ("nim", "unknown", NO_NIM_LIMIT)


def test_a_nims_arguments_come_before_its_variables() -> None:
    """NIM 2.x's order: the arguments after nim-serve, then NIM_PASSTHROUGH_ARGS, then NIM_MAX_MODEL_LEN."""
    env = [{"name": "NIM_MAX_MODEL_LEN", "value": "131072"}]
    served = {"name": "nim", "image": NIM_IMAGE, "args": ["nim-serve", "--max-model-len", "8192"], "env": env}
    assert context([deployment(served)], used=6000) == (
        "nim", "pass", "NIM container nim: --max-model-len 8192, used 6000 per request")  # fmt: skip
    passthrough = {"name": "NIM_PASSTHROUGH_ARGS", "value": "--max-model-len=16384 --enable-prefix-caching"}
    passed = {"name": "nim", "image": NIM_IMAGE, "env": [*env, passthrough]}
    assert context([deployment(passed)], used=6000) == (
        "nim", "pass", "NIM container nim: --max-model-len 16384, used 6000 per request")  # fmt: skip


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


TRITON_VLLM = Path(__file__).resolve().parents[1] / "fixtures" / "triton_vllm" / "vllm_model"


def sample(name: str) -> str:
    return (TRITON_VLLM / name).read_text(encoding="utf-8")


def test_the_triton_vllm_sample_is_as_published() -> None:
    assert [
        hashlib.sha256((TRITON_VLLM / name).read_bytes()).hexdigest() for name in ("config.pbtxt", "1/model.json")
    ] == [
        "580eeaf49604f7e2635e0c76fb1405dfe585fee0ed7019ba2e9b2b5fdbb2d214",
        "e14a4378937c44630a6fa361d319644fbd1176d6924ab875a6addf97aa469f1a",
    ]


def triton_vllm(files: dict[str, str] | None, image: str = "nvcr.io/nvidia/tritonserver:25.12-vllm-python-py3",
                repository: str = "/models") -> list[Obj]:  # fmt: skip
    """tritonserver as vllm_backend's README starts it, its model repository a ConfigMap whose keys `items` place
    at `<model>/config.pbtxt` and `<model>/<version>/model.json` (a ConfigMap's keys hold no `/`)."""
    items = [{"key": path.replace("/", "."), "path": path} for path in files or {}]
    objs = [deployment({"name": "triton", "image": image,
                        "command": ["tritonserver", f"--model-repository={repository}"],
                        "volumeMounts": [{"name": "models", "mountPath": "/models"}]},
                       [{"name": "models", "configMap": {"name": "models", "items": items}}])]  # fmt: skip
    if files is not None:
        data = {path.replace("/", "."): text for path, text in files.items()}
        objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "models", "namespace": NS},
                     "data": data})  # fmt: skip
    return objs


def test_triton_vllm_reads_max_model_len_from_each_model_json() -> None:
    published = {"vllm_model/config.pbtxt": sample("config.pbtxt"), "vllm_model/1/model.json": sample("1/model.json")}
    # the published sample sets no max_model_len: vLLM reserves the model's own context
    assert context(triton_vllm(published)) == (
        "vllm", "fail", "Triton model vllm_model: no max_model_len: the model's full context is reserved")  # fmt: skip
    sized = {**published, "vllm_model/1/model.json": sample("1/model.json").replace(
        '"enforce_eager": true', '"enforce_eager": true,\n    "max_model_len": 8192')}  # fmt: skip
    assert context(triton_vllm(sized)) == ("vllm", "pass", "Triton model vllm_model: max_model_len 8192")
    over = "Triton model vllm_model: max_model_len 8192, over 4× the 1000 tokens used per request"
    assert context(triton_vllm(sized), used=1000.0) == ("vllm", "fail", over)
    # the generic image with the vLLM backend installed: the config.pbtxt says which backend
    assert context(triton_vllm(sized, image="nvcr.io/nvidia/tritonserver:25.12-py3"))[:2] == ("vllm", "pass")
    # Triton serves a model's highest version; a model of another backend beside it is not vLLM's
    versions = {**sized, "vllm_model/2/model.json": '{"model": "facebook/opt-125m", "max_model_len": 2048}',
                "onnx_model/config.pbtxt": 'backend: "onnxruntime"', "onnx_model/1/model.json": "{}"}  # fmt: skip
    assert context(triton_vllm(versions))[2] == "Triton model vllm_model: max_model_len 2048"


def test_triton_vllm_started_by_a_mounted_script() -> None:
    """A bespoke image whose entrypoint is a script of the input: the script starts tritonserver and names the
    model repository; the config.pbtxt says the backend."""
    files = {"vllm_model/config.pbtxt": sample("config.pbtxt"),
             "vllm_model/1/model.json": '{"model": "Qwen/Qwen3-8B", "max_model_len": 16384}'}  # fmt: skip
    objs = triton_vllm(files, image="registry.example.com/llm-serving:1")
    container = objs[0]["spec"]["template"]["spec"]["containers"][0]
    container["command"] = ["/bin/bash", "/scripts/start.sh"]
    container["volumeMounts"].append({"name": "scripts", "mountPath": "/scripts"})
    objs[0]["spec"]["template"]["spec"]["volumes"].append({"name": "scripts", "configMap": {"name": "scripts"}})
    script = "#!/bin/bash\nset -e\nexec tritonserver --model-repository=/models --http-port=8080\n"
    objs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "scripts", "namespace": NS},
                 "data": {"start.sh": script}})  # fmt: skip
    assert context(objs) == ("vllm", "pass", "Triton model vllm_model: max_model_len 16384")
    # the script names another repository: the model.json mounted at /models is not the one Triton reads
    objs[-1]["data"]["start.sh"] = script.replace("=/models", "=/mnt/models")
    assert context(objs)[1:] == ("unknown", "Triton with vLLM: each model's engine arguments (max_model_len; the "
                                 "vLLM backend's <model>/<version>/model.json) are in the model repository "
                                 "/mnt/models, not among the objects read")  # fmt: skip
    # a client's script that only names the server's address starts no server
    objs[-1]["data"]["start.sh"] = "curl -s http://tritonserver:8000/v2/health/ready\n"
    assert context(objs)[0] == "unknown"


def test_triton_vllm_without_its_model_json_is_unknown_not_absent() -> None:
    on_s3 = triton_vllm(None, repository="s3://models/model_repository")
    assert context(on_s3) == ("vllm", "unknown", "Triton with vLLM: each model's engine arguments (max_model_len; "
                              "the vLLM backend's <model>/<version>/model.json) are in the model repository "
                              "s3://models/model_repository, not among the objects read")  # fmt: skip
    broken = triton_vllm({"vllm_model/config.pbtxt": sample("config.pbtxt"), "vllm_model/1/model.json": "{"})
    assert context(broken)[1:] == ("unknown", "Triton's vLLM backend: /models/vllm_model/1/model.json is not JSON")
    # hostile input: nesting past the parser's recursion, digits past int()'s limit, read as unknown
    deep = triton_vllm({"m/1/model.json": "[" * 60_000})  # under the 64 KiB read, past the recursion limit
    assert context(deep)[1:] == ("unknown", "Triton's vLLM backend: /models/m/1/model.json is not JSON")
    big = triton_vllm({"m/1/model.json": "{" + " " * 70_000 + "}"})  # over the read of a ConfigMap value
    over = "Triton's vLLM backend: /models/m/1/model.json is over the 64 KiB read of a ConfigMap value"
    assert context(big)[1:] == ("unknown", over)
    huge = triton_vllm({"m/1/model.json": '{"max_model_len": "' + "9" * 5000 + '"}'})
    assert context(huge)[1] == "unknown" and context(huge)[2].endswith("9 in model.json is no number of tokens")
    number = triton_vllm({"m/1/model.json": '{"max_model_len": "auto"}'})
    assert context(number)[1:] == ("unknown", "Triton model m: max_model_len auto in model.json is no number of tokens")


def test_triton_with_another_backend_or_its_client_is_not_vllm() -> None:
    python = triton_vllm({"m/config.pbtxt": 'backend: "python"', "m/1/model.py": "import vllm"},
                         image="nvcr.io/nvidia/tritonserver:25.12-py3")  # fmt: skip
    assert context(python)[0] == "unknown"  # a GPU server whose engine is not recognised
    # a version after the word, as a custom build tags it
    custom = workloads.container({"name": "t", "image": "registry.example.com/tritonserver:24.08-vllm0.5.3",
                                  "args": ["tritonserver", "--model-store", "/models"]})  # fmt: skip
    found = wrapper(custom)
    assert found is not None and (found.name, found.engine) == ("triton", "vllm")
    assert found.note.endswith("are in the model repository /models, not among the objects read")
    sdk = workloads.container({"name": "perf", "image": "nvcr.io/nvidia/tritonserver:25.12-py3-sdk",
                               "command": ["genai-perf", "profile", "-m", "vllm_model", "--backend",
                                           "vllm"]})  # fmt: skip
    assert wrapper(sdk) is None


def nim_found(**container: Any) -> bool:
    found = wrapper(workloads.container({"name": "llm", "image": "registry.example.com/llm:1.3.3", **container}))
    return found is not None and (found.name, found.engine) == ("nim", "nim")


def test_a_nim_pulled_from_a_mirror_is_a_nim() -> None:
    mirrored = {"name": "nim", "image": "registry.example.com/nim/meta/llama-3.1-8b-instruct:1.3.3"}
    assert context([deployment(mirrored)]) == ("nim", "unknown", NO_NIM_LIMIT)
    for image in (
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/nim/meta/llama-3.1-8b-instruct:1.3.3",
        "artifactory.example.com/nvcr-remote/nim/nvidia/llama-3.3-nemotron-super-49b-v1@sha256:" + "0" * 64,
    ):
        assert nim_found(image=image), image
    # a flattened mirror: what the container carries says it, as NIM's Helm chart and operator set it
    flattened = {"name": "nim", "image": "123456789012.dkr.ecr.us-east-1.amazonaws.com/llama-3.1-8b-instruct:1.3.3",
                 "env": [{"name": "NIM_CACHE_PATH", "value": "/model-store"}]}  # fmt: skip
    assert context([deployment(flattened)])[:2] == ("nim", "unknown")
    assert context([deployment({**flattened, "env": []})])[0] == "unknown"  # a GPU server, engine not known
    key = {"secretKeyRef": {"name": "ngc-api", "key": "NGC_API_KEY"}}
    assert nim_found(
        env=[{"name": "NIM_CACHE_PATH", "value": "/model-store"}, {"name": "NGC_API_KEY", "valueFrom": key}]
    )
    assert nim_found(env=[{"name": "NIM_MODEL_PROFILE", "valueFrom": {"configMapKeyRef": {"name": "p", "key": "k"}}}])
    assert nim_found(env=[{"name": "NIM_SERVED_MODEL_NAME", "value": "llama"}])
    assert nim_found(volumeMounts=[{"name": "cache", "mountPath": "/opt/nim/.cache"}])
    assert nim_found(command=["/opt/nim/llm/.venv/bin/python3", "-m", "nim_llm_sdk.entrypoints.openai.api_server"])
    assert nim_found(command=["nemollm_inference_ms", "--model_name", "llama", "--num_gpus", "1"])


def test_no_nim_signal_on_a_plain_vllm_or_a_client_of_a_nim() -> None:
    """Port 8000, a /cache mount, an NGC key or a NIM's address are no NIM: vLLM and NIM clients have them too."""
    vllm = {"name": "vllm", "image": "vllm/vllm-openai:v0.10.1", "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
            "ports": [{"containerPort": 8000}], "volumeMounts": [{"name": "cache", "mountPath": "/root/.cache"}],
            "env": [{"name": "NGC_API_KEY", "valueFrom": {"secretKeyRef": {"name": "ngc", "key": "key"}}}],
            "readinessProbe": {"httpGet": {"path": "/v1/health/ready", "port": 8000}}}  # fmt: skip
    assert wrapper(workloads.container(vllm)) is None
    assert context([deployment(vllm)])[:2] == ("vllm", "fail")
    client = {"name": "rag", "image": "registry.example.com/rag-server:2.0",
              "env": [{"name": "NIM_ENDPOINT", "value": "http://llm:8000/v1"},
                      {"name": "NIM_MODEL_NAME", "value": "m"}]}  # fmt: skip
    assert wrapper(workloads.container(client)) is None
    # a registry folder named nim holding vLLM's image is not NIM's layout
    assert not nim_found(image="registry.example.com/nim/vllm-openai:v0.10.1")


def test_llama_swap_with_a_config_over_the_limit_says_so() -> None:
    config = EXAMPLE.read_text(encoding="utf-8") + "#" * environment.VALUE_LIMIT
    why = "llama-swap's config /app/config.yaml is over the 64 KiB read of a ConfigMap value"
    assert context(llama_swap(config)) == ("llamacpp", "unknown", why + ": its models' commands are unknown")
