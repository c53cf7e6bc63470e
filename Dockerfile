# syntax=docker/dockerfile:1
# llm-exporter: both roles in one image (`serve --role node|cluster`). Build from the repository root:
#   docker build -t ghcr.io/llm-inference-exporter/llm-exporter:0.1.0 .
# Every Python package is pinned (requirements.lock, the closure the test suite ran against); the base
# image is pinned to a patch release. Add @sha256:<digest> to PYTHON_IMAGE to pin it byte for byte.
ARG PYTHON_IMAGE=python:3.11.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/llm-exporter
COPY requirements.lock /tmp/requirements.lock
# --no-deps: the lock is the whole closure, so nothing unpinned can slip in; pip check proves it is.
RUN /opt/llm-exporter/bin/pip install --no-deps -r /tmp/requirements.lock
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY exporter ./exporter
# The build backend pinned too, and no build isolation: an isolated build would fetch whatever
# setuptools is newest that day.
RUN /opt/llm-exporter/bin/pip install --no-deps setuptools==84.2.1 \
 && /opt/llm-exporter/bin/pip install --no-deps --no-build-isolation . \
 && /opt/llm-exporter/bin/pip check \
 && /opt/llm-exporter/bin/llm-exporter --version

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="llm-exporter" \
      org.opencontainers.image.description="Prometheus exporter for LLM inference on Kubernetes" \
      org.opencontainers.image.source="https://github.com/llm-inference-exporter/llm-inference-exporter" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/llm-exporter /opt/llm-exporter
ENV PATH=/opt/llm-exporter/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# Non-root by default. Only the node role's pod, which must open the kubelet's root-only
# pod-resources socket, overrides this with runAsUser: 0 (deploy/base/node-daemonset.yaml).
USER 65532:65532
EXPOSE 8490
ENTRYPOINT ["llm-exporter"]
CMD ["serve", "--role", "node"]
