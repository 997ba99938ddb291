package local

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/internal/realcli"
	"github.com/bazinga-bot/bazinga/internal/realteam"
)

// billed is a script wrapper that puts a usage of its own on every answer the team gives (whole hundreds of
// tokens, so every price in the table gives whole millionths of a dollar) and keeps what each answer said.
type billed struct {
	next modelfake.Script
	mu   sync.Mutex
	said []struct {
		model string
		tok   gateway.Tokens
	}
}

func (b *billed) script(r modelfake.Request) modelfake.Reply {
	rep := b.next(r)
	if rep.Status != 0 || rep.Hang || rep.HangAfterStart || rep.FailMidStream {
		return rep
	}
	u := modelfake.Usage{InputTokens: 1000 + 100*(r.Seq%7), OutputTokens: 100 * (1 + r.Seq%5), CacheReadTokens: 2000, CacheWriteTokens: 300}
	if r.API == modelfake.OpenAI {
		u.CacheWriteTokens = 0 // OpenAI reports no cache writes
	}
	rep.Usage = u
	b.mu.Lock()
	b.said = append(b.said, struct {
		model string
		tok   gateway.Tokens
	}{r.Model, gateway.Tokens{Input: int64(u.InputTokens), Output: int64(u.OutputTokens), CacheRead: int64(u.CacheReadTokens), CacheWrite: int64(u.CacheWriteTokens)}})
	b.mu.Unlock()
	return rep
}

// total is what the answers said, priced by the table the gateway uses: the cost the session must show.
func (b *billed) total(t *testing.T) (micros int64, tok gateway.Tokens) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := gateway.DefaultPrices()
	for _, s := range b.said {
		price, ok := p.Lookup(s.model)
		if !ok {
			price = p.Ceiling()
		}
		c := price.Cost(s.tok)
		require.Zero(t, c%1_000_000, "whole millionths")
		micros += c / 1_000_000
		tok.Add(s.tok)
	}
	return micros, tok
}

// The real claude and codex, talking to the scripted model server through the in-process gateway: the session's
// cost is exactly what the server's answers said, priced by the table, and nothing the session kept holds the key.
func TestRealCLISessionThroughGateway(t *testing.T) {
	for _, cli := range []string{"claude", "codex"} {
		t.Run(cli, func(t *testing.T) { realCLIThroughGateway(t, cli) })
	}
}

func realCLIThroughGateway(t *testing.T, cli string) {
	var bin string
	if cli == "claude" {
		bin = realcli.Claude(t)
	} else {
		bin = realcli.Codex(t)
	}
	tm := realteam.New(cli)
	b := &billed{next: tm.Script}
	srv := modelfake.Start(t, b.script)
	files := realteam.Repo()
	if cli == "codex" {
		// As in TestRealCLISession: the models codex plays with the scripted server.
		files[".github/bazinga.yml"] = "models: {pm: gpt-5.5, developer: gpt-5.5, senior: gpt-5.5, qa: gpt-5.5, tech_lead: gpt-5.5, investigator: gpt-5.5, requirements: gpt-5.5, validator: gpt-5.5, escalation: gpt-5.5}\n"
	}
	repo := gitRepo(t, files)
	home := t.TempDir()
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	require.NoError(t, err)
	t.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
	t.Setenv("HOME", home)
	var cmd string
	var pass []string
	gw := &GatewayOptions{}
	switch cli {
	case "claude":
		t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude"))
		t.Setenv("ANTHROPIC_API_KEY", realKey)
		cmd = bin + " -p --model {model}"
		pass = []string{"ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "GOCACHE"}
		gw.Anthropic = gateway.UpstreamConfig{BaseURL: srv.URL, Key: realKey}
	case "codex":
		t.Setenv("CODEX_HOME", filepath.Join(home, ".codex"))
		t.Setenv("CODEX_API_KEY", realKey)
		require.NoError(t, os.MkdirAll(filepath.Join(home, ".codex"), 0o755))
		// codex's built-in provider, pointed at the gateway by OPENAI_BASE_URL (the gateway sets it per step).
		cmd = bin + " exec --disable plugins"
		pass = []string{"CODEX_API_KEY", "CODEX_HOME", "GOCACHE"}
		gw.OpenAI = gateway.UpstreamConfig{BaseURL: srv.URL, Key: realKey}
	}
	test := "go test ./..."
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	res, err := Run(ctx, Options{Repo: repo, Requirements: "Add Mul to calc", AgentCommand: cmd,
		TestCommand: &test, PassEnv: pass, Out: &out, JSON: true, Gateway: gw})
	require.NoError(t, err, out.String())
	require.True(t, res.Verified(), "%s: %s\n%s\nunhandled: %v", res.Status, res.Reason, out.String(), srv.Unhandled())

	micros, tok := b.total(t)
	require.Positive(t, micros)
	u := res.Session.Usage
	assert.Equal(t, micros, u.CostMicros, "metered cost = what the answers said")
	assert.Equal(t, tok.Input, u.InputTokens)
	assert.Equal(t, tok.Output, u.OutputTokens)
	assert.Equal(t, tok.CacheRead, u.CacheReadTokens)
	assert.Equal(t, tok.CacheWrite, u.CacheWriteTokens)
	assert.Equal(t, u.Steps, u.Priced)
	for _, r := range srv.Requests() {
		if cli == "claude" {
			assert.Equal(t, realKey, r.Header.Get("x-api-key"), "upstream gets the real key")
		} else {
			assert.Equal(t, "Bearer "+realKey, r.Header.Get("Authorization"), "upstream gets the real key")
		}
	}
	// Nothing the session kept (state, log, the CLI's whole transcripts) holds the key.
	require.NoError(t, filepath.WalkDir(filepath.Join(repo, ".bazinga"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			assert.NotContains(t, string(b), realKey, p)
		}
		return err
	}))
	s := loadState(t, repo, res.ID)
	for _, st := range s.Steps {
		if st.Usage != nil {
			assert.Equal(t, 1, st.Usage.Priced, st.ID)
		}
	}
}
