"""Which workloads are engines: by image (placeholders removed), command, port names, labels, the annotation;
routers, endpoint pickers and adapters never are."""

from __future__ import annotations

import pytest

from exporter.audit.checks.context_oversized import context_limit
from exporter.audit.recognise import engine_container, engine_of, image_engine
from exporter.engines import registry
from exporter.k8s import workloads
from tests.audit import objects as o


@pytest.mark.parametrize(
    ("image", "engine"),
    [
        ("vllm/vllm-openai:v0.10.0", "vllm"),
        ("docker.io/vllm/vllm-openai@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "vllm"),
        ("registry.example.com:5000/team/vllm:v1", "vllm"),
        ("us-docker.pkg.dev/vertex-ai/vertex-vision-model-garden-dockers/pytorch-vllm-serve:20250312_0916", "vllm"),
        ("rocm/vllm:latest", "vllm"),
        ("${REGISTRY}/vllm-openai:${TAG}", "vllm"),
        ("{{ .Values.registry }}/vllm/vllm-openai:{{ .Values.tag }}", "vllm"),
        ("lmsysorg/sglang:v0.4.6.post1-cu124", "sglang"),
        ("ghcr.io/huggingface/text-generation-inference:3.0.1", "tgi"),
        ("ghcr.io/ggml-org/llama.cpp:server-cuda", "llamacpp"),
        ("openmmlab/lmdeploy:v0.7.0-cu12", "lmdeploy"),
        ("{{ .Values.image.repository }}:{{ .Values.image.tag }}", None),  # only a placeholder: undecided
        ("$(IMAGE)", None),
        ("nginx:1.27", None),
        ("python:3.11-slim", None),
        # an engine word followed by its version
        ("123456789012.dkr.ecr.us-west-2.amazonaws.com/neuron-sdk2.20-vllm0.5.0-neuron:latest", "vllm"),
        ("registry.example.com/sglang0.4.6-cu124:1", "sglang"),
        ("registry.example.com/vllmx:1", None),  # not a version: another word
    ],
)
def test_image_words(image: str, engine: str | None) -> None:
    assert image_engine(image) == engine


def workload(obj: o.Obj) -> workloads.Workload:
    w = workloads.workload(obj)
    assert w is not None
    return w


def test_the_command_decides_where_the_image_cannot() -> None:
    templated = o.changed(o.engine(), image="{{ .Values.image.repository }}:{{ .Values.image.tag }}",
                          command=["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"])  # fmt: skip
    assert engine_of(workload(templated)) == "vllm"
    shell = o.changed(o.engine(), image="python:3.11", command=["sh", "-c"],
                      args=["pip install vllm && python3 -m vllm.entrypoints.openai.api_server --model m"])  # fmt: skip
    assert engine_of(workload(shell)) == "vllm"
    triton = o.changed(o.engine(), image="nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3",
                       command=["trtllm-serve", "/models/llama"], args=[])  # fmt: skip
    assert engine_of(workload(triton)) == "trtllm"
    # a GPU and HTTP, and nothing that names an engine: a GPU server of an unknown engine
    nothing = o.changed(o.engine(), image="$(IMAGE)", args=[])
    assert engine_of(workload(nothing)) == "unknown"
    silent = o.changed(o.engine(), image="$(IMAGE)", args=[], ports=None, readinessProbe=None, livenessProbe=None,
                       startupProbe=None)  # fmt: skip
    assert engine_container(workload(silent)) is None  # serves no HTTP that the manifest shows
    port = o.changed(o.engine(), image="$(IMAGE)", args=[], ports=[{"name": "sglang", "containerPort": 30000}])
    assert engine_of(workload(port)) == "sglang"


@pytest.mark.parametrize("engine", registry.NAMES)
def test_every_registered_engine_is_recognised_and_its_context_read(engine: str) -> None:
    """The audit knows an engine from its record alone: an engine added to the registry without its image words,
    its command or its context arguments fails here instead of going unaudited."""
    spec = registry.get(engine)
    assert spec.image_words and spec.command is not None and spec.context_args
    image = f"registry.example.com/team/{spec.image_words[0].replace(' ', '-')}:1.0"
    assert image_engine(image) == engine
    port = o.changed(o.engine(), image="$(IMAGE)", args=[], ports=[{"name": engine, "containerPort": 8000}])
    assert engine_of(workload(port)) == engine
    for arg in spec.context_args:
        c = engine_container(workload(o.changed(o.engine(), image=image, args=["--model", "m", arg, "8192"])))
        assert c is not None and context_limit(engine, c) == (arg, 8192)
    for env in spec.context_env:
        c = engine_container(
            workload(o.changed(o.engine(), image=image, args=[], env=[{"name": env, "value": "4096"}]))
        )
        assert c is not None and context_limit(engine, c) == (env, 4096)


@pytest.mark.parametrize(
    ("image", "args"),
    [
        ("lmcache/lmstack-router:latest", ["--routing-logic", "roundrobin", "--service-discovery", "k8s"]),
        ("registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0", ["--pool-name", "vllm-llama3-8b-instruct"]),
        ("ghcr.io/llm-d/llm-d-inference-scheduler:v0.2.1", ["--poolName", "x"]),
        ("ghcr.io/vllm-project/vllm-router:latest", []),  # the word vllm, but a router
        ("aibrix/gateway-plugins:v0.4.0", []),
    ],
)
def test_routers_and_pickers_are_not_engines(image: str, args: list[str]) -> None:
    assert engine_container(workload(o.changed(o.engine(), image=image, args=args))) is None


def test_an_adapter_sidecar_does_not_hide_the_engine() -> None:
    obj = o.engine()
    sidecar = {"name": "lora-adapter-syncer", "image": "us-central1-docker.pkg.dev/k8s-staging-images/"
               "gateway-api-inference-extension/lora-syncer:main"}  # fmt: skip
    obj["spec"]["template"]["spec"]["containers"].insert(0, sidecar)
    c = engine_container(workload(obj))
    assert c is not None and c.name == "vllm"


def test_annotation_and_labels() -> None:
    generic = o.changed(o.engine(), image="registry.internal/ml/serving:42", args=[], resources=NO_GPU)
    assert engine_container(workload(generic)) is None  # no engine named, no accelerator
    opted = o.changed(generic)
    opted["spec"]["template"]["metadata"]["annotations"] = {"llm-exporter.io/scrape": "true"}
    assert engine_container(workload(opted)) is not None and engine_of(workload(opted)) == ""
    out = o.engine()
    out["spec"]["template"]["metadata"]["annotations"] = {"llm-exporter.io/scrape": "false"}
    assert engine_container(workload(out)) is None  # opted out, although it is vLLM
    llmd = o.changed(generic)
    llmd["spec"]["template"]["metadata"]["labels"]["llm-d.ai/inferenceServing"] = "true"
    assert engine_container(workload(llmd)) is not None
    aibrix = o.changed(generic)
    aibrix["spec"]["template"]["metadata"]["labels"]["model.aibrix.ai/name"] = "llama"
    assert engine_container(workload(aibrix)) is not None


def test_a_statefulset_and_a_leaderworkerset() -> None:
    sts = o.engine(kind="StatefulSet")
    assert workload(sts).kind == "StatefulSet" and engine_of(workload(sts)) == "vllm"
    pod = o.engine()["spec"]["template"]
    group = {"size": 2, "leaderTemplate": pod, "workerTemplate": pod}
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "big"},
           "spec": {"replicas": 2, "leaderWorkerTemplate": group}}  # fmt: skip
    w = workload(lws)
    assert (w.kind, w.namespace, w.replicas, len(w.pods)) == ("LeaderWorkerSet", "default", 2, 2)
    assert engine_of(w) == "vllm"


