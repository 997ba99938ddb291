package ghfake

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Branch protection (classic) and repository rulesets.
//
// A repository has no rules until a test gives it some, and then the fake
// enforces them where GitHub does: git pushes over smart HTTP (refused as a
// whole, GH006 for protection, GH013 for rulesets, with GitHub's reason
// lines), the git refs API (422) and the pull request merge API (405).
// Rules are not enforced (and cannot be set) in a private repository on the
// free plan, as on GitHub.
//
// Who is bound: classic protection does not apply to repository admins
// unless EnforceAdmins is set (about-protected-branches: "By default, the
// restrictions of a branch protection rule don't apply to people with admin
// permissions"); rulesets apply to everyone not in Bypass. Tokens of Apps
// and GITHUB_TOKEN are never admins here.

// Protection is a classic branch protection rule.
type Protection struct {
	// RequirePR refuses pushes: "Changes must be made through a pull
	// request." Merges through the pull request API are allowed.
	RequirePR bool
	// RequiredApprovals is how many approving reviews (latest per reviewer
	// with write access, none requesting changes) a merge needs. >0 implies
	// RequirePR.
	RequiredApprovals int
	// RequiredChecks are check run names and status contexts that must pass
	// on the pull request's head (or on the pushed commit).
	RequiredChecks []string
	// Strict requires the head to be up to date with the base ("Require
	// branches to be up to date before merging").
	Strict bool
	// LinearHistory refuses merge commits: pushes containing them and the
	// "merge" merge method.
	LinearHistory bool
	// SignedCommits refuses unsigned commits, and rebase merges (GitHub
	// cannot sign them). A commit counts as signed when it carries a
	// signature (the fake does not verify keys) or was committed by GitHub
	// (merge and squash commits made through the API, which GitHub signs).
	SignedCommits bool
	// EnforceAdmins applies the rule to repository admins too.
	EnforceAdmins bool
	// AllowForcePushes and AllowDeletions lift the defaults of every
	// protection rule: no force pushes, no deletion.
	AllowForcePushes, AllowDeletions bool
}

// Enforcement is a ruleset's enforcement status.
type Enforcement string

// Enforcement statuses; only active rulesets are enforced and listed by
// GET /rules/branches/{branch}.
const (
	EnforcementActive   Enforcement = "active"
	EnforcementEvaluate Enforcement = "evaluate"
	EnforcementDisabled Enforcement = "disabled"
)

// String is the status's name ("active" for the zero value).
func (e Enforcement) String() string {
	if e == "" {
		return string(EnforcementActive)
	}
	return string(e)
}

// Ruleset is a branch ruleset of the repository.
type Ruleset struct {
	ID   int64 // assigned by AddRuleset
	Name string
	// Include and Exclude are ref name patterns: "~DEFAULT_BRANCH", "~ALL",
	// a branch name ("main") or a full ref ("refs/heads/release/*"), with
	// fnmatch wildcards (* within a segment, ** across segments).
	Include, Exclude []string
	Enforcement      Enforcement
	// Bypass lists the logins the ruleset does not apply to.
	Bypass []string

	RestrictCreations, RestrictUpdates, RestrictDeletions bool
	BlockForcePushes                                      bool // non_fast_forward
	RequirePR                                             bool
	RequiredApprovals                                     int
	// AllowedMergeMethods limits the pull request rule's merge methods
	// (merge, squash, rebase); empty allows all.
	AllowedMergeMethods []string
	RequiredChecks      []string
	Strict              bool
	LinearHistory       bool
	SignedCommits       bool
}

// Protect sets branch's classic protection rule (branch may be an fnmatch
// pattern such as "release/*"), replacing any rule for the same pattern.
// It fails like GitHub where the plan has no protection.
func (r *Repo) Protect(branch string, p Protection) error {
	if branch == "" {
		return errors.New("ghfake: Protect: empty branch pattern")
	}
	if p.RequiredApprovals < 0 || p.RequiredApprovals > 6 {
		return fmt.Errorf("ghfake: Protect: required approvals %d out of range 0..6", p.RequiredApprovals)
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if !r.settings.protectionAvailable() {
		return fmt.Errorf("ghfake: Protect %s: %s", branch, upgradeMessage)
	}
	p.RequiredChecks = append([]string(nil), p.RequiredChecks...)
	r.protections[branch] = &p
	return nil
}

// Unprotect removes the classic protection rule for the pattern branch.
func (r *Repo) Unprotect(branch string) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	delete(r.protections, branch)
}

