"""Arguments set from variables the container reads from ConfigMaps (`envFrom`, `configMapKeyRef`): resolved
from the ConfigMaps of the input before any check reads them; one the input lacks, or a Secret's, makes the
argument unknown, said so, never absent."""

from __future__ import annotations

from typing import Any

from exporter.audit import inventory
from exporter.audit.base import Measured
from exporter.audit.run import audit_workload, engines
from exporter.k8s import arguments, environment, workloads

Obj = dict[str, Any]
NS = "llm"


def config_map(name: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS}, "data": data}


def llama_server(env: list[Obj], env_from: list[Obj]) -> Obj:
    """llama.cpp's server image on one GPU, its context and parallel slots from variables, as teams write it."""
    server = {
        "name": "llama-server",
        "image": "ghcr.io/ggml-org/llama.cpp:server-cuda-b6097",
        "args": ["--model", "/models/$(MODEL_FILE)", "--ctx-size", "$(N_CTX)", "--parallel", "$(N_PARALLEL)",
                 "--host", "0.0.0.0", "--port", "8080", "--metrics"],
        "env": env,
        "envFrom": env_from,
        "ports": [{"name": "http", "containerPort": 8080}],
        "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10},
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }  # fmt: skip
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "qwen", "namespace": NS},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "qwen"}},
                 "template": {"metadata": {"labels": {"app": "qwen"}}, "spec": {"containers": [server]}}},
    }  # fmt: skip


FROM_KEY: list[Obj] = [
    {"name": "N_CTX", "valueFrom": {"configMapKeyRef": {"name": "qwen-settings", "key": "n_ctx"}}},
    {"name": "N_PARALLEL", "value": "4"},
]
FROM_MAP: list[Obj] = [{"configMapRef": {"name": "qwen-model"}}]
UNKNOWN = "context limit set from a variable not known here: --ctx-size $(N_CTX): "


def context(objs: list[Obj], used: float | None = None) -> tuple[str, str]:
    inv = inventory.build(objs)
    (w,) = engines(inv.workloads)
    found = {f.check.id: f.outcome for f in audit_workload(w, inv.around, Measured(context_tokens=used))}
    return found["context-oversized"].status, found["context-oversized"].detail


def test_a_context_limit_from_a_configmap_of_the_input_is_read() -> None:
    objs = [llama_server(FROM_KEY, FROM_MAP), config_map("qwen-settings", n_ctx="1048576"),
            config_map("qwen-model", MODEL_FILE="qwen3-8b-q4_k_m.gguf")]  # fmt: skip
    assert context(objs) == ("pass", "--ctx-size 1048576")
    assert context(objs, used=6000.0) == ("fail", "--ctx-size 1048576, over 4× the 6000 tokens used per request")
    (w,) = engines(inventory.build(objs).workloads)
    (c,) = w.pod.containers
    assert arguments.words(c)[:4] == ["--model", "/models/qwen3-8b-q4_k_m.gguf", "--ctx-size", "1048576"]
    assert c.env_refs == ()
    # the ConfigMap may come after the Deployment, in another document
    assert context(list(reversed(objs))) == ("pass", "--ctx-size 1048576")


def test_a_configmap_the_input_lacks_makes_the_limit_unknown_not_absent() -> None:
    status, detail = context([llama_server(FROM_KEY, FROM_MAP)])
    assert (status, detail) == ("unknown", UNKNOWN + "N_CTX is read from ConfigMap qwen-settings (key n_ctx), "
                                "not among the objects read")  # fmt: skip
    # from envFrom: any variable may come from it
    status, detail = context([llama_server([], [{"configMapRef": {"name": "qwen-settings"}}])])
    assert (status, detail) == ("unknown", UNKNOWN + "N_CTX may be set by ConfigMap qwen-settings (envFrom), "
                                "not among the objects read")  # fmt: skip
    # a ConfigMap of another namespace is not this container's
    other = config_map("qwen-settings", n_ctx="8192")
    other["metadata"]["namespace"] = "elsewhere"
    assert context([llama_server(FROM_KEY, []), other])[0] == "unknown"


def test_a_secret_is_never_read() -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "qwen-secret", "namespace": NS},
              "stringData": {"n_ctx": "4096"}}  # fmt: skip
    env = [{"name": "N_CTX", "valueFrom": {"secretKeyRef": {"name": "qwen-secret", "key": "n_ctx"}}}]
    status, detail = context([llama_server(env, []), secret])
    assert status == "unknown"
    assert detail == UNKNOWN + "N_CTX is read from Secret qwen-secret, whose values are never read"
    assert "4096" not in detail
    status, detail = context([llama_server([], [{"secretRef": {"name": "qwen-secret"}}]), secret])
    assert status == "unknown" and "4096" not in detail


def test_the_kubelets_order_an_env_entry_over_envfrom_a_later_source_over_an_earlier() -> None:
    c = workloads.container({
        "name": "server",
        "envFrom": [{"configMapRef": {"name": "a"}}, {"configMapRef": {"name": "b"}, "prefix": "B_"}],
        "env": [{"name": "X", "value": "literal"},
                {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "y"}}},
                {"name": "Z", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    })  # fmt: skip
    maps = {(NS, "a"): {"X": "from-a", "W": "from-a"}, (NS, "b"): {"W": "from-b"}, (NS, "c"): {"y": "from-c"}}
    resolved = environment.resolve(c, NS, maps)
    assert dict(resolved.env) == {"X": "literal", "W": "from-a", "B_W": "from-b", "Y": "from-c"}
    assert [r.variable for r in resolved.env_refs] == ["Z"]
    assert arguments.variable_reason(resolved, "Z") == "Z is read from the pod's fieldRef"
    assert arguments.variable_reason(resolved, "V") == "no variable V is set: $(V) stays as written"


