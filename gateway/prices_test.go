package gateway_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
)

func TestDefaultPrices(t *testing.T) {
	p := gateway.DefaultPrices()
	for _, m := range p.Models() {
		assert.NotEmpty(t, m.Checked, m.Name)
		assert.NotEmpty(t, m.Source, m.Name)
		assert.Positive(t, m.Input, m.Name)
		assert.Positive(t, m.Output, m.Name)
	}
	s, ok := p.Lookup("claude-sonnet-4-5")
	require.True(t, ok)
	assert.Equal(t, gateway.Price{Name: "claude-sonnet-4-5", Input: 3_000_000, Output: 15_000_000, CacheWrite: 3_750_000, CacheRead: 300_000,
		Checked: s.Checked, Source: s.Source}, s)
}

func TestPriceLookup(t *testing.T) {
	p := gateway.DefaultPrices()
	cases := []struct {
		model, want string
		ok          bool
	}{
		{"claude-sonnet-4-5", "claude-sonnet-4-5", true},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5", true},
		{"CLAUDE-OPUS-4-1-20250805", "claude-opus-4-1", true},
		{"claude-opus-4-20250514", "claude-opus-4", true},
		{"gpt-4o-2024-08-06", "gpt-4o", true},
		{"gpt-5-mini-2025-08-07", "gpt-5-mini", true},
		{"gpt-5-latest", "gpt-5", true},
		{"gpt-5-pro", "", false}, // a dearer sibling is not priced as gpt-5
		{"gemini-2.5-flash-preview-09-2025", "", false},
		{"mystery", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		got, ok := p.Lookup(c.model)
		assert.Equal(t, c.ok, ok, c.model)
		assert.Equal(t, c.want, got.Name, c.model)
	}
}

func TestPriceOverride(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "prices.yaml")
	require.NoError(t, os.WriteFile(f, []byte(`models:
  - {name: claude-sonnet-4-5, input: 4, output: 20, checked: 2026-11-01, source: contract}
  - {name: my-finetune, input: 0.5, output: 1.5}
`), 0o600))
	p, err := gateway.LoadPrices(f)
	require.NoError(t, err)
	s, _ := p.Lookup("claude-sonnet-4-5-20250929")
	assert.Equal(t, int64(4_000_000), s.Input)
	assert.Zero(t, s.CacheRead, "an override replaces the whole entry")
	ft, ok := p.Lookup("my-finetune")
	require.True(t, ok)
	assert.Equal(t, int64(500_000), ft.Input)
	_, ok = p.Lookup("gpt-5")
	assert.True(t, ok, "built-in entries stay")
	// 1000 input at $0.50/M = 500,000,000 picodollars = 500 µ$.
	assert.Equal(t, int64(500), gateway.PicosToMicros(ft.Cost(gateway.Tokens{Input: 1000})))
}

func TestPriceFileErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"models:\n  - {name: a, input: 1}\n", "input and output prices are required"},
		{"models:\n  - {name: a, input: -1, output: 1}\n", "input price -1 is outside"},
		{"models:\n  - {name: a, input: 1, output: 1, checked: yesterday}\n", "not a YYYY-MM-DD date"},
		{"models:\n  - {name: a, input: 1, output: 1}\n  - {name: A, input: 1, output: 1}\n", "listed twice"},
		{"models:\n  - {name: a, input: 1, output: 1, cached: 1}\n", "field cached not found"},
		{"models: []\n", "no model is priced"},
	} {
		_, err := gateway.ParsePrices([]byte(c.yaml), nil)
		require.Error(t, err, c.yaml)
		assert.Contains(t, err.Error(), c.want)
	}
}

func TestPicosToMicrosRoundsUp(t *testing.T) {
	assert.Equal(t, int64(0), gateway.PicosToMicros(0))
	assert.Equal(t, int64(1), gateway.PicosToMicros(1))
	assert.Equal(t, int64(1), gateway.PicosToMicros(1_000_000))
	assert.Equal(t, int64(2), gateway.PicosToMicros(1_000_001))
}
