// Package stepexec carries out one dispatched step: an agent step in a
// working copy of its group branch, a merge through the test gate, or the
// validation of a BAZINGA claim. Local mode and the GitHub Action both use it,
// so a step behaves the same wherever it runs. It turns the step into the
// pipeline event that reports it: a result, or a failure to retry.
package stepexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/testgate"
)

// Executor runs steps against one repository.
type Executor struct {
	// Remote is the repository: a local path, or https with a token.
	Remote gitops.Remote
	Config pipeline.Config
	// Runner runs agent steps; nil when only harness steps run here.
	Runner *agent.Runner
	// TempDir holds the steps' working copies (default os.TempDir()).
	TempDir string
	// Author of the commits agents make; the committer is gitops.BotIdentity.
	Author gitops.Identity
	Logger *slog.Logger
	// Comments returns human comments to show a group's agents (optional).
	Comments func(group string) []agent.UntrustedText
	// Meter, when set, is the metering gateway the agents talk to (local mode with a gateway): a step's
	// environment gets the gateway's base URLs and a token instead of the provider key, and the step's usage is
	// what the gateway metered, not what the CLI reported.
	Meter Meter
	// HandOver, when set, takes what would be pushed (GitHub mode; see
	// HandOver). Local mode leaves it nil.
	HandOver HandOver
}

// Meter is a metering gateway as a step sees it.
type Meter interface {
	// StepEnv is the variables to set for the step's agent.
	StepEnv(s pipeline.Session, st pipeline.Step) (map[string]string, error)
	// StepUsage ends the step at the gateway (its token stops working) and returns what was metered, with notes
	// for the report (unpriced models, estimates, refusals); nil usage when this process cannot read the meter
	// (the CLI's report is kept then).
	StepUsage(s pipeline.Session, st pipeline.Step) (*pipeline.Usage, []string)
}

// Report is what a person may want to see about a step beyond its capsule.
type Report struct {
	Step     string
	Role     pipeline.Role
	Group    string
	Status   pipeline.Status
	Summary  []string
	Files    []string
	Tests    string
	Duration time.Duration
	// Output is the tail of the agent's or the gate's output, for failures.
	Output string
	// Notes are what the harness did on its own (test check, markers…).
	Notes []string
	// Usage is what the agent step cost, when its CLI or result reported it;
	// it rides on the step's event, result or failure alike.
	Usage *pipeline.Usage
	// Harness is what the harness found beside the agent's result (the
	// baseline, check outcomes); Run puts it on the event.
	Harness *pipeline.HarnessReport
	// Failure is the kind of the CLI's own failure report, if any;
	// Permanent says another run would fail the same way.
	Failure   string
	Permanent bool
	// Transcript names the files holding the agent's whole output (local).
	Transcript []string
	// Denied lists the tool uses the agent's CLI refused.
	Denied []string
	// Head is the group branch's head after the step, when the step knows
	// it (a pushed commit, the head it worked on, where a merge found the
	// branch): Run puts it on the event, and the engine binds approvals and
	// the reviewed head to it. GitHub mode learns it from the land or
	// publish job instead.
	Head string
}

// maxFeedbackOutput bounds test output carried in a handoff.
const maxFeedbackOutput = 4 << 10

// Run carries out the step and returns the event that reports it. Errors of
// infrastructure (a clone that fails, a push refused for another reason) are
// step failures: the engine retries them and, past the limit, pauses with a
// report naming the step.
func (e *Executor) Run(ctx context.Context, s pipeline.Session, stepID string) (pipeline.Event, Report) {
	start := time.Now()
	rep := Report{Step: stepID}
	st := s.Step(stepID)
	if st == nil {
		return pipeline.StepFailure(s.ID, stepID, "the step is not in the session"), rep
	}
	rep.Role, rep.Group = st.Role, st.Group
	var (
		res pipeline.Result
		err error
	)
	switch st.Role {
	case pipeline.RoleMerge:
		res, err = e.merge(ctx, s, *st, &rep)
	case pipeline.RoleValidate:
		res, err = e.validate(ctx, s, *st, &rep)
	default:
		res, err = e.agentStep(ctx, s, *st, &rep)
	}
	rep.Duration = time.Since(start)
	if err != nil {
		var nr noResult
		if !errors.As(err, &nr) {
			e.log().Error("step failed", "step", stepID, "err", err)
		} else {
			rep.Permanent = nr.permanent
		}
		rep.Notes = append(rep.Notes, err.Error())
		ev := pipeline.StepFailure(s.ID, stepID, err.Error())
		ev.Permanent = rep.Permanent
		ev.Usage = rep.Usage
		return ev, rep
	}
	rep.Status, rep.Summary = res.Status, res.Summary
	ev := pipeline.StepResult(s.ID, stepID, res)
	ev.Usage = rep.Usage
	ev.Harness = rep.Harness
	ev.Commit = rep.Head
	return ev, rep
}