// ProtectionOf returns the classic protection rule that applies to branch.
func (r *Repo) ProtectionOf(branch string) (Protection, bool) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	p := r.protectionFor(branch)
	if p == nil {
		return Protection{}, false
	}
	return *p, true
}

// AddRuleset adds a branch ruleset and returns its id. It fails like GitHub
// where the plan has no rulesets, or on a ruleset without a target.
func (r *Repo) AddRuleset(rs Ruleset) (int64, error) {
	if len(rs.Include) == 0 {
		return 0, errors.New("ghfake: AddRuleset: no Include pattern (use \"~ALL\" or \"~DEFAULT_BRANCH\")")
	}
	switch rs.Enforcement {
	case "", EnforcementActive, EnforcementEvaluate, EnforcementDisabled:
	default:
		return 0, fmt.Errorf("ghfake: AddRuleset: unknown enforcement %q", rs.Enforcement)
	}
	for _, m := range rs.AllowedMergeMethods {
		if m != "merge" && m != "squash" && m != "rebase" {
			return 0, fmt.Errorf("ghfake: AddRuleset: unknown merge method %q", m)
		}
	}
	if rs.RequiredApprovals < 0 || rs.RequiredApprovals > 10 {
		return 0, fmt.Errorf("ghfake: AddRuleset: required approvals %d out of range 0..10", rs.RequiredApprovals)
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	if !r.settings.protectionAvailable() {
		return 0, fmt.Errorf("ghfake: AddRuleset: %s", upgradeMessage)
	}
	r.f.nextID["ruleset"]++
	rs.ID = r.f.nextID["ruleset"]
	if rs.Name == "" {
		rs.Name = "ruleset " + strconv.FormatInt(rs.ID, 10)
	}
	rs.Include = append([]string(nil), rs.Include...)
	rs.Exclude = append([]string(nil), rs.Exclude...)
	rs.Bypass = append([]string(nil), rs.Bypass...)
	rs.RequiredChecks = append([]string(nil), rs.RequiredChecks...)
	rs.AllowedMergeMethods = append([]string(nil), rs.AllowedMergeMethods...)
	r.rulesets = append(r.rulesets, &rs)
	return rs.ID, nil
}

// RemoveRuleset deletes a ruleset.
func (r *Repo) RemoveRuleset(id int64) error {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	for i, rs := range r.rulesets {
		if rs.ID == id {
			r.rulesets = append(r.rulesets[:i], r.rulesets[i+1:]...)
			return nil
		}
	}
	return fmt.Errorf("ruleset %d: %w", id, ErrNotFound)
}

// protectionFor is the classic rule for branch: an exact pattern wins, then
// the first matching wildcard pattern in name order (GitHub applies one
// rule per branch). nil where the plan has none. Caller holds f.mu.
func (r *Repo) protectionFor(branch string) *Protection {
	if !r.settings.protectionAvailable() {
		return nil
	}
	if p, ok := r.protections[branch]; ok {
		return p
	}
	for _, pat := range sortedKeys(r.protections) {
		if strings.ContainsAny(pat, "*?[") && fnmatch(pat, branch) {
			return r.protections[pat]
		}
	}
	return nil
}

// rulesetsFor are the active rulesets targeting branch. Caller holds f.mu.
func (r *Repo) rulesetsFor(branch string) []*Ruleset {
	if !r.settings.protectionAvailable() {
		return nil
	}
	var out []*Ruleset
	for _, rs := range r.rulesets {
		if rs.Enforcement.String() == string(EnforcementActive) && r.rulesetTargets(rs, branch) {
			out = append(out, rs)
		}
	}
	return out
}

func (r *Repo) rulesetTargets(rs *Ruleset, branch string) bool {
	match := func(pats []string) bool {
		for _, p := range pats {
			switch {
			case p == "~ALL":
				return true
			case p == "~DEFAULT_BRANCH":
				if branch == r.defaultBranch {
					return true
				}
			case fnmatch(strings.TrimPrefix(p, "refs/heads/"), branch):
				return true
			}
		}
		return false
	}
	return match(rs.Include) && !match(rs.Exclude)
}

func bypasses(rs *Ruleset, login string) bool {
	for _, b := range rs.Bypass {
		if strings.EqualFold(b, login) {
			return true
		}
	}
	return false
}

// fnmatch matches GitHub's branch patterns: * and ? within a path segment,
// ** across segments, [...] classes.
func fnmatch(pat, name string) bool {
	if pat == "" {
		return name == ""
	}
	if strings.HasPrefix(pat, "**") {
		rest := strings.TrimPrefix(strings.TrimPrefix(pat, "**"), "/")
		for i := 0; i <= len(name); i++ {
			if fnmatch(rest, name[i:]) {
				return true
			}
		}
		return false
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(name); i++ {
			if i > 0 && name[i-1] == '/' {
				break
			}
			if fnmatch(pat[1:], name[i:]) {
				return true
			}
		}
		return false
	case '?':
		return name != "" && name[0] != '/' && fnmatch(pat[1:], name[1:])
	case '[':
		end := strings.IndexByte(pat, ']')
		if end < 0 || name == "" {
			return false
		}
		class, neg := pat[1:end], false
		if strings.HasPrefix(class, "!") || strings.HasPrefix(class, "^") {
			class, neg = class[1:], true
		}
		in := false
		for i := 0; i < len(class); i++ {
			if i+2 < len(class) && class[i+1] == '-' {
				if name[0] >= class[i] && name[0] <= class[i+2] {
					in = true
				}
				i += 2
			} else if class[i] == name[0] {
				in = true
			}
		}
		return in != neg && fnmatch(pat[end+1:], name[1:])
	}
	return name != "" && pat[0] == name[0] && fnmatch(pat[1:], name[1:])
}

// --- evaluation ---

// commitGetter reads commits: from the repository, or (for a push being
// decided) from the repository plus the pushed pack.
type commitGetter func(h plumbing.Hash) (*object.Commit, error)

// repoCommits reads commits from the repository's store.
func (r *Repo) repoCommits() commitGetter {
	return func(h plumbing.Hash) (*object.Commit, error) {
		r.gs.mu.Lock()
		defer r.gs.mu.Unlock()
		return r.gs.commit(h)
	}
}

// refUpdate is a proposed change of a branch.
type refUpdate struct {
	branch   string
	old, new string // "" for absent
	login    string
	kind     AccountType
	get      commitGetter
}

// violations are the reasons a change is refused: classic protection's
// (GH006) and rulesets' (GH013), in GitHub's order.
type violations struct {
	classic, rules []string
}

func (v violations) any() bool { return len(v.classic) > 0 || len(v.rules) > 0 }

// boundBy reports whether login is bound by classic protection p. Caller
// holds f.mu.
func (r *Repo) boundBy(p *Protection, login string, kind AccountType) bool {
	if p.EnforceAdmins {
		return true
	}
	return !(kind == User && r.f.roleOf(r, login) == "admin")
}

// checkPush decides a push (or ref API update) of one branch. Caller holds
// f.mu.
func (r *Repo) checkPush(u refUpdate) violations {
	var v violations
	p := r.protectionFor(u.branch)
	if p != nil && !r.boundBy(p, u.login, u.kind) {
		p = nil
	}
	var sets []*Ruleset
	for _, rs := range r.rulesetsFor(u.branch) {
		if !bypasses(rs, u.login) {
			sets = append(sets, rs)
		}
	}
	if p == nil && len(sets) == 0 {
		return v
	}
	create, del := u.old == "", u.new == ""
	// Whether the update is a force push is computed only if a rule cares
	// (it needs the pushed commits).
	forceMatters := p != nil && !p.AllowForcePushes
	for _, rs := range sets {
		forceMatters = forceMatters || rs.BlockForcePushes
	}
	forced := false
	if forceMatters && !create && !del {
		forced = !reachable(u.get, u.old, u.new)
	}
	// The commits a push brings: old..new for an update; for a creation,
	// what no other branch has (rulesets check those; classic protection
	// checks none, as the docs of required signatures say).
	var commits []*object.Commit
	needCommits := false
	if p != nil && (p.LinearHistory || p.SignedCommits) && !create {
		needCommits = true
	}
	for _, rs := range sets {
		if rs.LinearHistory || rs.SignedCommits {
			needCommits = true
		}
	}
	if needCommits && !del {
		var exclude []string
		if create {
			heads, _ := r.heads()
			for ref, sha := range heads {
				if ref != "refs/heads/"+u.branch {
					exclude = append(exclude, sha)
				}
			}
			sort.Strings(exclude)
		} else {
			exclude = []string{u.old}
		}
		commits = rangeCommits(u.get, u.new, exclude)
	}
	if p != nil {
		switch {
		case del && !p.AllowDeletions:
			v.classic = append(v.classic, "Cannot delete this protected branch.")
		case forced && !p.AllowForcePushes:
			v.classic = append(v.classic, "Cannot force-push to this branch.")
		}
		if !del {
			if p.RequirePR || p.RequiredApprovals > 0 {
				v.classic = append(v.classic, "Changes must be made through a pull request.")
			}
			if msg := r.pushChecksMessage(p.RequiredChecks, u.new, u.get); msg != "" {
				v.classic = append(v.classic, msg)
			}
			if p.LinearHistory && !create && hasMerge(commits) {
				v.classic = append(v.classic, "This branch must not contain merge commits.")
			}
			if p.SignedCommits && !create && hasUnsigned(commits) {
				v.classic = append(v.classic, "Commits must have verified signatures.")
			}
		}
	}
	var rules []string
	add := func(msg string) {
		for _, m := range rules {
			if m == msg {
				return
			}
		}
		rules = append(rules, msg)
	}
	for _, rs := range sets {
		switch {
		case create && rs.RestrictCreations:
			add("Cannot create ref due to creations being restricted.")
		case del && rs.RestrictDeletions:
			add("Cannot delete this protected ref.")
		case !create && !del && rs.RestrictUpdates:
			add("Cannot update this protected ref.")
		}
		if forced && rs.BlockForcePushes {
			add("Cannot force-push to this protected ref.")
		}
		if del {
			continue
		}
		if rs.RequirePR || rs.RequiredApprovals > 0 {
			add("Changes must be made through a pull request.")
		}
		if msg := r.pushChecksMessage(rs.RequiredChecks, u.new, u.get); msg != "" {
			add(msg)
		}
		if rs.LinearHistory && hasMerge(commits) {
			add("This branch must not contain merge commits.")
		}
		if rs.SignedCommits && hasUnsigned(commits) {
			add("Commits must have verified signatures.")
		}
	}
	v.rules = rules
	return v
}

// pushChecksMessage is the required-checks reason for pushing sha, or "".
// A merge commit whose tree is its second parent's passes when that parent
// does: "Pull requests that are up-to-date and pass required status checks
// can be merged locally and pushed to the protected branch"
// (troubleshooting-required-status-checks). Caller holds f.mu.
func (r *Repo) pushChecksMessage(required []string, sha string, get commitGetter) string {
	if len(required) == 0 {
		return ""
	}
	msg := r.checksMessage(required, sha)
	if msg == "" {
		return ""
	}
	if c, err := get(plumbing.NewHash(sha)); err == nil && len(c.ParentHashes) == 2 {
		if p2, err := get(c.ParentHashes[1]); err == nil && p2.TreeHash == c.TreeHash &&
			r.checksMessage(required, p2.Hash.String()) == "" {
			return ""
		}
	}
	return msg
}

// reachable reports whether commit a is reachable from b.
func reachable(get commitGetter, a, b string) bool {
	if a == b {
		return true
	}
	seen := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{plumbing.NewHash(b)}
	target := plumbing.NewHash(a)
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		if h == target {
			return true
		}
		c, err := get(h)
		if err != nil {
			continue
		}
		queue = append(queue, c.ParentHashes...)
	}
	return false
}

