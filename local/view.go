package local

import (
	"encoding/json"
	"fmt"
	"github.com/bazinga-bot/bazinga/agent"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/stepexec"
)

// view is what a person sees: a capsule line per finished step, a live
// progress line per group on a terminal (plain lines otherwise), and a
// summary table at the end; or, with --json, the events as JSON lines.
type view struct {
	out      io.Writer
	json     bool
	terminal bool
	drawn    int // progress lines currently on screen
	enc      *json.Encoder
}

func newView(out io.Writer, asJSON, terminal bool) *view {
	return &view{out: out, json: asJSON, terminal: terminal && !asJSON, enc: json.NewEncoder(out)}
}

// jsonLine is one line of --json output.
type jsonLine struct {
	Type    string           `json:"type"`
	At      string           `json:"at,omitempty"`
	Event   *pipeline.Event  `json:"event,omitempty"`
	Action  *pipeline.Action `json:"action,omitempty"`
	Capsule string           `json:"capsule,omitempty"`
	Status  string           `json:"status,omitempty"`
	Reason  string           `json:"reason,omitempty"`
	Session string           `json:"session,omitempty"`
	Base    string           `json:"base,omitempty"`
	Repo    string           `json:"repo,omitempty"`
	// A step's own words when it ended without a result (type "step_output").
	Step       string   `json:"step,omitempty"`
	Failure    string   `json:"failure,omitempty"`
	Output     string   `json:"output,omitempty"`
	Transcript []string `json:"transcript,omitempty"`
	Denied     []string `json:"denied,omitempty"`
	// The test and build commands (type "tests"; Reason says where from).
	Command string `json:"command,omitempty"`
	Build   string `json:"build,omitempty"`
	// The agent CLI the preflight found (type "agent").
	CLI     string `json:"cli,omitempty"`
	Version string `json:"version,omitempty"`
	Program string `json:"program,omitempty"`
}

// agentFound says which agent CLI runs the steps, as the preflight found it.
func (v *view) agentFound(a agent.Agent) {
	if v.json {
		_ = v.enc.Encode(jsonLine{Type: "agent", CLI: a.CLI, Version: a.Version, Program: a.Program})
		return
	}
	if a.CLI == "generic" || a.CLI == "" {
		return
	}
	line := "agent: " + a.CLI
	if a.Version != "" {
		line += " " + a.Version
	}
	v.println(line)
}

// testsFound says which test command the harness runs and where it came
// from, before the first step (the pm's, paid for) starts.
func (v *view) testsFound(cfg pipeline.Config, src TestsSource) {
	cmd := cfg.Tests.Command
	if v.json {
		_ = v.enc.Encode(jsonLine{Type: "tests", Command: cmd, Build: cfg.Build.Command, Reason: src.String()})
		return
	}
	line := fmt.Sprintf("tests: %s (%s)", cmd, src)
	if strings.TrimSpace(cmd) == "" {
		line = fmt.Sprintf("tests: none — the session runs without a test gate (%s)", src)
	}
	if b := cfg.Build.Command; b != "" {
		line += "; build first: " + b
	}
	v.println(line)
}

func (v *view) clear() {
	if v.drawn == 0 {
		return
	}
	fmt.Fprintf(v.out, "\x1b[%dA\x1b[J", v.drawn)
	v.drawn = 0
}

func (v *view) println(s string) {
	v.clear()
	fmt.Fprintln(v.out, s)
}

// reconciled prints what one reconcile did: capsules of the steps that ended,
// and (without a terminal) a line per dispatched step.
func (v *view) reconciled(before, after pipeline.Session, events []pipeline.Event, actions []pipeline.Action) {
	if v.json {
		for i := range events {
			_ = v.enc.Encode(jsonLine{Type: "event", At: after.UpdatedAt.Format(time.RFC3339), Event: &events[i]})
		}
		for i := range actions {
			_ = v.enc.Encode(jsonLine{Type: "action", Action: &actions[i]})
		}
	}
	for _, st := range after.Steps {
		if st.State == pipeline.StepInFlight {
			continue
		}
		old := before.Step(st.ID)
		if old != nil && old.State != pipeline.StepInFlight {
			continue
		}
		c := pipeline.Capsule(st)
		if v.json {
			_ = v.enc.Encode(jsonLine{Type: "capsule", Capsule: c})
			continue
		}
		v.println(c)
		if st.Result != nil && len(st.Result.Findings) > 0 {
			v.println(strings.Join(findingLines(st.Result.Findings, "   "), "\n"))
		}
	}
	if v.json {
		return
	}
	for _, a := range actions {
		switch a.Kind {
		case pipeline.ActionNotify:
			if a.Notice == pipeline.NoticeQuestion || a.Notice == pipeline.NoticeCheckpoint {
				continue // asked separately
			}
			v.println("💬 " + a.Text)
		case pipeline.ActionPause:
			v.println("⏸️  paused: " + a.Text) // the run says how to go on when it stops
		case pipeline.ActionDispatch:
			if !v.terminal {
				if st := after.Step(a.Step); st != nil {
					v.println(pipeline.Capsule(*st))
				}
			}
		}
	}
}

