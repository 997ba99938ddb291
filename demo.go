// Package bazinga holds what the binary carries from the repository itself:
// the demo repository and its scenario.
package bazinga

import "embed"

// DemoFS holds testdata/demo (the demo's Go module; its go.mod is stored as
// go.mod.txt because a directory with a go.mod cannot be embedded) and
// testdata/demo-scenario.json (the scripted team's lines).
//
//go:embed all:testdata/demo testdata/demo-scenario.json
var DemoFS embed.FS
