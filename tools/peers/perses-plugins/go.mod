// The Perses plugins whose CUE schemas `percli lint --plugin.path` checks the generated Perses dashboards
// against (tests/bundle/test_perses.py), and the CUE modules those schemas import (shared, spec and Perses'
// own cue/). Nothing here is compiled: scripts/build-peers.sh lays the module copies out as a plugin folder.
// The newest version of each plugin the Go module proxy serves at or below the one Perses v0.54.0 bundles
// (its scripts/plugin/plugin.yaml: Prometheus 0.58.0, TimeSeriesChart, StatChart and Table 0.13.0,
// Markdown 0.12.0). Keep the requires by hand: `go mod tidy` drops them, no Go code imports them.
module llm-inference-exporter/tools/peers/perses-plugins

go 1.26.5

require (
	github.com/perses/perses v0.54.0
	github.com/perses/plugins/markdown v0.11.1
	github.com/perses/plugins/prometheus v0.57.1
	github.com/perses/plugins/statchart v0.12.1
	github.com/perses/plugins/table v0.11.2
	github.com/perses/plugins/timeserieschart v0.12.1
	github.com/perses/shared v0.54.0
	github.com/perses/spec v0.2.0-rc.0
)
