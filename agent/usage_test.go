package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// The fixtures in testdata/usage are written from the CLIs' documented
// output formats (see readUsage): claude -p --output-format json and
// stream-json, codex exec --json (thread events and the older msg events).
func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "usage", name))
	require.NoError(t, err)
	return b
}

func TestUsageFromCLIOutput(t *testing.T) {
	tests := []struct {
		name       string
		role       pipeline.Role
		stdout     string // fixture name
		file       string
		wantStatus pipeline.Status
		wantSource string
		want       *pipeline.Usage
		wantNote   string
	}{
		{
			name: "claude json", role: pipeline.RoleDeveloper, stdout: "claude_json.txt",
			wantStatus: pipeline.StatusReadyForQA, wantSource: UsageClaude,
			want: &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 421_308, InputTokens: 12034, OutputTokens: 3201,
				CacheReadTokens: 40210, CacheWriteTokens: 8123},
		},
		{
			name: "claude stream-json: the result line, not the per-message usage", role: pipeline.RoleQA, stdout: "claude_stream.txt",
			wantStatus: pipeline.StatusPass, wantSource: UsageClaude,
			want: &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 18_700, InputTokens: 2000, OutputTokens: 52, CacheReadTokens: 1500},
		},
		{
			name: "claude error result still reports its cost", role: pipeline.RoleDeveloper, stdout: "claude_error.txt",
			wantStatus: pipeline.StatusPartial, wantSource: UsageClaude,
			want: &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 2_750_000, InputTokens: 80000, OutputTokens: 21000,
				CacheReadTokens: 900000, CacheWriteTokens: 12000},
		},
		{
			name: "codex exec --json: tokens, no cost; cached input counted apart", role: pipeline.RoleDeveloper, stdout: "codex_exec.txt",
			wantStatus: pipeline.StatusReadyForReview, wantSource: UsageCodex,
			want: &pipeline.Usage{Steps: 1, InputTokens: 315, CacheReadTokens: 24448, OutputTokens: 122},
		},
		{
			name: "codex legacy token_count: the thread total", role: pipeline.RoleDeveloper, stdout: "codex_legacy.txt",
			wantStatus: pipeline.StatusBlocked, wantSource: UsageCodex,
			want: &pipeline.Usage{Steps: 1, InputTokens: 4100, CacheReadTokens: 1000, OutputTokens: 420},
		},
		{
			name: "the CLI's report wins over the result file's", role: pipeline.RoleQA, stdout: "claude_stream.txt",
			file:       `{"status":"PASS","usage":{"cost_usd":0.0001,"input_tokens":1,"output_tokens":1}}`,
			wantStatus: pipeline.StatusPass, wantSource: UsageClaude,
			want:     &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 18_700, InputTokens: 2000, OutputTokens: 52, CacheReadTokens: 1500},
			wantNote: "took claude's report",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ParseResult(tc.role, []byte(tc.file), fixture(t, tc.stdout))
			assert.Equal(t, tc.wantStatus, p.Result.Status, "notes: %v", p.Notes)
			assert.Equal(t, tc.wantSource, p.UsageSource)
			assert.Equal(t, tc.want, p.Usage)
			if tc.wantNote != "" {
				assert.Contains(t, strings.Join(p.Notes, "\n"), tc.wantNote)
			}
		})
	}
}

