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
- Triton Inference Server with the vLLM backend (github.com/triton-inference-server/vllm_backend, r25.12
  231d53f78ba64860228c3a5a36f6528b92431e7a): `tritonserver` (its image, its command, or a mounted script that
  starts it) with `vllm` (or `vllm<version>`) among its image's words
  (`nvcr.io/nvidia/tritonserver:<yy.mm>-vllm-python-py3`, README.md "Option 1"), or with a `config.pbtxt` of
  the input saying `backend: "vllm"`. Engine `vllm`, its arguments each model's
  `model.json` (`exporter.audit.model_repository`) where a ConfigMap of the input mounts it, else not judged.
  The backend reports a few `vllm:*` series (token counters, latency and request-token histograms, labelled
  `model` and `version`; no running, waiting or KV-cache gauge: src/utils/metrics.py:37-83) on Triton's
  metrics port (8002) only where the model's config.pbtxt sets the parameter `REPORT_CUSTOM_METRICS` to "true"
  and model.json leaves `disable_log_stats` false (src/model.py:186-189, README.md "Triton Metrics").
- llama-swap (github.com/mostlygeek/llama-swap, v250 60226b63776efac11e15828abe0bb302ec259699): image
  `ghcr.io/mostlygeek/llama-swap:<tag>` or the `llama-swap` command, started as
  `/app/llama-swap -config /app/config.yaml` (docker/llama-swap.Containerfile:49); its config file lists one
  `cmd` per model (`models.<name>.cmd: llama-server ...`), read from the ConfigMap mounted at the config path.
  Engine `llamacpp`, its arguments those of each model's `llama-server` command.
- NVIDIA NIM: engine `nim`, which picks its backend at start-up. Recognised by what the container shows,
  whatever registry it is pulled from: an image of `nvcr.io/nim/`, or a mirror keeping NGC's layout
  `<registry>/…/nim/<publisher>/<model>`; a variable only a NIM reads: `NIM_CACHE_PATH` and `NIM_SERVER_PORT`
  (NVIDIA/k8s-nim-operator v3.1.2 f9e3047e0bf40eea8f195d3b73c83432f75d983a
  api/apps/v1alpha1/nimservice_types.go:302-357 `GetStandardEnv`; NVIDIA/nim-deploy's nim-llm chart 1.1.2,
  be34031ce621188ab9321949ca4da49b5dc78529 helm/nim-llm/templates/deployment.yaml:170-185), `NIM_MODEL_PROFILE`
  and `NIM_SERVED_MODEL_NAME` (nim-deploy 3c6bcbd05f0c70612d2ed96112248e623035ed05
  cloud-service-providers/aws/blueprints/rag-blueprint-eks/helm/values.yaml:517-519, the nim-llm container's
  env; cloud-service-providers/google-cloud/vertexai/python/multi-llm-nim-vertexai.ipynb:379, `docker run -e`
  of a NIM); a mount under `/opt/nim/` (its cache, `/opt/nim/.cache` by default: nim-deploy
  cloud-service-providers/aws/sagemaker/s3_nim_sagemaker/README.md:43); or NIM's own program (a path under
  `/opt/nim/`, `nim_llm_sdk`, as the operator's multi-node command runs it, nimservice_types.go:66-72; the
  chart's legacy `nemollm_inference_ms`, deployment.yaml:109). Not port 8000 or `/v1/health/ready` (vLLM's port
  too, and a probe path says what is probed, not what runs), nor `NGC_API_KEY` (NeMo, Riva and Triton images
  pull from NGC too), nor `NIM_ENDPOINT` or `NIM_MODEL_NAME`, which a NIM's clients carry (nim-deploy
  cloud-service-providers/azure/workshops/aiq-rag-blueprint/manifests/rag-sweep-job.yaml:19, a benchmark).
  A container the NIM Operator renders (its engine `nim`) is one whatever it shows.
  Its context limit is `NIM_MAX_MODEL_LEN`: NVIDIA's NIM for LLMs documentation indexes it among NIM's own
  variables (`nim_llm.utils.envs.NIM_MAX_MODEL_LEN`, docs.nvidia.com/nim/large-language-models/2.0.4-pb6/
  genindex.html), the `NIM_*` variables that map to vLLM's arguments (here `--max-model-len`). NIM 2.x
  resolves a setting from its command's arguments after `nim-serve` (vLLM's) first, then
  `NIM_PASSTHROUGH_ARGS`, then the `NIM_*` variables, then the model workspace's runtime_config.json and the
  model profile (2.0.0 reference/advanced-configuration.html, "Configuration Priority"): the first of them
  given is judged as an engine's `--max-model-len`. Without any, the profile or the model sets the context,
  which the input does not say: not judged. NVIDIA/nim-deploy (3c6bcbd05f0c70612d2ed96112248e623035ed05) and
  NVIDIA/k8s-nim-operator (f63f74d7ad22eaea7943cc640e545f4ccdbb8077) set it nowhere: a NIMService passes it in
  `spec.env`.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, replace