// rangeCommits returns the commits reachable from tip and not from any of
// exclude, in walk order.
func rangeCommits(get commitGetter, tip string, exclude []string) []*object.Commit {
	stop := map[plumbing.Hash]bool{}
	queue := []plumbing.Hash{}
	for _, e := range exclude {
		if e != "" {
			queue = append(queue, plumbing.NewHash(e))
		}
	}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if stop[h] {
			continue
		}
		stop[h] = true
		if c, err := get(h); err == nil {
			queue = append(queue, c.ParentHashes...)
		}
	}
	var out []*object.Commit
	seen := map[plumbing.Hash]bool{}
	queue = []plumbing.Hash{plumbing.NewHash(tip)}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] || stop[h] {
			continue
		}
		seen[h] = true
		c, err := get(h)
		if err != nil {
			continue
		}
		out = append(out, c)
		queue = append(queue, c.ParentHashes...)
	}
	return out
}

func hasMerge(cs []*object.Commit) bool {
	for _, c := range cs {
		if len(c.ParentHashes) > 1 {
			return true
		}
	}
	return false
}

// signed: the fake cannot verify keys, so a signature counts as verified;
// commits GitHub itself made (committer noreply@github.com) are signed by
// GitHub's web-flow key.
func signed(c *object.Commit) bool {
	return c.PGPSignature != "" || c.Committer.Email == "noreply@github.com"
}

