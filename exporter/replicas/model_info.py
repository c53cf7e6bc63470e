"""Which checkpoint and image an engine pod serves, from its pod spec and status (pure): llm_model_info.

The engine container is the first container an engine's command, image or port names (else, the pod being an
engine pod, the first that is no router, `exporter.audit.recognise`); the engine is the one it names, else
the one the pod's `<prefix>/engine` annotation names. Its record (`exporter.engines.<engine>`) says which
arguments, then environment variables, hold each label (`model_args`, `model_env`, `model_positional`); they
are read as the program receives them (`exporter.k8s.arguments`: `$(VAR)` expanded as the kubelet does).

- `model`, `revision`, `quantization`, `dtype`: the argument's value as written;
- `served_model_name`: the first name of the argument (the one the engine's metrics carry as their model
  label); where none is given, the model for the engines that document it as the default (vLLM, SGLang);
- `max_model_len`: the context limit argument, when it is a whole number of tokens;
- `image`: the container's image as the spec writes it; `image_digest`: the digest the container's status
  says ran (`imageID`), else the digest the image reference pins;
- `engine_version`: the image's tag when the image is the engine's own and the tag is one of the engine's
  releases in the exporter's release table (`vllm/vllm-openai:v0.10.1` → `0.10.1`); the version the engine
  answers is `llm_engine_info`'s (node role), joined on namespace and pod.
Anything not stated, or stated by what only the shell or a template fills in (`$MODEL`, `{{ … }}`, a `$(VAR)`
from a Secret), is "": never guessed. Credentials in a URL's userinfo are masked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

from exporter import userinfo
from exporter.audit.recognise import image_engine, named_engine, serving_container
from exporter.catalogue import replicas as spec
from exporter.engines.engine import Engine
from exporter.engines.registry import ENGINES
from exporter.exposition import Family
from exporter.k8s import arguments, images
from exporter.k8s.fields import as_dict, as_list, strs
from exporter.k8s.workloads import Container, container

MAX_VALUE = 512  # a longer value is no name of a checkpoint or image: left empty rather than cut


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """The labels of llm_model_info past namespace and pod, "" where the pod does not say."""

    model: str = ""
    served_model_name: str = ""
    revision: str = ""
    image: str = ""
    image_digest: str = ""
    engine: str = ""
    engine_version: str = ""
    quantization: str = ""
    dtype: str = ""
    max_model_len: str = ""

    def values(self) -> tuple[str, ...]:
        return tuple(getattr(self, f.name) for f in fields(self))


def _clean(value: str | None) -> str:
    text = arguments.known(value or "")
    if text is None or len(text) > MAX_VALUE:
        return ""
    return userinfo.masked(text)


def _read(record: Engine, c: Container, label: str, words: list[str]) -> str:
    given = arguments.flag(words, record.model_args.get(label, ()))
    if given is not None:
        return given[1]
    variable = arguments.env_value(c, record.model_env.get(label, ()))
    return variable[1] if variable is not None else ""


@cache
def _releases(engine: str) -> frozenset[str]:
    try:
        return frozenset(r.version for r in ENGINES[engine].releases().releases)
    except (KeyError, OSError, ValueError):  # an engine without a release table
        return frozenset()


def engine_version(record: Engine, image: str) -> str:
    """The release the image's tag names, when the image is the engine's own and the tag one of its releases."""
    if image_engine(image) != record.name:
        return ""
    text = images.tag(image).removeprefix("v")
    known = _releases(record.name)
    for candidate in (text, text.partition("-")[0]):  # `v0.4.6.post1-cu124`: the release, then the build
        if candidate in known:
            return candidate
    return ""


def read(pod: Mapping[str, Any], engine_annotation: str = "") -> ModelInfo:
    """What the engine pod `pod` (a Pod object) says it serves."""
    containers = [container(c) for c in as_list(as_dict(pod.get("spec")).get("containers")) if isinstance(c, dict)]
    c = serving_container(containers)
    if c is None:
        return ModelInfo()
    annotated = strs(as_dict(pod.get("metadata")).get("annotations")).get(engine_annotation, "")
    engine = named_engine(c) or (annotated if annotated in ENGINES else "")
    image = c.image if len(c.image) <= MAX_VALUE else ""
    digest = images.status_digests(pod).get(c.name) or images.digest(c.image)
    record = ENGINES.get(engine)
    if record is None:
        return ModelInfo(image=image, image_digest=digest, engine=engine)
    words = arguments.words(c)
    found = {label: _clean(_read(record, c, label, words)) for label in record.model_args}
    if record.model_positional is not None:
        positional = record.model_positional.search(" ".join(words))
        if positional:
            found["model"] = _clean(positional.group(1))
    served = found.get("served_model_name", "")  # of `--served-model-name a b`, the first: `a`
    if not served and record.served_name_is_model:
        served = found.get("model", "")
    length = found.get("max_model_len", "")
    return ModelInfo(
        model=found.get("model", ""),
        served_model_name=served,
        revision=found.get("revision", ""),
        image=image,
        image_digest=digest,
        engine=engine,
        engine_version=engine_version(record, c.image),
        quantization=found.get("quantization", ""),
        dtype=found.get("dtype", ""),
        max_model_len=length if re.fullmatch(r"[0-9]+", length) else "",
    )


def family(pods: Iterable[tuple[str, str, ModelInfo]]) -> Family:
    """llm_model_info: one series per engine pod, (namespace, pod, what it serves)."""
    out = Family(spec.MODEL_INFO)
    for namespace, name, info in sorted(pods, key=lambda p: (p[0], p[1])):
        out.add((namespace, name, *info.values()), 1.0)
    return out
