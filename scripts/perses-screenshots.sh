#!/usr/bin/env bash
# PNGs of each row of the Perses dashboard, as docs/install.md shows them: the Perses server with its web UI
# (built once by scripts/build-peers.sh perses-ui) serving dashboards/overview.perses.yaml against a real
# Prometheus that scrapes the exporter in front of the replayed vLLM 0.32.0 and LiteLLM 1.110.2 bodies, read
# by Debian's headless Chromium (tests/bundle/perses_scene.py). About three minutes.
#
# With --prometheus URL, the dashboard is served against that Prometheus instead, e.g. the demo's while
# `llm-exporter demo --hold 600` holds the Thursday incident up (its URL is on the "holding" line); --start
# sets the range shown (default 2m).
#
#   scripts/perses-screenshots.sh [DIR] [--prometheus URL] [--start 10m]   # default DIR docs/images/perses
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs/images/perses
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then out=$1; shift; fi
exec .venv/bin/python -m tests.bundle.perses_scene "$out" "$@"
