package stepjob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bazinga-bot/bazinga/agent"
	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/stepexec"
)

// commandOf is the unprivileged command that runs a step of role.
func commandOf(ref codec.StepRef) string {
	switch ref.Role {
	case pipeline.RoleMerge:
		return CommandGate
	case pipeline.RoleValidate:
		return CommandValidate
	}
	return CommandAgent
}

// privilegedOf is the privileged command that publishes a step of role.
func privilegedOf(ref codec.StepRef) string {
	if ref.Role == pipeline.RoleMerge {
		return CommandLand
	}
	return CommandPublish
}

// ClaimRef is the ref a job creates to claim a step.
func ClaimRef(step string) string { return "refs/" + codec.ClaimRefPrefix + step }

// stepIssue is the issue number of the step's session.
func (j *job) stepIssue() (codec.StepRef, int, bool) {
	ref, _ := codec.ParseStepID(j.in.step)
	issue, err := strconv.Atoi(ref.Session)
	if err != nil || issue < 1 {
		j.gha.Errorf("step %s: its session %q is not an issue number", j.in.step, ref.Session)
		j.out.set(j.in.step, StatusFailed, []string{"not a GitHub session"})
		return ref, 0, false
	}
	j.log = j.log.With("step", j.in.step, "repo", j.in.repo.String())
	return ref, issue, true
}

// inFlight loads the session and finds the step in flight; when it is not,
// it says why in a notice and returns ok false.
func (j *job) inFlight(ctx context.Context, issue int, session string) (codec.State, *pipeline.Step, bool, error) {
	j.gha.Group("bazinga: load session #" + session)
	st, found, err := j.loadState(ctx, issue)
	j.gha.EndGroup()
	if err != nil {
		return st, nil, false, err
	}
	var step *pipeline.Step
	if found {
		step = st.Session.Step(j.in.step)
	}
	// The orchestrator writes a step into the state before it dispatches
	// it, so a state without the step that is older than it (or no state
	// at all) is not the session: its tracking comment was deleted or put
	// back older. Skipping would leave the step to wait out its timeout.
	if ref, _ := codec.ParseStepID(j.in.step); !found || step == nil && ref.N > st.Session.StepSeq {
		why := "the issue has no trusted tracking comment"
		if found {
			why = fmt.Sprintf("the tracking comment is older than the step (it knows steps up to %d)", st.Session.StepSeq)
		}
		return st, nil, false, &unreadableError{step: j.in.step, why: why}
	}
	if step == nil || step.State != pipeline.StepInFlight {
		why := "the session has no such step"
		if step != nil {
			why = "the step is " + step.State.String() + ", not in flight"
		}
		j.gha.Noticef("bazinga: step %s is not in flight (%s); nothing to do", j.in.step, why)
		j.out.set(j.in.step, StatusSkipped, []string{why})
		return st, nil, false, nil
	}
	return st, step, true, nil
}

// unreadableError is a session this job cannot find its step in. The job
// fails rather than skips: its failed run wakes the orchestrator, which
// rebuilds the session from its log and sends the step again at once.
type unreadableError struct{ step, why string }

func (e *unreadableError) Error() string {
	return "step " + e.step + ": the session cannot be read: " + e.why
}

// failUnreadable ends a job whose session cannot be read. A privileged job
// (post) records the failure on the issue, where the orchestrator reads it
// even before its state is back, and wakes it; an unprivileged one cannot
// post, and its failed run reports it.
func (j *job) failUnreadable(ctx context.Context, issue int, ue *unreadableError, post bool) int {
	j.out.set(j.in.step, StatusFailed, []string{ue.why})
	if post {
		ref, _ := codec.ParseStepID(j.in.step)
		fr := codec.FailureRecord{Step: j.in.step, Role: ref.Role, Group: ref.Group, RunURL: j.in.runURL,
			Reason: "the job could not read the session (" + ue.why + ")"}
		if _, err := j.gh.CreateComment(ctx, j.in.repo, issue, codec.RenderFailureComment(fr)); err != nil {
			j.gha.Warningf("bazinga: could not post the failure of %s: %v", j.in.step, err)
		}
		j.wake(ctx, issue, j.in.refName)
	}
	return j.fail("reading the session of "+j.in.step, ue)
}

