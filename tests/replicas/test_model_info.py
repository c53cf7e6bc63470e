"""llm_model_info from engine pods: pods of real-world Deployments (fixtures/audit_corpus, stored as published),
as the ReplicaSet controller makes them from the template and the kubelet reports them (`imageID`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.catalogue.replicas import MODEL_INFO
from exporter.exposition import render
from exporter.replicas import model_info
from exporter.replicas.model_info import ModelInfo, read

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "audit_corpus"
# the form containerd's CRI writes a container's imageID in: the repository and the digest it pulled
DIGEST = "sha256:953d3a06d5e64ab582985cd7401289d3abf2a2c14ef2158e9a84313daeec77d7"


def deployment(path: str) -> dict[str, Any]:
    docs = [d for d in yaml.safe_load_all((CORPUS / path).read_text()) if d and d.get("kind") == "Deployment"]
    return dict(docs[0])


def pod(path: str, name: str, image_id: str | None = None, args: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The pod the Deployment's ReplicaSet makes (its template's metadata and spec), Running; `image_id`: the
    kubelet's `imageID` of every container; `args`: a container's args replaced (by its name)."""
    template = copy.deepcopy(deployment(path)["spec"]["template"])
    spec = template["spec"]
    for c in spec["containers"]:
        if c["name"] in (args or {}):
            c["args"] = (args or {})[c["name"]]
    statuses = [
        {"name": c["name"], "image": c["image"], "ready": True, "restartCount": 0}
        | ({"imageID": image_id} if image_id is not None else {})
        for c in spec["containers"]
    ]
    metadata = {**template.get("metadata", {}), "name": name, "namespace": "llm", "uid": name}
    metadata["creationTimestamp"] = "2026-12-05T10:00:00Z"
    metadata.setdefault("annotations", {})["llm-exporter.io/scrape"] = "true"
    return {"metadata": metadata, "spec": spec, "status": {"phase": "Running", "containerStatuses": statuses}}


def test_a_vllm_deployment_with_a_digest_that_ran() -> None:
    """AIBrix's sample: `vllm serve --model … --served-model-name … --dtype half --max-model-len 12288`."""
    obj = pod("aibrix-autoscaling/deploy.yaml", "ds-0", f"docker.io/vllm/vllm-openai@{DIGEST}")
    assert read(obj) == ModelInfo(
        model="deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
        served_model_name="deepseek-r1-distill-llama-8b",
        image="vllm/vllm-openai:v0.7.1",
        image_digest=DIGEST,
        engine="vllm",
        engine_version="0.7.1",
        dtype="half",
        max_model_len="12288",
    )


def test_exposition_of_three_engine_pods() -> None:
    """The exact series: a vLLM pod whose image ran by digest, the GKE guide's (its model a `$(MODEL_ID)` the
    kubelet expands; kwok-like status without imageID), the GKE TGI guide's (model and quantization from
    TGI's environment variables, an image tagged by no release)."""
    pods = [
        pod("aibrix-autoscaling/deploy.yaml", "ds-0", f"docker.io/vllm/vllm-openai@{DIGEST}"),
        pod("gke-vllm-gemma/vllm-3-1b-it.yaml", "gemma-0"),
        pod("gke-tgi-llama3-70b/text-generation-inference.yaml", "llm-0", ""),
    ]
    text = render([model_info.family(("llm", p["metadata"]["name"], read(p)) for p in pods)])
    tgi_image = (
        "us-docker.pkg.dev/deeplearning-platform-release/gcr.io/"
        "huggingface-text-generation-inference-cu121.2-1.ubuntu2204.py310"
    )
    assert text == (
        "# HELP llm_model_info " + MODEL_INFO.help.replace("\\", "\\\\") + "\n"
        "# TYPE llm_model_info gauge\n"
        'llm_model_info{namespace="llm",pod="ds-0",model="deepseek-ai/DeepSeek-R1-Distill-Llama-8B",'
        'served_model_name="deepseek-r1-distill-llama-8b",revision="",image="vllm/vllm-openai:v0.7.1",'
        f'image_digest="{DIGEST}",engine="vllm",engine_version="0.7.1",quantization="",dtype="half",'
        'max_model_len="12288"} 1\n'
        'llm_model_info{namespace="llm",pod="gemma-0",model="google/gemma-3-1b-it",'
        'served_model_name="google/gemma-3-1b-it",revision="",image="docker.io/vllm/vllm-openai:v0.10.0",'
        'image_digest="",engine="vllm",engine_version="0.10.0",quantization="",dtype="",max_model_len=""} 1\n'
        'llm_model_info{namespace="llm",pod="llm-0",model="meta-llama/Meta-Llama-3-70B-Instruct",'
        f'served_model_name="",revision="",image="{tgi_image}",image_digest="",engine="tgi",engine_version="",'
        'quantization="bitsandbytes-nf4",dtype="",max_model_len=""} 1\n'
    )