// failureLines is how much of a failed agent's output the terminal shows;
// the whole of it is in the transcript files.
const failureLines = 15

// finished notes what the harness did on its own during a step and, for a
// step that ended without a result, what the agent itself said.
func (v *view) finished(rep stepexec.Report, ev pipeline.Event) {
	failed := ev.Kind == pipeline.EventStepFailed && ev.Reason != "cancelled"
	if v.json {
		if failed || len(rep.Denied) > 0 {
			_ = v.enc.Encode(jsonLine{Type: "step_output", Step: rep.Step, Failure: rep.Failure, Reason: ev.Reason,
				Output: rep.Output, Transcript: rep.Transcript, Denied: rep.Denied})
		}
		return
	}
	if failed && rep.Role != pipeline.RoleMerge && rep.Role != pipeline.RoleValidate {
		v.println(fmt.Sprintf("   ↳ step %s (%s) failed: %s", rep.Step, rep.Role, ev.Reason))
		if out := strings.TrimSpace(rep.Output); out != "" {
			lines := strings.Split(out, "\n")
			if len(lines) > failureLines {
				lines = append([]string{"…"}, lines[len(lines)-failureLines:]...)
			}
			for _, l := range lines {
				v.println("     " + l)
			}
		}
		if len(rep.Transcript) > 0 {
			v.println("     full output: " + strings.Join(rep.Transcript, ", "))
		}
	}
	for _, n := range rep.Notes {
		if strings.Contains(n, " denied ") && !failed {
			v.println("   ↳ " + n)
		}
	}
	for _, n := range rep.Notes {
		if strings.HasPrefix(n, "merged ") || strings.Contains(n, "harness") || strings.HasPrefix(n, "baseline") {
			v.println("   ↳ " + n)
		}
	}
	// The checks the harness ran (issue 13), failures with their last line.
	if h := rep.Harness; h != nil && len(h.Checks) > 0 {
		v.println(fmt.Sprintf("   ↳ group %s checks (%s): %s", rep.Group, rep.Role, pipeline.ChecksLine(h.Checks)))
		for _, c := range h.Checks {
			if !c.Passed {
				v.println("     " + c.Name + ": " + c.Summary + lastLine(c.Tail))
			}
		}
	}
}

// lastLine is " — " and the last non-empty line of s, or "".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return " — " + l
	}
	return ""
}

// progress redraws one line per group with a step in flight (terminals only).
func (v *view) progress(s pipeline.Session) {
	if !v.terminal {
		return
	}
	v.clear()
	var lines []string
	for _, st := range s.Steps {
		if st.State == pipeline.StepInFlight {
			lines = append(lines, fmt.Sprintf("  %s  %s", pipeline.Capsule(st), time.Since(st.DispatchedAt).Round(time.Second)))
		}
	}
	for _, g := range s.Groups {
		if g.InFlight == "" && !g.Stage.Finished() && g.Wait != pipeline.WaitNone {
			lines = append(lines, fmt.Sprintf("  ⏸️  Group %s waits: %s", g.ID, g.WaitDetail))
		}
	}
	for _, l := range lines {
		fmt.Fprintln(v.out, l)
	}
	v.drawn = len(lines)
}

// started announces the session.
func (v *view) started(id, base, repo string, resumed bool) {
	if v.json {
		kind := "started"
		if resumed {
			kind = "resumed"
		}
		_ = v.enc.Encode(jsonLine{Type: kind, Session: id, Base: base, Repo: repo})
		return
	}
	if resumed {
		v.println(fmt.Sprintf("resuming bazinga session %s on %s (%s)", id, base, repo))
		return
	}
	v.println(fmt.Sprintf("bazinga session %s on %s (%s)", id, base, repo))
}

