package ghapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/go-github/v66/github"
)

// What GitHub lets bazinga do on a base branch (issue 11): the merge
// methods a repository allows, the rules of its branch protection and
// rulesets, the checks reported on a commit, and merging a pull request.

// RepoSettings are the repository settings that decide how a group lands.
type RepoSettings struct {
	AllowMerge, AllowSquash, AllowRebase bool
	Private                              bool
}

// Allows reports whether the repository allows a merge method ("merge",
// "squash", "rebase").
func (s RepoSettings) Allows(method string) bool {
	switch method {
	case "merge":
		return s.AllowMerge
	case "squash":
		return s.AllowSquash
	case "rebase":
		return s.AllowRebase
	}
	return false
}

// Allowed lists the methods the repository allows, in the order merge, squash, rebase.
func (s RepoSettings) Allowed() []string {
	var out []string
	for _, m := range []string{"merge", "squash", "rebase"} {
		if s.Allows(m) {
			out = append(out, m)
		}
	}
	return out
}

// RepoSettings reads the repository's merge settings (GET /repos/{o}/{r}).
func (g *Client) RepoSettings(ctx context.Context, repo RepoRef) (RepoSettings, error) {
	r, resp, err := g.c.Repositories.Get(ctx, repo.Owner, repo.Name)
	if err != nil {
		return RepoSettings{}, apiErr(fmt.Sprintf("get repository %s", repo), resp, err)
	}
	// An absent allow_* field is GitHub's default: allowed.
	allowed := func(b *bool) bool { return b == nil || *b }
	return RepoSettings{AllowMerge: allowed(r.AllowMergeCommit), AllowSquash: allowed(r.AllowSquashMerge),
		AllowRebase: allowed(r.AllowRebaseMerge), Private: r.GetPrivate()}, nil
}

// RequiredCheck is a check a base branch requires: a check run or commit
// status named Context, from the app AppID when it is not zero.
type RequiredCheck struct {
	Context string
	AppID   int64
}

// Rule is one rule of a base branch that refuses a direct push of a merge
// commit, with where it comes from ("branch protection", "ruleset 7").
type Rule struct {
	Kind   string // pull_request, required_status_checks, required_linear_history, required_signatures, update
	Source string
}

func (r Rule) String() string {
	what := map[string]string{
		"pull_request":            "changes must be made through a pull request",
		"required_status_checks":  "required status checks must pass",
		"required_linear_history": "a linear history is required (no merge commits)",
		"required_signatures":     "commits must be signed",
		"update":                  "updates are restricted",
	}[r.Kind]
	if what == "" {
		what = r.Kind
	}
	return fmt.Sprintf("%s (%s)", what, r.Source)
}

// BranchRules are the protection rules of a branch that bazinga must follow.
type BranchRules struct {
	// RequiredChecks must have passed on a pull request's head before it merges.
	RequiredChecks []RequiredCheck
	// Strict: the head must be up to date with the base before it merges.
	Strict bool
	// PushRules refuse a merge commit pushed straight to the branch.
	PushRules []Rule
	// MergeMethods, when not empty, are the only merge methods the
	// rulesets' pull_request rules allow (allowed_merge_methods).
	MergeMethods []string
}

