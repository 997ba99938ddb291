package stepjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/ghapi"
	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// landAPI is what landing needs from GitHub (ghapi.Client has it).
type landAPI interface {
	GetRef(ctx context.Context, repo ghapi.RepoRef, ref string) (string, error)
	FindPR(ctx context.Context, repo ghapi.RepoRef, head string) (ghapi.PR, bool, error)
	RepoSettings(ctx context.Context, repo ghapi.RepoRef) (ghapi.RepoSettings, error)
	BranchRules(ctx context.Context, repo ghapi.RepoRef, branch string) (ghapi.BranchRules, error)
	MergePR(ctx context.Context, repo ghapi.RepoRef, number int, sha, method, title string) (string, error)
}

// prMerger carries out merge.method "pull-request" (the default): after
// the gate passed on merge(base, head), it merges the group's pull request
// through the API at exactly that head, with the merge method the
// repository allows (merge.pr_method). GitHub merges into the base as it is
// then, so it first checks that the base has not moved since the test; the
// window left between that read and the merge is GitHub's. Whatever the
// method, the tree GitHub lands is merge(base, head) of the tested heads;
// squash and rebase make new commits, which the result names so that the
// engine (and validation) learn them.
type prMerger struct {
	gh    landAPI
	repo  ghapi.RepoRef
	base  string
	pref  pipeline.PRMergeMethod
	title func(branch string) string
	// behind: the tested head does not contain the base. update, when set,
	// pushes the tested merge of base and head to the group branch and
	// returns it: what a base requiring up-to-date heads needs first.
	behind bool
	update func(ctx context.Context) (string, error)
	// actionsOnly: the orchestrator is github-actions[bot], whose PRs
	// GitHub refuses unless the repository allows Actions to open them.
	actionsOnly bool
}

// land merges the pull request, or, on a base that requires up-to-date
// heads while the tested head is behind it, brings the group branch up to
// date with the tested merge and returns its commit (updated) instead: the
// merge goes again once that head's required checks passed.
func (m prMerger) land(ctx context.Context, branch, base, head string) (fr gitops.FinishResult, updated string, err error) {
	fr, err = m.merge(ctx, branch, base, head)
	if err != nil || m.update == nil || !m.behind || fr.Outcome != gitops.MergeBlocked || !strings.Contains(fr.Reason, upToDateHint) {
		return fr, "", err
	}
	updated, err = m.update(ctx)
	if err != nil {
		return gitops.FinishResult{}, "", fmt.Errorf("bringing %s up to date with %s: %w", branch, m.base, err)
	}
	return gitops.FinishResult{}, updated, nil
}

// upToDateHint ends the reason of a merge refused for an out-of-date head.
const upToDateHint = "(the base requires branches to be up to date before merging: update the PR's branch, or turn that setting off)"

func (m prMerger) merge(ctx context.Context, branch, base, head string) (gitops.FinishResult, error) {
	cur, err := m.gh.GetRef(ctx, m.repo, "heads/"+m.base)
	if err != nil {
		return gitops.FinishResult{}, fmt.Errorf("reading %s: %w", m.base, err)
	}
	if cur != base {
		return gitops.FinishResult{Retry: true}, nil
	}
	pr, ok, err := m.gh.FindPR(ctx, m.repo, branch)
	if err != nil {
		return gitops.FinishResult{}, fmt.Errorf("finding the pull request of %s: %w", branch, err)
	}
	switch {
	case ok && pr.Merged && pr.MergeCommitSHA != "":
		// An earlier attempt merged it and its result was lost.
		return gitops.FinishResult{Outcome: gitops.MergeSuccess, Commit: plumbing.NewHash(pr.MergeCommitSHA)}, nil
	case !ok || pr.State != "open":
		reason := fmt.Sprintf("merge.method is pull-request but %s has no open pull request", branch)
		if !ok && m.actionsOnly {
			reason += "; if GitHub refused to open it, turn on \"Allow GitHub Actions to create and approve pull requests\" " +
				"in Settings → Actions → General → Workflow permissions, then /bazinga resume"
		}
		return gitops.FinishResult{Outcome: gitops.MergeBlocked, Reason: reason}, nil
	case pr.Draft:
		return gitops.FinishResult{Outcome: gitops.MergeBlocked,
			Reason: fmt.Sprintf("pull request #%d is a draft; mark it ready for review so it can be merged", pr.Number)}, nil
	}
	// Read once per land job, never cached across jobs: settings change.
	settings, err := m.gh.RepoSettings(ctx, m.repo)
	if err != nil {
		return gitops.FinishResult{}, fmt.Errorf("reading the merge methods %s allows: %w", m.repo, err)
	}
	rules, err := m.gh.BranchRules(ctx, m.repo, m.base)
	if err != nil {
		return gitops.FinishResult{}, fmt.Errorf("reading the rules of %s: %w", m.base, err)
	}
	methods, why := choosePRMethods(m.pref, settings, rules)
	if why != "" {
		return gitops.FinishResult{Outcome: gitops.MergeBlocked, Reason: why}, nil
	}
	if rules.Strict && m.behind {
		// Known from the rules: GitHub would refuse (405) an out-of-date head.
		return gitops.FinishResult{Outcome: gitops.MergeBlocked,
			Reason: fmt.Sprintf("GitHub refuses to merge pull request #%d: its head is not up to date with %s %s", pr.Number, m.base, upToDateHint)}, nil
	}
	var refused []string
	for _, method := range methods {
		sha, err := m.gh.MergePR(ctx, m.repo, pr.Number, head, method, m.title(branch))
		var refusal *ghapi.MergeRefusal
		switch {
		case err == nil:
			return gitops.FinishResult{Outcome: gitops.MergeSuccess, Commit: plumbing.NewHash(sha)}, nil
		case errors.As(err, &refusal) && refusal.HeadModified():
			// 409: the pull request's head is no longer the tested (and
			// reviewed) head. Someone pushed after review: a fact, never a
			// retry that would test and land what they pushed (issue 28).
			return gitops.FinishResult{Outcome: gitops.MergeHeadMoved}, nil
		case errors.As(err, &refusal) && refusal.BaseModified():
			// The base moved after the gate: test again what is there now.
			return gitops.FinishResult{Retry: true}, nil
		case errors.As(err, &refusal) && refusal.MethodRefused():
			// A rule bazinga could not read beforehand (classic protection
			// shows readers only its required checks): with auto, the next
			// allowed method may be accepted.
			refused = append(refused, method+": "+oneLine(refusal.Message))
			continue
		case errors.As(err, &refusal):
			// Protection (required reviews or checks, an out-of-date head) or
			// GitHub's own mergeability: the local merge was clean and tested.
			reason := fmt.Sprintf("GitHub refused to %s pull request #%d: %s", method, pr.Number, oneLine(refusal.Message))
			if msg := strings.ToLower(refusal.Message); strings.Contains(msg, "not up to date") ||
				(m.behind && strings.Contains(msg, "required status check")) {
				// Strict required checks (a classic rule readers cannot see):
				// GitHub counts the checks of a head behind a strict base as
				// expected, although the orchestrator saw them pass.
				reason += " " + upToDateHint
			}
			return gitops.FinishResult{Outcome: gitops.MergeBlocked, Reason: reason}, nil
		}
		return gitops.FinishResult{}, fmt.Errorf("merging pull request #%d: %w", pr.Number, err)
	}
	return gitops.FinishResult{Outcome: gitops.MergeBlocked,
		Reason: fmt.Sprintf("GitHub refused every merge method for pull request #%d (%s); set merge.pr_method to one the base branch allows",
			pr.Number, strings.Join(refused, "; "))}, nil
}

