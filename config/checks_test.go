package config

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

func TestParseConfigBaselineAndChecks(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want func(*pipeline.Config)
	}{
		{"baseline accept", "tests:\n  baseline: accept\n", func(c *pipeline.Config) { c.Tests.Baseline = pipeline.BaselineAccept }},
		{"baseline off", "tests:\n  baseline: off\n", func(c *pipeline.Config) { c.Tests.Baseline = pipeline.BaselineOff }},
		{"junit", "tests:\n  junit: 'reports/*.xml'\n", func(c *pipeline.Config) { c.Tests.JUnit = "reports/*.xml" }},
		{"empty checks", "checks: {}\n", func(*pipeline.Config) {}},
		{"shorthand and order kept", "checks:\n  vet: go vet ./...\n  lint: golangci-lint run\n", func(c *pipeline.Config) {
			c.Checks = []pipeline.CheckConfig{{Name: "vet", Command: "go vet ./...", Required: true}, {Name: "lint", Command: "golangci-lint run", Required: true}}
		}},
		{"the issue's example", `checks: {lint: {command: "golangci-lint run", required: true}, security: {command: "gosec ./...", required: false}}`, func(c *pipeline.Config) {
			c.Checks = []pipeline.CheckConfig{{Name: "lint", Command: "golangci-lint run", Required: true}, {Name: "security", Command: "gosec ./...", Required: false}}
		}},
		{"timeout", "checks:\n  cover:\n    command: ./cover.sh\n    timeout: 90s\n", func(c *pipeline.Config) {
			c.Checks = []pipeline.CheckConfig{{Name: "cover", Command: "./cover.sh", Required: true, Timeout: pipeline.Duration(90 * time.Second)}}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.in))
			require.NoError(t, err)
			want := pipeline.DefaultConfig()
			tc.want(&want)
			assert.Equal(t, want, cfg)
			require.NoError(t, Validate(cfg))
			out, err := Marshal(cfg)
			require.NoError(t, err)
			back, err := ParseConfig(out)
			require.NoError(t, err, "%s", out)
			assert.Equal(t, cfg, back, "%s", out)
		})
	}
}

func TestParseConfigBaselineAndChecksErrors(t *testing.T) {
	tests := []struct {
		name string
		in   string
		line int
		key  string
		msg  string
	}{
		{"bad mode", "tests:\n  baseline: ignore\n", 2, "tests.baseline", `want "pause", "accept" or "off", got "ignore"`},
		{"mode as bool", "tests:\n  baseline: false\n", 2, "tests.baseline", `want a string, got false`},
		{"absolute junit", "tests:\n  junit: /tmp/*.xml\n", 2, "tests.junit", "relative to the repository root"},
		{"junit escapes", "tests:\n  junit: ../x/*.xml\n", 2, "tests.junit", "no .."},
		{"junit bad glob", "tests:\n  junit: 'a/[x.xml'\n", 2, "tests.junit", "not a valid glob"},
		{"checks a list", "checks:\n  - lint\n", 2, "checks", "want a mapping of check names to commands"},
		{"check bad name", "checks:\n  'my lint': x\n", 2, "checks", `check name "my lint"`},
		{"check empty command", "checks:\n  lint: ''\n", 2, "checks.lint", "want the command to run"},
		{"check number", "checks:\n  lint: 3\n", 2, "checks.lint", "want a command string or a mapping"},
		{"check without command", "checks:\n  lint:\n    required: true\n", 3, "checks.lint", "a check needs a command"},
		{"check typo", "checks:\n  lint:\n    command: x\n    requird: false\n", 4, "checks.lint.requird", `did you mean "checks.lint.required"?`},
		{"check yes", "checks:\n  lint:\n    command: x\n    required: yes\n", 4, "checks.lint.required", "want true or false"},
		{"check timeout", "checks:\n  lint:\n    command: x\n    timeout: 5\n", 4, "checks.lint.timeout", "want a Go duration"},
		{"check negative timeout", "checks:\n  lint:\n    command: x\n    timeout: -1m\n", 4, "checks.lint.timeout", "positive"},
		{"duplicate check", "checks:\n  lint: x\n  lint: y\n", 3, "checks.lint", `duplicate check "checks.lint" (lines 2 and 3)`},
		{"too many", "checks:\n" + strings.Repeat("  c", 0) + func() string {
			var b strings.Builder
			for i := range pipeline.MaxChecks + 1 {
				b.WriteString("  c" + string(rune('a'+i)) + ": x\n")
			}
			return b.String()
		}(), 2, "checks", "at most 10 checks, got 11"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.in))
			require.Error(t, err)
			errs := configErrors(t, err)
			require.Len(t, errs, 1, "%v", err)
			assert.Equal(t, tc.line, errs[0].Line, "%v", err)
			assert.Equal(t, tc.key, errs[0].Key, "%v", err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestValidateBaselineAndChecks(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*pipeline.Config)
		msg  string
	}{
		{"mode", func(c *pipeline.Config) { c.Tests.Baseline = "sometimes" }, `tests.baseline: want "pause", "accept" or "off", got "sometimes"`},
		{"check name", func(c *pipeline.Config) { c.Checks = []pipeline.CheckConfig{{Name: "", Command: "x"}} }, `checks: check name ""`},
		{"check command", func(c *pipeline.Config) { c.Checks = []pipeline.CheckConfig{{Name: "lint", Command: " "}} }, "checks: lint.command: want the command"},
		{"duplicate", func(c *pipeline.Config) {
			c.Checks = []pipeline.CheckConfig{{Name: "a", Command: "x"}, {Name: "a", Command: "y"}}
		}, `check "a" is listed twice`},
		{"timeout", func(c *pipeline.Config) { c.Checks = []pipeline.CheckConfig{{Name: "a", Command: "x", Timeout: -1}} }, "a.timeout: want a positive duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := pipeline.DefaultConfig()
			tc.mod(&c)
			err := Validate(c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	// The engine refuses an unknown mode too, but a hand-built zero value means pause.
	c := pipeline.DefaultConfig()
	c.Tests.Baseline = ""
	assert.NoError(t, c.EngineError())
	c.Tests.Baseline = "sometimes"
	assert.ErrorContains(t, c.EngineError(), "tests.baseline")
}
