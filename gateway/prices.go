package gateway

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

//go:embed prices.yaml
var defaultPricesYAML []byte

// Price is one model's price per token kind, in millionths of a US dollar per million tokens — which is also
// picodollars (10⁻¹² $) per token, so a cost is an exact integer product.
type Price struct {
	Name       string
	Input      int64
	Output     int64
	CacheWrite int64
	CacheRead  int64
	Checked    string // the date the figures were compared with Source
	Source     string
}

// Cost is what t costs at p, in picodollars.
func (p Price) Cost(t Tokens) int64 {
	return satAdd(satAdd(satMul(t.Input, p.Input), satMul(t.Output, p.Output)),
		satAdd(satMul(t.CacheWrite, p.CacheWrite), satMul(t.CacheRead, p.CacheRead)))
}

// Prices is a price table.
type Prices struct {
	byName  map[string]Price
	ceiling Price // the highest price of each kind in the table: what an unknown model is charged against limits
}

type priceFile struct {
	Models []struct {
		Name       string   `yaml:"name"`
		Input      *float64 `yaml:"input"`
		Output     *float64 `yaml:"output"`
		CacheWrite *float64 `yaml:"cache_write"`
		CacheRead  *float64 `yaml:"cache_read"`
		Checked    string   `yaml:"checked"`
		Source     string   `yaml:"source"`
	} `yaml:"models"`
}

// maxPricePerMTok bounds a configured price ($100,000 per million tokens), so a typo cannot overflow a cost.
const maxPricePerMTok = 100_000

// DefaultPrices is the table in the repository (prices.yaml).
func DefaultPrices() *Prices {
	p, err := ParsePrices(defaultPricesYAML, nil)
	if err != nil {
		panic(fmt.Sprintf("gateway: the built-in price table is invalid: %v", err)) // caught by TestDefaultPrices
	}
	return p
}

// LoadPrices reads an override file and lays it over the built-in table: an entry of the same name replaces the
// built-in one, others are added.
func LoadPrices(path string) (*Prices, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	p, err := ParsePrices(b, DefaultPrices())
	if err != nil {
		return nil, fmt.Errorf("price table %s: %w", path, err)
	}
	return p, nil
}

// ParsePrices reads a table in the prices.yaml shape over base (nil: an empty table).
func ParsePrices(b []byte, base *Prices) (*Prices, error) {
	var f priceFile
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	out := &Prices{byName: map[string]Price{}}
	if base != nil {
		for k, v := range base.byName {
			out.byName[k] = v
		}
	}
	var problems []string
	seen := map[string]bool{}
	for i, m := range f.Models {
		name := strings.ToLower(strings.TrimSpace(m.Name))
		where := fmt.Sprintf("models[%d] %q", i, m.Name)
		if name == "" {
			problems = append(problems, fmt.Sprintf("models[%d]: no name", i))
			continue
		}
		if seen[name] {
			problems = append(problems, where+": listed twice")
			continue
		}
		seen[name] = true
		if m.Input == nil || m.Output == nil {
			problems = append(problems, where+": input and output prices are required")
			continue
		}
		if m.Checked != "" {
			if _, err := time.Parse(time.DateOnly, m.Checked); err != nil {
				problems = append(problems, where+": checked "+m.Checked+" is not a YYYY-MM-DD date")
			}
		}
		p := Price{Name: name, Checked: m.Checked, Source: m.Source}
		for _, k := range []struct {
			kind string
			v    *float64
			dst  *int64
		}{{"input", m.Input, &p.Input}, {"output", m.Output, &p.Output}, {"cache_write", m.CacheWrite, &p.CacheWrite}, {"cache_read", m.CacheRead, &p.CacheRead}} {
			if k.v == nil {
				continue
			}
			if math.IsNaN(*k.v) || *k.v < 0 || *k.v > maxPricePerMTok {
				problems = append(problems, fmt.Sprintf("%s: %s price %v is outside 0 to %d dollars per million tokens", where, k.kind, *k.v, maxPricePerMTok))
				continue
			}
			*k.dst = int64(math.Round(*k.v * 1e6))
		}
		out.byName[name] = p
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	if len(out.byName) == 0 {
		return nil, errors.New("no model is priced")
	}
	for _, p := range out.byName {
		out.ceiling.Input = max(out.ceiling.Input, p.Input)
		out.ceiling.Output = max(out.ceiling.Output, p.Output)
		out.ceiling.CacheWrite = max(out.ceiling.CacheWrite, p.CacheWrite)
		out.ceiling.CacheRead = max(out.ceiling.CacheRead, p.CacheRead)
	}
	out.ceiling.Name = "(highest price in the table)"
	return out, nil
}

// Lookup finds a model's price: an exact entry, or the longest entry the name extends with a suffix the
// providers add for dated snapshots and versions ("-" then a digit: claude-sonnet-4-5-20250929, gpt-4o-2024-08-06,
// or "-latest"). A suffix that names another model (gpt-5-pro, gemini-2.5-flash-preview-…) does not match, so a
// dearer sibling is never priced as the cheaper one.
func (p *Prices) Lookup(model string) (Price, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if name == "" {
		return Price{}, false
	}
	if pr, ok := p.byName[name]; ok {
		return pr, true
	}
	best, found := Price{}, false
	for k, pr := range p.byName {
		rest, ok := strings.CutPrefix(name, k+"-")
		if !ok || rest == "" || !(rest[0] >= '0' && rest[0] <= '9' || rest == "latest") {
			continue
		}
		if !found || len(k) > len(best.Name) {
			best, found = pr, true
		}
	}
	return best, found
}

// Ceiling is the highest price of each kind in the table.
func (p *Prices) Ceiling() Price { return p.ceiling }

// Models lists the priced models, sorted.
func (p *Prices) Models() []Price {
	out := make([]Price, 0, len(p.byName))
	for _, v := range p.byName {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// PicosToMicros converts picodollars to millionths of a dollar, rounding up: a fraction of a millionth is still
// spent.
func PicosToMicros(p int64) int64 {
	if p <= 0 {
		return 0
	}
	return (p-1)/1_000_000 + 1
}
