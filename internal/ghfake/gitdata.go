package ghfake

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"
)

// --- repository, branches, contents ---

func (f *Fake) getRepo(c *rc) { c.json(http.StatusOK, c.repo.fullJSON()) }

// getContents serves files (base64, as GitHub does) and directory listings.
func (f *Fake) getContents(c *rc) {
	r := c.repo
	ref := c.r.URL.Query().Get("ref")
	if ref == "" {
		ref = r.defaultBranch
	}
	sha, ok := r.resolve(ref)
	if !ok {
		c.fail(http.StatusNotFound, "No commit found for the ref "+ref)
		return
	}
	p := strings.Trim(c.param("path"), "/")
	typ, blob, data, entries, err := r.gs.pathObject(sha, p)
	if err != nil {
		c.fail(http.StatusInternalServerError, err.Error())
		return
	}
	switch typ {
	case "blob":
		c.json(http.StatusOK, r.contentJSON(p, "file", blob, ref, len(data), data))
	case "tree":
		list := []*github.RepositoryContent{}
		for _, e := range entries {
			kind := map[string]string{"blob": "file", "tree": "dir", "commit": "submodule"}[e.kind]
			list = append(list, r.contentJSON(path.Join(p, e.name), kind, e.sha, ref, e.size, nil))
		}
		c.json(http.StatusOK, list)
	default:
		c.notFound()
	}
}

func (r *Repo) contentJSON(p, kind, sha, ref string, size int, data []byte) *github.RepositoryContent {
	f := r.f
	rc := &github.RepositoryContent{
		Type: github.String(kind), Name: github.String(path.Base(p)), Path: github.String(p),
		SHA: github.String(sha), Size: github.Int(size),
		URL:     github.String(f.api("/repos/" + r.FullName() + "/contents/" + p + "?ref=" + ref)),
		HTMLURL: github.String(f.html("/" + r.FullName() + "/blob/" + ref + "/" + p)),
		GitURL:  github.String(f.api("/repos/" + r.FullName() + "/git/blobs/" + sha)),
	}
	if data != nil {
		rc.Encoding = github.String("base64")
		rc.Content = github.String(wrap76(base64.StdEncoding.EncodeToString(data)))
		rc.DownloadURL = github.String(f.html("/" + r.FullName() + "/raw/" + ref + "/" + p))
	}
	return rc
}

// wrap76 breaks base64 into lines as GitHub's contents API does.
func wrap76(s string) string {
	var b strings.Builder
	for len(s) > 60 {
		b.WriteString(s[:60])
		b.WriteByte('\n')
		s = s[60:]
	}
	b.WriteString(s)
	b.WriteByte('\n')
	return b.String()
}

// --- git references ---

func (r *Repo) refJSON(name, sha string) *github.Reference {
	f := r.f
	typ := r.objectType(sha)
	if typ == "" {
		typ = "commit"
	}
	return &github.Reference{
		Ref:    github.String(name),
		NodeID: github.String("REF_" + strings.ReplaceAll(name, "/", "_")),
		URL:    github.String(f.api("/repos/" + r.FullName() + "/git/" + name)),
		Object: &github.GitObject{
			Type: github.String(typ), SHA: github.String(sha),
			URL: github.String(f.api("/repos/" + r.FullName() + "/git/" + typ + "s/" + sha)),
		},
	}
}

func (f *Fake) getRef(c *rc) {
	name := "refs/" + strings.TrimPrefix(c.param("ref"), "refs/")
	sha, ok := c.repo.ref(name)
	if !ok {
		c.notFound()
		return
	}
	c.json(http.StatusOK, c.repo.refJSON(name, sha))
}

type refRequest struct {
	Ref   *string `json:"ref"`
	SHA   *string `json:"sha"`
	Force *bool   `json:"force"`
}