// runStep is the unprivileged half of a step (agent, gate, validate): load,
// run, hand over. Its token can only read: it claims, pushes and posts
// nothing; the privileged job does that with what it hands over.
func (j *job) runStep(ctx context.Context) int {
	in := j.in
	ref, issue, ok := j.stepIssue()
	if !ok {
		return 1
	}
	ho := HandOver{Step: in.step, Command: in.command}
	handOver := func(h HandOver, content func(int) ([]byte, error)) error {
		if err := writeHandOver(in.handover, h, content); err != nil {
			return err
		}
		j.gha.Infof("hand-over (%s) written to %s", h.Outcome, in.handover)
		return nil
	}
	st, step, ok, err := j.inFlight(ctx, issue, ref.Session)
	var ue *unreadableError
	if errors.As(err, &ue) {
		// Handed over too, so that the privileged job runs: it records
		// the failure, which Action-only mode needs (no workflow_run).
		ho.Outcome = OutcomeFailure
		ho.Failure = &codec.FailureRecord{Step: in.step, Role: ref.Role, Group: ref.Group, Reason: "the job could not read the session (" + ue.why + ")"}
		if err := handOver(ho, nil); err != nil {
			return j.fail("writing the hand-over", err)
		}
		return j.failUnreadable(ctx, issue, ue, false)
	}
	if err != nil {
		return j.fail("reading the session from the tracking comment of #"+ref.Session, err)
	}
	if !ok {
		ho.Outcome, ho.Why = OutcomeSkipped, "not in flight"
		if err := handOver(ho, nil); err != nil {
			return j.fail("writing the hand-over", err)
		}
		return 0
	}
	// A step published already (its claim exists) is not run again: the
	// workflow's concurrency group runs a second dispatch of one step after
	// the first has published.
	switch _, err := j.gh.GetRef(ctx, in.repo, strings.TrimPrefix(ClaimRef(in.step), "refs/")); {
	case err == nil:
		j.gha.Noticef("bazinga: step %s is a duplicate: another job claimed it (%s exists); nothing to do", in.step, ClaimRef(in.step))
		j.out.set(in.step, StatusDuplicate, []string{"claimed by another job"})
		ho.Outcome = OutcomeDuplicate
		if err := handOver(ho, nil); err != nil {
			return j.fail("writing the hand-over", err)
		}
		return 0
	case !errors.Is(err, ghapi.ErrNotFound):
		return j.fail("checking the claim of step "+in.step, err)
	}

	cfg := st.Config
	if in.agentCommand != "" {
		cfg = config.WithAgentCommand(cfg, in.agentCommand)
	}
	work, err := os.MkdirTemp(in.workDir, "bazinga-")
	if err != nil {
		return j.fail("making a working directory", err)
	}
	defer os.RemoveAll(work)
	remote := gitops.Remote{URL: in.serverURL + "/" + in.repo.String() + ".git", Token: in.token}
	rec := &recorder{remote: remote, tempDir: work, base: st.Session.Base,
		policy: gitops.PathPolicy{AllowWorkflowChanges: cfg.AllowWorkflowChanges, Protected: []string{in.config}}}
	if g := st.Session.Group(step.Group); g != nil {
		rec.branch = g.Branch
	}
	ex := &stepexec.Executor{Remote: remote, Config: cfg, TempDir: work, Logger: j.log, HandOver: rec}
	if step.Role != pipeline.RoleMerge && step.Role != pipeline.RoleValidate {
		if code, ok := j.stepTexts(ctx, issue, &st.Session, *step, ho, handOver); !ok {
			return code
		}
		passEnv := cfg.Agent.Env
		if in.gatewayURL != "" {
			// App mode with the gateway: the agent gets a token for this step, never a provider key.
			tok, err := requestGatewayToken(ctx, j.d.HTTPClient, j.gha, j.d.Getenv, in)
			if err != nil {
				return j.fail("getting a gateway token", err)
			}
			ex.Meter = remoteMeter{base: in.gatewayURL, token: tok}
			passEnv = agent.WithoutCredentials(passEnv)
			j.gha.Infof("bazinga: model calls go through the gateway at %s", in.gatewayURL)
		}
		r, err := agent.NewRunner(agent.RunnerConfig{Command: cfg.Agent.Command, CLI: string(config.AgentCLI(cfg)), Timeout: cfg.Agent.Timeout.D(), KillGrace: cfg.Agent.Grace.D(), PassEnv: passEnv, TempDir: work,
			MaxTurns: cfg.Agent.MaxTurns, MaxBudgetUSD: cfg.Limits.StepCostUSD,
			TranscriptDir: filepath.Join(work, "transcripts"),
			// A GitHub-hosted runner is a throwaway machine; a self-hosted one may not be.
			Sandboxed: j.d.Getenv("RUNNER_ENVIRONMENT") == "github-hosted"})
		if err != nil {
			return j.fail("the agent command", err)
		}
		// The CLI is checked before any model is paid for: a missing binary
		// or flags that cannot work headless fail here, named.
		j.gha.Group("bazinga: check the agent CLI")
		a, perr := agent.Preflight(ctx, cfg)
		j.gha.EndGroup()
		if perr != nil {
			return j.agentUnusable(*step, ho, handOver, perr)
		}
		if a.Version != "" {
			j.gha.Infof("agent: %s %s (%s)", a.CLI, a.Version, a.Program)
		}
		ex.Runner = r
		// What people with write access said reaches the agents, as data.
		comments := j.humanComments(ctx, issue, st.Session, step.Group)
		ex.Comments = func(string) []agent.UntrustedText { return comments }
	}
	// The base head as the step starts: what validation and session-level
	// steps saw (a group step records its own start in the recorder).
	baseHead, err := j.gh.GetRef(ctx, in.repo, "heads/"+st.Session.Base)
	if err != nil {
		return j.fail("reading "+st.Session.Base, err)
	}

	started := j.d.Now().UTC()
	j.gha.Group(fmt.Sprintf("bazinga: %s step %s", step.Role, in.step))
	ev, rep := ex.Run(ctx, st.Session, in.step)
	if rep.Output != "" && ev.Kind != pipeline.EventStepResult {
		j.gha.Infof("%s", rep.Output)
	}
	// The whole output goes to the job log, where GitHub masks the
	// secrets it knows; never to an artifact, where nothing is masked.
	j.printTranscript(rep.Transcript)
	for _, n := range rep.Notes {
		j.gha.Infof("harness: %s", n)
	}
	j.gha.EndGroup()
	ended := j.d.Now().UTC()

	if ev.Kind != pipeline.EventStepResult || ev.Result == nil {
		j.gha.WithFieldsMap(map[string]string{"title": "bazinga: step " + in.step + " ended without a result"}).
			Errorf("%s; %s", oneLine(ev.Reason), failureNext(ev.Permanent))
		j.out.set(in.step, StatusFailed, []string{ev.Reason})
		j.out.summary(renderSummary(*step, j.redacted(rep, cfg), nil, started, ended, in.runURL))
		// The reason goes to the orchestrator (through the publishing job),
		// which retries the step; the run's failure alone would say only
		// that the job failed.
		ho.Outcome = OutcomeFailure
		ho.Failure = &codec.FailureRecord{Step: in.step, Role: step.Role, Group: step.Group, Reason: ev.Reason, RunURL: in.runURL, Usage: ev.Usage,
			Permanent: ev.Permanent}
		if err := handOver(ho, nil); err != nil {
			j.gha.Warningf("bazinga: could not hand over the failure of %s: %v", in.step, err)
		}
		return 1
	}
	res := *ev.Result
	note := ""
	if rep.Tests != "" {
		note = "tests: " + rep.Tests
	}
	ho.Outcome = OutcomeResult
	ho.Result = &codec.ResultRecord{Step: in.step, Role: step.Role, Group: step.Group, Model: step.Model, Result: res,
		StartedAt: started, EndedAt: ended, RunURL: in.runURL, Note: note, Usage: ev.Usage, Harness: ev.Harness}
	ho.Base = baseHead
	if rec.start != "" {
		ho.Base, ho.BranchExisted = rec.start, rec.existed
	}
	ho.Commit, ho.Merge = rec.commit, rec.tested
	j.gha.Group("bazinga: hand over the result")
	err = handOver(ho, rec.content)
	j.gha.EndGroup()
	if err != nil {
		return j.fail("writing the hand-over of "+in.step, err)
	}
	j.gha.Infof("%s", pipeline.Capsule(pipeline.Step{ID: in.step, Group: step.Group, StepSpec: pipeline.StepSpec{Role: step.Role, Model: step.Model},
		State: pipeline.StepDone, Result: &res}))
	j.log.Info("result handed over", "status", res.Status.String())
	j.out.set(in.step, res.Status.String(), res.Summary)
	j.out.summary(renderSummary(*step, j.redacted(rep, cfg), &res, started, ended, in.runURL))
	return 0
}

