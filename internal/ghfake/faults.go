package ghfake

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"
)

// FaultKind is a way for a call to fail.
type FaultKind int

// Fault kinds.
const (
	NoFault FaultKind = iota
	// Fault500 answers 500 {"message":"Server Error"}.
	Fault500
	// Fault502 answers 502 Bad Gateway, as GitHub's front end does when a
	// backend is slow.
	Fault502
	// FaultSecondaryRateLimit answers 403 with Retry-After and GitHub's
	// documented secondary rate limit message; go-github surfaces it as
	// *github.AbuseRateLimitError.
	FaultSecondaryRateLimit
	// FaultTimeout holds the request until the client gives up, Fault.Hold
	// passes or the fake closes, then closes the connection without an
	// answer.
	FaultTimeout
)

func (k FaultKind) String() string {
	switch k {
	case NoFault:
		return "none"
	case Fault500:
		return "500"
	case Fault502:
		return "502"
	case FaultSecondaryRateLimit:
		return "secondary-rate-limit"
	case FaultTimeout:
		return "timeout"
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// Fault describes an injected failure.
type Fault struct {
	Kind FaultKind
	// RetryAfter is the Retry-After of a secondary rate limit (default 60s;
	// whole seconds on the wire).
	RetryAfter time.Duration
	// Hold bounds a timeout fault; 0 holds until the client gives up.
	Hold time.Duration
	// Applied makes the request take effect (state changes, webhooks)
	// before the failure is answered, as GitHub sometimes does with a 502.
	// Without it a faulted request has no effect at all.
	Applied bool
}

// AppliedThenFail is a fault whose request is applied before it fails.
func AppliedThenFail(kind FaultKind) Fault { return Fault{Kind: kind, Applied: true} }

type routeFault struct {
	route string
	fault Fault
	left  int // < 0: unlimited
}

// FailCall makes the k-th API call (1-based, counted from the start or from
// the last ResetCalls; git smart HTTP requests count only with
// Options.FaultsCountGit) fail with fault.
func (f *Fake) FailCall(k int, fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults[k] = fault
}

// FailRoute makes the next times calls of a route template (as in
// Call.Route, e.g. "POST /repos/{owner}/{repo}/issues/{number}/comments",
// or "*" for any) fail with fault; times <= 0 means every call.
func (f *Fake) FailRoute(route string, fault Fault, times int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if times <= 0 {
		times = -1
	}
	f.routeFaults = append(f.routeFaults, &routeFault{route: route, fault: fault, left: times})
}

// ClearFaults removes every pending fault.
func (f *Fake) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = map[int]Fault{}
	f.routeFaults = nil
}

// CallCount is the number of calls counted for FailCall so far.
func (f *Fake) CallCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callN
}

// pickFault returns the fault for call n of route, consuming it. Caller
// holds f.mu.
func (f *Fake) pickFault(n int, route string) (Fault, bool) {
	if ft, ok := f.faults[n]; ok {
		delete(f.faults, n)
		return ft, true
	}
	for i, rf := range f.routeFaults {
		if rf.route != "*" && rf.route != route {
			continue
		}
		if rf.left > 0 {
			rf.left--
			if rf.left == 0 {
				f.routeFaults = append(f.routeFaults[:i:i], f.routeFaults[i+1:]...)
			}
		}
		return rf.fault, true
	}
	return Fault{}, false
}

