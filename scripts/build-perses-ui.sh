#!/usr/bin/env bash
# Build the Perses server WITH its web UI, and the Perses plugins the generated dashboards use (Prometheus
# datasource and queries, TimeSeriesChart, StatChart, Table, Markdown) as the module-federation bundles the
# UI loads, from their published sources: the Go module copies of perses/perses, perses/shared and
# perses/spec (tools/peers/perses-ui/go.mod) and of the plugins (tools/peers/perses-plugins/go.mod), with
# npm packages at the versions of the lockfiles under tools/peers/perses-ui/lock. Called by
# scripts/build-peers.sh (module perses-ui); writes $LLM_EXPORTER_CACHE/bin/perses and
# $LLM_EXPORTER_CACHE/perses-ui-plugins.
#
# Upstream builds the same from its Git repositories. Here four npm packages Perses v0.54.0's lockfile names
# are not served by the registry (@perses-dev/spec 0.2.0, @perses-dev/client 0.54.0, @perses-dev/explore
# 0.54.0, @perses-dev/core 0.53.0), so spec and the shared packages are built from their module copies and
# packed, and the app and the plugins install those packs (tools/peers/perses-ui/local_packages.py).
# The plugin release archives (GitHub) are not reachable, and the module proxy serves the plugins only up
# to Prometheus 0.57.1, TimeSeriesChart and StatChart 0.12.1, Table 0.11.2, Markdown 0.11.1 (Perses
# v0.54.0 bundles 0.58.0, 0.13.0, 0.13.0, 0.13.0, 0.12.0); the plugins' monorepo root files the module
# copies lack (rsbuild.shared.ts and friends) are stored in tools/peers/perses-ui/plugins-root.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
cache="${LLM_EXPORTER_CACHE:-$HOME/.cache/llm-inference-exporter}"
bin="$cache/bin"
dir="$root/tools/peers/perses-ui"
src="$cache/src/perses-ui"
go_cmd=$(bash "$root/scripts/ensure-go.sh")
export PATH="$(dirname "$go_cmd"):$PATH"
export npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false

module_dir() {
  (cd "$1" && go mod download -json "$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}
copy() {  # copy module folder $1 to $2, writable
  rm -rf "$2" && mkdir -p "$(dirname "$2")" && cp -r "$1" "$2" && chmod -R u+w "$2"
}
workspace() {  # $1 workspace folder, $2 its lockfile name under $dir/lock; extra args to local_packages.py
  local folder=$1 lock=$2; shift 2
  python3 "$dir/local_packages.py" "$folder" "$src" 0.54.0 "$@"
  sed "s#@SRC@#$src#g" "$dir/lock/$lock/package-lock.json" > "$folder/package-lock.json"
}

rm -rf "$src" && mkdir -p "$src"
start=$SECONDS
# 1. @perses-dev/spec 0.2.0 from perses/spec's ts/ (its own lockfile, as published)
copy "$(module_dir "$dir" github.com/perses/spec)/ts" "$src/spec"
(cd "$src/spec" && npm ci --no-audit && npm run build && npm pack --pack-destination "$src") >"$src/spec.log" 2>&1
# 2. the shared packages (client, components, dashboards, explore, plugin-system) from perses/shared; its
#    plugin-system pins @perses-dev/core 0.53.0, which the registry lacks: 0.54.0, Perses' own, instead
copy "$(module_dir "$dir" github.com/perses/shared)" "$src/shared"
sed -i 's/"@perses-dev\/core": "0.53.0"/"@perses-dev\/core": "0.54.0"/' "$src/shared/plugin-system/package.json"
workspace "$src/shared" shared
(cd "$src/shared" && npm install && npx turbo run build &&
  for w in client components dashboards explore plugin-system; do (cd "$w" && npm pack --pack-destination "$src"); done) \
  >"$src/shared.log" 2>&1
# 3. the app (ui/ of the Perses module) on those packs; the server embeds its build (ui/app/dist, gzipped,
#    listed in ui/embed.go by upstream's scripts/compress_assets.sh)
copy "$(module_dir "$dir" github.com/perses/perses)" "$src/perses"
copy "$src/perses/ui" "$src/ui"
workspace "$src/ui" ui
(cd "$src/ui" && npm install && npm run build --workspace=@perses-dev/core && cd app && npx rspack build) \
  >"$src/ui.log" 2>&1
cp -r "$src/ui/app/dist" "$src/perses/ui/app/dist"
(cd "$src/perses" && bash scripts/compress_assets.sh >/dev/null &&
  CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/prometheus/common/version.Version=0.54.0" \
    -o "$bin/perses.tmp" ./cmd/perses)
mv "$bin/perses.tmp" "$bin/perses"
echo "build-perses-ui: server and UI in $((SECONDS - start)) s"
# 4. the plugins: the module copies as members of the plugins' monorepo root (plugins-root), each bundled
#    by rsbuild; Prometheus 0.57.1's sources call msToPrometheusDuration, which @perses-dev/core 0.54.0 no
#    longer exports, so it bundles core 0.53.0-beta.4 (the newest 0.53 the registry serves)
copy "$dir/plugins-root" "$src/plugins"
plugins_mod="$root/tools/peers/perses-plugins"
names=$(sed -n 's/^[[:space:]]*github.com\/perses\/plugins\/\([a-z]*\) v.*/\1/p' "$plugins_mod/go.mod")
for plugin in $names; do copy "$(module_dir "$plugins_mod" "github.com/perses/plugins/$plugin")" "$src/plugins/$plugin"; done
python3 - "$src/plugins/package.json" $names <<'PY'
import json, sys
path = sys.argv[1]
pkg = json.load(open(path))
pkg["workspaces"] = sys.argv[2:]
json.dump(pkg, open(path, "w"), indent=2)
PY
workspace "$src/plugins" plugins --core prometheus=0.53.0-beta.4
# --force: the members' peer ranges ask for the 0.53 packages, the set here is 0.54
(cd "$src/plugins" && npm install --force && for plugin in $names; do (cd "$plugin" && npx rsbuild build); done) \
  >"$src/plugins.log" 2>&1
# the plugin folder the server loads: each plugin's schemas laid out for percli (build-peers.sh
# perses-plugins) with its bundle (mf-manifest.json, __mf/) in place of the stub manifest
out="$cache/perses-ui-plugins"
rm -rf "$out.tmp" && mkdir -p "$out.tmp"
for plugin in $names; do
  cp -r "$cache/perses-plugins/$plugin" "$out.tmp/$plugin"
  (cd "$src/plugins/$plugin/dist" && cp -r mf-manifest.json __mf "$out.tmp/$plugin/")
done
rm -rf "$out" && mv "$out.tmp" "$out"
echo "build-perses-ui: done in $((SECONDS - start)) s"