def test_the_cluster_roles_own_engine_selection_counts() -> None:
    from exporter.audit.recognise import Recognition
    from exporter.k8s.selectors import parse_label_selector

    generic = o.changed(o.engine(), image="registry.internal/ml/serving:42", args=[], resources=NO_GPU)
    generic["spec"]["template"]["metadata"]["labels"]["tier"] = "inference"
    selected = Recognition(selector=parse_label_selector("tier in (inference, serving),app"))
    assert engine_container(workload(generic)) is None
    assert engine_container(workload(generic), selected) is not None
    other = Recognition(selector=parse_label_selector("tier=batch"))
    assert engine_container(workload(generic), other) is None
    prefixed = o.changed(generic)
    prefixed["spec"]["template"]["metadata"]["annotations"] = {"example.com/scrape": "true"}
    assert engine_container(workload(prefixed)) is None
    assert engine_container(workload(prefixed), Recognition("example.com/scrape")) is not None


@pytest.mark.parametrize(
    ("text", "labels", "matches"),
    [
        ("app=vllm", {"app": "vllm"}, True),
        ("app==vllm,tier!=batch", {"app": "vllm", "tier": "web"}, True),
        ("app=vllm,tier!=batch", {"app": "vllm", "tier": "batch"}, False),
        ("tier notin (batch, dev),gpu", {"tier": "prod", "gpu": "a100"}, True),
        ("!canary", {"canary": "true"}, False),
    ],
)
def test_label_selectors_as_kubectl_writes_them(text: str, labels: dict[str, str], matches: bool) -> None:
    from exporter.k8s.selectors import parse_label_selector

    assert parse_label_selector(text).matches(labels) is matches