func (v *view) question(q string, timeout time.Duration) {
	v.println(fmt.Sprintf("❓ The pm asks:\n%s\nType your answer and press Enter (within %s, else the pm uses its fallback):", q, timeout))
}

func (v *view) warn(msg string) {
	if v.json {
		_ = v.enc.Encode(jsonLine{Type: "warning", Reason: msg})
		return
	}
	v.println("⚠️  " + msg)
}

// summary prints the table at the end.
func (v *view) summary(s pipeline.Session) {
	if v.json {
		_ = v.enc.Encode(jsonLine{Type: "end", Status: s.Status.String(), Reason: s.Reason})
		return
	}
	v.clear()
	fmt.Fprintln(v.out)
	WriteSummary(v.out, s)
}

// WriteSummary writes a session's status and its table of groups.
func WriteSummary(out io.Writer, s pipeline.Session) {
	status := s.Status.String()
	if s.Reason != "" {
		status += ": " + s.Reason
	}
	fmt.Fprintf(out, "Session %s — %s\n", s.ID, status)
	steps := map[string]int{}
	for _, st := range s.Steps {
		steps[st.Group]++
	}
	// A USAGE column only when some step reported what it cost (issue 13).
	withUsage := !s.Usage.IsZero()
	usage := func(u pipeline.Usage) string {
		if !withUsage {
			return ""
		}
		if u.IsZero() {
			return "\t—"
		}
		return "\t" + u.String()
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := "GROUP\tNAME\tSTAGE\tSTEPS\tLAST"
	if withUsage {
		header = "GROUP\tNAME\tSTAGE\tSTEPS\tUSAGE\tLAST"
	}
	fmt.Fprintln(tw, header)
	for _, g := range s.Groups {
		last := ""
		if st := s.Step(g.Last); st != nil {
			last = pipeline.Capsule(*st)
		}
		stage := g.Stage.String()
		if g.Wait != pipeline.WaitNone && !g.Stage.Finished() {
			stage += " (" + g.Wait.String() + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d%s\t%s\n", g.ID, g.Name, stage, steps[g.ID], usage(g.Usage), last)
	}
	fmt.Fprintf(tw, "%s\t%s\t%s\t%d%s\t%s\n", "_", "session", s.Status, steps[pipeline.LeadGroup], usage(s.Lead.Usage), "")
	tw.Flush()
	fmt.Fprintf(out, "%d steps in all.\n", len(s.Steps)+s.Pruned)
	if withUsage {
		fmt.Fprintf(out, "Usage: %s.\n", s.Usage.Detail())
	}
	writeFindings(out, s)
	writeCheckpoint(out, s)
}

// findingLines renders findings grouped by severity, worst first (issue 26):
// a heading per severity, then one finding a line.
func findingLines(fs []pipeline.Finding, indent string) []string {
	var out []string
	for _, sev := range pipeline.Severities() {
		group := pipeline.BySeverity(fs, sev)
		if len(group) == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s%s (%d):", indent, strings.ToUpper(sev.String()), len(group)))
		for _, f := range group {
			line := indent + "  - "
			if w := f.Where(); w != "" {
				line += w + ": "
			}
			line += f.Problem
			if f.Fix != "" {
				line += " (fix: " + f.Fix + ")"
			}
			out = append(out, line)
		}
	}
	return out
}

// maxSummaryFindings bounds the findings the summary lists: the latest
// review of each group tells what stands.
const maxSummaryFindings = 40

// writeFindings lists, per group, the findings of its latest review, grouped
// by severity, and the session's follow-ups.
func writeFindings(out io.Writer, s pipeline.Session) {
	latest := map[string]*pipeline.Step{}
	var order []string
	for i := range s.Steps {
		st := &s.Steps[i]
		if st.Result == nil || !st.Role.Reviews() {
			continue
		}
		if _, seen := latest[st.Group]; !seen {
			order = append(order, st.Group)
		}
		latest[st.Group] = st
	}
	shown := 0
	for _, g := range order {
		st := latest[g]
		if len(st.Result.Findings) == 0 || shown >= maxSummaryFindings {
			continue
		}
		if shown == 0 {
			fmt.Fprintln(out, "Review findings (the latest review of each group):")
		}
		fmt.Fprintf(out, "  %s, %s step %s:\n", g, st.Role, st.ID)
		lines := findingLines(st.Result.Findings, "    ")
		fmt.Fprintln(out, strings.Join(lines, "\n"))
		shown += len(st.Result.Findings)
	}
	if f := pipeline.FollowUpsText(s); f != "" {
		fmt.Fprintln(out, f)
	}
}

// writeCheckpoint shows the checkpoint waiting, if any: the plan to review
// (what `bazinga status` shows before `--resume ID --approve`).
func writeCheckpoint(out io.Writer, s pipeline.Session) {
	cp := s.Checkpoint
	if cp == nil {
		return
	}
	fmt.Fprintf(out, "✋ %s waits for approval: bazinga run --resume %s --approve", cp.ID, s.ID)
	if cp.Kind == pipeline.CheckpointFindings {
		fmt.Fprintf(out, ", or --feedback \"direction\" (group %s's HIGH findings survived their revision)\n", cp.Group)
		return
	}
	if cp.Kind != pipeline.CheckpointPlan {
		fmt.Fprintf(out, " (phase %d starts next)\n", cp.Phase)
		return
	}
	fmt.Fprintf(out, ", or --feedback \"what to change\"\n%s", pipeline.PlanText(s))
}

// --- checkpoints (issue 13) ---

// checkpoint shows what waits for approval: the plan, or the phase about to
// start; note says how it was decided, if not by a person.
func (v *view) checkpoint(s pipeline.Session, note string) {
	cp := s.Checkpoint
	if cp == nil {
		return
	}
	if v.json {
		_ = v.enc.Encode(jsonLine{Type: "checkpoint", Session: s.ID, Status: cp.ID, Reason: note})
		return
	}
	var b strings.Builder
	if cp.Kind == pipeline.CheckpointFindings {
		fmt.Fprintf(&b, "✋ %s: group %s's HIGH findings survived their revision:\n", cp.ID, cp.Group)
		if st := s.Step(cp.Step); st != nil && st.Result != nil {
			b.WriteString(strings.Join(findingLines(st.Result.Findings, "   "), "\n") + "\n")
		}
	} else if cp.Kind == pipeline.CheckpointPlan {
		fmt.Fprintf(&b, "✋ %s waits for approval before any work starts:\n%s", cp.ID, pipeline.PlanText(s))
	} else {
		var ids []string
		for _, g := range s.Groups {
			if cp.Holds(&g) {
				ids = append(ids, g.ID)
			}
		}
		fmt.Fprintf(&b, "✋ %s waits for approval: phase %d (%s) starts next.\n", cp.ID, cp.Phase, strings.Join(ids, ", "))
	}
	if note != "" {
		b.WriteString("   " + note + "\n")
	}
	v.println(strings.TrimRight(b.String(), "\n"))
}

func (v *view) checkpointPrompt(cp *pipeline.Checkpoint) {
	if cp.Kind == pipeline.CheckpointPlan {
		v.println(`Approve the plan? Type "a" to approve, "f <feedback>" to send it back to the pm, or "s" to stop:`)
		return
	}
	if cp.Kind == pipeline.CheckpointFindings {
		v.println(`Accept the findings? Type "a" to accept them and go on, "f <direction>" to send the group back with it, or "s" to stop:`)
		return
	}
	v.println(`Start the phase? Type "a" to approve, "f <feedback>" to tell the pm first, or "s" to stop:`)
}

// checkpointStop says why a run that cannot ask stops at a checkpoint, and how to go on.
func (v *view) checkpointStop(s pipeline.Session, repo string) {
	cp := s.Checkpoint
	v.checkpoint(s, "")
	msg := "this run cannot ask (no terminal); the session is saved and stops here. Approve with:\n" +
		"  bazinga run --repo " + repo + " --resume " + s.ID + " --approve"
	if cp.Kind == pipeline.CheckpointPlan {
		msg += "\nor send the plan back to the pm with:\n  bazinga run --repo " + repo + " --resume " + s.ID + ` --feedback "what to change"`
	}
	if cp.Kind == pipeline.CheckpointFindings {
		msg += "\nor send the group back with your direction:\n  bazinga run --repo " + repo + " --resume " + s.ID + ` --feedback "what to do"`
	}
	v.warn(cp.ID + " waits for approval: " + msg)
}
