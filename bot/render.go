package bot

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Rendering of everything the bot writes. Every function is deterministic:
// the same state gives the same text, so unchanged text is never written
// twice (golden files in testdata/ pin the output).

var statusIcons = map[pipeline.SessionStatus]string{
	pipeline.SessionNew: "🚀", pipeline.SessionPlanning: "📋", pipeline.SessionRunning: "🔨",
	pipeline.SessionAwaitingInput: "❓", pipeline.SessionPaused: "⏸️", pipeline.SessionValidating: "🏁",
	pipeline.SessionDone: "✅", pipeline.SessionFailed: "❌", pipeline.SessionStopped: "⏹️",
}

// headerCapsule is the one line on top of the tracking comment:
// [emoji] [phase] | [observation] | [outcome] → [next].
func headerCapsule(s pipeline.Session) string {
	merged, open := 0, 0
	for _, g := range s.Groups {
		switch {
		case g.Stage == pipeline.StageMerged:
			merged++
		case !g.Stage.Finished():
			open++
		}
	}
	inFlight := s.InFlight()
	var parts []string
	parts = append(parts, fmt.Sprintf("%s Session #%s %s", statusIcons[s.Status], s.ID, s.Status))
	if len(s.Groups) > 0 {
		parts = append(parts, fmt.Sprintf("%d/%d groups merged", merged, len(s.Groups)))
	} else if !s.Status.Terminal() {
		parts = append(parts, "planning")
	}
	if s.Reason != "" {
		parts = append(parts, codec.OneLine(s.Reason))
	}
	next := ""
	switch {
	case s.Status.Terminal():
	case s.Clarification != nil:
		next = "waiting for `/bazinga answer`"
	case s.Status == pipeline.SessionPaused:
		next = "`/bazinga resume` to continue"
	case s.Checkpoint != nil:
		next = "waiting for approval of " + s.Checkpoint.ID + ": `/bazinga approve`"
	case len(inFlight) > 0:
		var who []string
		for _, st := range inFlight {
			w := st.Role.String()
			if st.Group != pipeline.LeadGroup {
				w = st.Group + " " + w
			}
			who = append(who, w)
		}
		next = strings.Join(who, ", ")
	}
	line := strings.Join(parts, " | ")
	if next != "" {
		line += " → " + next
	}
	return line
}

func cell(s string) string {
	s = codec.OneLine(s)
	s = strings.ReplaceAll(s, "|", "\\|")
	if s == "" {
		return "—"
	}
	return s
}

func attempts(c pipeline.Counters) string {
	var out []string
	add := func(name string, n int) {
		if n > 0 {
			out = append(out, fmt.Sprintf("%s %d", name, n))
		}
	}
	add("dev", c.Iterations)
	add("qa", c.QAAttempts)
	add("review", c.ReviewAttempts)
	add("merge failures", c.MergeFailures)
	add("investigations", c.InvestigationIterations)
	return strings.Join(out, " · ")
}

// groupCapsule is the latest capsule of a track: its step in flight, else
// its last finished step.
func groupCapsule(s pipeline.Session, t pipeline.Track) string {
	if t.InFlight != "" {
		if st := s.Step(t.InFlight); st != nil {
			return pipeline.Capsule(*st)
		}
	}
	if t.Last != "" {
		if st := s.Step(t.Last); st != nil {
			return pipeline.Capsule(*st)
		}
	}
	return ""
}

func waitText(t pipeline.Track) string {
	if t.Wait == pipeline.WaitNone {
		return ""
	}
	if t.WaitDetail != "" {
		return t.Wait.String() + ": " + t.WaitDetail
	}
	return t.Wait.String()
}

// trackingView is how much of the session the tracking comment shows
// (issue 27): everything, or, when that does not fit beside the state
// block, less; the state block itself is never cut.
type trackingView int

const (
	viewFull trackingView = iota
	// viewCompact keeps the group table's id, name, PR and stage columns
	// with short cells, and leaves out the plan's tasks, the graph, usage
	// and the log.
	viewCompact
	// viewMinimal shows the header and the groups' counts only.
	viewMinimal
)