// noResult is an agent that produced nothing: retried, not logged as an
// error. permanent marks a failure another run would repeat (refused
// credentials, a command line the CLI rejects).
type noResult struct {
	why       string
	permanent bool
}

func (n noResult) Error() string { return n.why }

func (e *Executor) log() *slog.Logger {
	if e.Logger != nil {
		return e.Logger
	}
	return slog.Default()
}

func (e *Executor) workdir(prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp(e.TempDir, prefix)
	if err != nil {
		return "", nil, fmt.Errorf("making a working copy directory: %w", err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

func (e *Executor) author() gitops.Identity {
	if e.Author.Name != "" {
		return e.Author
	}
	return gitops.BotIdentity
}

// gate is the test gate: the build command, if any, then the tests,
// compared with the session's accepted baseline, then the checks.
func (e *Executor) gate(s pipeline.Session) testgate.GateConfig {
	g := e.testGate()
	g.Known = knownFailures(s)
	for _, c := range e.Config.Checks {
		g.Checks = append(g.Checks, testgate.Check{Name: c.Name, Command: c.Command, Required: c.Required, Timeout: c.Timeout.D()})
	}
	return g
}

// testGate is the build and test command alone, as the baseline runs it.
func (e *Executor) testGate() testgate.GateConfig {
	cmd := strings.TrimSpace(e.Config.Tests.Command)
	if b := strings.TrimSpace(e.Config.Build.Command); b != "" {
		if cmd == "" {
			cmd = b
		} else {
			cmd = "(" + b + ") && (" + cmd + ")"
		}
	}
	return testgate.GateConfig{Command: cmd, Timeout: e.Config.Tests.Timeout.D(), JUnit: e.Config.Tests.JUnit}
}

func (e *Executor) agentStep(ctx context.Context, s pipeline.Session, st pipeline.Step, rep *Report) (_ pipeline.Result, rerr error) {
	if e.Runner == nil {
		return pipeline.Result{}, errors.New("no agent runner is configured here")
	}
	g := s.Group(st.Group)
	dir, cleanup, err := e.workdir("bazinga-step-")
	if err != nil {
		return pipeline.Result{}, err
	}
	defer cleanup()

	var (
		repo          *git.Repository
		start         plumbing.Hash
		branchExisted bool
	)
	if g != nil && e.HandOver != nil {
		repo, start, branchExisted, err = gitops.PrepareReadOnly(ctx, e.Remote, s.Base, g.Branch, dir)
	} else if g != nil {
		repo, err = gitops.PrepareWorkingCopy(ctx, e.Remote, s.Base, g.Branch, dir)
	} else {
		// Session-level steps (pm, investigations) read the base; they push nothing.
		repo, err = gitops.Clone(ctx, e.Remote, dir, gitops.CloneOptions{Branch: s.Base, Shallow: true})
	}
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("preparing the working copy: %w", err)
	}

	in := e.promptInput(s, st, g)
	var merge *gitops.WorkingMerge
	if g != nil && st.Purpose == pipeline.PurposeFixMerge {
		// Fetches the base's current tip and as much history as the merge base needs.
		merge, err = gitops.MergeRemoteIntoWorkingCopy(ctx, repo, e.Remote, s.Base, e.author())
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("merging %s into the working copy: %w", s.Base, err)
		}
		in.ConflictFiles = merge.Conflicts
		if len(merge.Conflicts) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("merged %s with conflict markers in %s", s.Base, strings.Join(merge.Conflicts, ", ")))
		}
	}
	var prompt string
	if st.Baseline {
		// The baseline runs on its own copy of the base, beside the agent;
		// a step that ends without a result is retried, baseline and all,
		// so then the tests are stopped rather than waited for.
		bctx, cancel := context.WithCancel(ctx)
		wait := e.startBaseline(bctx, s, rep)
		defer func() {
			if rerr != nil {
				cancel()
			}
			wait()
			cancel()
		}()
	}
	in.FinalAnswer = e.Runner.FinalAnswer()
	if !in.FinalAnswer {
		in.ResultFile = agent.ResultFileName
	}
	prompt, err = agent.BuildPrompt(in)
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("building the prompt: %w", err)
	}
	spec := agent.StepSpec{Role: st.Role, Group: st.Group, StepID: st.ID, Model: st.Model, Prompt: prompt, WorkDir: dir}
	if e.Meter != nil {
		if spec.Env, err = e.Meter.StepEnv(s, st); err != nil {
			return pipeline.Result{}, fmt.Errorf("the metering gateway: %w", err)
		}
	}
	out, err := e.Runner.Run(ctx, spec)
	if e.Meter != nil {
		// What the gateway metered, whatever the agent printed or wrote about its cost, and even when the run
		// failed: what was used is spent.
		u, notes := e.Meter.StepUsage(s, st)
		rep.Usage, rep.Notes = u, append(rep.Notes, notes...)
	}
	if err != nil {
		return pipeline.Result{}, fmt.Errorf("running the agent: %w", err)
	}
	rep.Output = agentOutput(out, maxFeedbackOutput)
	if rep.Usage == nil {
		// No gateway, or one whose meter this process cannot read (App mode: the server's ledger counts): the
		// CLI's own report.
		rep.Usage = out.Parsed.Usage
	}
	rep.Transcript = out.Transcript
	rep.Denied = out.Denied
	if out.Failure != nil {
		rep.Failure = out.Failure.Kind.String()
	}
	edits := g != nil && agent.RoleAccess(st.Role) == agent.AccessEdit && st.Purpose != pipeline.PurposeDiagnostic
	// A developer or senior engineer cut short — out of time, stopped by its
	// CLI at a cap, an API error, a crash — keeps its work: the harness
	// commits what the working copy holds and reports PARTIAL, so the next
	// developer step continues from there instead of starting over.
	keepPartial := (out.NoResult || out.TimedOut) && g != nil && implementer(st.Role) && st.Purpose != pipeline.PurposeDiagnostic
	// The runner's notes (retries, an unknown cost, denied tools) go with
	// the step whatever its end.
	rep.Notes = append(rep.Notes, out.Parsed.Notes...)
	if out.NoResult && !keepPartial {
		return pipeline.Result{}, e.noResultOf(out)
	}
	res := out.Parsed.Result
	if g == nil || st.Purpose == pipeline.PurposeDiagnostic {
		return res, nil // nothing is pushed from session-level or diagnostic steps
	}
	if !edits {
		// QA and review may run anything but change nothing: what they
		// wrote (a scratch test, a "fix") is not theirs to land.
		changed, err := gitops.DiscardChanges(repo)
		if err != nil {
			return pipeline.Result{}, fmt.Errorf("discarding the %s step's changes: %w", st.Role, err)
		}
		if len(changed) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("harness: discarded %d file(s) the %s changed (%s); only implementation steps change code",
				len(changed), st.Role, strings.Join(firstN(changed, 5), ", ")))
		}
	}

	switch {
	case keepPartial:
		// Whatever it claimed, a step cut short is not ready; its tests are
		// run when a later step claims READY.
		res = cutShortPartial(out, e.cutShortWhy(out), true)
	case implementer(st.Role) && (res.Status == pipeline.StatusReadyForQA || res.Status == pipeline.StatusReadyForReview):
		// The harness checks READY_* claims itself.
		if left := markersLeft(dir, in.ConflictFiles); len(left) > 0 {
			res = harnessPartial(res, "conflict markers remain in "+strings.Join(left, ", "), "")
		} else if gate := e.gate(s); gate.Command != "" || len(gate.Checks) > 0 {
			gr, err := testgate.RunGate(ctx, dir, gate)
			if err != nil {
				return pipeline.Result{}, fmt.Errorf("running the tests after the %s claim: %w", res.Status, err)
			}
			rep.Tests = gr.Summary()
			rep.Harness = checkReport(gr)
			if gr.Outcome != testgate.GatePass {
				rep.Output = gr.Digest(maxFeedbackOutput)
				res = withChecks(harnessPartial(res, claimFailure(res.Status, gr), gr.Digest(maxFeedbackOutput)), gr)
			} else {
				res = withChecks(res, gr)
			}
		}
	}
	opts := gitops.CommitOptions{Author: e.author(), StepID: st.ID, Message: commitMessage(st, res)}
	if merge != nil && !merge.UpToDate && merge.Commit.IsZero() {
		opts.MergeParent = merge.Theirs
	}
	if _, err := gitops.CommitAll(repo, opts); errors.Is(err, gitops.ErrNothingToCommit) {
		if keepPartial {
			if out.NoResult {
				// Cut short with nothing written and nothing said: a failed
				// attempt, retried (or, when no retry can fix it, a pause).
				nr := e.noResultOf(out)
				nr.why += "; no changes"
				return pipeline.Result{}, nr
			}
			res = cutShortPartial(out, e.cutShortWhy(out), false)
		}
	} else if err != nil {
		return pipeline.Result{}, fmt.Errorf("committing the agent's changes: %w", err)
	}
	if e.HandOver != nil {
		err = e.handOverChange(ctx, repo, g.Branch, start, branchExisted, merge)
	} else {
		err = gitops.Push(ctx, repo, e.Remote, s.Base, g.Branch, gitops.PushOptions{AllowWorkflowChanges: e.Config.AllowWorkflowChanges})
	}
	switch {
	case errors.Is(err, gitops.ErrWorkflowChange):
		// The agent must undo it; that is a revision, not an infrastructure failure.
		return harnessPartial(res, err.Error()+" (set allow_workflow_changes to permit)", ""), nil
	case errors.Is(err, gitops.ErrForbiddenPath) || errors.Is(err, gitops.ErrSubmodule):
		return harnessPartial(res, err.Error(), ""), nil
	case err != nil:
		return pipeline.Result{}, fmt.Errorf("pushing %s: %w", g.Branch, err)
	}
	if e.HandOver == nil {
		rep.Head = branchHead(repo, g.Branch) // issue 28: what this step saw or left
	}
	rep.Files = filesChanged(res)
	return res, nil
}