func hasUnsigned(cs []*object.Commit) bool {
	for _, c := range cs {
		if !signed(c) {
			return true
		}
	}
	return false
}

// --- messages ---

// gitRefusal renders a refused push's progress lines (without "remote: ")
// and the short reason git prints after "[remote rejected]".
func (r *Repo) gitRefusal(ref string, v violations) (lines []string, reason string) {
	if len(v.rules) > 0 {
		lines = append(lines,
			"error: GH013: Repository rule violations found for "+ref+".",
			"Review all repository rules at "+r.f.html("/"+r.FullName()+"/rules?ref="+url.QueryEscape(ref)),
			"")
		for _, m := range v.rules {
			lines = append(lines, "- "+m, "")
		}
		return lines, "push declined due to repository rule violations"
	}
	lines = append(lines, "error: GH006: Protected branch update failed for "+ref+".", "")
	for _, m := range v.classic {
		lines = append(lines, "- "+m, "")
	}
	return lines, "protected branch hook declined"
}

// apiRefusal is the message of a refused ref API update or merge.
func apiRefusal(ref string, v violations) string {
	if len(v.rules) > 0 {
		return "Repository rule violations found\n\n" + strings.Join(v.rules, "\n\n") + "\n\n"
	}
	return "Protected branch update failed for " + ref + "."
}