// writeFault answers with the fault and returns the status sent (0 when the
// connection was dropped). hdr carries rate-limit headers when known.
func (f *Fake) writeFault(w http.ResponseWriter, r *http.Request, ft Fault, hdr http.Header) int {
	for k, v := range hdr {
		if k == "X-Ratelimit-Limit" || k == "X-Ratelimit-Remaining" || k == "X-Ratelimit-Used" ||
			k == "X-Ratelimit-Reset" || k == "X-Ratelimit-Resource" {
			w.Header()[k] = v
		}
	}
	body := func(status int, v map[string]any) int {
		b, _ := json.Marshal(v)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return status
	}
	switch ft.Kind {
	case Fault500:
		return body(http.StatusInternalServerError, map[string]any{"message": "Server Error"})
	case Fault502:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1>\nThe server returned an invalid or incomplete response.\n</body></html>\n")
		return http.StatusBadGateway
	case FaultSecondaryRateLimit:
		ra := ft.RetryAfter
		if ra <= 0 {
			ra = time.Minute
		}
		secs := int((ra + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		if w.Header().Get("X-Ratelimit-Remaining") == "0" {
			// A secondary limit is not the primary one: go-github
			// classifies 403 with Remaining 0 as primary.
			w.Header().Del("X-Ratelimit-Remaining")
		}
		return body(http.StatusForbidden, map[string]any{
			"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. " +
				"If you reach out to GitHub Support for help, please include the request ID FAKE:" + strconv.Itoa(f.CallCount()) + ".",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
	case FaultTimeout:
		// Read the body so the server notices when the client hangs up.
		_, _ = io.Copy(io.Discard, r.Body)
		var timer <-chan time.Time
		if ft.Hold > 0 {
			t := time.NewTimer(ft.Hold)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-r.Context().Done():
		case <-timer:
		case <-f.closing:
		}
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
			}
		}
		return 0
	}
	return body(http.StatusInternalServerError, map[string]any{"message": "ghfake: unknown fault " + ft.Kind.String()})
}

// --- call recording ---

// Call is one recorded request.
type Call struct {
	Seq int  // 1-based, in arrival order among API calls (git calls have their own sequence)
	Git bool // a git smart HTTP request
	// GraphQL marks a call to the GraphQL endpoint (not REST: no OpenAPI
	// operation describes it).
	GraphQL bool
	Method  string
	Path    string // without the /api/v3 prefix and the query
	Query   string
	// Route is the endpoint template, e.g.
	// "POST /repos/{owner}/{repo}/issues/{number}/comments"; empty for an
	// unknown route.
	Route string
	Login string // authenticated identity; empty if none
	Kind  AccountType
	// ContentCreating marks requests that create or change content
	// (comments, labels, issues, PRs, refs, merges, dispatches): GitHub
	// limits those separately (80/min, 500/h).
	ContentCreating bool
	NotModified     bool // answered 304 (free on GitHub)
	Status          int  // status sent; 0 when a timeout fault dropped the connection
	Fault           FaultKind
	Applied         bool // the request took effect
	At              time.Time
}

func (f *Fake) record(c Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.At = f.now()
	if c.Git {
		c.Seq = len(f.gitCalls) + 1
		f.gitCalls = append(f.gitCalls, c)
		return
	}
	c.Seq = len(f.calls) + 1
	f.calls = append(f.calls, c)
}

// Calls returns a copy of the recorded API calls, in arrival order of their
// completion.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// GitCalls returns a copy of the recorded git smart HTTP requests.
func (f *Fake) GitCalls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.gitCalls...)
}

// ResetCalls forgets recorded calls and restarts FailCall's count.
func (f *Fake) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls, f.gitCalls, f.callN = nil, nil, 0
}

// CallCounts summarises recorded API calls.
type CallCounts struct {
	Total           int
	ContentCreating int
	NotModified     int
	Faulted         int
	Git             int
	ByRoute         map[string]int
}

// Routes lists ByRoute's keys sorted.
func (cc CallCounts) Routes() []string { return sortedKeys(cc.ByRoute) }

// Counts summarises the recorded calls.
func (f *Fake) Counts() CallCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	cc := CallCounts{ByRoute: map[string]int{}, Git: len(f.gitCalls)}
	for _, c := range f.calls {
		cc.Total++
		if c.ContentCreating {
			cc.ContentCreating++
		}
		if c.NotModified {
			cc.NotModified++
		}
		if c.Fault != NoFault {
			cc.Faulted++
		}
		cc.ByRoute[c.Route]++
	}
	return cc
}
