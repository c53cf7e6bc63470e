"""A container's words as the kubelet hands them, and image digests and tags as the kubelet and the runtimes write
them."""

from __future__ import annotations

import pytest

from exporter.k8s import arguments, images
from exporter.k8s.workloads import container

SHA = "sha256:4f550996130e7d16cacb24ca9a2865e7cf51eddaab014ceaf31a1ea6ef86d4ec"


def test_references_expand_as_the_kubelet_expands_them() -> None:
    env = {"MODEL_ID": "google/gemma-3-1b-it"}
    assert arguments.expand("--model=$(MODEL_ID)", env) == "--model=google/gemma-3-1b-it"
    assert arguments.expand("$$(MODEL_ID)", env) == "$(MODEL_ID)"  # escaped: left as written
    assert arguments.expand("$(UNSET)", env) == "$(UNSET)"  # unresolved: unchanged


def test_words_flags_and_variables() -> None:
    c = container(
        {
            "name": "engine",
            "command": ["/bin/sh", "-c"],
            "args": ["exec vllm serve $(MODEL) --revision='abc' --dtype bfloat16 --enforce-eager --served-model-name"],
            "env": [{"name": "MODEL", "value": "m"}, {"name": "REF", "value": "x-$(MODEL)"}],
        }
    )
    words = arguments.words(c)
    assert words[:6] == ["/bin/sh", "-c", "exec", "vllm", "serve", "m"]
    assert arguments.flag(words, ["--revision"]) == ("--revision", "abc")
    assert arguments.flag(words, ["--dtype"]) == ("--dtype", "bfloat16")
    assert arguments.flag(words, ["--served-model-name"]) == ("--served-model-name", "")  # given without a value
    assert arguments.flag(words, ["--quantization", "-q"]) is None
    assert arguments.env_value(c, ["REF"]) == ("REF", "x-m")  # a variable defined before it expands
    assert [arguments.known(v) for v in ("$MODEL", "${MODEL}", "{{ .Values.model }}", "m")] == [None, None, None, "m"]


@pytest.mark.parametrize(
    ("reference", "digest", "tag"),
    [
        ("vllm/vllm-openai:v0.10.1", "", "v0.10.1"),
        (f"quay.io/modh/vllm@{SHA}", SHA, ""),
        (f"registry.example:5000/vllm-openai:v0.10.1@{SHA}", SHA, "v0.10.1"),
        ("registry.example:5000/vllm-openai", "", ""),  # the port is no tag
        (f"docker-pullable://vllm/vllm-openai@{SHA}", SHA, ""),  # Docker's imageID
    ],
)
def test_digests_and_tags(reference: str, digest: str, tag: str) -> None:
    assert (images.digest(reference), images.tag(reference)) == (digest, tag)


def test_a_local_image_id_is_no_digest() -> None:
    """containerd's imageID for an image without a repository digest: the runtime's own ID, no registry's."""
    assert images.digest(SHA) == ""


def test_status_digests_by_container() -> None:
    pod = {
        "status": {
            "containerStatuses": [
                {"name": "vllm", "imageID": f"docker.io/vllm/vllm-openai@{SHA}"},
                {"name": "sidecar", "imageID": SHA},
                {"name": "starting"},
            ]
        }
    }
    assert images.status_digests(pod) == {"vllm": SHA, "sidecar": "", "starting": ""}
