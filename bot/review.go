package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// Reviews on group PRs (issue 26). QA's and the tech lead's findings are
// posted as one pull-request review: each finding on lines of the diff as
// an inline comment on them, the others in the review's body with the
// verdict. The bot opened the PR, and GitHub refuses its author an approval
// or a request for changes on its own pull request, so the review is always
// a COMMENT review: the verdict is the engine's, said in words. GitHub also
// refuses the whole review when one inline comment is not on a line of the
// diff, so the bot reads the PR's patches and puts only lines it finds
// there inline.

// reviewEvent is the only event bazinga submits (see above).
const reviewEvent = "COMMENT"

// reviewEffect asks for the review of a step's findings on the group PR.
func reviewEffect(st pipeline.Step, pr int) codec.PendingEffect {
	return codec.PendingEffect{ID: "review/" + st.ID, Kind: codec.EffectReview, Step: st.ID, Group: st.Group, Number: pr}
}

// reviewsToPost are the review effects of the results this reconcile
// applied, on groups that have a PR: the reviews of QA's and the tech
// lead's results with findings, and the resolution of the threads of
// earlier reviews that a verdict no longer reports (threads.go).
func reviewsToPost(prev, next pipeline.Session, st *codec.State) []codec.PendingEffect {
	var out []codec.PendingEffect
	for _, s := range next.Steps {
		old := prev.Step(s.ID)
		if old == nil || old.State != pipeline.StepInFlight || s.State != pipeline.StepDone || s.Result == nil {
			continue
		}
		pr := st.PRNumber(s.Group)
		if pr == 0 {
			continue
		}
		if len(s.Result.Findings) > 0 && (s.Role == pipeline.RoleQA || s.Role == pipeline.RoleTechLead) {
			out = append(out, reviewEffect(s, pr))
		}
		if next.MayResolveThreads(s.ID) {
			out = append(out, resolveEffect(s, pr))
		}
	}
	return append(out, followUpEffects(prev, next, st)...)
}

// diffLines are the lines of a file's new side that a patch shows (added
// and context lines), by hunk: a multi-line comment must stay in one hunk.
type diffLines map[int]int // line → hunk number