// compactCell bounds a cell of the compact table, in characters.
const compactCell = 40

// renderTracking renders the tracking comment with at most logN capsules in
// the visible log; block is the hidden state block.
func renderTracking(st *codec.State, repoURL string, logN int, block string) string {
	return renderTrackingView(st, repoURL, logN, viewFull, block)
}

func renderTrackingView(st *codec.State, repoURL string, logN int, view trackingView, block string) string {
	s := st.Session
	var b strings.Builder
	b.WriteString("### 🤖 bazinga\n\n")
	b.WriteString("**" + headerCapsule(s) + "**\n")
	if st.Waiting != nil {
		b.WriteString("\n> ⏸️ " + limitText(*st.Waiting) + "\n")
	}
	if s.Clarification != nil {
		fmt.Fprintf(&b, "\n> ❓ %s\n> Answer with `/bazinga answer <text>`; without an answer by %s the pm uses its safe fallback.\n",
			codec.OneLine(s.Clarification.Question), s.Clarification.Deadline.UTC().Format("2006-01-02 15:04 UTC"))
	}
	cp := renderCheckpoint(s) // issue 13: the plan or phase waiting for approval
	if view != viewFull {
		// The plan's table (its tasks) is what does not fit; the
		// checkpoint notice on the issue lists the plan.
		if head, _, cut := strings.Cut(cp, "\n#### The plan"); cut {
			cp = head + "> The plan's tasks do not fit here beside the session's state: its groups are in the table below; `/bazinga status` shows the rest.\n"
		}
	}
	b.WriteString(cp)
	b.WriteString(baselineNotice(s))
	switch {
	case len(s.Groups) == 0:
	case view == viewFull:
		b.WriteString("\n| Group | PR | Stage | Waiting on | Attempts | Last |\n|---|---|---|---|---|---|\n")
		for _, g := range s.Groups {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s%s |\n", cell(g.ID+": "+g.Name), prCell(st, g), g.Stage,
				cell(waitText(g.Track)), cell(attempts(s.Progress(g.Track))), cell(groupCapsule(s, g.Track)), runLink(s, g.Track))
		}
	case view == viewCompact:
		b.WriteString("\n| Group | PR | Stage |\n|---|---|---|\n")
		for _, g := range s.Groups {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", shortCell(g.ID+": "+g.Name, compactCell), prCell(st, g), g.Stage)
		}
	default:
		fmt.Fprintf(&b, "\n%s The group table does not fit here beside the session's state: `/bazinga status` shows it, and each group's PR its progress.\n", groupCounts(s))
	}
	if view == viewFull {
		b.WriteString(usageBlock(st))
		b.WriteString(failedChecksLines(s))
		b.WriteString(followUpsBlock(s))
		if g := planGraph(s); g != "" {
			b.WriteString("\n" + g)
		}
	}
	if lead := groupCapsule(s, s.Lead); lead != "" && view != viewMinimal {
		b.WriteString("\nSession lead: " + cell(lead) + runLink(s, s.Lead) + "\n")
	}
	var logLines []string
	for i := len(s.Steps) - 1; i >= 0 && len(logLines) < logN && view == viewFull; i-- {
		logLines = append(logLines, "- "+codec.OneLine(pipeline.Capsule(s.Steps[i])))
	}
	if len(logLines) > 0 {
		fmt.Fprintf(&b, "\n<details><summary>Recent steps (newest first)</summary>\n\n%s\n", strings.Join(logLines, "\n"))
		if older := len(s.Steps) + s.Pruned - len(logLines); older > 0 {
			fmt.Fprintf(&b, "\n…and %d earlier step(s); every result is a comment on the group PRs or this issue.\n", older)
		}
		b.WriteString("\n</details>\n")
	}
	if repoURL != "" && st.Config.GitHub.AgentWorkflow != "" {
		fmt.Fprintf(&b, "\nJob runs: [%s](%s/actions/workflows/%s)\n", st.Config.GitHub.AgentWorkflow, repoURL, st.Config.GitHub.AgentWorkflow)
	}
	if len(st.Config.Checkpoints) > 0 || s.Checkpoint != nil {
		b.WriteString("\n<sub>Commands: `/bazinga status | resume | approve | stop | retry [group] | answer <text> | help`</sub>\n")
	} else {
		b.WriteString("\n<sub>Commands: `/bazinga status | resume | stop | retry [group] | answer <text> | help`</sub>\n")
	}
	b.WriteString(block)
	return b.String()
}

