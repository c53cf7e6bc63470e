"""Which workloads are inference engines (pure): only those are audited.

A workload is an engine workload when one of its pod's containers is an engine and is not a router:

1. the opt-in annotation `llm-exporter.io/scrape: "true"` on the pod template or the workload (the one the
   node role's discovery scrapes by; `cluster.engine_annotation_prefix` sets another prefix) makes it one;
   `"false"` makes it none, whatever else it looks like;
2. an engine's own pod labels: llm-d's `llm-d.ai/inferenceServing: "true"`, AIBrix's `model.aibrix.ai/name`,
   and the pods `cluster.engine_label_selector` selects, as the cluster role's engine-pod watch does;
3. the command and arguments match an engine's `command`: `vllm serve`, `vllm.entrypoints.openai.api_server`,
   `sglang.launch_server`, `text-generation-launcher`, `llama-server`, `lmdeploy serve`, `trtllm-serve` (also
   inside `sh -c "…"`);
4. the image: its repository path split into words (`/`, `-`, `_`, `.`) contains one of an engine's
   `image_words` (`vllm`, `sglang`, `text-generation-inference`, `lmdeploy`, `llama.cpp`, `tensorrt-llm`/`trtllm`,
   `tgi`), alone or followed by a version (`neuron-sdk2.20-vllm0.5.0-neuron`). Template placeholders
   (`{{ .Values.image }}`, `${IMAGE}`, `$(TAG)`) are removed first, so
   `${REGISTRY}/vllm-openai:${TAG}` is still vLLM and an image that is only a placeholder leaves the
   decision to the command, the labels and the ports;
4b. a known wrapper of an engine (`exporter.audit.wrappers`): Triton with the TensorRT-LLM backend (trtllm) or
   the vLLM backend (vllm), llama-swap (llamacpp), an NVIDIA NIM (nim: its image, also from a mirror, its
   variables, mounts or program), by image, command, or the script or config file a ConfigMap of the input
   mounts;
5. a container port named after an engine (`vllm`, `sglang`, `tgi`, ...).

The image (4) and port names (5) make a container an engine only when it requests an accelerator (any
vendor's: `exporter.k8s.accelerators`) or says it runs the engine itself on the CPU (`cpu` or `server` in
its image or tag, `--device cpu`, the engine's context flag in its arguments): a client of an engine named
after it (OPEA's `opea/llm-vllm` microservice) is none. In a pod known to be an engine's (1, 2) they still
name the engine.

6. any other container that requests an accelerator and serves HTTP (a containerPort, or an httpGet probe)
   is a GPU server of an engine the audit does not know (Triton, a NIM-like wrapper, a bespoke server): it is
   audited as engine `unknown` by the checks that do not depend on the engine (`Check.engine_agnostic`).

What names an engine is part of its record (`exporter.engines.engine.Engine`), read here from the registry.

Routers, endpoint pickers and adapters are not engines even when their names contain one (vLLM's
production-stack router, the Gateway API Inference Extension's endpoint picker, llm-d's inference
scheduler, LoRA adapter syncers): a container whose image or arguments name a router (`router`,
`--routing-logic`, `epp`, `inference-scheduler`, `endpoint-picker`, `--pool-name`/`-poolName`, `adapter`,
`gateway`) is never an engine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from exporter.audit.wrappers import wrapper
from exporter.engines.registry import ENGINES
from exporter.k8s.selectors import Selector
from exporter.k8s.workloads import Container, Workload

SCRAPE_ANNOTATION = "llm-exporter.io/scrape"
UNKNOWN = "unknown"  # the engine of a GPU server whose engine is not recognised


@dataclass(frozen=True)
class Recognition:
    """How the cluster role finds engine pods (`cluster.engine_annotation_prefix`, `engine_label_selector`):
    the audit counts those workloads as engines too."""

    annotation: str = SCRAPE_ANNOTATION
    selector: Selector | None = None


DEFAULT = Recognition()

_PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\$\{[^}]*\}|\$\([^)]*\)|<[^>]*>")
_IMAGE_PHRASES = {  # names of several words, matched on the joined words before any single word
    word: e.name for e in ENGINES.values() for word in e.image_words if " " in word
}
_IMAGE_WORDS = {word: e.name for e in ENGINES.values() for word in e.image_words if " " not in word}
_COMMANDS = tuple((e.command, e.name) for e in ENGINES.values() if e.command is not None)
_ROUTER_WORDS = {"router", "epp", "gateway", "adapter", "syncer", "picker", "scheduler", "envoy", "proxy"}
_ROUTER_ARGS = re.compile(r"--routing-logic\b|--pool-name\b|-poolName\b|--poolName\b|\bepp\b")
_VERSIONED = re.compile(r"^(?P<word>[a-z][a-z]*?)v?\d+$")  # `vllm0` of `vllm0.5.0`, `sglang0` of `sglang0.4`
_SELF_SERVING_WORDS = {"cpu", "server"}  # `vllm-cpu`, `llama.cpp:server`: the image runs the engine itself
_CPU_DEVICE = re.compile(r"--device(=|\s+)cpu\b")
_CONTEXT_FLAGS = {e.name: e.context_args for e in ENGINES.values()}


def image_words(image: str) -> list[str]:
    """The words of an image's repository path, without registry port, tag, digest or placeholders."""
    text = _PLACEHOLDER.sub(" ", image)
    text = text.split("@", 1)[0]
    path = text.rsplit(":", 1)[0] if ":" in text.rsplit("/", 1)[-1] else text
    return [w for w in re.split(r"[/\-_.:\s]+", path.lower()) if w]