// loadState reads the session from the issue's tracking comment. The
// orchestrator writes the state, with the step in flight, before it
// dispatches the step, so one read is enough.
func (j *job) loadState(ctx context.Context, issue int) (codec.State, bool, error) {
	comments, err := j.gh.ListComments(ctx, j.in.repo, issue)
	if errors.Is(err, ghapi.ErrNotFound) {
		return codec.State{}, false, nil
	}
	if err != nil {
		return codec.State{}, false, err
	}
	st, c, err := codec.FindState(comments, j.in.repo, issue, codec.StateTrust{PublicKey: j.in.publicKey, Previous: j.in.previousKeys, Authors: []string{j.in.orchestrator}})
	if errors.Is(err, codec.ErrNoSession) {
		j.log.Info("no trusted tracking comment", "why", err.Error())
		return codec.State{}, false, nil
	}
	if err != nil {
		return codec.State{}, false, err
	}
	j.log.Info("session loaded", "comment", c.ID, "rev", st.Session.Rev, "status", st.Session.Status.String())
	return st, true, nil
}

// claim creates the step's claim ref at the base head (ErrExists: another
// job has it).
func (j *job) claim(ctx context.Context, base string, others ...string) error {
	sha, err := j.gh.GetRef(ctx, j.in.repo, "heads/"+base)
	// Any commit will do for a claim: a base renamed or deleted since the
	// step started must not keep its failure from being recorded.
	for _, b := range others {
		if !errors.Is(err, ghapi.ErrNotFound) || b == "" {
			break
		}
		sha, err = j.gh.GetRef(ctx, j.in.repo, "heads/"+b)
	}
	if errors.Is(err, ghapi.ErrNotFound) {
		// The base was renamed before any group branch existed: the
		// default branch is there (GitHub moves the default with a rename).
		if def, derr := j.gh.DefaultBranch(ctx, j.in.repo); derr == nil {
			sha, err = j.gh.GetRef(ctx, j.in.repo, "heads/"+def)
		}
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", base, err)
	}
	if err := j.gh.CreateRef(ctx, j.in.repo, ClaimRef(j.in.step), sha); err != nil {
		return err
	}
	j.gha.Infof("claimed %s at %s", ClaimRef(j.in.step), sha)
	return nil
}

