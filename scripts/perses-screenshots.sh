#!/usr/bin/env bash
# PNGs of each row of the Perses dashboard, as docs/install.md shows them: the Perses server with its web UI
# (built once by scripts/build-peers.sh perses-ui) serving dashboards/overview.perses.yaml against a real
# Prometheus that scrapes the exporter in front of the replayed vLLM 0.32.0 and LiteLLM 1.110.2 bodies, read
# by Debian's headless Chromium (tests/bundle/perses_scene.py). About three minutes.
#
#   scripts/perses-screenshots.sh [DIR]   # default docs/images/perses
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m tests.bundle.perses_scene "${1:-docs/images/perses}"
