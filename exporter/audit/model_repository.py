"""A Triton Inference Server model repository as far as the ConfigMaps of the input mount it (pure): the models
Triton's vLLM backend serves and the vLLM engine arguments each one's `model.json` gives.

Triton's vLLM backend (github.com/triton-inference-server/vllm_backend, release branch r25.12,
231d53f78ba64860228c3a5a36f6528b92431e7a):

- src/model.py:212-229 (`_init_engine_args`): the backend reads `model.json` from the model's version
  directory (`pb_utils.get_model_dir()`, `<repository>/<model>/<version>/model.json`) and hands its keys to
  vLLM as `AsyncEngineArgs(**config)`: `max_model_len`, `gpu_memory_utilization`, `tensor_parallel_size` are
  vLLM's engine arguments under their Python names, and one not given is vLLM's default (`max_model_len`:
  the model's own context);
- samples/model_repository/vllm_model/: the model's `config.pbtxt` says `backend: "vllm"`, its
  `1/model.json` the engine arguments (README.md "Using the vLLM Backend").

`tritonserver` takes the repository as `--model-repository` or its older name `--model-store`, more than once
for several repositories. Triton serves the highest version of a model by default (its version policy
`latest: 1`), so of several version directories the highest one's `model.json` is read.
"""

from __future__ import annotations

import json
import posixpath
import re

from exporter import hostile
from exporter.k8s import arguments
from exporter.k8s.environment import VALUE_LIMIT
from exporter.k8s.workloads import Container

ENGINE_ARGS = "model.json"  # vllm_backend r25.12 src/model.py:46 _VLLM_ENGINE_ARGS_FILENAME
REPOSITORY_FLAGS = ("--model-repository", "--model-store")
_BACKEND = re.compile(r'^\s*backend\s*:\s*"([^"]*)"', re.MULTILINE)

Models = tuple[tuple[str, tuple[str, ...]], ...]  # each model's name and its engine arguments as words


def backend(config: str) -> str | None:
    """The `backend` a model's `config.pbtxt` names, None when it names none."""
    found = _BACKEND.search(config)
    return found.group(1) if found else None


def repositories(c: Container, script: str = "") -> tuple[str, ...]:
    """The model repositories `tritonserver`'s arguments, or the script it is started by, name
    (`--model-repository=/models`), as written."""
    words = arguments.words(c) + [w.strip("\"'") for w in script.split()]
    out: list[str] = []
    for i, word in enumerate(words):
        name, equals, value = word.partition("=")
        if name in REPOSITORY_FLAGS:
            value = value if equals else (words[i + 1] if i + 1 < len(words) else "")
            if value and not value.startswith("-"):
                out.append(value)
    return tuple(out)


def says_vllm(c: Container) -> bool:
    """Whether a `config.pbtxt` the container mounts from a ConfigMap of the input says `backend: "vllm"`."""
    return any(
        posixpath.basename(path) == "config.pbtxt" and text is not None and backend(text) == "vllm"
        for path, text in c.files
    )


def _value(value: object) -> str:
    """A model.json value as the word an argument would be: numbers and strings as written, the rest as JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, str | int | float) else json.dumps(value)


def _engine_args(c: Container, local: tuple[str, ...]) -> dict[str, tuple[int, str]]:
    """Model directory → (version, path of its model.json) of the vLLM models whose model.json is mounted."""
    files = dict(c.files)
    found: dict[str, tuple[int, str]] = {}
    for path in files:
        version_dir = posixpath.dirname(path)
        model_dir = posixpath.dirname(version_dir)
        version = posixpath.basename(version_dir)
        if posixpath.basename(path) != ENGINE_ARGS or not version.isdigit() or not posixpath.basename(model_dir):
            continue
        if local and posixpath.dirname(model_dir) not in local:
            continue  # a model.json outside the repositories tritonserver reads
        config = files.get(posixpath.join(model_dir, "config.pbtxt"))
        if config is not None and backend(config) != "vllm":
            continue  # another backend's model
        if model_dir not in found or int(version) > found[model_dir][0]:
            found[model_dir] = (int(version), path)
    return found


def vllm_models(c: Container, script: str = "") -> tuple[Models, str]:
    """Each vLLM model's name and its model.json as words (`max_model_len`, `8192`, ...); and, where none is
    in the input or one cannot be read, why its engine arguments are not known ("" otherwise). `script`: the
    text of the mounted script the container runs, which may start `tritonserver`."""
    given = repositories(c, script)
    local = tuple(posixpath.normpath(r) for r in given if r.startswith("/"))
    found = _engine_args(c, local if len(local) == len(given) else ())
    if not found:
        where = " " + ", ".join(given) if given else ""
        return (), (
            f"Triton with vLLM: each model's engine arguments (max_model_len; the vLLM backend's "
            f"<model>/<version>/{ENGINE_ARGS}) are in the model repository{where}, not among the objects read"
        )
    files = dict(c.files)
    models: list[tuple[str, tuple[str, ...]]] = []
    for model_dir, (_version, path) in sorted(found.items()):
        text = files[path]
        if text is None:
            return (), f"Triton's vLLM backend: {path} is over the {VALUE_LIMIT // 1024} KiB read of a ConfigMap value"
        try:
            config = json.loads(text)
        except hostile.BUILD_ERRORS:  # json.JSONDecodeError is a ValueError; deep nesting a RecursionError
            return (), f"Triton's vLLM backend: {path} is not JSON"
        if not isinstance(config, dict):
            return (), f"Triton's vLLM backend: {path} is no JSON object of vLLM engine arguments"
        words = tuple(w for key, value in config.items() for w in (str(key), _value(value)))
        models.append((posixpath.basename(model_dir), words))
    return tuple(models), ""
