package gateway

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// Scope is what a gateway credential is bound to: one step of one session of one repository.
type Scope struct {
	Installation int64  `json:"inst,omitempty"` // the App installation (0 in local mode), for per-installation metrics
	Repository   string `json:"repo"`           // owner/name
	Session      string `json:"session"`
	Step         string `json:"step"`
}

// SessionKey identifies a session across repositories.
type SessionKey struct{ Repository, Session string }

// Session is the scope's session.
func (s Scope) SessionKey() SessionKey { return SessionKey{s.Repository, s.Session} }

// Outcome is what became of one request at the gateway.
type Outcome int

// The outcomes.
const (
	// Forwarded: the request went upstream and its answer (complete or not) was metered.
	Forwarded Outcome = iota
	// RefusedBudget: the step's or the session's limit was reached; nothing went upstream.
	RefusedBudget
	// UpstreamFailed: the upstream could not be reached or answered an error; nothing is billed for it.
	UpstreamFailed
)

var outcomeNames = [...]string{"forwarded", "refused_budget", "upstream_failed"}

func (o Outcome) String() string {
	if o >= 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome(?)"
}

// Entry is one request as the ledger records it.
type Entry struct {
	Scope    Scope
	Time     time.Time
	Provider Provider
	Model    string // the model the answer named, else the one the request asked for
	Outcome  Outcome
	Status   int    // the HTTP status the client got
	Reason   string // why a request was refused or failed
	Tokens   Tokens
	// Estimated is set when some count is the conservative estimate (an answer cut off, or one that reported no
	// usage), not the provider's report.
	Estimated bool
	// Priced is false for a model the price table does not know: CostPicos is then 0 and ChargedPicos is the
	// tokens at the table's highest prices, which is what limits count, so an unknown model is never free.
	Priced       bool
	CostPicos    int64
	ChargedPicos int64
}

// Spend is the sum of a step's or a session's entries.
type Spend struct {
	Requests int
	Refused  int
	Tokens   Tokens
	// CostPicos is the priced cost; ChargedPicos adds the unpriced models' tokens at the ceiling price, and is
	// what limits are checked against.
	CostPicos    int64
	ChargedPicos int64
	// Unpriced names the models metered in tokens only, sorted, with their tokens.
	Unpriced  []UnpricedModel
	Estimated bool // some entry is an estimate
}

// UnpricedModel is a model the price table did not know, and what it used.
type UnpricedModel struct {
	Model  string
	Tokens Tokens
}

// CostMicros is the priced cost in millionths of a dollar, rounded up.
func (s Spend) CostMicros() int64 { return PicosToMicros(s.CostPicos) }

// ChargedMicros is the cost limits count, in millionths of a dollar, rounded up.
func (s Spend) ChargedMicros() int64 { return PicosToMicros(s.ChargedPicos) }

// Metered reports whether the ledger holds anything of the step or session.
func (s Spend) Metered() bool { return s.Requests > 0 || s.Refused > 0 }

// StepUsage is a step's spend as the engine counts one step's usage: the cost limits count (unpriced models at the
// table's highest prices), every token kind, bounded as pipeline.Usage.Check requires.
func (s Spend) StepUsage() pipeline.Usage {
	clamp := func(v int64) int64 { return min(max(v, 0), pipeline.MaxStepTokens) }
	return pipeline.Usage{CostMicros: min(s.ChargedMicros(), pipeline.MaxStepCostMicros),
		InputTokens: clamp(s.Tokens.Input), OutputTokens: clamp(s.Tokens.Output),
		CacheReadTokens: clamp(s.Tokens.CacheRead), CacheWriteTokens: clamp(s.Tokens.CacheWrite),
		Steps: 1, Priced: 1}
}

func (s *Spend) add(e Entry) {
	if e.Outcome == RefusedBudget {
		s.Refused++
		return
	}
	s.Requests++
	s.Tokens.Add(e.Tokens)
	s.CostPicos = satAdd(s.CostPicos, e.CostPicos)
	s.ChargedPicos = satAdd(s.ChargedPicos, e.ChargedPicos)
	s.Estimated = s.Estimated || e.Estimated
	if !e.Priced && e.Tokens.Total() > 0 {
		i := sort.Search(len(s.Unpriced), func(i int) bool { return s.Unpriced[i].Model >= e.Model })
		if i == len(s.Unpriced) || s.Unpriced[i].Model != e.Model {
			s.Unpriced = append(s.Unpriced, UnpricedModel{})
			copy(s.Unpriced[i+1:], s.Unpriced[i:])
			s.Unpriced[i] = UnpricedModel{Model: e.Model}
		}
		s.Unpriced[i].Tokens.Add(e.Tokens)
	}
}

func (s Spend) clone() Spend {
	s.Unpriced = append([]UnpricedModel(nil), s.Unpriced...)
	return s
}

// Ledger records what the gateway metered and answers what a step and a session have spent.
type Ledger interface {
	Record(ctx context.Context, e Entry) error
	StepSpend(ctx context.Context, s Scope) (Spend, error)
	SessionSpend(ctx context.Context, k SessionKey) (Spend, error)
}

// MemLedger is a Ledger in memory: what one process (bazinga run, one serve) metered. It keeps sums, not
// entries, so its size is the number of steps, not of requests; OnRecord sees every entry (metrics, logs).
type MemLedger struct {
	mu       sync.Mutex
	steps    map[Scope]*Spend
	sessions map[SessionKey]*Spend
	// OnRecord, when set, is called with every entry recorded, outside the lock.
	OnRecord func(Entry)
}

// NewMemLedger returns an empty ledger.
func NewMemLedger() *MemLedger {
	return &MemLedger{steps: map[Scope]*Spend{}, sessions: map[SessionKey]*Spend{}}
}

// Record implements Ledger.
func (l *MemLedger) Record(_ context.Context, e Entry) error {
	l.mu.Lock()
	st := l.steps[e.Scope]
	if st == nil {
		st = &Spend{}
		l.steps[e.Scope] = st
	}
	st.add(e)
	k := e.Scope.SessionKey()
	ss := l.sessions[k]
	if ss == nil {
		ss = &Spend{}
		l.sessions[k] = ss
	}
	ss.add(e)
	l.mu.Unlock()
	if l.OnRecord != nil {
		l.OnRecord(e)
	}
	return nil
}

// Carry adds spend recorded before this ledger existed to a session (a resumed local session's earlier steps),
// so the session's limit counts it.
func (l *MemLedger) Carry(k SessionKey, costMicros int64) {
	if costMicros <= 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ss := l.sessions[k]
	if ss == nil {
		ss = &Spend{}
		l.sessions[k] = ss
	}
	p := satMul(costMicros, 1_000_000)
	ss.CostPicos, ss.ChargedPicos = satAdd(ss.CostPicos, p), satAdd(ss.ChargedPicos, p)
}

// StepSpend implements Ledger.
func (l *MemLedger) StepSpend(_ context.Context, s Scope) (Spend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.steps[s]; st != nil {
		return st.clone(), nil
	}
	return Spend{}, nil
}

// SessionSpend implements Ledger.
func (l *MemLedger) SessionSpend(_ context.Context, k SessionKey) (Spend, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ss := l.sessions[k]; ss != nil {
		return ss.clone(), nil
	}
	return Spend{}, nil
}