// --- endpoints ---

// registerProtectionRoutes declares the endpoints of settings, protection,
// rulesets and checks (called from registerRoutes).
func (f *Fake) registerProtectionRoutes(repo string) {
	f.add("GET "+repo+"/branches/{branch}/protection", f.getBranchProtection, ro{perm: "administration=read", role: "admin"})
	f.add("GET "+repo+"/branches/{branch...}", f.getBranch, ro{perm: contentsR})
	f.add("GET "+repo+"/rules/branches/{branch...}", f.getBranchRules, ro{})
	f.add("PATCH "+repo+"/git/refs/{ref...}", f.updateRefAPI, ro{creates: true, perm: contentsW})
	f.add("DELETE "+repo+"/git/refs/{ref...}", f.deleteRefAPI, ro{perm: contentsW})
	f.add("POST "+repo+"/branches/{branch}/rename", f.renameBranchAPI, ro{creates: true, perm: "administration=write"})
	f.add("PUT "+repo+"/pulls/{number}/update-branch", f.updateBranch, ro{creates: true, perm: pullsWrite})
	f.add("POST "+repo+"/check-runs", f.createCheckRunAPI, ro{creates: true, perm: "checks=write"})
	f.add("GET "+repo+"/check-runs/{check_run_id}", f.getCheckRunAPI, ro{perm: "checks=read"})
	f.add("PATCH "+repo+"/check-runs/{check_run_id}", f.updateCheckRunAPI, ro{creates: true, perm: "checks=write"})
	f.add("POST "+repo+"/statuses/{sha}", f.createStatusAPI, ro{creates: true, perm: "statuses=write"})
	// commits/{ref}/check-runs and commits/{ref}/status: a ref may contain
	// slashes, so the suffix picks the endpoint.
	f.add("GET "+repo+"/commits/{ref...}", f.commitSubresource, ro{perm: "checks=read; statuses=read"})
}

