"""End to end: the real LiteLLM proxy (CPU) in front of the real llama.cpp `llama-server` serving a tiny
random-weight model; requests under several end users; the exporter scrapes the proxy as a gateway target.
Per tenant, the exporter's tokens equal the sums of the `usage` the responses carried, and the tenants past
the bound are summed, exactly, in tenant="other"."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exporter.demo.vllm_env import free_port
from exporter.engines import parser
from tests.bundle.servers import serve_exporter, wait_http
from tests.e2e import llamacpp_server as llama
from tests.gateways import litellm_proxy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
MODEL = "tiny"
TENANTS = {"ada": 3, "bo": 2, "cy": 2, "dee": 1}  # end user -> requests
KEEP = 2  # gateways.max_tenants_per_model: two of the four keep their name


def fetch(url: str, key: str = "") -> str:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    with urllib.request.urlopen(request, timeout=30) as response:
        return str(response.read().decode())


def chat(proxy: str, user: str, max_tokens: int) -> dict[str, Any]:
    body = {"model": MODEL, "user": user, "max_tokens": max_tokens, "messages": [{"role": "user", "content": user}]}
    request = urllib.request.Request(
        proxy + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {litellm_proxy.MASTER_KEY}"},
    )
    with urllib.request.urlopen(request, timeout=300) as response:
        return dict(json.loads(response.read()))


def series(body: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return dict(parser.parse(body, {name}, "").samples.get(name, []))


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[llama.LlamaServer]:
    binary = llama.ensure_server()
    model = llama.write_tiny_model(binary.parent / "ggml-vocab-llama-spm.gguf", tmp_path_factory.mktemp("m") / "t.gguf")
    started = llama.start(binary, model, tmp_path_factory.mktemp("llama") / "llama.log")
    yield started
    started.stop()


@pytest.fixture(scope="module")
def proxy(engine: llama.LlamaServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    started = litellm_proxy.start(engine.url, MODEL, tmp_path_factory.mktemp("litellm"))
    yield started.url
    started.stop()


def exporter_config(proxy: str, key: Path, **gateways: Any) -> dict[str, Any]:
    target = {"url": proxy, "labels": {"gateway": "litellm"}, "bearer_token_file": str(key)}
    return {
        "gateways": {"targets": [target], "tenant_labels": ["end_user"], "max_tenants_per_model": KEEP, **gateways},
        "gpu": {"enabled": "false"},
    }


def test_tenant_tokens_equal_the_usage_the_responses_carried(proxy: str, tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text(litellm_proxy.MASTER_KEY + "\n")
    served, base = serve_exporter(tmp_path, "exporter", "node", f"127.0.0.1:{free_port()}", exporter_config(proxy, key))
    with served as proc:
        exporter = base + "/metrics"
        wait_http(exporter, timeout=10, proc=proc)
        before = fetch(exporter)
        assert 'llm_gateway_up{gateway="litellm",kind="litellm"} 1\n' in before
        assert "llm_gateway_tokens_total{" not in before
        usage: dict[str, dict[str, int]] = {t: {"prompt": 0, "generation": 0} for t in TENANTS}
        for tenant, count in TENANTS.items():
            for n in range(count):
                answer = chat(proxy, tenant, 3 + n)
                usage[tenant]["prompt"] += int(answer["usage"]["prompt_tokens"])
                usage[tenant]["generation"] += int(answer["usage"]["completion_tokens"])
        # the proxy counts in a callback after the answer: wait until its own counters hold every request
        want_requests = sum(TENANTS.values())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            theirs = series(fetch(proxy + "/metrics", litellm_proxy.MASTER_KEY), "litellm_output_tokens_metric_total")
            if sum(theirs.values()) == sum(u["generation"] for u in usage.values()):
                break
            time.sleep(0.5)
        ours = fetch(exporter)
        tokens = series(ours, "llm_gateway_tokens_total")
        requests = series(ours, "llm_gateway_requests_total")

        def got(family: dict[tuple[tuple[str, str], ...], float], tenant: str, last: tuple[str, str]) -> float:
            key = (("gateway", "litellm"), ("tenant", tenant), ("model", MODEL), last)
            return family[key]

        ranked = sorted(TENANTS, key=lambda t: (-(usage[t]["prompt"] + usage[t]["generation"]), t))
        named, folded = ranked[:KEEP], ranked[KEEP:]
        for direction in ("prompt", "generation"):
            for tenant in named:
                assert got(tokens, tenant, ("direction", direction)) == usage[tenant][direction]
            other = sum(usage[t][direction] for t in folded)
            assert got(tokens, "other", ("direction", direction)) == other
        assert {dict(k)["tenant"] for k in tokens} == {*named, "other"}
        assert sum(requests.values()) == want_requests
        assert got(requests, "other", ("outcome", "success")) == sum(TENANTS[t] for t in folded)
        assert f'llm_gateway_tenants_folded{{gateway="litellm",model="{MODEL}"}} {len(folded)}' in ours
        assert litellm_proxy.MASTER_KEY not in ours and "litellm_proxy_master_key" not in ours
    # a second exporter splits the tokens by the model name the clients asked for: the same counts, of one kind
    by_kind = exporter_config(proxy, key, request_kind_labels=["requested_model"], request_kinds=[MODEL])
    served, base = serve_exporter(tmp_path, "kinds", "node", f"127.0.0.1:{free_port()}", by_kind)
    with served as proc:
        wait_http(base + "/metrics", timeout=10, proc=proc)
        split = series(fetch(base + "/metrics"), "llm_gateway_tokens_total")
    assert {k[:-1]: v for k, v in split.items()} == tokens
    assert {k[-1] for k in split} == {("request_kind", MODEL)}