// BranchRules reads a branch's classic protection (the summary GET
// /repos/{o}/{r}/branches/{b} shows readers) and the rulesets that apply to
// it (GET /repos/{o}/{r}/rules/branches/{b}).
func (g *Client) BranchRules(ctx context.Context, repo RepoRef, branch string) (BranchRules, error) {
	var out BranchRules
	b, resp, err := g.c.Repositories.GetBranch(ctx, repo.Owner, repo.Name, branch, 1)
	if err != nil {
		return out, apiErr(fmt.Sprintf("get branch %s of %s", branch, repo), resp, err)
	}
	if p := b.GetProtection(); p != nil && b.GetProtected() {
		const src = "branch protection"
		if rs := p.RequiredStatusChecks; rs != nil {
			out.Strict = out.Strict || rs.Strict
			if rs.Checks != nil {
				for _, c := range *rs.Checks {
					out.RequiredChecks = append(out.RequiredChecks, RequiredCheck{Context: c.Context, AppID: c.GetAppID()})
				}
			}
			if rs.Contexts != nil && rs.Checks == nil {
				for _, c := range *rs.Contexts {
					out.RequiredChecks = append(out.RequiredChecks, RequiredCheck{Context: c})
				}
			}
			if len(out.RequiredChecks) > 0 {
				out.PushRules = append(out.PushRules, Rule{Kind: "required_status_checks", Source: src})
			}
		}
		if p.RequiredPullRequestReviews != nil {
			out.PushRules = append(out.PushRules, Rule{Kind: "pull_request", Source: src})
		}
		if p.RequireLinearHistory != nil && p.RequireLinearHistory.Enabled {
			out.PushRules = append(out.PushRules, Rule{Kind: "required_linear_history", Source: src})
		}
		if p.RequiredSignatures != nil && p.RequiredSignatures.GetEnabled() {
			out.PushRules = append(out.PushRules, Rule{Kind: "required_signatures", Source: src})
		}
	}
	// Read raw: go-github re-encodes a rule's parameters through its own
	// structs, which drop fields it does not know (allowed_merge_methods).
	var rules []rawRule
	req, err := g.c.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/rules/branches/%s", repo.Owner, repo.Name, branch), nil)
	if err != nil {
		return out, fmt.Errorf("get the rules of branch %s of %s: %w", branch, repo, err)
	}
	resp, err = g.c.Do(ctx, req, &rules)
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			// GitHub Enterprise Server before rulesets: no rules.
			return out.normalised(), nil
		}
		return out, apiErr(fmt.Sprintf("get the rules of branch %s of %s", branch, repo), resp, err)
	}
	for _, r := range rules {
		src := fmt.Sprintf("ruleset %d", r.RulesetID)
		switch r.Type {
		case "required_status_checks":
			var p github.RequiredStatusChecksRuleParameters
			if r.Parameters != nil {
				if err := json.Unmarshal(r.Parameters, &p); err != nil {
					return out, fmt.Errorf("rules of branch %s of %s: %s: %w", branch, repo, src, err)
				}
			}
			for _, c := range p.RequiredStatusChecks {
				var app int64
				if c.IntegrationID != nil {
					app = *c.IntegrationID
				}
				out.RequiredChecks = append(out.RequiredChecks, RequiredCheck{Context: c.Context, AppID: app})
			}
			out.Strict = out.Strict || p.StrictRequiredStatusChecksPolicy
			out.PushRules = append(out.PushRules, Rule{Kind: r.Type, Source: src})
		case "pull_request":
			var p struct {
				AllowedMergeMethods []string `json:"allowed_merge_methods"`
			}
			if r.Parameters != nil {
				if err := json.Unmarshal(r.Parameters, &p); err != nil {
					return out, fmt.Errorf("rules of branch %s of %s: %s: %w", branch, repo, src, err)
				}
			}
			if len(p.AllowedMergeMethods) > 0 {
				if out.MergeMethods == nil {
					out.MergeMethods = slices.Clone(p.AllowedMergeMethods)
				} else {
					// Every ruleset applies: only methods all of them allow.
					out.MergeMethods = slices.DeleteFunc(out.MergeMethods, func(m string) bool { return !slices.Contains(p.AllowedMergeMethods, m) })
				}
				if len(out.MergeMethods) == 0 {
					out.MergeMethods = []string{} // none left: still a restriction
				}
			}
			out.PushRules = append(out.PushRules, Rule{Kind: r.Type, Source: src})
		case "required_linear_history", "required_signatures", "update":
			out.PushRules = append(out.PushRules, Rule{Kind: r.Type, Source: src})
		}
	}
	return out.normalised(), nil
}

// rawRule is one rule of GET /repos/{o}/{r}/rules/branches/{b}.
type rawRule struct {
	Type       string          `json:"type"`
	Parameters json.RawMessage `json:"parameters,omitempty"`
	RulesetID  int64           `json:"ruleset_id"`
}

// normalised sorts and deduplicates, so output never depends on GitHub's order.
func (b BranchRules) normalised() BranchRules {
	slices.SortFunc(b.RequiredChecks, func(x, y RequiredCheck) int {
		if c := strings.Compare(x.Context, y.Context); c != 0 {
			return c
		}
		return int(x.AppID - y.AppID)
	})
	b.RequiredChecks = slices.Compact(b.RequiredChecks)
	slices.SortFunc(b.PushRules, func(x, y Rule) int {
		if c := strings.Compare(x.Kind, y.Kind); c != 0 {
			return c
		}
		return strings.Compare(x.Source, y.Source)
	})
	b.PushRules = slices.Compact(b.PushRules)
	slices.Sort(b.MergeMethods)
	return b
}

// Has reports whether a rule of kind applies, and returns the first.
func (b BranchRules) Has(kind string) (Rule, bool) {
	for _, r := range b.PushRules {
		if r.Kind == kind {
			return r, true
		}
	}
	return Rule{}, false
}