// validRefName approximates git check-ref-format plus GitHub's rule that
// the name starts with refs/ and has at least two slashes.
func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.Count(name, "/") < 2 || strings.HasSuffix(name, "/") ||
		strings.Contains(name, "..") || strings.Contains(name, "//") || strings.HasSuffix(name, ".lock") ||
		strings.ContainsAny(name, " ~^:?*[\\\x7f") || strings.Contains(name, "@{") {
		return false
	}
	for _, r := range name {
		if r < 0x20 {
			return false
		}
	}
	return true
}

func (f *Fake) createRef(c *rc) {
	var req refRequest
	if !c.decode(&req) {
		return
	}
	if req.Ref == nil || req.SHA == nil {
		c.invalid(fieldError{Resource: "Reference", Field: "ref", Code: "missing_field"})
		return
	}
	name := *req.Ref
	if !validRefName(name) {
		c.fail(http.StatusUnprocessableEntity, "Reference name must start with 'refs/' and have at least two slashes.")
		return
	}
	sha := *req.SHA
	if len(sha) != 40 || c.repo.objectType(sha) == "" {
		c.fail(http.StatusUnprocessableEntity, "Object does not exist")
		return
	}
	if msg := c.refRefusal(name, "", sha); msg != "" {
		c.fail(http.StatusUnprocessableEntity, msg)
		return
	}
	// update-ref with an all-zero old value fails if the ref exists, so a
	// claim is atomic even against concurrent pushes.
	if err := c.repo.updateRef(name, sha, ""); err != nil {
		if _, exists := c.repo.ref(name); exists {
			c.fail(http.StatusUnprocessableEntity, "Reference already exists")
			return
		}
		c.fail(http.StatusUnprocessableEntity, "Reference update failed")
		return
	}
	f.refChanged(c.repo, name, "", sha, c.login)
	c.hdr.Set("Location", f.api("/repos/"+c.repo.FullName()+"/git/"+name))
	c.json(http.StatusCreated, c.repo.refJSON(name, sha))
}

// refRefusal applies protection rules and rulesets to a ref API change of
// name from old to sha ("" for absent): GitHub's 422 message, or "".
func (c *rc) refRefusal(name, old, sha string) string {
	branch, ok := strings.CutPrefix(name, "refs/heads/")
	if !ok {
		return ""
	}
	v := c.repo.checkPush(refUpdate{branch: branch, old: old, new: sha, login: c.login, kind: c.kind, get: c.repo.repoCommits()})
	if !v.any() {
		return ""
	}
	return apiRefusal(name, v)
}

// updateRefAPI serves PATCH /repos/{o}/{r}/git/refs/{ref}: a fast-forward
// unless force is set (422 "Update is not a fast forward" otherwise).
func (f *Fake) updateRefAPI(c *rc) {
	var req refRequest
	if !c.decode(&req) {
		return
	}
	name := "refs/" + strings.TrimPrefix(c.param("ref"), "refs/")
	if req.SHA == nil {
		c.invalid(fieldError{Resource: "Reference", Field: "sha", Code: "missing_field"})
		return
	}
	sha := *req.SHA
	old, ok := c.repo.ref(name)
	if !ok {
		c.fail(http.StatusUnprocessableEntity, "Reference does not exist")
		return
	}
	if len(sha) != 40 || c.repo.objectType(sha) == "" {
		c.fail(http.StatusUnprocessableEntity, "Object does not exist")
		return
	}
	if (req.Force == nil || !*req.Force) && !c.repo.isAncestor(old, sha) {
		c.fail(http.StatusUnprocessableEntity, "Update is not a fast forward")
		return
	}
	if msg := c.refRefusal(name, old, sha); msg != "" {
		c.fail(http.StatusUnprocessableEntity, msg)
		return
	}
	if err := c.repo.updateRef(name, sha, old); err != nil {
		c.fail(http.StatusUnprocessableEntity, "Reference cannot be updated")
		return
	}
	f.refChanged(c.repo, name, old, sha, c.login)
	c.json(http.StatusOK, c.repo.refJSON(name, sha))
}