import yaml

from exporter import hostile
from exporter.audit import model_repository
from exporter.engines.registry import ENGINES
from exporter.k8s import arguments, environment
from exporter.k8s.images import tag
from exporter.k8s.workloads import Container

LLAMA_SWAP_CONFIG = "/app/config.yaml"  # mostlygeek/llama-swap v250 docker/llama-swap.Containerfile:49
_WORDS = re.compile(r"[/\-_.:@\s]+")
# the backend's own scripts and tritonserver's backend option; not genai-perf's `--backend tensorrtllm` (a client)
_TRITON_TRTLLM = re.compile(r"launch_triton_server\.py|tensorrtllm_backend|--backend-config[= ]tensorrtllm")
# a mounted script that starts the server (`exec tritonserver --model-repository=…`), not a client's `tritonserver:8001`
_TRITON_STARTED = re.compile(r"(?:^|[\s/;&|])tritonserver(?:\s|$)", re.MULTILINE)
_VLLM_WORD = re.compile(r"^vllm\d*$")  # `vllm`, or `vllm0` of a tag `…-vllm0.10.1`
# variables a NIM reads and neither vLLM nor SGLang does (see the module's docstring for where each is from)
NIM_VARIABLES = frozenset({"NIM_CACHE_PATH", "NIM_SERVER_PORT", "NIM_SERVED_MODEL_NAME", "NIM_MODEL_PROFILE"})
NIM_HOME = "/opt/nim/"
_NIM_PROGRAMS = re.compile(r"\bnim_llm_sdk\b|\bnemollm_inference_ms\b")
NIM_CONTEXT = "NIM_MAX_MODEL_LEN"  # the context length a NIM serves (see the module's docstring)
NIM_PASSTHROUGH = "NIM_PASSTHROUGH_ARGS"  # NIM 2.x: vLLM-style arguments, over the NIM_* variables

Models = model_repository.Models


@dataclass(frozen=True)
class Wrapper:
    name: str  # "triton", "llama-swap", "nim"
    engine: str
    # each model's name and its engine's settings as words: llama-swap, the `llama-server` command of its config;
    # Triton's vLLM backend, each model.json's keys and values. () where they are not in the input
    models: Models = ()
    note: str = ""  # why a wrapped engine's settings are not read ("" when they are)
    label: str = ""  # how a model is named in a finding: "llama-swap model", "Triton model"
    context_args: tuple[str, ...] = ()  # the settings among a model's words that limit its context
    filled_in: str = ""  # why a setting that is no number is not judged


def _image_words(image: str) -> list[str]:
    return [w for w in _WORDS.split(image.partition("@")[0].lower()) if w]


def scripts(c: Container) -> str:
    """The text of the files of the input (a mounted ConfigMap) that the command or arguments name."""
    named = set(c.argv) | {w for arg in c.argv for w in arg.split()}
    return "\n".join(text for path, text in c.files if path in named and text is not None)


def _llama_swap(c: Container) -> Wrapper:
    found = Wrapper("llama-swap", "llamacpp", label="llama-swap model", context_args=ENGINES["llamacpp"].context_args,
                    filled_in="is filled in by llama-swap")  # fmt: skip
    words = arguments.words(c)
    given = arguments.flag(words, ("-config", "--config"))
    path = given[1] if given else dict(c.env).get("LLAMA_SWAP_CONFIG", LLAMA_SWAP_CONFIG)
    files = dict(c.files)
    if path not in files:
        why = f"llama-swap's config {path} is not among the objects read: its models' commands are unknown"
        return replace(found, note=why)
    text = files[path]
    if text is None:
        over = f"over the {environment.VALUE_LIMIT // 1024} KiB read of a ConfigMap value"
        return replace(found, note=f"llama-swap's config {path} is {over}: its models' commands are unknown")
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        return replace(found, note=f"llama-swap's config {path} is not YAML")
    except hostile.BUILD_ERRORS:
        return replace(found, note=f"llama-swap's config {path} is not YAML")
    models = config.get("models") if isinstance(config, dict) else None
    out = []
    for name, model in (models or {}).items() if isinstance(models, dict) else ():
        cmd = model.get("cmd") if isinstance(model, dict) else None
        if isinstance(cmd, str):
            said = tuple(w.strip("\"'") for w in cmd.split() if w.strip("\"'"))
            if any(w.endswith("llama-server") for w in said):  # not an sd-server or whisper model
                out.append((str(name), said))
    note = "" if out else "llama-swap runs no llama-server model: no context flag known"
    return replace(found, models=tuple(out), note=note)


