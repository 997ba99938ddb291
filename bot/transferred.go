package bot

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/ghapi"
)

// An issue transferred to another repository (issue 28). Its comments, the
// tracking comment among them, go with it; its group branches and PRs
// cannot (GitHub transfers issues only), so the session cannot go on: the
// code it works on is in this repository, the issue in another. bazinga
// stops it where everyone looks: each open group PR says where the issue
// went and what is left to do by hand, and the new issue names the PRs
// (when this installation can write there; a GITHUB_TOKEN never can). The
// step runs at work are cancelled, so nothing waits for a timeout.

// transferMarker marks the stop notices, so a notice is written once
// however many deliveries (the event, a late result, a dispatch) find the
// issue gone.
func transferMarker(issue int) string {
	return "<!-- bazinga:transferred:" + strconv.Itoa(issue) + " -->"
}

// issueTransferredError is load's report that the session's issue moved.
type issueTransferredError struct{ to ghapi.IssueMove }

func (e *issueTransferredError) Error() string {
	return "the issue was transferred to " + e.to.String()
}

// checkTransferred asks GitHub whether the issue moved, when what load
// read suggests it: the comments answered 404 (a GITHUB_TOKEN following
// the redirect into a repository it cannot read), or they sit on another
// repository's issue (a token that can read there).
func checkTransferred(ctx context.Context, gh GitHub, ref sessionRef, comments []ghapi.Comment, listErr error) error {
	suspect := errors.Is(listErr, ghapi.ErrNotFound)
	want := strings.ToLower("/repos/" + ref.repo.String() + "/issues/" + strconv.Itoa(ref.issue))
	for _, c := range comments {
		if c.IssueURL != "" && !strings.HasSuffix(strings.ToLower(c.IssueURL), want) {
			suspect = true
			break
		}
	}
	if !suspect {
		return listErr
	}
	to, moved, err := gh.IssueMoved(ctx, ref.repo, ref.issue)
	switch {
	case err != nil && listErr != nil:
		return listErr
	case err != nil:
		return err
	case moved:
		return &issueTransferredError{to: to}
	}
	return listErr
}

// stopTransferred stops a session whose issue moved to to: it cancels the
// session's step runs and leaves the notices; nothing is written on the
// issue's former address, which is no longer the session's.
func (b *Bot) stopTransferred(ctx context.Context, gh GitHub, ref sessionRef, to ghapi.IssueMove, by string) error {
	log := b.log.With("repo", ref.repo.String(), "issue", ref.issue, "to", to.String())
	prs, err := gh.ListPRs(ctx, ref.repo)
	if err != nil {
		return fmt.Errorf("%s: transferred: listing its pull requests: %w", ref.key(), err)
	}
	var open []ghapi.PR
	for _, pr := range prs {
		n, _, ok := parseBranch(pr.Head)
		if ok && n == ref.issue && pr.State == "open" && strings.EqualFold(pr.HeadRepo, ref.repo.String()) {
			open = append(open, pr)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Number < open[j].Number })
	b.cancelSessionRuns(ctx, gh, ref)

	marker := transferMarker(ref.issue)
	for _, pr := range open {
		if err := b.noteOnce(ctx, gh, ref.repo, pr.Number, marker, transferredPRText(ref, to, by)+"\n"+marker); err != nil {
			return fmt.Errorf("%s: transferred: notice on #%d: %w", ref.key(), pr.Number, err)
		}
	}
	if to.Repo.Owner != "" && to.Number > 0 {
		// Best effort: the installation (or the job's GITHUB_TOKEN) may
		// not reach the new repository; the PRs carry the notice anyway.
		if err := b.noteOnce(ctx, gh, to.Repo, to.Number, marker, transferredIssueText(ref, open)+"\n"+marker); err != nil {
			log.Info("transferred: no notice on the new issue", "err", err)
		}
	}
	log.Info("the session's issue was transferred; session stopped", "open_prs", len(open))
	return nil
}

// cancelSessionRuns cancels the session's step runs still at work, best
// effort: their results would land on PRs of a session that has ended.
func (b *Bot) cancelSessionRuns(ctx context.Context, gh GitHub, ref sessionRef) {
	wf := agentWorkflow(b.defaults())
	if base, err := gh.DefaultBranch(ctx, ref.repo); err == nil {
		if cfg, err := b.readConfig(ctx, gh, ref.repo, base); err == nil {
			wf = agentWorkflow(cfg)
		}
	}
	runs, err := gh.ListRuns(ctx, ref.repo, wf)
	if err != nil {
		b.log.Info("transferred: listing step runs failed", "repo", ref.repo.String(), "issue", ref.issue, "err", err)
		return
	}
	for _, r := range runs {
		if r.Status == "completed" {
			continue
		}
		if _, sr, ok := codec.StepInText(r.Title); ok && issueOfStep(sr) == ref.issue {
			if err := gh.CancelRun(ctx, ref.repo, r.ID); err != nil {
				b.log.Info("transferred: cancelling a step run failed", "run", r.ID, "err", err)
			}
		}
	}
}

// noteOnce comments body on number unless a comment of the bot there
// already carries marker.
func (b *Bot) noteOnce(ctx context.Context, gh GitHub, repo ghapi.RepoRef, number int, marker, body string) error {
	cs, err := gh.ListComments(ctx, repo, number)
	if err != nil {
		return err
	}
	for _, c := range cs {
		if b.own(c.Author) && strings.Contains(c.Body, marker) {
			return nil
		}
	}
	_, err = gh.CreateComment(ctx, repo, number, body)
	return err
}

func transferredPRText(ref sessionRef, to ghapi.IssueMove, by string) string {
	who := ""
	if by != "" {
		who = " by @\u2060" + codec.OneLine(by)
	}
	return fmt.Sprintf("⏹️ **Session stopped** | issue #%d was transferred to %s%s, and a session works only in its "+
		"own repository. This pull request and its branch stay as they are: nothing more is pushed or merged here. "+
		"Review and merge or close it by hand; to have bazinga go on, open an issue in %s and label it `bazinga`.",
		ref.issue, codec.OneLine(to.String()), who, ref.repo)
}

func transferredIssueText(ref sessionRef, open []ghapi.PR) string {
	prs := "none is open"
	if len(open) > 0 {
		names := make([]string, len(open))
		for i, pr := range open {
			names[i] = ref.repo.String() + "#" + strconv.Itoa(pr.Number)
		}
		prs = strings.Join(names, ", ") + " (merge or close them by hand)"
	}
	return fmt.Sprintf("⏹️ **bazinga session stopped** | this issue was transferred from %s#%d while a session was "+
		"working on it, and a session works only in its own repository, so it has stopped. Its pull requests stay "+
		"in %s: %s. To have bazinga go on, open an issue in %s and label it `bazinga`.",
		ref.repo, ref.issue, ref.repo, prs, ref.repo)
}