// postResult posts the result comment on the group PR if there is one,
// else on the issue, and returns where it went.
func (j *job) postResult(ctx context.Context, issue int, s pipeline.Session, rec codec.ResultRecord) (int, error) {
	return j.postComment(ctx, issue, s, rec.Group, codec.RenderResultComment(rec))
}

// postComment posts body on the group's PR if there is one, else on the
// issue, and returns where it went.
func (j *job) postComment(ctx context.Context, issue int, s pipeline.Session, group, body string) (int, error) {
	where := issue
	if g := s.Group(group); g != nil && group != pipeline.LeadGroup {
		pr, ok, err := j.gh.FindPR(ctx, j.in.repo, g.Branch)
		if err != nil {
			return 0, err
		}
		if ok {
			where = pr.Number
		}
	}
	if _, err := j.gh.CreateComment(ctx, j.in.repo, where, body); err != nil {
		return 0, err
	}
	return where, nil
}

// renderSummary is the job summary: a table of the step.
func renderSummary(st pipeline.Step, rep stepexec.Report, res *pipeline.Result, started, ended time.Time, runURL string) string {
	var b strings.Builder
	status, summary := StatusFailed, strings.Join(rep.Notes, "<br>")
	if res != nil {
		status, summary = res.Status.String(), cells(res.Summary)
	}
	group := st.Group
	if group == pipeline.LeadGroup {
		group = "(session)"
	}
	fmt.Fprintf(&b, "### bazinga step `%s`\n\n", st.ID)
	b.WriteString("| | |\n|---|---|\n")
	row := func(k, v string) {
		if v == "" {
			v = "—"
		}
		fmt.Fprintf(&b, "| %s | %s |\n", k, v)
	}
	row("Role", cell(st.Role.String()))
	row("Group", cell(group))
	row("Status", "**"+cell(status)+"**")
	row("Summary", summary)
	row("Files", cell(strings.Join(rep.Files, ", ")))
	row("Tests", cell(rep.Tests))
	row("Started", started.Format(time.RFC3339))
	row("Ended", ended.Format(time.RFC3339))
	row("Duration", ended.Sub(started).Round(time.Second).String())
	if runURL != "" {
		row("Run", runURL)
	}
	// --- usage (issue 13 item 5) ---
	if rep.Usage != nil && !rep.Usage.IsZero() {
		row("Usage", cell(rep.Usage.Detail()))
	}
	if len(rep.Denied) > 0 {
		row("Denied", cell(strings.Join(rep.Denied, ", ")))
	}
	// --- baseline and harness-run checks (issue 13 items 1 and 4) ---
	if h := rep.Harness; h != nil {
		if h.Baseline != nil {
			row("Baseline", baselineCell(*h.Baseline))
		}
		if len(h.Checks) > 0 {
			row("Checks", checksCell(h.Checks))
		}
	}
	if res == nil && strings.TrimSpace(rep.Output) != "" {
		// The agent's own words, for a step that ended without a result.
		fence := codeFence(rep.Output)
		fmt.Fprintf(&b, "\n<details><summary>What the agent printed (the end)</summary>\n\n%s\n%s\n%s\n\n</details>\n", fence, rep.Output, fence)
	}
	return b.String()
}