def _triton_vllm(c: Container, script: str) -> Wrapper:
    models, note = model_repository.vllm_models(c, script)
    return Wrapper("triton", "vllm", models, note, label="Triton model", context_args=("max_model_len",),
                   filled_in="in model.json is no number of tokens")  # fmt: skip


def _nim(c: Container) -> Wrapper:
    """A NIM's context limit: `--max-model-len` of its command, then of NIM_PASSTHROUGH_ARGS, then
    NIM_MAX_MODEL_LEN, NIM 2.x's order; without any, its model profile or the model chooses at start-up."""
    found = Wrapper("nim", "nim", label="NIM container", context_args=("--max-model-len", NIM_CONTEXT),
                    filled_in="is no number of tokens")  # fmt: skip
    passthrough = arguments.env_value(c, (NIM_PASSTHROUGH,))
    variable = arguments.env_value(c, (NIM_CONTEXT,))
    value = variable[1].strip() if variable else ""  # set empty: as unset
    words = (
        *arguments.words(c),
        *(passthrough[1].split() if passthrough else ()),
        *((f"{NIM_CONTEXT}={value}",) if value else ()),
    )
    if arguments.flag(list(words), found.context_args) is not None:
        return replace(found, models=((c.name, words),))
    unread = arguments.env_reason(c, (NIM_CONTEXT,))
    if unread is not None:
        return replace(found, note=f"context limit set from a variable not known here: {unread[1]}")
    why = f"no {NIM_CONTEXT}: the NIM takes the context of its model profile or of the model at start-up"
    return replace(found, note=f"{why}, unknown here: set {NIM_CONTEXT} to what the product needs")


def is_nim(c: Container) -> bool:
    """Whether the container shows it is a NIM: its image's path, a NIM's variables, mounts or program, or the
    NIM Operator rendered it."""
    path = c.image.partition("@")[0].lower()
    parts = (path.rpartition(":")[0] if ":" in path.rsplit("/", 1)[-1] else path).split("/")
    variables = {name for name, _ in c.env} | {r.variable for r in c.env_refs if r.after >= 0}
    program = c.argv[0] if c.argv else ""
    return (
        c.engine == "nim"  # exporter.k8s.operators.nim.ENGINE
        or path.startswith("nvcr.io/nim/")
        or (len(parts) >= 4 and parts[-3] == "nim")  # <registry>/…/nim/<publisher>/<model>
        or bool(variables & NIM_VARIABLES)
        or any(posixpath.normpath(mount).startswith(NIM_HOME) for mount, _, _ in c.mounts)
        or program.startswith(NIM_HOME)
        or bool(_NIM_PROGRAMS.search(" ".join(c.argv)))
    )


def wrapper(c: Container) -> Wrapper | None:
    """The known wrapper `c` runs, None for any other container."""
    words = _image_words(c.image)
    argv = " ".join(c.argv)
    first = c.argv[0].rsplit("/", 1)[-1] if c.argv else ""  # the program: not a client's `--url http://llama-swap`
    if "llama swap" in " ".join(words) or first == "llama-swap":
        return _llama_swap(c)
    script = scripts(c)
    triton = (
        "tritonserver" in words
        or first == "tritonserver"
        or "launch_triton_server.py" in argv + script
        or bool(_TRITON_STARTED.search(script))
    )
    client = "sdk" in _WORDS.split(tag(c.image).lower())  # `tritonserver:<yy.mm>-py3-sdk`: the client tools
    if triton and not client and ("trtllm" in tag(c.image).lower() or _TRITON_TRTLLM.search(argv + "\n" + script)):
        return Wrapper("triton", "trtllm", note="Triton's TensorRT-LLM backend: the context limit is built into "
                       "the TensorRT engine (trtllm-build --max_seq_len) and the model repository's config.pbtxt, "
                       "which the audit does not read")  # fmt: skip
    if triton and not client and (any(_VLLM_WORD.match(w) for w in words) or model_repository.says_vllm(c)):
        return _triton_vllm(c, script)
    if is_nim(c):
        return _nim(c)
    return None
