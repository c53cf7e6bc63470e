#!/usr/bin/env bash
# Build the real peers the test suite runs against, each from a pinned Go module (tools/peers/*/go.mod):
# Prometheus 3 and promtool, Alertmanager, etcd, kube-apiserver, kube-scheduler, kube-controller-manager,
# kubectl, kwok, helm, Thanos, actionlint (which lints .github/workflows), Sloth (SLO specs), go-jsonnet
# (the mixin) and percli (which lints the generated Perses dashboards, against the Perses plugins' schemas
# laid out in $LLM_EXPORTER_CACHE/perses-plugins), and last the Perses server with its web UI and plugin
# bundles (perses-ui: npm builds, scripts/build-perses-ui.sh; the dashboard test looks at it). Binaries go to
# $LLM_EXPORTER_CACHE/bin (default ~/.cache/llm-inference-exporter/bin);
# a stamp per module (the hash of its go.mod and go.sum) makes a second run a no-op.
# Only development needs this; running the exporter needs none of it. Go 1.26+ is taken from PATH or,
# when missing or older, fetched once from the Go module proxy (scripts/ensure-go.sh).
#
#   scripts/build-peers.sh            # build what is missing or out of date
#   scripts/build-peers.sh --print    # print the bin folder and exit
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache="${LLM_EXPORTER_CACHE:-$HOME/.cache/llm-inference-exporter}"
bin="$cache/bin"
if [ "${1:-}" = "--print" ]; then echo "$bin"; exit 0; fi
mkdir -p "$bin"
# one build at a time per machine: a test that asks for a peer waits for a build already under way
exec 9>"$bin/.lock"
flock 9

# Go 1.26+: the one on PATH, or the official toolchain fetched once into the cache
go_cmd=$(bash "$root/scripts/ensure-go.sh")
export PATH="$(dirname "$go_cmd"):$PATH"
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false} -trimpath"

# module folder -> the packages it builds (name of the binary = last path element)
declare -A packages=(
  [etcd]="."
  [prometheus]="github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool"
  [alertmanager]="github.com/prometheus/alertmanager/cmd/alertmanager"
  [kwok]="sigs.k8s.io/kwok/cmd/kwok"
  [kubernetes]="k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl"
  [helm]="helm.sh/helm/v4/cmd/helm"
  [actionlint]="github.com/rhysd/actionlint/cmd/actionlint"
  [perses]="github.com/perses/perses/cmd/percli"
  [thanos]="github.com/thanos-io/thanos/cmd/thanos"
  [sloth]="github.com/slok/sloth/cmd/sloth"
  [jsonnet]="github.com/google/go-jsonnet/cmd/jsonnet"
)
kube_version=$(sed -n 's/^require k8s.io\/kubernetes v//p' tools/peers/kubernetes/go.mod)
# Prometheus 3.x.y is published as module version v0.3xx.y (3.16.0 is v0.316.0)
prom_module=$(sed -n 's/^require github.com\/prometheus\/prometheus v0\.//p' tools/peers/prometheus/go.mod)
prom_version="3.$((${prom_module%%.*} - 300)).${prom_module#*.}"
am_version=$(sed -n 's/^require github.com\/prometheus\/alertmanager v//p' tools/peers/alertmanager/go.mod)
helm_version=$(sed -n 's/^require helm.sh\/helm\/v4 //p' tools/peers/helm/go.mod)
thanos_version=$(sed -n 's/^require github.com\/thanos-io\/thanos v//p' tools/peers/thanos/go.mod)
actionlint_version=$(sed -n 's/^require github.com\/rhysd\/actionlint v//p' tools/peers/actionlint/go.mod)
sloth_version=$(sed -n 's/^require github.com\/slok\/sloth v//p' tools/peers/sloth/go.mod)
perses_version=$(sed -n 's/^require github.com\/perses\/perses v//p' tools/peers/perses/go.mod)
declare -A ldflags=(
  [kubernetes]="-X k8s.io/component-base/version.gitVersion=v$kube_version -X k8s.io/component-base/version.gitMajor=${kube_version%%.*} -X k8s.io/component-base/version.gitMinor=$(echo "$kube_version" | cut -d. -f2) -X k8s.io/component-base/version.gitTreeState=clean"
  [prometheus]="-X github.com/prometheus/common/version.Version=$prom_version"
  [alertmanager]="-X github.com/prometheus/common/version.Version=$am_version"
  [helm]="-X helm.sh/helm/v4/internal/version.version=$helm_version -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
  [thanos]="-X github.com/prometheus/common/version.Version=$thanos_version"
  [actionlint]="-X github.com/rhysd/actionlint.version=$actionlint_version"
  [sloth]="-X github.com/slok/sloth/internal/info.Version=v$sloth_version"
  [perses]="-X github.com/prometheus/common/version.Version=$perses_version"
)
# Thanos' go.mod asks for a newer Go than ensure-go.sh provides: the go command fetches this toolchain
# (from the module proxy, checked against the checksum database) for that module only
declare -A toolchain=([thanos]=go1.27.3)
# build tags of the upstream release builds (Thanos' .promu.yml: its Store API code needs Prometheus'
# slice-backed labels, not the default string-backed ones)
declare -A tags=([thanos]=netgo,slicelabels)
# cheapest first, so a test run that only needs Prometheus has it soonest
order=(etcd actionlint jsonnet sloth perses perses-plugins alertmanager prometheus kwok helm kubernetes thanos perses-ui)
only=("$@")