// parsePatch reads the RIGHT-side lines of a unified diff's hunks.
func parsePatch(patch string) diffLines {
	out := diffLines{}
	hunk, line := 0, 0
	for l := range strings.SplitSeq(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			// @@ -a,b +c,d @@
			hunk++
			line = 0
			fields := strings.Fields(l)
			if len(fields) >= 3 && strings.HasPrefix(fields[2], "+") {
				start, _, _ := strings.Cut(fields[2][1:], ",")
				if n, err := strconv.Atoi(start); err == nil {
					line = n
				}
			}
		case line == 0:
		case strings.HasPrefix(l, "-"), strings.HasPrefix(l, `\`):
			// the old side only, or "\ No newline at end of file"
		default: // "+" added or " " context
			out[line] = hunk
			line++
		}
	}
	return out
}

// buildReview renders the review of a step's findings against the PR's
// files: findings whose lines the diff shows inline, the rest in the body.
// It never submits anything GitHub refuses: the event is COMMENT, inline
// lines are on the diff, and the body and comments fit GitHub's limits.
func buildReview(st pipeline.Step, head string, files []ghapi.PRFile) ghapi.NewReview {
	byFile := map[string]diffLines{}
	for _, f := range files {
		byFile[f.Filename] = parsePatch(f.Patch)
	}
	var comments []ghapi.ReviewComment
	var rest []pipeline.Finding
	for _, f := range st.Result.Findings {
		lines, ok := byFile[f.File]
		h, on := lines[f.Line]
		if !ok || f.Line == 0 || !on {
			rest = append(rest, f)
			continue
		}
		c := ghapi.ReviewComment{Path: f.File, Line: f.Line, Body: findingComment(f)}
		if f.EndLine > f.Line {
			if h2, on2 := lines[f.EndLine]; on2 && h2 == h {
				c.StartLine, c.Line = f.Line, f.EndLine
			}
		}
		comments = append(comments, c)
	}
	return ghapi.NewReview{CommitID: head, Event: reviewEvent, Comments: comments, Body: reviewBody(st, len(comments), rest)}
}

// findingComment is an inline comment's text: untrusted, made inert.
func findingComment(f pipeline.Finding) string {
	s := severityIcon[f.Severity] + " **" + strings.ToUpper(f.Severity.String()) + "**"
	if f.EndLine > f.Line {
		s += fmt.Sprintf(" (lines %d–%d)", f.Line, f.EndLine)
	}
	s += ": " + codec.Text(f.Problem)
	if f.Fix != "" {
		s += "\n\nSuggested fix: " + codec.Text(f.Fix)
	}
	return s
}

var severityIcon = map[pipeline.Severity]string{pipeline.SeverityHigh: "🔴", pipeline.SeverityMedium: "🟠", pipeline.SeverityLow: "⚪"}

// reviewBody is the review's text: the verdict, the counts, the findings
// not on the diff, and the effect marker that makes posting it idempotent.
func reviewBody(st pipeline.Step, inline int, rest []pipeline.Finding) string {
	var b strings.Builder
	fs := st.Result.Findings
	who := map[pipeline.Role]string{pipeline.RoleQA: "QA", pipeline.RoleTechLead: "Tech lead"}[st.Role]
	fmt.Fprintf(&b, "**%s review** of step `%s`: %s → %s\n\n", who, codec.EscapeHTML(st.ID), st.Result.Status, verdict(st))
	var counts []string
	for _, s := range pipeline.Severities() {
		if n := len(pipeline.BySeverity(fs, s)); n > 0 {
			counts = append(counts, fmt.Sprintf("%d %s", n, strings.ToUpper(s.String())))
		}
	}
	fmt.Fprintf(&b, "Findings: %s (%d on the changed lines below).\n", strings.Join(counts, ", "), inline)
	for _, line := range st.Result.Summary {
		b.WriteString("\n> " + codec.OneLine(line))
	}
	if len(st.Result.Summary) > 0 {
		b.WriteString("\n")
	}
	if len(rest) > 0 {
		b.WriteString("\nNot on the changed lines:\n")
		for _, f := range rest {
			where := f.Where()
			if where == "" {
				where = "the change"
			}
			fmt.Fprintf(&b, "- %s **%s** `%s`: %s", severityIcon[f.Severity], strings.ToUpper(f.Severity.String()),
				strings.ReplaceAll(codec.EscapeHTML(where), "`", "'"), codec.Text(f.Problem))
			if f.Fix != "" {
				b.WriteString(" (fix: " + codec.Text(f.Fix) + ")")
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nbazinga posts its reviews as comments: a pull request's author (the bazinga App opened this one) cannot approve or request changes on it.\n")
	return b.String()
}

// verdict says in words what the engine did with the result.
func verdict(st pipeline.Step) string {
	switch pipeline.Worst(st.Result.Findings) {
	case pipeline.SeverityHigh:
		if st.Routed == "checkpoint" {
			return "a HIGH finding survived its revision: a human decides"
		}
		return "sent back: a HIGH finding must be fixed"
	case pipeline.SeverityMedium:
		return "goes on; MEDIUM findings are recorded as follow-ups"
	}
	return "goes on; the findings are notes"
}

// postReview carries out a review effect: the group PR's head and patches,
// then the review with the effect's marker in its body.
func (x *executor) postReview(ctx context.Context, p codec.PendingEffect) error {
	st := x.st.Session.Step(p.Step)
	if st == nil || st.Result == nil || len(st.Result.Findings) == 0 {
		return nil // pruned or nothing to post: nothing GitHub needs
	}
	pr, err := x.gh.GetPR(ctx, x.ref.repo, p.Number)
	if err != nil {
		return err
	}
	if pr.State != "open" {
		return nil // GitHub refuses reviews on a closed pull request
	}
	files, err := x.gh.ListPRFiles(ctx, x.ref.repo, p.Number)
	if err != nil {
		return err
	}
	r := buildReview(*st, pr.HeadSHA, files)
	r.Body = fitReviewBody(r.Body, codec.EffectMarker(p.ID))
	_, err = x.gh.CreateReview(ctx, x.ref.repo, p.Number, r)
	return err
}

// fitReviewBody keeps the body and its marker within GitHub's limit on a
// review's body (the comment limit, 65,536 characters).
func fitReviewBody(body, marker string) string {
	if n := codec.CommentBudget - len(marker) - 2; len(body) > n {
		body = pipeline.ValidPrefix(body, n-len("…")) + "…"
	}
	return body + "\n" + marker
}

// reviewDone reports whether the review of an effect is on the PR.
func (x *executor) reviewDone(ctx context.Context, p codec.PendingEffect) (bool, error) {
	if st := x.st.Session.Step(p.Step); st == nil {
		return true, nil
	}
	rs, err := x.gh.ListReviews(ctx, x.ref.repo, p.Number)
	if err != nil {
		return false, err
	}
	for _, r := range rs {
		if x.b.own(r.Author) && codec.HasEffectMarker(r.Body, p.ID) {
			return true, nil
		}
	}
	pr, err := x.gh.GetPR(ctx, x.ref.repo, p.Number)
	if err != nil {
		return false, err
	}
	return pr.State != "open", nil // a closed PR takes no review: nothing left to do
}
