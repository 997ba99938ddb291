package server

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The variables serve documents are exactly the ones it reads: a variable
// read but not in the tables, or documented but never read, fails here
// (issue 25).
func TestServeHelpMatchesTheVariablesRead(t *testing.T) {
	read := map[string]bool{}
	getenv := func(k string) string { read[k] = true; return "" }
	_, _ = ConfigFromEnv(getenv)
	_, _ = GatewayConfigFromEnv(getenv)
	var got, documented []string
	for k := range read {
		got = append(got, k)
	}
	for _, v := range append(append([]envVar(nil), serveEnv...), gatewayEnv...) {
		documented = append(documented, v.name)
		assert.Contains(t, EnvHelp+GatewayEnvHelp, "  "+v.name+" ", "the help lists %s", v.name)
	}
	sort.Strings(got)
	sort.Strings(documented)
	assert.Equal(t, got, documented)
}

func TestEnvHelpLayout(t *testing.T) {
	text := envHelpText("T:", []envVar{{name: "A", help: strings.Repeat("word ", 40), note: "a note"}})
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	assert.Equal(t, "T:", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "  A"+strings.Repeat(" ", envHelpNameWidth)+"word"))
	for _, l := range lines {
		assert.LessOrEqual(t, len(l), envHelpWidth, l)
	}
	assert.Equal(t, "  a note", lines[len(lines)-1])
}
