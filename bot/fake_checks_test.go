package bot

import (
	"context"
	"slices"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// The in-memory fake's side of merge.method pull-request: a branch's rules
// as GET branch and GET rules/branches give them, and the check runs and
// statuses reported on a commit (latest per name, as GitHub lists them).

// protect sets the rules of a branch (test set-up, not recorded).
func (f *fakeGitHub) protect(branch string, r ghapi.BranchRules) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rules == nil {
		f.rules = map[string]ghapi.BranchRules{}
	}
	f.rules[branch] = r
}

// setCheck reports a check on a commit, replacing an earlier one of the
// same name (test set-up: the test plays CI).
func (f *fakeGitHub) setCheck(sha string, c ghapi.Check) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.checks == nil {
		f.checks = map[string][]ghapi.Check{}
	}
	list := slices.DeleteFunc(f.checks[sha], func(x ghapi.Check) bool { return x.Name == c.Name })
	f.checks[sha] = append(list, c)
}

func (f *fakeGitHub) BranchRules(_ context.Context, repo ghapi.RepoRef, branch string) (ghapi.BranchRules, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return ghapi.BranchRules{}, f.record("BranchRules", err, branch)
	}
	if _, ok := f.refs["refs/heads/"+branch]; !ok {
		return ghapi.BranchRules{}, f.record("BranchRules", ghapi.ErrNotFound, branch)
	}
	return f.rules[branch], f.record("BranchRules", nil, branch)
}

func (f *fakeGitHub) Checks(_ context.Context, repo ghapi.RepoRef, sha string) ([]ghapi.Check, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.checkRepo(repo); err != nil {
		return nil, f.record("Checks", err, sha)
	}
	return slices.Clone(f.checks[sha]), f.record("Checks", nil, sha)
}