func (f *Fake) commitSubresource(c *rc) {
	ref := c.param("ref")
	var perm string
	var h func(*rc)
	switch {
	case strings.HasSuffix(ref, "/check-runs"):
		ref, perm, h = strings.TrimSuffix(ref, "/check-runs"), "checks=read", f.listCheckRunsForRef
	case strings.HasSuffix(ref, "/status"):
		ref, perm, h = strings.TrimSuffix(ref, "/status"), "statuses=read", f.combinedStatus
	default:
		c.notFound()
		return
	}
	// The route accepts either permission; each endpoint needs its own.
	if c.tok != nil && c.tok.perms != nil && !tokenAllows(c.tok.perms, perm) {
		c.hdr.Set("X-Accepted-GitHub-Permissions", perm)
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	}
	c.params["ref"] = ref
	h(c)
}

// getBranch serves GET /repos/{o}/{r}/branches/{branch}: "protected" and
// the classic rule's required status checks.
func (f *Fake) getBranch(c *rc) {
	r := c.repo
	name := c.param("branch")
	sha, ok := r.ref("refs/heads/" + name)
	if to, renamed := r.renamedBranches[name]; !ok && renamed {
		// A renamed branch's former name redirects to the new one
		// ("Get a branch" documents 301 Moved permanently).
		loc := f.api("/repositories/" + strconv.FormatInt(r.id, 10) + "/branches/" + to)
		c.hdr.Set("Location", loc)
		c.json(http.StatusMovedPermanently, map[string]any{"message": "Moved Permanently", "url": loc,
			"documentation_url": "https://docs.github.com/rest/branches/branches#get-a-branch"})
		return
	}
	if !ok {
		c.fail(http.StatusNotFound, "Branch not found")
		return
	}
	p := r.protectionFor(name)
	checks := map[string]any{"enforcement_level": "off", "contexts": []string{}, "checks": []any{}}
	if p != nil && len(p.RequiredChecks) > 0 {
		level := "non_admins"
		if p.EnforceAdmins {
			level = "everyone"
		}
		list := []any{}
		for _, ctx := range p.RequiredChecks {
			list = append(list, map[string]any{"context": ctx, "app_id": nil})
		}
		checks = map[string]any{"enforcement_level": level, "contexts": p.RequiredChecks, "checks": list}
	}
	base := "/repos/" + r.FullName() + "/branches/" + name
	c.json(http.StatusOK, map[string]any{
		"name":           name,
		"commit":         r.commitObject(sha),
		"_links":         map[string]any{"self": f.api(base), "html": f.html("/" + r.FullName() + "/tree/" + name)},
		"protected":      r.protectedBranch(name),
		"protection":     map[string]any{"enabled": p != nil, "required_status_checks": checks},
		"protection_url": f.api(base + "/protection"),
	})
}