func prCell(st *codec.State, g pipeline.Group) string {
	if n := st.PRNumber(g.ID); n > 0 {
		return fmt.Sprintf("#%d", n)
	}
	return "—"
}

// shortCell is a table cell of at most n characters.
func shortCell(s string, n int) string {
	if r := []rune(strings.Join(strings.Fields(s), " ")); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return cell(s)
}

// groupCounts is one line on where the groups stand.
func groupCounts(s pipeline.Session) string {
	merged, open, running := 0, 0, 0
	for _, g := range s.Groups {
		switch {
		case g.Stage == pipeline.StageMerged:
			merged++
		case !g.Stage.Finished():
			open++
			if g.InFlight != "" {
				running++
			}
		}
	}
	return fmt.Sprintf("%d group(s): %d merged, %d open (%d at work).", len(s.Groups), merged, open, running)
}

// errStateTooLarge is fitTracking's failure: the session's state does not
// fit in a comment however little the comment shows. The bot pauses the
// session with a visible reason instead of failing silently (issue 27).
type errStateTooLarge struct {
	Session string
	// Chars is the smallest tracking comment that was tried, in characters.
	Chars int
	// Parts names the largest parts of the state, for the notice.
	Parts string
}

func (e *errStateTooLarge) Error() string {
	return fmt.Sprintf("the state of session %s does not fit in a comment even with no finished steps: the smallest tracking comment takes %d characters, GitHub allows %d (largest parts: %s)",
		e.Session, e.Chars, codec.MaxCommentChars, e.Parts)
}

// fitTracking renders the tracking comment under GitHub's body limit: the
// visible log is trimmed first, then the stored session is snapshotted with
// fewer and fewer old steps, then the comment shows less (a compact table,
// then counts only). The state block is never dropped; when even the
// smallest comment does not fit, the error is an *errStateTooLarge.
func fitTracking(st codec.State, repoURL string, key ed25519.PrivateKey) (string, error) {
	full := st.Session
	keep := len(st.Session.Steps)
	var block string
	for {
		var err error
		block, err = codec.EncodeState(st, key)
		if err != nil {
			return "", err
		}
		for n := 30; ; n /= 2 {
			body := renderTracking(&st, repoURL, n, block)
			if utf8.RuneCountInString(body) <= codec.CommentBudget {
				return body, nil
			}
			if n == 0 {
				break
			}
		}
		if keep == 0 {
			break
		}
		keep /= 2
		// The visible log shows what is stored.
		st.Session = full.Snapshot(keep)
	}
	smallest := 0
	try := func(v trackingView) (string, bool) {
		body := renderTrackingView(&st, repoURL, 0, v, block)
		smallest = utf8.RuneCountInString(body)
		return body, smallest <= codec.CommentBudget
	}
	for _, v := range []trackingView{viewCompact, viewMinimal} {
		if body, ok := try(v); ok {
			return body, nil
		}
	}
	// Last, the lean session: no summaries but those a later step reads,
	// which the minimal view does not show anyway; then the texts the next
	// steps read, cut shorter and shorter.
	for _, limit := range []int{pipeline.MaxStoredHandoffBytes, 1200, 600, 300} {
		st.Session = full.Lean(limit)
		var err error
		if block, err = codec.EncodeState(st, key); err != nil {
			return "", err
		}
		if body, ok := try(viewMinimal); ok {
			return body, nil
		}
	}
	return "", &errStateTooLarge{Session: st.Session.ID, Chars: smallest, Parts: largestParts(st)}
}

