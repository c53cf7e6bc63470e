//go:build tools

// Package tools pins the command this module builds: percli, the Perses CLI, whose `lint` checks the
// generated Perses dashboards.
package tools

import (
	_ "github.com/perses/perses/cmd/percli"
)