// codeFence is a backtick fence longer than any run of backticks in s, so
// the agent's output cannot close it and write markdown of its own.
func codeFence(s string) string {
	longest, run := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// agentUnusable hands over a step whose agent CLI cannot run at all: a
// failure no retry can fix, so the session pauses naming it.
func (j *job) agentUnusable(step pipeline.Step, ho HandOver, handOver func(HandOver, func(int) ([]byte, error)) error, err error) int {
	reason := err.Error()
	j.gha.WithFieldsMap(map[string]string{"title": "bazinga: the agent CLI cannot run"}).Errorf("%s", reason)
	j.out.set(j.in.step, StatusFailed, []string{reason})
	ho.Outcome = OutcomeFailure
	ho.Failure = &codec.FailureRecord{Step: j.in.step, Role: step.Role, Group: step.Group, Reason: reason, RunURL: j.in.runURL, Permanent: true}
	if herr := handOver(ho, nil); herr != nil {
		j.gha.Warningf("bazinga: could not hand over the failure of %s: %v", j.in.step, herr)
	}
	return 1
}

// transcriptLogBytes bounds what of each output stream goes to the job log.
const transcriptLogBytes = 4 << 20

// printTranscript puts the agent's whole output (up to a bound, the end)
// into a collapsed group of the job log.
func (j *job) printTranscript(paths []string) {
	for _, p := range paths {
		b, err := readTail(p, transcriptLogBytes)
		if err != nil || len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		j.gha.Group("bazinga: the agent's " + strings.TrimPrefix(filepath.Ext(p), "."))
		j.gha.Infof("%s", b)
		j.gha.EndGroup()
	}
}

func readTail(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		if _, err := f.Seek(fi.Size()-max, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// redacted removes the values of the variables passed to the agent (its
// model key) from what the job summary shows: a summary is not masked the
// way the log is, and an agent may have printed its environment.
func (j *job) redacted(rep stepexec.Report, cfg pipeline.Config) stepexec.Report {
	for _, name := range cfg.Agent.Env {
		v := j.d.Getenv(name)
		if len(v) < 8 {
			continue // too short to be a secret; replacing it would garble text
		}
		rep.Output = strings.ReplaceAll(rep.Output, v, "***")
		rep.Notes = append([]string(nil), rep.Notes...)
		for i := range rep.Notes {
			rep.Notes[i] = strings.ReplaceAll(rep.Notes[i], v, "***")
		}
	}
	return rep
}

// baselineCell says what the baseline this step took found: the commit,
// green or red, the failing tests by name (or that only the exit status is
// known), and how failures were told apart.
func baselineCell(bl pipeline.Baseline) string {
	verdict := "**red**"
	if bl.Green {
		verdict = "green"
	}
	s := fmt.Sprintf("%s at `%s` (%s)", verdict, cell(shortCommit(bl.Commit)), cell(bl.Identity.String()))
	if bl.Green {
		return s
	}
	const shown = 10 // a summary row stays readable; the state keeps them all
	switch {
	case len(bl.Failed) > 0:
		names := make([]string, 0, min(len(bl.Failed), shown))
		for _, n := range bl.Failed[:min(len(bl.Failed), shown)] {
			names = append(names, "`"+strings.ReplaceAll(cell(n), "`", "'")+"`")
		}
		s += " — failing: " + strings.Join(names, ", ")
		if more := len(bl.Failed) - shown; more > 0 {
			s += fmt.Sprintf(" and %d more", more)
		}
		if bl.Unnamed {
			s += ", and failures without a test name"
		}
	default:
		s += " — exit status only: no failing test named"
	}
	return s
}

// checksCell lists each harness-run check: pass or fail, required or
// optional, and the harness's one line about the run.
func checksCell(cs []pipeline.CheckOutcome) string {
	lines := make([]string, 0, len(cs))
	for _, c := range cs {
		verdict, need := "✓ pass", "optional"
		if !c.Passed {
			verdict = "✗ **fail**"
		}
		if c.Required {
			need = "required"
		}
		l := fmt.Sprintf("`%s` %s (%s)", strings.ReplaceAll(cell(c.Name), "`", "'"), verdict, need)
		if c.Summary != "" {
			l += " — " + cell(c.Summary)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "<br>")
}

func shortCommit(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func cells(lines []string) string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, cell(l))
	}
	return strings.Join(out, "<br>")
}

// cell keeps untrusted text inert on one line of a markdown table.
func cell(s string) string {
	return strings.ReplaceAll(codec.OneLine(s), "|", `\|`)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
