package local

import (
	"fmt"
	"strings"

	"github.com/bazinga-bot/bazinga/pipeline"
)

// A red baseline in local mode (issue 13 item 1). The engine pauses a
// session whose base already fails (tests.baseline pause). On a terminal the
// run asks whether to accept those failures as pre-existing — accepting is
// the resume the engine hears from any front-end, which accepts the baseline
// — or to stop, saved. Without a terminal it stops paused, saying
// how to continue (--resume ID, or --baseline accept).

// baselineWaits reports whether a red baseline, not accepted yet, holds the
// session paused.
func baselineWaits(s pipeline.Session) bool {
	return s.Status == pipeline.SessionPaused && s.Baseline.Red() && !s.Baseline.Accepted
}

// askBaseline puts the red baseline to the person at the terminal, once per
// baseline (again after an answer it could not read).
func (r *runner) askBaseline() {
	if !baselineWaits(r.s) || r.s.Baseline.CannotRun || !r.interactive() || r.reading || r.askedBL == r.s.Baseline.Commit {
		return
	}
	r.askedBL = r.s.Baseline.Commit
	r.view.baselinePrompt(r.s)
	r.read("baseline " + r.s.Baseline.Commit)
}

// awaitsBaseline reports whether the run stays to hear about a red
// baseline: someone at the terminal is (or is about to be) asked.
func (r *runner) awaitsBaseline() bool {
	return baselineWaits(r.s) && !r.s.Baseline.CannotRun && r.interactive()
}

// baselineReply turns the answer about the baseline of commit into events.
func (r *runner) baselineReply(commit, line string) []pipeline.Event {
	if !baselineWaits(r.s) || r.s.Baseline.Commit != commit {
		return nil // resumed or stopped meanwhile
	}
	c, ok := parseBaselineReply(line)
	if !ok {
		r.view.warn(`type "a" to accept these failures as pre-existing, or "s" to stop`)
		r.askedBL = "" // ask again
		return nil
	}
	if c.Kind == pipeline.CommandStop {
		r.view.warn("stopped at the red baseline; the session is saved. Accept the baseline and continue with:\n" +
			"  bazinga run --repo " + r.opts.Repo + " --resume " + r.s.ID)
	}
	return []pipeline.Event{pipeline.CommandEvent(r.s.ID, "terminal", c)}
}

// parseBaselineReply reads a person's answer about a red baseline:
// a[ccept] (or y[es]) resumes, which accepts it; s[top] stops.
func parseBaselineReply(line string) (pipeline.Command, bool) {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "a", "accept", "y", "yes":
		return pipeline.Command{Kind: pipeline.CommandResume}, true
	case "s", "stop":
		return pipeline.Command{Kind: pipeline.CommandStop}, true
	}
	return pipeline.Command{}, false
}

// maxBaselineShown bounds the failing tests the terminal lists one a line.
const maxBaselineShown = 20

// baselineText shows a red baseline: where, by which identity, and the
// failing tests one a line (or why they have no names).
func baselineText(s pipeline.Session) string {
	b := s.Baseline
	var sb strings.Builder
	at := s.Base
	if b.Commit != "" {
		at += "@" + shortCommit(b.Commit)
	}
	if b.CannotRun {
		fmt.Fprintf(&sb, "🧱 The test command cannot run on %s: %s\n", at, orNone(b.Command))
		writeTail(&sb, b.Tail)
		return strings.TrimRight(sb.String(), "\n")
	}
	fmt.Fprintf(&sb, "🧱 The tests already fail on %s before any work (failing tests told apart by: %s).\n", at, b.Identity)
	switch {
	case len(b.Failed) > 0:
		sb.WriteString("Failing tests:\n")
		for _, name := range b.Failed[:min(len(b.Failed), maxBaselineShown)] {
			sb.WriteString("  - " + name + "\n")
		}
		if more := len(b.Failed) - maxBaselineShown; more > 0 {
			fmt.Fprintf(&sb, "  … and %d more\n", more)
		}
		if b.Unnamed {
			sb.WriteString("  and failures without a test name\n")
		}
	case b.Identity == pipeline.IdentityExitStatus:
		sb.WriteString("Failing tests: not named — exit status only: every failure counts as pre-existing once accepted.\n")
	default:
		sb.WriteString("Failing tests: none named — the command failed without naming a test (exit status only).\n")
	}
	if b.Command != "" {
		sb.WriteString("Command: " + b.Command + "\n")
	}
	if b.Summary != "" {
		sb.WriteString("(" + oneLine(b.Summary) + ")\n")
	}
	writeTail(&sb, b.Tail)
	return strings.TrimRight(sb.String(), "\n")
}

// maxTailLines bounds the lines of output a red baseline shows.
const maxTailLines = 15

// writeTail shows the end of the command's output, indented.
func writeTail(sb *strings.Builder, tail string) {
	lines := strings.Split(strings.TrimRight(tail, "\n"), "\n")
	if strings.TrimSpace(tail) == "" {
		return
	}
	if len(lines) > maxTailLines {
		lines = lines[len(lines)-maxTailLines:]
	}
	sb.WriteString("Output (the end):\n")
	for _, l := range lines {
		sb.WriteString("  | " + l + "\n")
	}
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func shortCommit(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// baselinePrompt asks about a red baseline on the terminal.
func (v *view) baselinePrompt(s pipeline.Session) {
	if v.json {
		_ = v.enc.Encode(jsonLine{Type: "baseline", Session: s.ID, Reason: s.Baseline.Describe(s.Base)})
		return
	}
	v.println(baselineText(s))
	v.println(`Accept these failures as pre-existing (only failures the base does not have will count)? (a)ccept / (s)top:`)
}

// baselineStop says why a run that cannot ask stops at a red baseline, and
// how to go on; asked: the question was put, but the input ended.
func (v *view) baselineStop(s pipeline.Session, repo string, asked bool) {
	if s.Baseline.CannotRun {
		// A wrong command, not failures: nothing to accept.
		if !v.json {
			v.println(baselineText(s))
		}
		v.warn("the session is saved and paused: its tests cannot run, so there is nothing to compare with. " +
			"Set tests.command in " + ConfigPath + " to the command that runs this repository's tests (`bazinga init` detects one; " +
			"`bazinga config` shows what a run uses), commit it, and start a new session — or pass --test-command")
		return
	}
	why := "the input ended before an answer"
	if !asked {
		why = "this run cannot ask (no terminal)"
		if !v.json {
			v.println(baselineText(s))
		}
	}
	v.warn(why + "; the session is saved and paused. Accept these failures as pre-existing and continue with:\n" +
		"  bazinga run --repo " + repo + " --resume " + s.ID + "\n" +
		"or let new sessions accept a red base without asking: --baseline accept (tests.baseline: accept).")
}