// MethodRefused reports whether a merge refusal is about the merge method
// (the repository's settings, a linear history, signed commits, a
// ruleset's allowed methods): another method may be accepted.
func (e *MergeRefusal) MethodRefused() bool {
	m := strings.ToLower(e.Message)
	for _, mark := range []string{"merges are not allowed on this repository", "merge commits are not allowed",
		"rebase merges cannot be automatically signed", "is not allowed by the ruleset"} {
		if strings.Contains(m, mark) {
			return true
		}
	}
	return false
}

// CheckState is one check's state on a commit.
type CheckState string

const (
	CheckPending CheckState = "pending"
	CheckSuccess CheckState = "success"
	CheckFailure CheckState = "failure"
)

// Check is a check run or a commit status reported on a commit.
type Check struct {
	Name  string
	AppID int64 // the check run's app; 0 for a commit status
	State CheckState
	// Detail is a check run's output title and summary, or a status's description.
	Detail string
	URL    string
}

// Checks lists the check runs (latest per name) and commit statuses
// (latest per context) of a commit: GET …/commits/{sha}/check-runs and
// GET …/commits/{sha}/status.
func (g *Client) Checks(ctx context.Context, repo RepoRef, sha string) ([]Check, error) {
	var out []Check
	opts := &github.ListCheckRunsOptions{Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: perPage}}
	for {
		res, resp, err := g.c.Checks.ListCheckRunsForRef(ctx, repo.Owner, repo.Name, sha, opts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("list check runs of %s in %s", sha, repo), resp, err)
		}
		for _, r := range res.CheckRuns {
			c := Check{Name: r.GetName(), AppID: r.GetApp().GetID(), State: CheckPending, URL: r.GetHTMLURL()}
			if r.GetStatus() == "completed" {
				switch r.GetConclusion() {
				case "success", "neutral", "skipped":
					c.State = CheckSuccess
				default: // failure, cancelled, timed_out, action_required, stale
					c.State = CheckFailure
				}
			}
			if o := r.GetOutput(); o != nil {
				c.Detail = strings.TrimSpace(o.GetTitle() + "\n" + o.GetSummary())
			}
			if c.State == CheckFailure && c.Detail == "" {
				c.Detail = "conclusion: " + r.GetConclusion()
			}
			out = append(out, c)
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	sopts := &github.ListOptions{PerPage: perPage}
	for {
		cs, resp, err := g.c.Repositories.GetCombinedStatus(ctx, repo.Owner, repo.Name, sha, sopts)
		if err != nil {
			return nil, apiErr(fmt.Sprintf("get the status of %s in %s", sha, repo), resp, err)
		}
		for _, s := range cs.Statuses {
			c := Check{Name: s.GetContext(), State: CheckPending, Detail: s.GetDescription(), URL: s.GetTargetURL()}
			switch s.GetState() {
			case "success":
				c.State = CheckSuccess
			case "failure", "error":
				c.State = CheckFailure
			}
			out = append(out, c)
		}
		if resp.NextPage == 0 {
			break
		}
		sopts.Page = resp.NextPage
	}
	return out, nil
}

// MergeRefusal is GitHub refusing to merge a pull request: 405 (not
// mergeable: a method the repository does not allow, protection, the base
// moved) or 409 (the head is not the sha given).
type MergeRefusal struct {
	Status  int
	Message string
}

func (e *MergeRefusal) Error() string {
	return fmt.Sprintf("GitHub refused the merge (%d): %s", e.Status, e.Message)
}

// HeadModified reports a 409: the pull request's head is not the tested sha.
func (e *MergeRefusal) HeadModified() bool { return e.Status == http.StatusConflict }

// BaseModified reports GitHub's "Base branch was modified" 405.
func (e *MergeRefusal) BaseModified() bool {
	return e.Status == http.StatusMethodNotAllowed && strings.Contains(strings.ToLower(e.Message), "base branch was modified")
}

// MergePR merges a pull request at sha with a merge method ("merge",
// "squash", "rebase") and returns the commit it made on the base. A 405 or
// 409 is a *MergeRefusal.
func (g *Client) MergePR(ctx context.Context, repo RepoRef, number int, sha, method, title string) (string, error) {
	res, resp, err := g.c.PullRequests.Merge(ctx, repo.Owner, repo.Name, number, title,
		&github.PullRequestOptions{SHA: sha, MergeMethod: method})
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil {
		switch ge.Response.StatusCode {
		case http.StatusMethodNotAllowed, http.StatusConflict:
			return "", &MergeRefusal{Status: ge.Response.StatusCode, Message: ge.Message}
		}
	}
	if err != nil {
		return "", apiErr(fmt.Sprintf("merge PR %s#%d", repo, number), resp, err)
	}
	if !res.GetMerged() {
		return "", &MergeRefusal{Status: http.StatusOK, Message: res.GetMessage()}
	}
	return res.GetSHA(), nil
}
