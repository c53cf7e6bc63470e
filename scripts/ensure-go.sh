#!/usr/bin/env bash
# Print the path of a `go` command that can build tools/peers (Go 1.26+): the one on PATH when it is new
# enough, else the official toolchain fetched once from the Go module proxy (golang.org/toolchain, the
# same archive `GOTOOLCHAIN=auto` downloads), checked against its pinned SHA-256, kept in the cache.
# Debian's own golang-go (1.19 on bookworm) is too old for these modules.
set -euo pipefail
version=1.26.8
sha256=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7
cache="${LLM_EXPORTER_CACHE:-$HOME/.cache/llm-inference-exporter}"

if command -v go >/dev/null; then
  have=$(go env GOVERSION 2>/dev/null | sed -n 's/^go\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
  if [ -n "$have" ] && [ "${have% *}" -ge 1 ] && [ "${have#* }" -ge 26 ]; then command -v go; exit 0; fi
fi
goroot="$cache/go-$version"
if [ -x "$goroot/bin/go" ]; then echo "$goroot/bin/go"; exit 0; fi

case "$(uname -m)" in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; *) arch=unsupported ;; esac
if [ "$arch" != amd64 ]; then
  echo "ensure-go: install Go $version or newer for $(uname -m) (the pinned archive is linux-amd64)" >&2
  exit 2
fi
proxy="${GOPROXY:-https://proxy.golang.org}"; proxy="${proxy%%,*}"
[ "$proxy" = direct ] || [ "$proxy" = off ] && proxy=https://proxy.golang.org
echo "ensure-go: fetching the Go $version toolchain (about 70 MB, first run only)" >&2
mkdir -p "$cache"
zip="$cache/go-$version.zip"
curl -fsSL -o "$zip.tmp" "$proxy/golang.org/toolchain/@v/v0.0.1-go$version.linux-$arch.zip"
echo "$sha256  $zip.tmp" | sha256sum -c --quiet
# unpack keeping the executable bits (Python's zipfile alone drops them)
python3 - "$zip.tmp" "$goroot.tmp" <<'PY'
import os, sys, zipfile
archive, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(archive) as z:
    for info in z.infolist():
        # entries are named golang.org/toolchain@VERSION/...; the part after that prefix is GOROOT's
        name = info.filename.partition("@")[2].partition("/")[2]
        if not name or name.endswith("/"):
            continue
        path = os.path.join(dest, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with z.open(info) as src, open(path, "wb") as out:
            out.write(src.read())
        os.chmod(path, (info.external_attr >> 16) & 0o777 or 0o644)
PY
rm -rf "$goroot" && mv "$goroot.tmp" "$goroot" && rm -f "$zip.tmp"
echo "$goroot/bin/go"
