package stepexec

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/testgate"
)

// This file is the harness's side of the build baseline and the checks
// (issue 13): taking the baseline beside the first pm step, comparing with
// it, and reporting check outcomes in the result and the event.

// startBaseline runs the build and tests on a fresh copy of the base head in
// the background; the returned wait blocks until it is done and records the
// baseline (or why there is none) in rep. The pm step's job runs no
// credential the agent could not already see, and the base's code is no less
// trusted than the agent: it runs where the agent does.
func (e *Executor) startBaseline(ctx context.Context, s pipeline.Session, rep *Report) (wait func()) {
	var (
		wg  sync.WaitGroup
		b   *pipeline.Baseline
		err error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		b, err = e.takeBaseline(ctx, s)
	}()
	return func() {
		wg.Wait()
		if err != nil {
			e.log().Warn("baseline not taken", "base", s.Base, "err", err)
			rep.Notes = append(rep.Notes, "baseline not taken: "+err.Error())
			return
		}
		if rep.Harness == nil {
			rep.Harness = &pipeline.HarnessReport{}
		}
		rep.Harness.Baseline = b
		rep.Notes = append(rep.Notes, "baseline: "+b.Describe(s.Base))
	}
}

// takeBaseline runs the build and test commands on the head of the
// session's base branch and says what failed there.
func (e *Executor) takeBaseline(ctx context.Context, s pipeline.Session) (*pipeline.Baseline, error) {
	dir, cleanup, err := e.workdir("bazinga-baseline-")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	repo, err := gitops.Clone(ctx, e.Remote, dir, gitops.CloneOptions{Branch: s.Base, Shallow: true})
	if err != nil {
		return nil, fmt.Errorf("cloning %s for the baseline: %w", s.Base, err)
	}
	head, err := gitops.ResolveBranch(repo, s.Base)
	if err != nil {
		return nil, fmt.Errorf("reading the head of %s: %w", s.Base, err)
	}
	gr, err := testgate.RunGate(ctx, dir, e.testGate())
	if err != nil {
		return nil, fmt.Errorf("running the tests on %s: %w", s.Base, err)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("the baseline was cut short: %w", ctx.Err())
	}
	b := baselineOf(head.String(), gr)
	b.Command = e.testGate().Command
	return b, nil
}

// baselineOf turns a gate run on the base into the session's baseline.
func baselineOf(commit string, gr testgate.GateResult) *pipeline.Baseline {
	b := &pipeline.Baseline{Commit: commit, Identity: sessionIdentity(gr.Tests.Identity), Green: gr.TestsOutcome == testgate.GatePass,
		Summary: gr.Summary()}
	if b.Green {
		return b
	}
	b.Tail = gr.Output
	if len(b.Tail) > pipeline.MaxCheckTail {
		b.Tail = "…" + pipeline.ValidSuffix(b.Tail, pipeline.MaxCheckTail-len("…"))
	}
	// sh's own codes: 127 the command was not found, 126 it could not be
	// executed. The base's tests did not fail; they never ran.
	b.CannotRun = gr.TestsOutcome == testgate.GateFail && (gr.ExitCode == 127 || gr.ExitCode == 126)
	b.Failed = gr.Tests.Names()
	// Failures that cannot all be named make every failure pre-existing.
	b.Unnamed = len(b.Failed) == 0 || gr.TestsOutcome == testgate.GateTimeout || gr.Tests.Identity == testgate.IdentityExitStatus
	return b
}

// sessionIdentity is the gate's test identity as the session records it.
func sessionIdentity(i testgate.TestIdentity) pipeline.TestIdentity {
	switch i {
	case testgate.IdentityGoTestJSON:
		return pipeline.IdentityGoTestJSON
	case testgate.IdentityJUnit:
		return pipeline.IdentityJUnit
	}
	return pipeline.IdentityExitStatus
}