func TestUsageFromResult(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		stdout   string
		want     *pipeline.Usage
		wantNote string
	}{
		{
			name: "result file usage",
			file: `{"status":"PASS","usage":{"cost_usd":0.12,"input_tokens":1000,"output_tokens":200,"cache_read_tokens":50,"cache_write_tokens":7}}`,
			want: &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 120_000, InputTokens: 1000, OutputTokens: 200, CacheReadTokens: 50, CacheWriteTokens: 7},
		},
		{
			name: "claude's key names in a result file",
			file: `{"status":"PASS","usage":{"total_cost_usd":1.5,"input_tokens":10,"output_tokens":2,"cache_creation_input_tokens":3,"cache_read_input_tokens":4}}`,
			want: &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 1_500_000, InputTokens: 10, OutputTokens: 2, CacheReadTokens: 4, CacheWriteTokens: 3},
		},
		{
			name: "tokens only", file: `{"status":"PASS","usage":{"input_tokens":10,"output_tokens":2}}`,
			want: &pipeline.Usage{Steps: 1, InputTokens: 10, OutputTokens: 2},
		},
		{
			name: "usage of a result on stdout", stdout: `{"status":"PASS","usage":{"cost_usd":0.5}}`,
			want: &pipeline.Usage{Steps: 1, Priced: 1, CostMicros: 500_000},
		},
		{name: "no usage", file: `{"status":"PASS"}`},
		{name: "negative cost", file: `{"status":"PASS","usage":{"cost_usd":-1,"input_tokens":10}}`, wantNote: "cost_usd -1 is outside"},
		{name: "absurd cost", file: `{"status":"PASS","usage":{"cost_usd":1e9}}`, wantNote: "is outside 0 to 10000"},
		{name: "huge exponent", file: `{"status":"PASS","usage":{"cost_usd":1e999}}`, wantNote: "not a finite number"},
		{name: "string tokens", file: `{"status":"PASS","usage":{"input_tokens":"10","output_tokens":1}}`, wantNote: "input_tokens is not a number"},
		{name: "fractional tokens", file: `{"status":"PASS","usage":{"input_tokens":1.5}}`, wantNote: "not a whole number"},
		{name: "too many tokens", file: `{"status":"PASS","usage":{"output_tokens":20000000000}}`, wantNote: "not a whole number from 0"},
		{name: "not an object", file: `{"status":"PASS","usage":[1,2]}`, wantNote: "not a JSON object"},
		{name: "empty object", file: `{"status":"PASS","usage":{}}`, wantNote: "no cost or token counts"},
		{
			name:     "malformed claude result: noted, the result still parsed",
			stdout:   `{"type":"result","subtype":"success","is_error":false,"result":"Status: PASS","total_cost_usd":"free"}`,
			wantNote: "usage in claude's result ignored",
		},
		{
			name:     "codex cached more than input",
			stdout:   `{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":9,"output_tokens":1}}` + "\n" + `{"status":"PASS"}`,
			wantNote: "cached_input_tokens 9 is more than input_tokens 5",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := ParseResult(pipeline.RoleQA, []byte(tc.file), []byte(tc.stdout))
			assert.Equal(t, pipeline.StatusPass, p.Result.Status, "usage never changes the result; notes: %v", p.Notes)
			assert.Equal(t, tc.want, p.Usage)
			if tc.want != nil {
				require.NoError(t, p.Usage.Check())
			}
			if tc.wantNote != "" {
				assert.Contains(t, strings.Join(p.Notes, "\n"), tc.wantNote)
				assert.Nil(t, p.Usage)
			}
		})
	}
}

func TestUsageHostileOutput(t *testing.T) {
	// Many candidate lines: only the newest few are decoded, and nothing panics.
	var b strings.Builder
	for i := 0; i < 5000; i++ {
		b.WriteString(`{"type":"result","usage":{"input_tokens":-1}}` + "\n")
	}
	b.WriteString(`{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":1}}` + "\n")
	p := ParseResult(pipeline.RoleQA, nil, []byte(b.String()))
	assert.Equal(t, &pipeline.Usage{Steps: 1, InputTokens: 10, OutputTokens: 1}, p.Usage)
	p = ParseResult(pipeline.RoleQA, nil, []byte(strings.Repeat(`{"type":"turn.completed"`+"\n", 10000)))
	assert.Nil(t, p.Usage)
}

// BenchmarkReadUsage reads usage from 1 MiB of output, the most the runner
// keeps: a codex run of 1 MiB of events ending in turn.completed, and
// hostile output where every line looks like a usage report but is not.
func BenchmarkReadUsage(b *testing.B) {
	var codex, hostile strings.Builder
	for codex.Len() < 1<<20 {
		codex.WriteString(`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"go test ./...","aggregated_output":"ok","exit_code":0,"status":"completed"}}` + "\n")
	}
	codex.WriteString(`{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}` + "\n")
	for hostile.Len() < 1<<20 {
		hostile.WriteString(`{"type":"result","usage":{"input_tokens":"x"},"pad":"` + strings.Repeat("y", 200) + `"}` + "\n")
	}
	for _, bc := range []struct {
		name string
		out  []byte
	}{{"codex-1MiB", []byte(codex.String())}, {"hostile-1MiB", []byte(hostile.String())}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.out)))
			for b.Loop() {
				var notes []string
				readUsage(bc.out, nil, &notes)
			}
		})
	}
}