func implementer(r pipeline.Role) bool {
	return r == pipeline.RoleDeveloper || r == pipeline.RoleSenior
}

// cutShortPartial is the PARTIAL of a developer or senior step that ended
// without a result (out of time, stopped by its CLI, an API error): the
// harness's reason first, then what the agent managed to say (if it wrote a
// result in its grace), its handoff kept for the next step.
func cutShortPartial(out agent.Outcome, why string, committed bool) pipeline.Result {
	if committed {
		why += "; partial work committed"
	} else {
		why += "; no changes to commit"
	}
	res := pipeline.Result{Status: pipeline.StatusPartial, Summary: []string{"harness: " + why}}
	h := map[string]any{"harness": why}
	if out.TimedOut {
		h["timed_out"] = true
	}
	if out.Failure != nil {
		h["cli_failure"] = out.Failure.Kind.String()
	}
	if out.Parsed.Source != agent.SourceMalformed {
		for _, l := range out.Parsed.Result.Summary {
			if len(res.Summary) < pipeline.MaxSummaryLines {
				res.Summary = append(res.Summary, l)
			}
		}
		h["claimed"] = out.Parsed.Result.Status.String()
		if len(out.Parsed.Result.Handoff) > 0 {
			h["agent_handoff"] = out.Parsed.Result.Handoff
		}
	}
	res.Handoff, _ = json.Marshal(h)
	return res
}