// gateIdentity is a recorded test identity as the gate compares with it.
func gateIdentity(i pipeline.TestIdentity) testgate.TestIdentity {
	switch i {
	case pipeline.IdentityGoTestJSON:
		return testgate.IdentityGoTestJSON
	case pipeline.IdentityJUnit:
		return testgate.IdentityJUnit
	}
	return testgate.IdentityExitStatus
}

// knownFailures is the session's baseline as the gate compares with it: only
// a red baseline a human (or tests.baseline accept) accepted.
func knownFailures(s pipeline.Session) *testgate.KnownFailures {
	b := s.Baseline
	if !b.Red() || !b.Accepted {
		return nil
	}
	at := s.Base
	if len(b.Commit) >= 12 {
		at += "@" + b.Commit[:12]
	}
	return &testgate.KnownFailures{Identity: gateIdentity(b.Identity), Tests: b.Failed, Unnamed: b.Unnamed, At: at}
}

// checkReport is the check outcomes of a gate run as the session keeps them.
func checkReport(gr testgate.GateResult) *pipeline.HarnessReport {
	if len(gr.Checks) == 0 {
		return nil
	}
	h := &pipeline.HarnessReport{}
	for _, c := range gr.Checks {
		o := pipeline.CheckOutcome{Name: c.Name, Required: c.Required, Passed: c.Outcome == testgate.GatePass, Summary: c.Summary()}
		if !o.Passed {
			o.Tail = tail(c.Output, pipeline.MaxCheckTail)
		}
		h.Checks = append(h.Checks, o)
	}
	return h
}

// claimFailure says why a READY claim did not hold: new test failures,
// required checks that failed, or both.
func claimFailure(claim pipeline.Status, gr testgate.GateResult) string {
	failed := gr.FailedChecks()
	checks := "required check(s) failed: " + strings.Join(failed, ", ")
	switch {
	case !gr.TestsOK && len(failed) > 0:
		return "the harness ran the tests and checks after the " + claim.String() + " claim: " + testsLine(gr) + "; " + checks
	case len(failed) > 0:
		return "the harness ran the checks after the " + claim.String() + " claim: " + checks
	}
	return "the harness ran the tests after the " + claim.String() + " claim: " + testsLine(gr)
}

// testsLine is the tests' part of the gate summary, without the checks.
func testsLine(gr testgate.GateResult) string {
	gr.Checks = nil
	return gr.Summary()
}

// checksHandoff is the checks part of a handoff: outcome and output tail.
func checksHandoff(gr testgate.GateResult) []map[string]any {
	out := make([]map[string]any, 0, len(gr.Checks))
	for _, c := range gr.Checks {
		m := map[string]any{"name": c.Name, "required": c.Required, "outcome": c.Outcome.String(), "summary": c.Summary()}
		if c.Outcome != testgate.GatePass {
			m["output"] = tail(c.Output, maxFeedbackOutput/2)
		}
		out = append(out, m)
	}
	return out
}

// withChecks adds the harness's findings to a result's handoff under
// "harness_checks" (an agent cannot write that key: it is replaced), keeping the
// agent's own keys; a handoff that is not an object is kept whole beside it.
func withChecks(res pipeline.Result, gr testgate.GateResult) pipeline.Result {
	if len(gr.Checks) == 0 && gr.Compared == "" {
		return res
	}
	h := map[string]any{"tests": testsLine(gr)}
	if gr.Compared != "" {
		h["tests_identity"] = gr.Tests.Identity.String()
		h["pre_existing"] = gr.PreExisting
	}
	if len(gr.Checks) > 0 {
		h["checks"] = checksHandoff(gr)
	}
	obj := map[string]json.RawMessage{}
	if len(res.Handoff) > 0 && json.Unmarshal(res.Handoff, &obj) != nil {
		obj = map[string]json.RawMessage{"agent_handoff": res.Handoff}
	}
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	raw, _ := json.Marshal(h)
	obj["harness_checks"] = raw
	b, err := json.Marshal(obj)
	if err != nil {
		return res
	}
	res.Handoff = b
	return res
}
