package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSubcommandHelpAndBadFlags(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		wantStdout string
		wantStderr string
	}{
		{"run help", []string{"run", "--help"}, 0, "Usage: bazinga run [flags]", ""},
		{"run -h lists flags", []string{"run", "-h"}, 0, "--max-parallel int", ""},
		{"status help", []string{"status", "-h"}, 0, "Usage: bazinga status [flags] [ID]", ""},
		{"demo help", []string{"demo", "--help"}, 0, "--keep", ""},
		{"serve help", []string{"serve", "-h"}, 0, "Usage: bazinga serve", ""},
		{"run unknown flag", []string{"run", "--frobnicate", "x"}, 2, "", "bazinga run: unknown flag: --frobnicate"},
		{"status unknown shorthand", []string{"status", "-q"}, 2, "", "unknown shorthand flag: 'q'"},
		{"run bad int", []string{"run", "--max-parallel", "lots", "x"}, 2, "", `invalid argument "lots" for "--max-parallel"`},
		{"run max-parallel=0 given", []string{"run", "x", "--max-parallel=0"}, 2, "", "--max-parallel must be at least 1"},
		{"run missing value", []string{"run", "--repo"}, 2, "", "flag needs an argument: --repo"},
		{"run bad baseline", []string{"run", "x", "--baseline", "maybe"}, 2, "", `--baseline must be pause, accept or off, not "maybe"`},
		{"run -h lists --baseline", []string{"run", "-h"}, 0, "--baseline string", ""},
		{"demo extra args", []string{"demo", "now"}, 2, "", `unexpected arguments ["now"]`},
		{"serve extra args", []string{"serve", "--", "now"}, 2, "", "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, &out, &errOut)
			assert.Equal(t, tt.code, code, "stderr: %s", errOut.String())
			assert.Contains(t, out.String(), tt.wantStdout)
			assert.Contains(t, errOut.String(), tt.wantStderr)
			if tt.code == 2 && tt.name != "run max-parallel=0 given" {
				assert.Contains(t, errOut.String(), "Usage: bazinga", "bad input prints the usage on stderr")
				assert.Empty(t, out.String())
			}
		})
	}
}

func TestSingleDashLongFlags(t *testing.T) {
	fs := newFlags("t")
	fs.String("repo", ".", "")
	fs.Bool("json", false, "")
	fs.Int("max-parallel", 0, "")
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"go-style long flags", []string{"-repo", "d", "-json", "req"}, []string{"--repo", "d", "--json", "req"}},
		{"with =", []string{"-repo=d", "-max-parallel=2"}, []string{"--repo=d", "--max-parallel=2"}},
		{"value after a value flag untouched", []string{"--repo", "-json", "-repo", "-json"}, []string{"--repo", "-json", "--repo", "-json"}},
		{"unknown single-dash left for pflag", []string{"-x", "-verbose"}, []string{"-x", "-verbose"}},
		{"after -- untouched", []string{"req", "--", "-json"}, []string{"req", "--", "-json"}},
		{"bool does not swallow", []string{"-json", "-repo", "d"}, []string{"--json", "--repo", "d"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, singleDashLongFlags(fs, tt.in))
		})
	}
}

func TestInterspersedFlagsAndChanged(t *testing.T) {
	fs := newFlags("run")
	repo := fs.String("repo", ".", "")
	maxPar := fs.Int("max-parallel", 0, "")
	asJSON := fs.Bool("json", false, "")
	var out, errOut bytes.Buffer
	pos, code, ok := parseFlags(fs, []string{"add", "--repo", "d", "rate", "-json", "limiting", "--", "--max-parallel"},
		func(w io.Writer) {}, &out, &errOut)
	require.True(t, ok, errOut.String())
	assert.Equal(t, 0, code)
	assert.Equal(t, []string{"add", "rate", "limiting", "--max-parallel"}, pos)
	assert.Equal(t, "d", *repo)
	assert.True(t, *asJSON)
	assert.Equal(t, 0, *maxPar)
	assert.True(t, fs.Changed("repo"))
	assert.False(t, fs.Changed("max-parallel"), "a flag after -- is an argument")
}
