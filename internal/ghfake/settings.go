package ghfake

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-github/v66/github"
)

// Plan is the GitHub plan of a repository's owner; it decides which features
// a private repository has.
type Plan string

// Plans.
const (
	PlanFree       Plan = "free"
	PlanPro        Plan = "pro"
	PlanTeam       Plan = "team"
	PlanEnterprise Plan = "enterprise"
)

// String is the plan's name ("free" for the zero value).
func (p Plan) String() string {
	if p == "" {
		return string(PlanFree)
	}
	return string(p)
}

func (p Plan) valid() bool {
	switch p {
	case "", PlanFree, PlanPro, PlanTeam, PlanEnterprise:
		return true
	}
	return false
}

// RepoSettings are a repository's settings that change what GitHub allows.
// Start from Repo.Settings (or DefaultSettings) and change what the test
// needs: the zero value allows no merge method, which GitHub refuses.
type RepoSettings struct {
	// Private makes the repository private (visibility "private").
	Private bool
	// Plan is the owner's plan ("" is free). Private repositories on the
	// free plan have no draft pull requests, no branch protection and no
	// rulesets.
	Plan Plan
	// The merge methods the pull request merge API accepts. GitHub requires
	// at least one.
	AllowMergeCommit, AllowSquashMerge, AllowRebaseMerge bool
	// AsyncMergeability makes GET /pulls/{n} answer mergeable:null and
	// mergeable_state:"unknown" after a pull request is opened or its head
	// or base moves, until the fake has computed it: the first GET starts
	// the computation (as on GitHub), the next one (or ComputeMergeability)
	// finishes it. Off, mergeability is computed on every GET.
	AsyncMergeability bool
}

// DefaultSettings are a new public repository's: every merge method
// allowed, mergeability computed on every GET (the fake's historic
// behaviour).
func DefaultSettings() RepoSettings {
	return RepoSettings{Plan: PlanFree, AllowMergeCommit: true, AllowSquashMerge: true, AllowRebaseMerge: true}
}

// Settings returns the repository's settings.
func (r *Repo) Settings() RepoSettings {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	return r.settings
}

// SetSettings replaces the repository's settings. It refuses what GitHub's
// settings page refuses: no merge method allowed, an unknown plan.
func (r *Repo) SetSettings(s RepoSettings) error {
	if !s.AllowMergeCommit && !s.AllowSquashMerge && !s.AllowRebaseMerge {
		return errors.New("ghfake: SetSettings: at least one merge method must be allowed (GitHub: \"You must select at least one option\")")
	}
	if !s.Plan.valid() {
		return fmt.Errorf("ghfake: SetSettings: unknown plan %q (want free, pro, team or enterprise)", s.Plan)
	}
	if s.Plan == "" {
		s.Plan = PlanFree
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.settings = s
	return nil
}

// draftsAllowed: draft pull requests are available in public repositories
// on every plan, and in private ones only with Team and Enterprise
// (docs: data/reusables/gated-features/draft-prs.md).
func (s RepoSettings) draftsAllowed() bool {
	return !s.Private || s.Plan == PlanTeam || s.Plan == PlanEnterprise
}

// protectionAvailable: protected branches and rulesets are available in
// public repositories on every plan and in private ones on paid plans
// ("Protected branches are available in public repositories with GitHub
// Free … and in public and private repositories with GitHub Pro, GitHub
// Team, …": about-protected-branches). GitHub keeps but does not enforce
// rules in a private repository of a free account.
func (s RepoSettings) protectionAvailable() bool {
	return !s.Private || (s.Plan != PlanFree && s.Plan != "")
}

// upgradeMessage is GitHub's answer to protection endpoints where the plan
// has no protection.
const upgradeMessage = "Upgrade to GitHub Pro or make this repository public to enable this feature."

// methodRefusal is the 405 message for a merge method the repository does
// not allow, or "".
func (s RepoSettings) methodRefusal(method string) string {
	switch {
	case method == "merge" && !s.AllowMergeCommit:
		return "Merge commits are not allowed on this repository."
	case method == "squash" && !s.AllowSquashMerge:
		return "Squash merges are not allowed on this repository."
	case method == "rebase" && !s.AllowRebaseMerge:
		return "Rebase merges are not allowed on this repository."
	}
	return ""
}

func (s RepoSettings) visibility() string {
	if s.Private {
		return "private"
	}
	return "public"
}

// fullJSON is the repository as GET /repos/{owner}/{repo} renders it: the
// common representation plus the settings fields GitHub returns there.
// Caller holds f.mu.
func (r *Repo) fullJSON() *github.Repository {
	out := r.json()
	s := r.settings
	out.Private = github.Bool(s.Private)
	out.Visibility = github.String(s.visibility())
	out.AllowMergeCommit = github.Bool(s.AllowMergeCommit)
	out.AllowSquashMerge = github.Bool(s.AllowSquashMerge)
	out.AllowRebaseMerge = github.Bool(s.AllowRebaseMerge)
	out.AllowAutoMerge = github.Bool(false)
	out.AllowUpdateBranch = github.Bool(false)
	out.DeleteBranchOnMerge = github.Bool(false)
	out.Archived = github.Bool(false)
	out.Disabled = github.Bool(false)
	out.HasProjects = github.Bool(true)
	out.HasWiki = github.Bool(true)
	out.HasPages = github.Bool(false)
	out.HasDownloads = github.Bool(true)
	out.HasDiscussions = github.Bool(false)
	out.IsTemplate = github.Bool(false)
	out.SquashMergeCommitTitle = github.String("COMMIT_OR_PR_TITLE")
	out.SquashMergeCommitMessage = github.String("COMMIT_MESSAGES")
	out.MergeCommitTitle = github.String("MERGE_MESSAGE")
	out.MergeCommitMessage = github.String("PR_TITLE")
	return out
}

// refuseDraft answers POST /pulls with draft:true where drafts are not
// available, as GitHub does (422, "Validation Failed" with a custom error).
func (c *rc) refuseDraft() {
	c.errorBody(http.StatusUnprocessableEntity, map[string]any{
		"message": "Validation Failed",
		"errors": []fieldError{{Resource: "PullRequest", Code: "custom",
			Message: "Draft pull requests are not supported in this repository."}},
		"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
		"status":            "422",
	})
}
