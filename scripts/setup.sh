#!/usr/bin/env bash
# Set up everything the exporter and its test suite need on a Debian machine:
# Debian packages (C and C++ compilers, make, cmake, curl, venv, npm, Chromium), then the project venv. Idempotent: a second run only checks.
# The vLLM CPU environment is created on first use, in a cache folder; Prometheus 3, Alertmanager and the
# other test peers are built from pinned Go modules by scripts/build-peers.sh (`make test` runs it).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
# the test peers: llama.cpp's llama-server is built with cmake and g++; the Go toolchain, when missing,
# is fetched with curl (scripts/ensure-go.sh)
command -v g++ >/dev/null || need+=(g++)
command -v cmake >/dev/null || need+=(cmake)
command -v curl >/dev/null || need+=(curl)
# the Perses dashboard test: its UI is built with npm (scripts/build-perses-ui.sh) and looked at with a
# headless Chromium (Debian's)
command -v npm >/dev/null || need+=(npm)
command -v chromium >/dev/null || need+=(chromium)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if ! command -v kubectl >/dev/null; then need+=(kubernetes-client); fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "installing Debian packages: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ requirements.lock -nt "$stamp" ]; then
  # the runtime dependencies at the versions the image pins (requirements.lock)
  .venv/bin/python -m pip install -q --disable-pip-version-check -c requirements.lock -e '.[dev]'
  touch "$stamp"
fi