// cutShortWhy says, in the harness's words, why a step ended without a
// result: the timeout, else the CLI's own failure, else the exit.
func (e *Executor) cutShortWhy(out agent.Outcome) string {
	switch {
	case out.TimedOut:
		why := fmt.Sprintf("timed out after %s", config.ShortDuration(e.Runner.Timeout()))
		if out.Killed {
			why += " (killed after the grace)"
		}
		return why
	case out.Failure != nil:
		why := out.Failure.Message
		if out.Attempts > 1 {
			why += fmt.Sprintf(" (%d attempts)", out.Attempts)
		}
		return why
	case out.ExitCode != 0:
		return fmt.Sprintf("the agent exited with code %d without a result", out.ExitCode)
	}
	return "the agent produced no result"
}

// noResultOf is the failure of a step that ended without a result.
func (e *Executor) noResultOf(out agent.Outcome) noResult {
	nr := noResult{why: "no result: " + e.cutShortWhy(out)}
	if out.TimedOut {
		nr.why = fmt.Sprintf("the agent timed out after %s without a result", config.ShortDuration(e.Runner.Timeout()))
	}
	if out.Failure != nil && out.Failure.Kind.Permanent() {
		nr.permanent = true
	}
	return nr
}

// agentOutput is what a person needs to see of a step's output: the CLI's
// own failure first, then the end of its error output, then of its output.
func agentOutput(out agent.Outcome, max int) string {
	var b strings.Builder
	if out.Failure != nil {
		b.WriteString(out.Failure.Message + "\n")
	}
	if len(bytesTrim(out.Stderr)) > 0 {
		b.WriteString("--- stderr (end) ---\n" + tail(string(out.Stderr), max/2) + "\n")
	}
	if len(bytesTrim(out.Stdout)) > 0 {
		b.WriteString("--- stdout (end) ---\n" + tail(string(out.Stdout), max/2) + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func bytesTrim(b []byte) string { return strings.TrimSpace(string(b)) }

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(append([]string(nil), s[:n]...), fmt.Sprintf("and %d more", len(s)-n))
	}
	return s
}

// harnessPartial turns a claim the harness could not confirm into PARTIAL,
// keeping the agent's summary after the harness's reason.
func harnessPartial(res pipeline.Result, why, output string) pipeline.Result {
	out := pipeline.Result{Status: pipeline.StatusPartial, Summary: []string{"harness: " + why}}
	for _, l := range res.Summary {
		if len(out.Summary) < pipeline.MaxSummaryLines {
			out.Summary = append(out.Summary, l)
		}
	}
	h := map[string]any{"claimed": res.Status.String(), "harness": why}
	if output != "" {
		h["test_output"] = tail(output, maxFeedbackOutput)
	}
	if len(res.Handoff) > 0 {
		h["agent_handoff"] = res.Handoff
	}
	b, _ := json.Marshal(h)
	out.Handoff = b
	return out
}

func commitMessage(st pipeline.Step, res pipeline.Result) string {
	subject := st.Role.String() + ": " + st.Purpose.String()
	if len(res.Summary) > 0 {
		subject = st.Role.String() + ": " + res.Summary[0]
	}
	if len(subject) > 72 {
		subject = subject[:71] + "…"
	}
	return subject + "\n\n" + strings.Join(res.Summary, "\n") + "\n\nStatus: " + res.Status.String()
}

func filesChanged(res pipeline.Result) []string {
	var h struct {
		Files []string `json:"files_changed"`
	}
	if len(res.Handoff) > 0 {
		_ = json.Unmarshal(res.Handoff, &h)
	}
	return h.Files
}

// markersLeft lists the conflict files that still hold conflict markers.
func markersLeft(dir string, files []string) []string {
	var left []string
	for _, f := range files {
		b, err := os.ReadFile(dir + string(os.PathSeparator) + f)
		if err != nil {
			continue
		}
		s := string(b)
		if strings.Contains(s, "\n<<<<<<< ") || strings.HasPrefix(s, "<<<<<<< ") || strings.Contains(s, "\n>>>>>>> ") {
			left = append(left, f)
		}
	}
	return left
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