# Alertmanager's module embeds its web UI from ui/app/dist, which upstream builds with npm and which the
# published module does not contain. The tests use only its API, so it is built from a copy of the
# module (verified by tools/peers/alertmanager/go.sum) with an empty page where the UI would be.
build_alertmanager() {
  local dir="$root/tools/peers/alertmanager" src version
  version=$am_version
  src="$cache/src/alertmanager-$version"
  if [ ! -d "$src" ]; then
    local from
    from=$(cd "$dir" && go mod download -json "github.com/prometheus/alertmanager@v$version" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    rm -rf "$src.tmp" && mkdir -p "$(dirname "$src")" && cp -r "$from" "$src.tmp" && chmod -R u+w "$src.tmp"
    for ui in elm mantine; do
      mkdir -p "$src.tmp/ui/app/dist/$ui"
      echo '<!doctype html><title>Alertmanager</title><p>web UI not built; the API is at /api/v2/' \
        > "$src.tmp/ui/app/dist/$ui/index.html"
    done
    mv "$src.tmp" "$src"
  fi
  (cd "$src" && go build -ldflags="-s -w ${ldflags[alertmanager]}" -o "$bin/alertmanager.tmp" ./cmd/alertmanager)
  mv "$bin/alertmanager.tmp" "$bin/alertmanager"
}

# `percli lint --plugin.path DIR` checks each panel, query and variable against its plugin's CUE schema. DIR
# holds built plugins: each with its package.json (which names its plugins and schema folder), its schemas
# and the mf-manifest.json of its web build, which the published Go modules lack. Only the schemas are used,
# so each plugin is laid out from its module copy (verified by tools/peers/perses-plugins/go.sum) with a
# manifest naming it and its version; the CUE modules its schemas import (Perses' shared, spec and cue/ at
# the versions Perses v0.54.0 requires) go into its cue.mod/pkg/ instead of being fetched from the CUE
# registry, and its cue.mod/module.cue keeps its module path and language version without the registry deps.
build_perses_plugins() {
  local dir="$root/tools/peers/perses-plugins" out="$cache/perses-plugins" plugin from dep dep_dir lang
  rm -rf "$out.tmp" && mkdir -p "$out.tmp"
  for plugin in $(sed -n 's/^[[:space:]]*github.com\/perses\/plugins\/\([a-z]*\) v.*/\1/p' "$dir/go.mod"); do
    from=$(module_dir "$dir" "github.com/perses/plugins/$plugin")
    cp -r "$from" "$out.tmp/$plugin" && chmod -R u+w "$out.tmp/$plugin"
    printf '{"id": "%s", "name": "%s", "metaData": {"buildInfo": {"buildVersion": "%s", "buildName": "%s"}}}\n' \
      "$plugin" "$plugin" "${from##*@v}" "$plugin" > "$out.tmp/$plugin/mf-manifest.json"
    lang=$(sed -n 's/^[[:space:]]*version:[[:space:]]*"\(.*\)"$/\1/p' "$from/cue.mod/module.cue" | head -1)
    printf 'module: "github.com/perses/plugins/%s@v0"\nlanguage: {\n\tversion: "%s"\n}\n' "$plugin" "$lang" \
      > "$out.tmp/$plugin/cue.mod/module.cue"
    for dep in shared spec perses; do
      dep_dir="$out.tmp/$plugin/cue.mod/pkg/github.com/perses/$dep"
      mkdir -p "$dep_dir"
      (cd "$(module_dir "$dir" "github.com/perses/$dep")" && tar cf - --exclude=cue.mod cue) | (cd "$dep_dir" && tar xf -)
    done
    chmod -R u+w "$out.tmp/$plugin"
  done
  rm -rf "$out" && mv "$out.tmp" "$out"
}

# the folder of the module `$2` (at the version the go.mod in `$1` requires), downloaded and verified
module_dir() {
  (cd "$1" && go mod download -json "$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

for module in "${order[@]}"; do
  if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " =~ " $module " ]]; then continue; fi
  dir="$root/tools/peers/$module"
  stamp="$bin/.$module.stamp"
  want=$( (cat "$dir/go.mod" "$dir/go.sum" $(find "$dir" -maxdepth 1 -name '*.go' | sort); echo "${ldflags[$module]:-}${tags[$module]:+ -tags ${tags[$module]}}") | sha256sum | cut -d' ' -f1)
  if [ "$module" = perses-ui ]; then
    # built with npm (scripts/build-perses-ui.sh): its stamp also covers the lockfiles, the stored plugin
    # root files, the plugins' go.mod and the script itself
    want=$( (echo "$want"; find "$dir" "$root/tools/peers/perses-plugins" -type f | sort | xargs cat;
      cat "$root/scripts/build-perses-ui.sh") | sha256sum | cut -d' ' -f1)
  fi
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then continue; fi
  start=$SECONDS
  echo "build-peers: building $module (first run only; the Kubernetes set takes a while on 2 cores)"
  if [ "$module" = alertmanager ]; then build_alertmanager; echo "$want" > "$stamp"; continue; fi
  if [ "$module" = perses-plugins ]; then build_perses_plugins; echo "$want" > "$stamp"; continue; fi
  if [ "$module" = perses-ui ]; then
    # the Perses server with its web UI and the plugins' bundles, laid into the schema folders of
    # perses-plugins
    [ -d "$cache/perses-plugins/prometheus/schemas" ] || build_perses_plugins
    LLM_EXPORTER_CACHE="$cache" bash "$root/scripts/build-perses-ui.sh"; echo "$want" > "$stamp"; continue
  fi
  for pkg in ${packages[$module]}; do
    name=$(basename "$pkg"); [ "$pkg" = "." ] && name=$module
    # -s -w: no symbol tables (smaller binaries); -X: the release's own version string, which the
    # binaries report (/version, --version) and clients check for skew
    (cd "$dir" && GOTOOLCHAIN="${toolchain[$module]:-${GOTOOLCHAIN:-auto}}" go build -tags="${tags[$module]:-}" -ldflags="-s -w ${ldflags[$module]:-}" -o "$bin/$name.tmp" "$pkg")
    mv "$bin/$name.tmp" "$bin/$name"
  done
  echo "$want" > "$stamp"
  echo "build-peers: $module done in $((SECONDS - start)) s"
done
