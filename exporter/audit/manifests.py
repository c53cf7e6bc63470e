"""Manifests as text (plain YAML, multi-document, `helm template` and `kustomize build` output) to objects (pure)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

from exporter import hostile
from exporter.k8s.fields import Source
from exporter.unrendered import hint

RENDER = "`helm template <release> <chart> | llm-exporter audit -f -`"


class ManifestError(Exception):
    """A document that is not YAML, or not a Kubernetes object: names the file and position."""


@dataclass(frozen=True)
class Document:
    obj: dict[str, Any]
    source: Source


def documents(text: str, name: str) -> Iterator[Document]:
    """Each object of `text`, with the line its document starts on; `List` kinds are unpacked.

    Raises ManifestError at the first document that does not parse, after yielding the ones before it.
    """
    try:
        loader = yaml.SafeLoader(text)  # reads the stream at once: a control character fails here
    except yaml.YAMLError as exc:
        raise ManifestError(f"{name}: not YAML: {exc}") from exc
    try:
        yield from _documents(loader, name)
    except ManifestError:
        helm = hint(name, text, RENDER)
        if helm is None:
            raise
        raise ManifestError(helm) from None
    finally:
        loader.dispose()


def _documents(loader: yaml.SafeLoader, name: str) -> Iterator[Document]:
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            line = node.start_mark.line + 1
            data = loader.construct_document(node)
            if data is None:
                continue
            if not isinstance(data, dict):  # a list or a scalar: not an object (counted as such by the inventory)
                yield Document({}, Source(name, line))
                continue
            yield from _unpack(data, Source(name, line), name)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark else name
        raise ManifestError(f"{where}: not YAML: {exc.problem or exc.context}") from exc
    except yaml.YAMLError as exc:
        raise ManifestError(f"{name}: not YAML: {exc}") from exc
    except hostile.BUILD_ERRORS as exc:
        raise ManifestError(f"{name}: not YAML: {hostile.why(exc)}") from exc


def _unpack(data: dict[str, Any], source: Source, name: str) -> Iterator[Document]:
    kind = str(data.get("kind") or "")
    items = data.get("items")
    if kind == "List" and items is not None and not isinstance(items, list):
        raise ManifestError(f"{name}:{source.line}: a List whose items are not a list")
    if kind == "List" or (kind.endswith("List") and isinstance(items, list)):
        for item in items or []:
            if isinstance(item, dict):
                yield Document(item, source)
        return
    yield Document(data, source)
