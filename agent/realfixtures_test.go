package agent

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The claude and codex drivers read what the real binaries printed
// (internal/realcli/testdata: the pinned CLIs run against the scripted model
// server, every case of its README): each ending is named as the CLI meant
// it, and every run that got an answer reports its usage.
func TestRealCLIOutputs(t *testing.T) {
	want := []struct {
		cli, name string
		kind      FailureKind
	}{
		{"claude", "api-error-400-prompt-too-long", FailureUsage},
		{"claude", "api-error-401", FailureAuth},
		{"claude", "api-error-429", FailureRateLimited},
		{"claude", "api-error-500", FailureAPI},
		{"claude", "api-error-529", FailureOverloaded},
		{"claude", "api-error-midstream", FailureOverloaded},
		{"claude", "bypass-as-root-refused", FailureNoAnswer},
		{"claude", "bypass-is-sandbox", FailureNone},
		{"claude", "hang-api-timeout", FailureAPI},
		{"claude", "hang-killed", FailureNoAnswer},
		{"claude", "hang-sigint", FailureExecution},
		{"claude", "hang-sigterm", FailureNoAnswer},
		{"claude", "hang-stalled-stream-killed", FailureNoAnswer},
		{"claude", "implementer", FailureNone},
		{"claude", "large-answer", FailureNone},
		{"claude", "max-budget", FailureBudget},
		{"claude", "max-turns", FailureMaxTurns},
		{"claude", "permission-denied", FailureNone},
		{"claude", "pm", FailureNone},
		{"claude", "retry-429", FailureNone},
		{"claude", "retry-500", FailureNone},
		{"claude", "retry-529", FailureNone},
		{"claude", "reviewer", FailureNone},
		{"claude", "structured-output-missing", FailureNone},
		{"claude", "structured-output", FailureNone},
		{"claude", "unreachable", FailureAPI},
		{"codex", "api-error-400", FailureUsage},
		{"codex", "api-error-401", FailureAuth},
		{"codex", "api-error-429-no-retry-after", FailureRateLimited},
		{"codex", "api-error-429", FailureRateLimited},
		{"codex", "api-error-500", FailureAPI},
		{"codex", "api-error-context-length", FailureUsage},
		{"codex", "api-error-insufficient-quota", FailureQuota},
		{"codex", "api-error-response-failed", FailureAPI},
		{"codex", "builtin-codex-api-key", FailureNone},
		{"codex", "builtin-openai-api-key", FailureAuth},
		{"codex", "hang-killed", FailureNoAnswer},
		{"codex", "hang-sigint", FailureNoAnswer},
		{"codex", "hang-sigterm", FailureNoAnswer},
		{"codex", "hang-stalled-stream-idle-timeout", FailureAPI},
		{"codex", "implementer", FailureNone},
		{"codex", "large-answer", FailureNone},
		{"codex", "max-turns-config", FailureNoAnswer},
		{"codex", "max-turns-flag", FailureNoAnswer},
		{"codex", "output-schema", FailureNone},
		{"codex", "read-only", FailureNone},
		{"codex", "retry-429", FailureNone},
		{"codex", "retry-500", FailureNone},
		{"codex", "retry-503", FailureNone},
		{"codex", "retry-response-failed", FailureNone},
		{"codex", "unreachable-default", FailureAPI},
		{"codex", "unreachable", FailureAPI},
	}
	seen := map[string]bool{}
	for _, tc := range want {
		seen[tc.cli+"/"+tc.name] = true
		t.Run(tc.cli+"/"+tc.name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "internal", "realcli", "testdata", tc.cli, tc.name+".jsonl"))
			require.NoError(t, err)
			r := drivers[tc.cli].NewReader()
			w := newLineWriter(r, MaxLineBytes)
			_, _ = w.Write(b)
			w.close()
			f := r.Finish(nil)
			if tc.kind == FailureNone {
				require.Nil(t, f.Failure)
				assert.True(t, f.HasAnswer)
				require.NotNil(t, f.Usage, "an answered run reports its usage")
				assert.Positive(t, f.Usage.InputTokens+f.Usage.CacheReadTokens)
				if tc.cli == "claude" {
					assert.Equal(t, 1, f.Usage.Priced, "claude reports dollars")
				}
				return
			}
			require.NotNil(t, f.Failure)
			assert.Equal(t, tc.kind, f.Failure.Kind, f.Failure.Message)
			assert.False(t, f.HasAnswer, "a failed run's text is not an answer")
		})
	}
	// Every captured run is classified here.
	for _, cli := range []string{"claude", "codex"} {
		files, err := filepath.Glob(filepath.Join("..", "internal", "realcli", "testdata", cli, "*.jsonl"))
		require.NoError(t, err)
		sort.Strings(files)
		for _, f := range files {
			name := cli + "/" + strings.TrimSuffix(filepath.Base(f), ".jsonl")
			assert.True(t, seen[name], "%s has no expectation", name)
		}
	}
}
