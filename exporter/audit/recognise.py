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
   `tgi`). Template placeholders (`{{ .Values.image }}`, `${IMAGE}`, `$(TAG)`) are removed first, so
   `${REGISTRY}/vllm-openai:${TAG}` is still vLLM and an image that is only a placeholder leaves the
   decision to the command, the labels and the ports;
5. a container port named after an engine (`vllm`, `sglang`, `tgi`, ...).

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

from exporter.engines.registry import ENGINES
from exporter.k8s.selectors import Selector
from exporter.k8s.workloads import Container, Workload

SCRAPE_ANNOTATION = "llm-exporter.io/scrape"


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


def image_words(image: str) -> list[str]:
    """The words of an image's repository path, without registry port, tag, digest or placeholders."""
    text = _PLACEHOLDER.sub(" ", image)
    text = text.split("@", 1)[0]
    path = text.rsplit(":", 1)[0] if ":" in text.rsplit("/", 1)[-1] else text
    return [w for w in re.split(r"[/\-_.:\s]+", path.lower()) if w]


def image_engine(image: str) -> str | None:
    words = image_words(image)
    joined = " ".join(words)
    for phrase, engine in _IMAGE_PHRASES.items():
        if phrase in joined:
            return engine
    return next((_IMAGE_WORDS[w] for w in words if w in _IMAGE_WORDS), None)


def argv_engine(c: Container) -> str | None:
    text = " ".join(c.argv)
    return next((engine for pattern, engine in _COMMANDS if pattern.search(text)), None)


def is_router(c: Container) -> bool:
    words = set(image_words(c.image)) | set(re.split(r"[/\-_.]+", c.name.lower()))
    return bool(words & _ROUTER_WORDS) or bool(_ROUTER_ARGS.search(" ".join(c.argv)))


def container_engine(c: Container) -> str | None:
    """The engine a container runs, from its command, image or port names; None for routers and the rest."""
    if is_router(c):
        return None
    engine = c.engine or argv_engine(c) or image_engine(c.image)
    if engine:
        return engine
    return next((name for name, _ in c.ports if name in ENGINES), None)


def _opted(annotations: Mapping[str, str], key: str) -> bool | None:
    value = annotations.get(key)
    return None if value is None else value.strip().lower() == "true"


def engine_container(w: Workload, how: Recognition = DEFAULT) -> Container | None:
    """The engine container of an engine workload (the first one found), None when `w` is not one."""
    opted = _opted(w.pod.annotations, how.annotation)
    if opted is None:
        opted = _opted(w.annotations, how.annotation)
    if opted is False:
        return None
    containers = [c for pod in w.pods for c in pod.containers]
    labelled = (
        w.pod.labels.get("llm-d.ai/inferenceServing") == "true"
        or "model.aibrix.ai/name" in w.pod.labels
        or (how.selector is not None and how.selector.matches(w.pod.labels))
    )
    return serving_container(containers, bool(opted or labelled))


def serving_container(containers: Sequence[Container], engine_pod: bool = True) -> Container | None:
    """The first container an engine's command, image or port names; else, in a pod known to be an engine's
    (opted in or selected), the first that is no router; else None."""
    for c in containers:
        if container_engine(c):
            return c
    if engine_pod:
        return next((c for c in containers if not is_router(c)), None)
    return None


def engine_of(w: Workload, how: Recognition = DEFAULT) -> str:
    """The engine's name (`vllm`, `sglang`, ...), "" when only the annotation or a label said it is one."""
    c = engine_container(w, how)
    return (container_engine(c) or "") if c else ""