// largestParts names the three largest parts of a state, by the size of
// their JSON, for a person to see what filled it.
func largestParts(st codec.State) string {
	type part struct {
		name string
		n    int
	}
	var parts []part
	add := func(name string, v any) {
		if b, err := json.Marshal(v); err == nil {
			parts = append(parts, part{name, len(b)})
		}
	}
	add("the requirements", st.Session.Requirements)
	add("the groups' names and tasks", func() []string {
		var out []string
		for _, g := range st.Session.WithoutTexts().Groups {
			out = append(out, g.Name, g.Task)
		}
		return out
	}())
	add("the outbox", st.Pending)
	add("the configuration", st.Config)
	for _, s := range st.Session.Steps {
		if s.Result != nil {
			add("the result of step "+s.ID, s.Result)
		}
		if s.Feedback != "" {
			add("the feedback of step "+s.ID, s.Feedback)
		}
	}
	sort.SliceStable(parts, func(i, j int) bool { return parts[i].n > parts[j].n })
	var out []string
	for _, p := range parts[:min(3, len(parts))] {
		out = append(out, fmt.Sprintf("%s, %d bytes", p.name, p.n))
	}
	return strings.Join(out, "; ")
}

// prTitle is a group PR's title.
func prTitle(issue int, g pipeline.Group) string {
	return fmt.Sprintf("[bazinga #%d] Group %s: %s", issue, g.ID, codec.OneLine(g.Name))
}

// prBody is a group PR's body: the task and the link to the issue. It is
// written once: the stages are in the issue's tracking comment and the steps
// in the result comments below the PR, so no stage change edits it.
func prBody(issue int, g pipeline.Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Group **%s** of the bazinga session for #%d.\n\n", g.ID, issue)
	b.WriteString("#### Task\n\n")
	task := codec.Text(shownTask(g))
	if r := []rune(task); len(r) > 20000 {
		task = string(r[:20000]) + "…"
	}
	b.WriteString(task + "\n\n")
	fmt.Fprintf(&b, "<sub>Managed by bazinga: the session's progress is in #%d; each step's result is posted as a comment here.</sub>\n", issue)
	return b.String()
}

func textHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var noticeIcons = map[pipeline.NoticeKind]string{
	pipeline.NoticeQuestion: "❓", pipeline.NoticeAnswers: "📋", pipeline.NoticeSummary: "✅", pipeline.NoticeInfo: "ℹ️",
	pipeline.NoticeCheckpoint: "✋",
}

// renderNotice renders one notice of the engine.
func renderNotice(kind pipeline.NoticeKind, text string) string {
	switch kind {
	case pipeline.NoticeQuestion:
		return "❓ **The pm needs an answer** | " + codec.Text(text) +
			"\n\nReply with `/bazinga answer <your answer>`."
	case pipeline.NoticeCheckpoint:
		// The engine names no command (issue 23): the bot says how, here.
		if strings.Contains(text, pipeline.FindingsNoticeMarker) {
			// A findings checkpoint (issue 26): the human decides on the findings.
			return "✋ " + codec.Text(text) + "\n\nReply `/bazinga approve` to accept the findings and go on, or `/bazinga answer <direction>` to send the group back with it."
		}
		return "✋ " + codec.Text(text) + "\n\nReply `/bazinga approve`, or `/bazinga answer <feedback>` to tell the pm first."
	case pipeline.NoticeSummary:
		lines := strings.Split(codec.Text(text), "\n")
		out := "✅ **BAZINGA** | " + lines[0]
		if len(lines) > 1 {
			out += "\n\n" + strings.Join(lines[1:], "\n")
		}
		return out
	}
	return noticeIcons[kind] + " " + codec.Text(text)
}

// renderBotComment joins notices and appends the event block, if any.
func renderBotComment(lines []string, ev *codec.EventRecord) string {
	body := strings.Join(lines, "\n\n")
	if ev != nil {
		body += "\n\n" + codec.EventBlock(*ev)
	}
	if utf8.RuneCountInString(body) > codec.CommentBudget {
		r := []rune(body)
		body = string(r[:codec.CommentBudget-200]) + "…"
		if ev != nil {
			body += "\n\n" + codec.EventBlock(*ev)
		}
	}
	return body
}

// --- usage and job runs (issue 13 items 5 and 6) ---