def test_a_malformed_label_selector() -> None:
    from exporter.k8s.selectors import parse_label_selector

    with pytest.raises(ValueError, match="not a label selector term: 'app ~ vllm'"):
        parse_label_selector("app ~ vllm")


NO_GPU = {"limits": {"cpu": "2"}}


@pytest.mark.parametrize(
    ("image", "command", "args"),
    [
        ("opea/llm-vllm:latest", [], []),  # OPEA's LLM microservice, a client of the vLLM Service
        ("opea/llm-tgi:latest", [], []),
        ("registry.example.com/team/sglang-client:1", ["python", "app.py"], ["--url", "http://sglang:30000"]),
    ],
)
def test_a_client_named_after_an_engine_is_no_engine(image: str, command: list[str], args: list[str]) -> None:
    client = o.changed(o.engine(), image=image, command=command, args=args, resources=NO_GPU,
                       ports=[{"name": "vllm", "containerPort": 9000}])  # fmt: skip
    assert engine_container(workload(client)) is None
    with_gpu = o.changed(client, resources={"limits": {"amd.com/gpu": "1"}})
    assert engine_of(workload(with_gpu)) in ("vllm", "tgi", "sglang")  # an accelerator makes the word count


@pytest.mark.parametrize(
    ("image", "command", "args", "engine"),
    [
        ("public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.9.1", [], ["--model", "m"], "vllm"),
        ("vllm/vllm-openai:v0.10.0", [], ["--model", "m", "--device", "cpu"], "vllm"),
        ("python:3.11", ["python", "-m", "vllm.entrypoints.openai.api_server"], ["--model", "m"], "vllm"),
        ("vllm/vllm-openai:v0.10.0", [], ["--model", "m", "--max-model-len", "4096"], "vllm"),
        ("lmsysorg/sglang:v0.4.6", [], ["--model-path", "m", "--context-length=4096"], "sglang"),
        ("ghcr.io/ggml-org/llama.cpp:server", [], ["-m", "/models/m.gguf", "--port", "8080"], "llamacpp"),
        ("ghcr.io/ggml-org/llama.cpp:full", ["llama-server"], ["-m", "/models/m.gguf"], "llamacpp"),
    ],
)
def test_an_engine_on_the_cpu_is_an_engine(image: str, command: list[str], args: list[str], engine: str) -> None:
    cpu = o.changed(o.engine(), image=image, command=command or None, args=args, resources=NO_GPU)
    assert engine_of(workload(cpu)) == engine


@pytest.mark.parametrize(
    "resource",
    ["nvidia.com/gpu", "amd.com/gpu", "habana.ai/gaudi", "aws.amazon.com/neuroncore", "gpu.intel.com/i915"],
)
def test_a_gpu_server_of_any_vendor_is_audited_as_unknown(resource: str) -> None:
    triton = o.changed(o.engine(), image="nvcr.io/nvidia/tritonserver:25.01-py3", args=[],
                       command=["/scripts/entrypoint.sh"], resources={"limits": {resource: "1"}})  # fmt: skip
    assert engine_of(workload(triton)) == "unknown"
    probe_only = o.changed(triton, ports=None)  # a readinessProbe with httpGet is enough
    assert engine_of(workload(probe_only)) == "unknown"
    router = o.changed(triton, image="registry.example.com/llm-router:1")
    assert engine_container(workload(router)) is None