def test_revision_and_a_pinned_image() -> None:
    """`--revision` pins the checkpoint; an image pinned by digest says it before any status does."""
    args = ["--model=$(MODEL_ID)", "--revision=7ae557604adf67be50417f59c2c2f167def9a775", "--quantization", "fp8"]
    obj = pod("gke-vllm-gemma/vllm-3-1b-it.yaml", "gemma-0", args={"inference-server": args})
    obj["spec"]["containers"][0]["image"] = f"docker.io/vllm/vllm-openai:v0.10.0@{DIGEST}"
    info = read(obj)
    assert (info.revision, info.quantization, info.image_digest) == (
        "7ae557604adf67be50417f59c2c2f167def9a775",
        "fp8",
        DIGEST,
    )
    assert info.engine_version == "0.10.0"


def test_the_status_digest_wins_over_the_pinned_one() -> None:
    """The image ran is the status': after a re-tag the spec's digest may be another."""
    other = "sha256:" + "0" * 63 + "1"
    obj = pod("gke-vllm-gemma/vllm-3-1b-it.yaml", "gemma-0", f"docker-pullable://vllm/vllm-openai@{other}")
    obj["spec"]["containers"][0]["image"] = f"docker.io/vllm/vllm-openai@{DIGEST}"
    assert read(obj).image_digest == other


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # `vllm serve <model>`: the positional model; the served name defaults to it
        (["vllm", "serve", "Qwen/Qwen3-8B", "--max_model_len", "8192"], ("Qwen/Qwen3-8B", "Qwen/Qwen3-8B", "8192")),
        # `sh -c` scripts are read as words; `--served-model-name a b` serves a first
        (
            ["/bin/sh", "-c", "vllm serve /models/llama --served-model-name chat llama --max-model-len 32k"],
            ("/models/llama", "chat", ""),  # 32k is no whole number of tokens: left empty
        ),
        # what only the shell fills in is unknown
        (["/bin/sh", "-c", 'vllm serve "$MODEL" --revision ${REV}'], ("", "", "")),
        # SGLang: --model-path; its served name defaults to it
        (
            ["python3", "-m", "sglang.launch_server", "--model-path", "meta-llama/Llama-3.1-8B", "--context-length",
             "4096"],
            ("meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B", "4096"),
        ),
        # credentials in a model URL are masked
        (["vllm", "serve", "https://user:secret@models.example/llama"], ("https://user:***@models.example/llama",) * 2
         + ("",)),
    ],
)  # fmt: skip
def test_arguments(argv: list[str], expected: tuple[str, str, str]) -> None:
    obj = {"spec": {"containers": [{"name": "engine", "image": "registry.example/serving:1", "command": argv}]}}
    info = read(obj)
    assert (info.model, info.served_model_name, info.max_model_len) == expected


def test_an_unrecognised_engine_pod_names_its_image_only() -> None:
    """An opted-in pod whose engine neither command nor image names: the annotation's engine, else none."""
    image = "registry.example/serving@" + DIGEST
    container = {"name": "server", "image": image, "args": ["--model", "m"]}
    obj: dict[str, Any] = {"metadata": {"annotations": {}}, "spec": {"containers": [container]}}
    assert read(obj, "llm-exporter.io/engine") == ModelInfo(image=image, image_digest=DIGEST)
    obj["metadata"]["annotations"]["llm-exporter.io/engine"] = "vllm"
    assert read(obj, "llm-exporter.io/engine").model == "m"
