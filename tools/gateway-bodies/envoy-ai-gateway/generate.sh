#!/usr/bin/env bash
# Make the Envoy AI Gateway bodies of tests/gateways/data/ again: build main.go inside the ai-gateway module at
# the tag (it imports the module's internal packages; go.mod and go.sum as tagged, modules from the Go proxy)
# and keep what its /metrics answers, unmodified. Durations differ from run to run; names, labels and counts
# do not.
#
#   generate.sh [TAG] [a git clone of github.com/envoyproxy/ai-gateway]   # default: v1.1.0, cloned from GitHub
set -euo pipefail
TAG=${1:-v1.1.0}
repo=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
data=$(cd "$here/../../../tests/gateways/data" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/ai-gateway"
if [ -n "$repo" ]; then
  git -C "$repo" archive "$TAG" | tar -x -C "$work/ai-gateway"
else
  git clone --quiet --depth 1 --branch "$TAG" https://github.com/envoyproxy/ai-gateway "$work/clone"
  git -C "$work/clone" archive "$TAG" | tar -x -C "$work/ai-gateway"
fi
mkdir -p "$work/ai-gateway/cmd/promgen"
src="$here/main-$TAG.go"  # a release whose metrics API differs from main.go's (v0.3.0)
[ -f "$src" ] || src="$here/main.go"
cp "$src" "$work/ai-gateway/cmd/promgen/main.go"
(cd "$work/ai-gateway" && go build -buildvcs=false -o "$work/promgen" ./cmd/promgen)
"$work/promgen" >"$data/envoy-ai-gateway-$TAG.prom"
"$work/promgen" -idle >"$data/envoy-ai-gateway-$TAG-idle.prom"