// --- collaborators, users, apps, rate limit ---

func (f *Fake) getPermission(c *rc) {
	login := c.param("username")
	a, ok := f.users[strings.ToLower(login)]
	if !ok {
		c.fail(http.StatusNotFound, "Not Found")
		return
	}
	role := f.roleOf(c.repo, a.login)
	// "permission" is GitHub's legacy level; role_name is the real role.
	legacy := map[string]string{"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read", "none": "none"}[role]
	u := f.userJSON(a.login)
	u.Permissions = map[string]bool{
		"admin": roleAtLeast(role, "admin"), "maintain": roleAtLeast(role, "maintain"), "push": roleAtLeast(role, "write"),
		"triage": roleAtLeast(role, "triage"), "pull": roleAtLeast(role, "read"),
	}
	u.RoleName = github.String(role)
	c.json(http.StatusOK, &github.RepositoryPermissionLevel{Permission: github.String(legacy), RoleName: github.String(role), User: u})
}

func (f *Fake) appJSON() *github.App {
	owner := "github"
	if len(f.repos) > 0 {
		owner = f.repos[0].owner
	}
	created := &github.Timestamp{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	return &github.App{
		ID: github.Int64(f.opts.AppID), Slug: github.String(f.opts.AppSlug), Name: github.String(f.opts.AppSlug),
		NodeID: nodeID("A", f.opts.AppID), HTMLURL: github.String(f.html("/apps/" + f.opts.AppSlug)),
		Owner: f.userJSON(owner), Description: github.String(""), ExternalURL: github.String(f.html("/apps/" + f.opts.AppSlug)),
		CreatedAt: created, UpdatedAt: created, Permissions: allPermissions(),
		Events: []string{"issues", "issue_comment", "pull_request", "pull_request_review", "push", "workflow_job", "workflow_run", "check_run", "check_suite", "status"},
	}
}

func (f *Fake) getApp(c *rc) { c.json(http.StatusOK, f.appJSON()) }

func (f *Fake) fullInstallationJSON() *github.Installation {
	in := f.installationJSON()
	in.AppID = github.Int64(f.opts.AppID)
	in.AppSlug = github.String(f.opts.AppSlug)
	in.TargetType = github.String("Organization")
	in.RepositorySelection = github.String("all")
	in.AccessTokensURL = github.String(f.api("/app/installations/" + strconv.FormatInt(f.opts.InstallationID, 10) + "/access_tokens"))
	in.Events = f.appJSON().Events
	in.Permissions = allPermissions()
	in.RepositoriesURL = github.String(f.api("/installation/repositories"))
	created := &github.Timestamp{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
	in.CreatedAt, in.UpdatedAt = created, created
	owner := ""
	if len(f.repos) > 0 {
		owner = f.repos[0].owner
	}
	if owner != "" {
		in.Account = f.userJSON(owner)
		in.TargetID = in.Account.ID
	}
	// As GitHub links an organization's installation settings.
	in.HTMLURL = github.String(f.html("/organizations/" + owner + "/settings/installations/" + strconv.FormatInt(f.opts.InstallationID, 10)))
	return in
}

func allPermissions() *github.InstallationPermissions {
	w := github.String("write")
	return &github.InstallationPermissions{
		Actions: w, Contents: w, Issues: w, PullRequests: w, Metadata: github.String("read"), Workflows: w,
	}
}

func (f *Fake) listInstallations(c *rc) {
	c.json(http.StatusOK, []*github.Installation{f.fullInstallationJSON()})
}

type tokenRequest struct {
	Permissions   map[string]string `json:"permissions"`
	Repositories  []string          `json:"repositories"`
	RepositoryIDs []int64           `json:"repository_ids"`
}

func (f *Fake) createInstallationToken(c *rc) {
	id, ok := c.intParam("installation_id")
	if !ok {
		return
	}
	if id != f.opts.InstallationID {
		c.notFound()
		return
	}
	var req tokenRequest
	if !c.decode(&req) {
		return
	}
	n := f.id("token")
	tok := &token{
		value: fmt.Sprintf("ghs_%036d", n), login: f.BotLogin(), kind: Bot,
		expires: f.now().Add(time.Hour).Truncate(time.Second), install: true,
	}
	if !f.narrowToken(c, req, tok) {
		return
	}
	f.tokens[tok.value] = tok
	perms := allPermissions()
	if tok.perms != nil {
		perms = &github.InstallationPermissions{}
		for k, v := range tok.perms {
			v := v
			switch k {
			case "actions":
				perms.Actions = &v
			case "contents":
				perms.Contents = &v
			case "issues":
				perms.Issues = &v
			case "pull_requests":
				perms.PullRequests = &v
			case "metadata":
				perms.Metadata = &v
			case "workflows":
				perms.Workflows = &v
			}
		}
	}
	c.json(http.StatusCreated, &github.InstallationToken{Token: github.String(tok.value), ExpiresAt: ts(tok.expires), Permissions: perms,
		Repositories: f.tokenRepos(tok)})
}

// commitMeta is what GitHub's commit objects show of a commit: its tree,
// parents, author, committer and message.
type commitMeta struct {
	tree, message              string
	parents                    []string
	authorName, authorEmail    string
	committerName, committerEm string
	authored, committed        string // RFC 3339
}

// commitMetaOf reads a commit once (commits never change); the zero value
// when git cannot read it. Caller holds f.mu.
func (r *Repo) commitMetaOf(sha string) commitMeta {
	if m, ok := r.commitMetas[sha]; ok {
		return m
	}
	out, err := r.git("show", "-s", "--format=%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B", sha)
	if err != nil {
		return commitMeta{}
	}
	p := strings.SplitN(out, "\x00", 9)
	if len(p) < 9 {
		return commitMeta{}
	}
	m := commitMeta{tree: p[0], parents: strings.Fields(p[1]), authorName: p[2], authorEmail: p[3], authored: p[4],
		committerName: p[5], committerEm: p[6], committed: p[7], message: strings.TrimRight(p[8], "\n")}
	if r.commitMetas == nil {
		r.commitMetas = map[string]commitMeta{}
	}
	r.commitMetas[sha] = m
	return m
}

// commitObject renders a commit as GitHub's "commit" schema (Get a branch's
// commit). author and committer are the GitHub accounts of the commit's
// emails: null here, as GitHub answers for an email no account has.
func (r *Repo) commitObject(sha string) map[string]any {
	f, m := r.f, r.commitMetaOf(sha)
	parents := []any{}
	for _, p := range m.parents {
		parents = append(parents, map[string]any{"sha": p, "url": f.api("/repos/" + r.FullName() + "/commits/" + p),
			"html_url": f.html("/" + r.FullName() + "/commit/" + p)})
	}
	return map[string]any{
		"sha": sha, "node_id": "C_" + sha,
		"url":          f.api("/repos/" + r.FullName() + "/commits/" + sha),
		"html_url":     f.html("/" + r.FullName() + "/commit/" + sha),
		"comments_url": f.api("/repos/" + r.FullName() + "/commits/" + sha + "/comments"),
		"commit": map[string]any{
			"author":        map[string]any{"name": m.authorName, "email": m.authorEmail, "date": m.authored},
			"committer":     map[string]any{"name": m.committerName, "email": m.committerEm, "date": m.committed},
			"message":       m.message,
			"tree":          map[string]any{"sha": m.tree, "url": f.api("/repos/" + r.FullName() + "/git/trees/" + m.tree)},
			"url":           f.api("/repos/" + r.FullName() + "/git/commits/" + sha),
			"comment_count": 0,
		},
		"author": nil, "committer": nil,
		"parents": parents,
	}
}