def _word_engine(word: str) -> str | None:
    """The engine an image word names: the word itself, or the word followed by a version (`vllm0`)."""
    if word in _IMAGE_WORDS:
        return _IMAGE_WORDS[word]
    versioned = _VERSIONED.match(word)
    return _IMAGE_WORDS.get(versioned.group("word")) if versioned else None


def image_engine(image: str) -> str | None:
    words = image_words(image)
    joined = " ".join(words)
    for phrase, engine in _IMAGE_PHRASES.items():
        if phrase in joined:
            return engine
    return next((e for e in map(_word_engine, words) if e), None)


def argv_engine(c: Container) -> str | None:
    text = " ".join(c.argv)
    return next((engine for pattern, engine in _COMMANDS if pattern.search(text)), None)


def is_router(c: Container) -> bool:
    words = set(image_words(c.image)) | set(re.split(r"[/\-_.]+", c.name.lower()))
    return bool(words & _ROUTER_WORDS) or bool(_ROUTER_ARGS.search(" ".join(c.argv)))


def named_engine(c: Container) -> str | None:
    """The engine a container's command, image or port names name; None for routers and the rest."""
    if is_router(c):
        return None
    wrapped = wrapper(c)
    engine = c.engine or argv_engine(c) or (wrapped.engine if wrapped else None) or image_engine(c.image)
    if engine:
        return engine
    return next((name for name, _ in c.ports if name in ENGINES), None)


def _serves_itself(c: Container, engine: str) -> bool:
    """Whether a container without an accelerator says it runs `engine` itself (on the CPU), not a client."""
    words = set(re.split(r"[/\-_.:@\s]+", _PLACEHOLDER.sub(" ", c.image).lower()))
    argv = " ".join(c.argv)
    flags = _CONTEXT_FLAGS.get(engine, ())
    given = any(a == f or a.startswith(f + "=") for a in c.argv for f in flags)
    return bool(words & _SELF_SERVING_WORDS) or bool(_CPU_DEVICE.search(argv)) or given


def container_engine(c: Container) -> str | None:
    """The engine a container runs: named by its command (or its operator), or by its image or port names
    when it requests an accelerator or says it serves the engine itself; None for clients, routers and the rest."""
    engine = named_engine(c)
    # a known wrapper starts its engine itself (llama-swap runs llama-server, Triton its backend, a NIM its own)
    if engine is None or c.gpus or c.engine or argv_engine(c) or wrapper(c) or _serves_itself(c, engine):
        return engine
    return None


def gpu_server(c: Container) -> bool:
    """A container that requests an accelerator and serves HTTP (a containerPort or an httpGet probe)."""
    probes = (c.readiness, c.liveness, c.startup)
    serves = bool(c.ports) or any(p is not None and p.kind == "httpGet" for p in probes)
    return bool(c.gpus) and serves and not is_router(c)


def _opted(annotations: Mapping[str, str], key: str) -> bool | None:
    value = annotations.get(key)
    return None if value is None else value.strip().lower() == "true"


def engine_container(w: Workload, how: Recognition = DEFAULT) -> Container | None:
    """The engine container of an engine workload (the first one found), None when `w` is not one."""
    opted = _opted_in(w, how)
    if opted is False:
        return None
    containers = [c for pod in w.pods for c in pod.containers]
    return serving_container(containers, _engine_pod(w, how))


def _opted_in(w: Workload, how: Recognition) -> bool | None:
    opted = _opted(w.pod.annotations, how.annotation)
    return _opted(w.annotations, how.annotation) if opted is None else opted


def _engine_pod(w: Workload, how: Recognition) -> bool:
    """Whether the annotation or an engine's label says the workload's pods are an engine's."""
    labelled = (
        w.pod.labels.get("llm-d.ai/inferenceServing") == "true"
        or "model.aibrix.ai/name" in w.pod.labels
        or (how.selector is not None and how.selector.matches(w.pod.labels))
    )
    return bool(_opted_in(w, how) or labelled)


def serving_container(containers: Sequence[Container], engine_pod: bool = True) -> Container | None:
    """The first container that runs an engine (`container_engine`; in a pod known to be an engine's, opted in
    or selected, the first its command, image or port names name); else, in such a pod, the first that is no
    router; else the first GPU server (`gpu_server`); else None."""
    known = named_engine if engine_pod else container_engine
    for c in containers:
        if known(c):
            return c
    if engine_pod:
        return next((c for c in containers if not is_router(c)), None)
    return next((c for c in containers if gpu_server(c)), None)


def engine_name(c: Container, engine_pod: bool) -> str:
    """The engine of a serving container: its name (`vllm`, ...); in a pod known to be an engine's, the one its
    image or ports name, else "" (only the annotation or a label said it is one); `unknown` for a GPU server."""
    engine = container_engine(c) or (named_engine(c) if engine_pod else None)
    if engine:
        return engine
    return "" if engine_pod else UNKNOWN


def serving(w: Workload, how: Recognition = DEFAULT) -> tuple[Container, str] | None:
    """The engine container of an engine workload and its engine's name (see `engine_name`); None for others."""
    c = engine_container(w, how)
    return None if c is None else (c, engine_name(c, _engine_pod(w, how)))


def engine_of(w: Workload, how: Recognition = DEFAULT) -> str:
    """The engine's name (`vllm`, `sglang`, ...), "" when only the annotation or a label said it is one, and
    `unknown` for a GPU server whose engine is not recognised."""
    found = serving(w, how)
    return found[1] if found else ""