// runLink links a track's last step to the job run that carried it out:
// the step its capsule shows, or, while a step is in flight, the last one
// that finished. The engine keeps only addresses that look like job runs
// (pipeline.CleanRunURL), so the link cannot break out of the table.
func runLink(s pipeline.Session, t pipeline.Track) string {
	st := s.Step(t.Last)
	if st == nil || st.RunURL == "" {
		return ""
	}
	label := "job run"
	if t.InFlight != "" {
		label = "last job run"
	}
	return fmt.Sprintf(" · [%s](%s)", label, st.RunURL)
}

// usageBlock is what the session spent: its total with every token kind,
// the cost limits, and each group's (and the session lead's) share. Nothing
// when no step reported usage and no limit is set.
func usageBlock(st *codec.State) string {
	s := st.Session
	lim := st.Config.Limits
	if s.Usage.IsZero() && lim.SessionCostUSD == 0 && lim.StepCostUSD == 0 {
		return ""
	}
	var b strings.Builder
	total := s.Usage.Detail()
	if total == "" {
		total = "nothing reported yet"
	}
	b.WriteString("\n💰 **Usage:** " + total)
	var limits []string
	if lim.SessionCostUSD > 0 {
		limits = append(limits, pipeline.FormatUSD(pipeline.USDMicros(lim.SessionCostUSD))+" per session")
	}
	if lim.StepCostUSD > 0 {
		limits = append(limits, pipeline.FormatUSD(pipeline.USDMicros(lim.StepCostUSD))+" per step")
	}
	if len(limits) > 0 {
		b.WriteString(" · limits: " + strings.Join(limits, ", "))
	}
	b.WriteString("\n")
	var shares []string
	for _, g := range s.Groups {
		if !g.Usage.IsZero() {
			shares = append(shares, codec.OneLine(g.ID)+": "+g.Usage.String())
		}
	}
	if !s.Lead.Usage.IsZero() {
		shares = append(shares, "session lead: "+s.Lead.Usage.String())
	}
	if len(shares) > 0 {
		b.WriteString("\n<sub>By group: " + strings.Join(shares, " · ") + "</sub>\n")
	}
	return b.String()
}

// --- baseline and harness-run checks (issue 13) ---

// baselineNotice is the tracking comment's line about a red baseline: which
// tests already fail on the base, and whether it waits for a human.
func baselineNotice(s pipeline.Session) string {
	b := s.Baseline
	if !b.Red() {
		return ""
	}
	line := "\n> 🔴 Baseline: " + codec.OneLine(b.Describe(s.Base)) + ".\n"
	if b.Accepted {
		line += "> Accepted (" + codec.OneLine(b.AcceptedBy) + "): only failures the base does not have count.\n"
	} else {
		line += "> `/bazinga resume` accepts these failures as pre-existing; then only new failures count.\n"
	}
	return line
}

// failedChecksLines lists the groups whose code fails a harness-run check.
func failedChecksLines(s pipeline.Session) string {
	var lines []string
	for _, g := range s.Groups {
		failing := false
		for _, c := range g.Checks {
			failing = failing || !c.Passed
		}
		if failing {
			lines = append(lines, "- "+cell(g.ID)+": "+cell(pipeline.ChecksLine(g.Checks)))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "\nChecks failing on group code:\n" + strings.Join(lines, "\n") + "\n"
}

// followUpsBlock lists the session's follow-ups (issue 26): the MEDIUM
// findings it went on with, and HIGH ones a human accepted.
func followUpsBlock(s pipeline.Session) string {
	n := len(s.FollowUps) + s.FollowUpsDropped
	if n == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n<details><summary>Follow-ups: %d review finding(s) the session went on with</summary>\n\n", n)
	for _, u := range s.FollowUps {
		fmt.Fprintf(&b, "- group %s: %s\n", codec.EscapeHTML(u.Group), codec.OneLine(u.Finding.Text()))
	}
	if s.FollowUpsDropped > 0 {
		fmt.Fprintf(&b, "- …and %d more not kept (the session keeps %d)\n", s.FollowUpsDropped, pipeline.MaxFollowUps)
	}
	b.WriteString("\n</details>\n")
	return b.String()
}