// choosePRMethods lists GitHub's merge methods to try, in order: the
// preference alone, or with auto every method of pipeline.PRMethodOrder the
// repository and the base's rules allow (a linear history takes no merge
// commit, signed commits no rebase, a ruleset may allow only some). A
// preference they forbid is refused with a reason naming both.
func choosePRMethods(pref pipeline.PRMergeMethod, s ghapi.RepoSettings, r ghapi.BranchRules) ([]string, string) {
	ruled := func(m string) (ghapi.Rule, bool) {
		switch {
		case m == "merge":
			if rule, ok := r.Has("required_linear_history"); ok {
				return rule, true
			}
		case m == "rebase":
			if rule, ok := r.Has("required_signatures"); ok {
				return rule, true
			}
		}
		if r.MergeMethods != nil && !slices.Contains(r.MergeMethods, m) {
			rule, _ := r.Has("pull_request")
			rule.Kind = "allowed_merge_methods"
			return rule, true
		}
		return ghapi.Rule{}, false
	}
	var usable []string
	var why []string
	for _, m := range pipeline.PRMethodOrder {
		method := string(m)
		if !s.Allows(method) {
			continue
		}
		if rule, no := ruled(method); no {
			why = append(why, ruleText(method, rule))
			continue
		}
		usable = append(usable, method)
	}
	allowed := strings.Join(s.Allowed(), ", ")
	if allowed == "" {
		allowed = "none"
	}
	switch {
	case pref == "" || pref == pipeline.PRMethodAuto:
		if len(usable) == 0 {
			return nil, fmt.Sprintf("the repository allows no merge method bazinga can use (allowed: %s; %s); allow another merge method in the repository settings or its rules",
				allowed, strings.Join(why, "; "))
		}
		return usable, ""
	case !s.Allows(string(pref)):
		return nil, fmt.Sprintf("merge.pr_method is %s, but the repository allows only %s merging; set merge.pr_method to auto or one of those in .github/bazinga.yml", pref, allowed)
	case !slices.Contains(usable, string(pref)):
		rule, _ := ruled(string(pref))
		return nil, fmt.Sprintf("merge.pr_method is %s, but %s; set merge.pr_method to auto or another method", pref, ruleText(string(pref), rule))
	}
	return []string{string(pref)}, ""
}

// ruleText says why a rule forbids a merge method.
func ruleText(method string, rule ghapi.Rule) string {
	if rule.Kind == "allowed_merge_methods" {
		return fmt.Sprintf("%s merging is not among the methods the pull request rule allows (%s)", method, rule.Source)
	}
	return rule.String()
}

// pushRefusal is what a land job says when merge.method push meets a base
// that refuses a pushed merge commit: known from its rules beforehand, or
// from GitHub's answer to the push (GH006 protected branch, GH013 rulesets).
func pushRefusal(base, detail string) string {
	return fmt.Sprintf("merge.method is push, but %s refuses a pushed merge commit: %s; set merge.method: pull-request in .github/bazinga.yml (bazinga then merges the tested group PR through the API)", base, detail)
}

// pushRulesOf lists the rules that refuse a pushed merge commit, or "".
func pushRulesOf(r ghapi.BranchRules) string {
	var out []string
	for _, rule := range r.PushRules {
		out = append(out, rule.String())
	}
	return strings.Join(out, "; ")
}

// protectedPush reports whether a push error is GitHub refusing the push for
// the branch's protection or rules, and its message.
func protectedPush(err error) (string, bool) {
	msg := err.Error()
	for _, mark := range []string{"GH006", "GH013", "protected branch hook declined", "Repository rule violations"} {
		if strings.Contains(msg, mark) {
			return oneLine(msg), true
		}
	}
	return "", false
}
