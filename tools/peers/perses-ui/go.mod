// The sources of the Perses server with its web UI (scripts/build-perses-ui.sh): Perses itself (the Go server
// and ui/, the app), perses/shared (the npm packages @perses-dev/client, components, dashboards, explore and
// plugin-system) and perses/spec (@perses-dev/spec, whose ts/ folder is its npm package), at the versions
// Perses v0.54.0's ui/package-lock.json asks for. The plugins come from tools/peers/perses-plugins.
// Keep the requires by hand: `go mod tidy` drops them, no Go code imports them.
module llm-inference-exporter/tools/peers/perses-ui

go 1.26.5

require (
	github.com/perses/perses v0.54.0
	github.com/perses/shared v0.54.0
	github.com/perses/spec v0.2.0
)