// getBranchProtection serves GET /repos/{o}/{r}/branches/{b}/protection
// (admin only): the classic rule.
func (f *Fake) getBranchProtection(c *rc) {
	r := c.repo
	if !r.settings.protectionAvailable() {
		c.fail(http.StatusForbidden, upgradeMessage)
		return
	}
	name := c.param("branch")
	p := r.protectionFor(name)
	if p == nil {
		c.fail(http.StatusNotFound, "Branch not protected")
		return
	}
	pu := f.api("/repos/" + r.FullName() + "/branches/" + name + "/protection")
	enabled := func(b bool) map[string]any { return map[string]any{"enabled": b} }
	out := map[string]any{
		"url":                              pu,
		"enforce_admins":                   map[string]any{"url": pu + "/enforce_admins", "enabled": p.EnforceAdmins},
		"required_linear_history":          enabled(p.LinearHistory),
		"allow_force_pushes":               enabled(p.AllowForcePushes),
		"allow_deletions":                  enabled(p.AllowDeletions),
		"block_creations":                  enabled(false),
		"required_conversation_resolution": enabled(false),
		"lock_branch":                      enabled(false),
		"allow_fork_syncing":               enabled(false),
		"required_signatures":              map[string]any{"url": pu + "/required_signatures", "enabled": p.SignedCommits},
	}
	if len(p.RequiredChecks) > 0 {
		list := []any{}
		for _, ctx := range p.RequiredChecks {
			list = append(list, map[string]any{"context": ctx, "app_id": nil})
		}
		out["required_status_checks"] = map[string]any{
			"url": pu + "/required_status_checks", "strict": p.Strict, "contexts": p.RequiredChecks, "checks": list,
			"contexts_url": pu + "/required_status_checks/contexts",
		}
	}
	if p.RequirePR || p.RequiredApprovals > 0 {
		out["required_pull_request_reviews"] = map[string]any{
			"url": pu + "/required_pull_request_reviews", "required_approving_review_count": p.RequiredApprovals,
			"dismiss_stale_reviews": false, "require_code_owner_reviews": false, "require_last_push_approval": false,
		}
	}
	c.json(http.StatusOK, out)
}

// getBranchRules serves GET /repos/{o}/{r}/rules/branches/{branch}: the
// rules of every active ruleset targeting the branch (which need not
// exist); readable with metadata access.
func (f *Fake) getBranchRules(c *rc) {
	r := c.repo
	name := c.param("branch")
	var rules []map[string]any
	for _, rs := range r.rulesetsFor(name) {
		add := func(typ string, params map[string]any) {
			rule := map[string]any{"type": typ, "ruleset_source_type": "Repository", "ruleset_source": r.FullName(), "ruleset_id": rs.ID}
			if params != nil {
				rule["parameters"] = params
			}
			rules = append(rules, rule)
		}
		if rs.RestrictCreations {
			add("creation", nil)
		}
		if rs.RestrictUpdates {
			add("update", map[string]any{"update_allows_fetch_and_merge": false})
		}
		if rs.RestrictDeletions {
			add("deletion", nil)
		}
		if rs.BlockForcePushes {
			add("non_fast_forward", nil)
		}
		if rs.LinearHistory {
			add("required_linear_history", nil)
		}
		if rs.SignedCommits {
			add("required_signatures", nil)
		}
		if rs.RequirePR || rs.RequiredApprovals > 0 || len(rs.AllowedMergeMethods) > 0 {
			methods := rs.AllowedMergeMethods
			if len(methods) == 0 {
				methods = []string{"merge", "squash", "rebase"}
			}
			add("pull_request", map[string]any{
				"required_approving_review_count": rs.RequiredApprovals, "dismiss_stale_reviews_on_push": false,
				"require_code_owner_review": false, "require_last_push_approval": false,
				"required_review_thread_resolution": false, "allowed_merge_methods": methods,
			})
		}
		if len(rs.RequiredChecks) > 0 {
			list := []any{}
			for _, ctx := range rs.RequiredChecks {
				list = append(list, map[string]any{"context": ctx})
			}
			add("required_status_checks", map[string]any{
				"strict_required_status_checks_policy": rs.Strict, "do_not_enforce_on_create": false,
				"required_status_checks": list,
			})
		}
	}
	start, end := c.page(len(rules))
	out := []map[string]any{}
	out = append(out, rules[start:end]...)
	c.json(http.StatusOK, out)
}
