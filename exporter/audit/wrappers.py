"""Known servers that wrap an engine (pure): recognised by image, command or the script or config file a
ConfigMap mounts, each with the engine it runs and where that engine's settings are.

- Triton Inference Server with the TensorRT-LLM backend (github.com/triton-inference-server/tensorrtllm_backend):
  `tritonserver` (image `nvcr.io/nvidia/tritonserver:<yy.mm>-trtllm-python-py3`, or an image or command named
  `tritonserver`) with the TensorRT-LLM backend named by the image tag (`trtllm`), the command or a script it
  runs (`launch_triton_server.py`, `tensorrtllm_backend`, `--backend-config=tensorrtllm,…`); not the client
  SDK image (`…-py3-sdk`: genai-perf, perf_analyzer). Engine `trtllm`, but the
  context limit is built into the TensorRT engine (`trtllm-build --max_seq_len`) and the model repository's
  `config.pbtxt`, not an argument: not judged. Triton's metrics are its own (`nv_inference_*`,
  `nv_trt_llm_*`), not trtllm-serve's.
- llama-swap (github.com/mostlygeek/llama-swap, v250 60226b63776efac11e15828abe0bb302ec259699): image
  `ghcr.io/mostlygeek/llama-swap:<tag>` or the `llama-swap` command, started as
  `/app/llama-swap -config /app/config.yaml` (docker/llama-swap.Containerfile:49); its config file lists one
  `cmd` per model (`models.<name>.cmd: llama-server ...`), read from the ConfigMap mounted at the config path.
  Engine `llamacpp`, its arguments those of each model's `llama-server` command.
- NVIDIA NIM (an image of `nvcr.io/nim/`): engine `nim`, which picks its backend at start-up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from exporter import hostile
from exporter.k8s import arguments, environment
from exporter.k8s.images import tag
from exporter.k8s.workloads import Container

LLAMA_SWAP_CONFIG = "/app/config.yaml"  # mostlygeek/llama-swap v250 docker/llama-swap.Containerfile:49
_WORDS = re.compile(r"[/\-_.:@\s]+")
# the backend's own scripts and tritonserver's backend option; not genai-perf's `--backend tensorrtllm` (a client)
_TRITON_TRTLLM = re.compile(r"launch_triton_server\.py|tensorrtllm_backend|--backend-config[= ]tensorrtllm")


@dataclass(frozen=True)
class Wrapper:
    name: str  # "triton", "llama-swap", "nim"
    engine: str
    # llama-swap: each model's name and the words of its command; () where the config is not in the input
    commands: tuple[tuple[str, tuple[str, ...]], ...] = ()
    note: str = ""  # why a wrapped engine's settings are not read ("" when they are)


def _image_words(image: str) -> list[str]:
    return [w for w in _WORDS.split(image.partition("@")[0].lower()) if w]


def scripts(c: Container) -> str:
    """The text of the files of the input (a mounted ConfigMap) that the command or arguments name."""
    named = set(c.argv) | {w for arg in c.argv for w in arg.split()}
    return "\n".join(text for path, text in c.files if path in named and text is not None)


def _llama_swap_commands(c: Container) -> tuple[tuple[tuple[str, tuple[str, ...]], ...], str]:
    words = arguments.words(c)
    given = arguments.flag(words, ("-config", "--config"))
    path = given[1] if given else dict(c.env).get("LLAMA_SWAP_CONFIG", LLAMA_SWAP_CONFIG)
    files = dict(c.files)
    if path not in files:
        return (), f"llama-swap's config {path} is not among the objects read: its models' commands are unknown"
    text = files[path]
    if text is None:
        over = f"over the {environment.VALUE_LIMIT // 1024} KiB read of a ConfigMap value"
        return (), f"llama-swap's config {path} is {over}: its models' commands are unknown"
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        return (), f"llama-swap's config {path} is not YAML"
    except hostile.BUILD_ERRORS:
        return (), f"llama-swap's config {path} is not YAML"
    models = config.get("models") if isinstance(config, dict) else None
    out = []
    for name, model in (models or {}).items() if isinstance(models, dict) else ():
        cmd = model.get("cmd") if isinstance(model, dict) else None
        if isinstance(cmd, str):
            out.append((str(name), tuple(w.strip("\"'") for w in cmd.split() if w.strip("\"'"))))
    return tuple(out), ""


def wrapper(c: Container) -> Wrapper | None:
    """The known wrapper `c` runs, None for any other container."""
    words = _image_words(c.image)
    argv = " ".join(c.argv)
    first = c.argv[0].rsplit("/", 1)[-1] if c.argv else ""  # the program: not a client's `--url http://llama-swap`
    if "llama swap" in " ".join(words) or first == "llama-swap":
        commands, note = _llama_swap_commands(c)
        return Wrapper("llama-swap", "llamacpp", commands, note)
    script = scripts(c)
    triton = "tritonserver" in words or first == "tritonserver" or "launch_triton_server.py" in argv + script
    client = "sdk" in _WORDS.split(tag(c.image).lower())  # `tritonserver:<yy.mm>-py3-sdk`: the client tools
    if triton and not client and ("trtllm" in tag(c.image).lower() or _TRITON_TRTLLM.search(argv + "\n" + script)):
        return Wrapper("triton", "trtllm", note="Triton's TensorRT-LLM backend: the context limit is built into "
                       "the TensorRT engine (trtllm-build --max_seq_len) and the model repository's config.pbtxt, "
                       "which the audit does not read")  # fmt: skip
    if c.image.lower().startswith("nvcr.io/nim/"):
        return Wrapper("nim", "nim")
    return None