def test_the_files_of_a_mounted_configmap_where_the_kubelet_puts_them() -> None:
    pod = workloads.pod_template({"spec": {
        "containers": [{"name": "server", "volumeMounts": [
            {"name": "all", "mountPath": "/etc/server"},
            {"name": "some", "mountPath": "/opt/conf/"},
            {"name": "all", "mountPath": "/app/config.yaml", "subPath": "config.yaml"},
            {"name": "elsewhere", "mountPath": "/data"}]}],
        "volumes": [{"name": "all", "configMap": {"name": "server"}},
                    {"name": "some", "configMap": {"name": "server", "items": [{"key": "run.sh", "path": "bin/run"}]}},
                    {"name": "elsewhere", "configMap": {"name": "not-in-the-input"}}],
    }})  # fmt: skip
    maps = {(NS, "server"): {"config.yaml": "models: {}", "run.sh": "exec server"}}
    assert environment.mounted(pod.containers[0], pod, NS, maps) == (
        ("/etc/server/config.yaml", "models: {}"), ("/etc/server/run.sh", "exec server"),
        ("/opt/conf/bin/run", "exec server"), ("/app/config.yaml", "models: {}"))  # fmt: skip


def test_a_value_over_the_limit_is_withheld_unknown_and_said_so() -> None:
    long = "8192" + " " * environment.VALUE_LIMIT  # digits first: read, it would pass as 8192
    over = "whose value is over the 64 KiB read of a ConfigMap value"
    settings = config_map("qwen-settings", n_ctx=long)
    model = config_map("qwen-model", MODEL_FILE="qwen3-8b-q4_k_m.gguf")
    assert context([llama_server(FROM_KEY, FROM_MAP), settings, model]) == (
        "unknown", UNKNOWN + f"N_CTX is read from ConfigMap qwen-settings (key n_ctx), {over}")  # fmt: skip
    # envFrom: the one key withheld is unknown, the others are read
    from_map = [llama_server([], FROM_MAP), config_map("qwen-model", MODEL_FILE="m.gguf", N_CTX=long, N_PARALLEL="4")]
    assert context(from_map) == ("unknown", UNKNOWN + f"N_CTX is read from ConfigMap qwen-model (key N_CTX), {over}")
    (w,) = engines(inventory.build(from_map).workloads)
    assert dict(w.pod.containers[0].env) == {"MODEL_FILE": "m.gguf", "N_PARALLEL": "4"}
    assert (
        arguments.variable_reason(w.pod.containers[0], "N_CTX_2")
        == "no variable N_CTX_2 is set: $(N_CTX_2) stays as written"
    )
    # set again by a later source, or an env entry: known
    later = [llama_server([], [*FROM_MAP, {"configMapRef": {"name": "qwen-settings"}, "prefix": "N_"}]),
             config_map("qwen-model", N_CTX=long), config_map("qwen-settings", CTX="4096")]  # fmt: skip
    assert context(later) == ("pass", "--ctx-size 4096")
    assert context([llama_server([{"name": "N_CTX", "value": "2048"}], FROM_MAP), from_map[1]]) == (
        "pass", "--ctx-size 2048")  # fmt: skip


def test_the_limit_is_in_bytes_and_the_live_record_reads_as_the_object() -> None:
    limit = environment.VALUE_LIMIT
    raw = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "namespace": NS},
           "data": {"at": "x" * limit, "over": "x" * (limit + 1), "wide": "é" * (limit // 2 + 1), "short": "1"},
           "binaryData": {"blob": "AAEC"}}  # fmt: skip
    assert environment.config_map(raw, "default") == (
        (NS, "m"), {"at": "x" * limit, "over": None, "wide": None, "short": "1"})  # fmt: skip
    kept = environment.kept(raw)
    assert kept == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m", "namespace": NS},
                    "data": {"at": "x" * limit, "short": "1"}, "withheld": ["over", "wide"]}  # fmt: skip
    assert environment.config_map(kept, "default") == environment.config_map(raw, "default")


def test_where_configmaps_cannot_be_read_an_optional_source_is_not_read_as_absent() -> None:
    c = workloads.container({
        "name": "server",
        "envFrom": [{"configMapRef": {"name": "a"}}, {"configMapRef": {"name": "b", "optional": True}}],
        "env": [{"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "y", "optional": True}}}],
    })  # fmt: skip
    unread = "not read: configmaps not granted or not served"
    resolved = environment.resolve(c, NS, {}, unread)
    assert arguments.variable_reason(resolved, "X") == (
        f"X may be set by ConfigMap a (envFrom), {unread} or ConfigMap b (envFrom), {unread}")  # fmt: skip
    assert arguments.variable_reason(resolved, "Y") == f"Y is read from ConfigMap c (key y), {unread}"
    # where the input simply lacks it, an optional source is read as absent, as the kubelet does
    assert arguments.variable_reason(environment.resolve(c, NS, {}), "X") == (
        "X may be set by ConfigMap a (envFrom), not among the objects read")  # fmt: skip
