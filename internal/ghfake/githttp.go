package ghfake

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/go-git/go-git/v5/storage/transactional"
)

// gitPath recognises git smart HTTP paths: /{owner}/{repo}.git/... (and
// /{owner}/{repo}/info/refs etc., which GitHub also accepts).
func gitPath(p string) (string, string, bool) {
	segs := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 3)
	if len(segs) < 3 || segs[0] == "api" || segs[0] == "repos" {
		return "", "", false
	}
	rest := segs[2]
	gitRest := rest == "info/refs" || rest == "git-upload-pack" || rest == "git-receive-pack" || rest == "HEAD" ||
		strings.HasPrefix(rest, "objects/")
	if strings.HasSuffix(segs[1], ".git") || gitRest {
		if !gitRest {
			return "", "", false
		}
		return segs[0], strings.TrimSuffix(segs[1], ".git"), true
	}
	return "", "", false
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// serveGit serves git smart HTTP through git http-backend (CGI), with
// GitHub's authentication (basic auth, the password being a token) and
// protected branches enforced in front of it.
func (f *Fake) serveGit(w http.ResponseWriter, req *http.Request) {
	owner, name, _ := gitPath(req.URL.Path)
	rest := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/"), "/", 3)[2]
	service := "git-upload-pack"
	if rest == "git-receive-pack" || req.URL.Query().Get("service") == "git-receive-pack" {
		service = "git-receive-pack"
	}
	call := Call{Git: true, Method: req.Method, Path: req.URL.Path, Query: req.URL.RawQuery, Route: req.Method + " /{owner}/{repo}.git/" + rest}
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		call.Status = sw.status
		call.Applied = sw.status > 0 && sw.status < 400
		f.record(call)
	}()

	if f.opts.FaultsCountGit {
		f.mu.Lock()
		f.callN++
		ft, ok := f.pickFault(f.callN, call.Route)
		f.mu.Unlock()
		if ok {
			call.Fault = ft.Kind
			sw.status = f.writeFault(sw, req, ft, nil)
			return
		}
	}

	f.mu.Lock()
	r := f.lookupRepo(owner + "/" + name)
	if r == nil {
		// A former name: GitHub redirects git's first request to the
		// repository, and git (http.followRedirects=initial) follows.
		r = f.formerNames[strings.ToLower(owner+"/"+name)]
	}
	login, tok, authErr := f.gitAuth(req)
	call.Login = login
	if tok != nil {
		call.Kind = tok.kind
	}
	var denied string
	if r != nil && authErr == "" {
		denied = f.gitDenied(r, tok, service)
	}
	f.mu.Unlock()

	switch {
	case authErr != "":
		sw.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
		http.Error(sw, authErr, http.StatusUnauthorized)
		return
	case r == nil:
		http.Error(sw, "Repository not found.", http.StatusNotFound)
		return
	case denied != "":
		http.Error(sw, denied, http.StatusForbidden)
		return
	}

	// http-backend (through net/http/cgi) needs a Content-Length, so read
	// the body; decompress it so that receive-pack commands can be read.
	var body []byte
	if req.Method == http.MethodPost {
		var rd io.Reader = io.LimitReader(req.Body, 2<<30)
		if strings.EqualFold(req.Header.Get("Content-Encoding"), "gzip") {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(sw, "bad gzip body", http.StatusBadRequest)
				return
			}
			rd = zr
		}
		var err error
		if body, err = io.ReadAll(rd); err != nil {
			http.Error(sw, "reading body: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	canon := req.Clone(req.Context())
	// The repository's directory (its name when created: a rename keeps it).
	rel, err := filepath.Rel(filepath.Join(f.dir, "repos"), r.path)
	if err != nil {
		http.Error(sw, "ghfake: "+err.Error(), http.StatusInternalServerError)
		return
	}
	canon.URL.Path = "/" + filepath.ToSlash(rel) + "/" + rest
	canon.Header.Del("Content-Encoding")
	canon.TransferEncoding = nil
	canon.Body = io.NopCloser(bytes.NewReader(body))
	canon.ContentLength = int64(len(body))

	if req.Method != http.MethodPost || service != "git-receive-pack" {
		f.cgi(login).ServeHTTP(sw, canon)
		return
	}

	cmds, caps := parseReceiveCommands(body)
	f.mu.Lock()
	var kind AccountType
	if tok != nil {
		kind = tok.kind
	}
	ref, v := f.decidePush(r, cmds, body, login, kind)
	var lines []string
	var reason string
	if v.any() {
		lines, reason = r.gitRefusal(ref, v)
	} else if file := r.workflowChange(cmds, body, tok); file != "" {
		// GitHub refuses a push that creates or updates a workflow file
		// unless the token has the workflows permission (an App's
		// installation token) or scope (OAuth, PAT); a workflow's
		// GITHUB_TOKEN never has it.
		reason = "refusing to allow a GitHub App to create or update workflow `" + file + "` without `workflows` permission"
		lines = []string{"error: " + reason}
	}
	f.mu.Unlock()
	if reason != "" {
		writeRefusal(sw, cmds, caps, lines, reason)
		return
	}
	rec := httptest.NewRecorder()
	f.cgi(login).ServeHTTP(rec, canon)
	if rec.Code == http.StatusOK {
		f.mu.Lock()
		for _, c := range cmds {
			cur, ok := r.ref(c.ref)
			deleted := c.new == zeroSHA && !ok
			if deleted || (ok && cur == c.new) {
				f.refChanged(r, c.ref, strings.TrimPrefix(c.old, zeroSHA), strings.TrimPrefix(c.new, zeroSHA), login)
			}
		}
		f.mu.Unlock()
		f.afterChange()
	}
	for k, v := range rec.Header() {
		sw.Header()[k] = v
	}
	sw.WriteHeader(rec.Code)
	_, _ = sw.Write(rec.Body.Bytes())
}

// gitAuth resolves HTTP basic auth (any user name, a token as password) or
// a token/bearer header. Caller holds f.mu.
func (f *Fake) gitAuth(req *http.Request) (string, *token, string) {
	val := ""
	if _, pw, ok := req.BasicAuth(); ok {
		val = pw
	} else if h := req.Header.Get("Authorization"); h != "" {
		scheme, v, _ := strings.Cut(h, " ")
		if strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "token") {
			val = strings.TrimSpace(v)
		}
	}
	if val == "" {
		return "", nil, "Authentication required"
	}
	t, ok := f.tokens[val]
	if !ok || (!t.expires.IsZero() && !f.now().Before(t.expires)) {
		return "", nil, "Invalid username or token. Password authentication is not supported for Git operations."
	}
	return t.login, t, ""
}

// gitDenied checks the token's access for a git service; "" means allowed.
// Caller holds f.mu.
func (f *Fake) gitDenied(r *Repo, t *token, service string) string {
	level, role := "read", "read"
	if service == "git-receive-pack" {
		level, role = "write", "write"
	}
	msg := fmt.Sprintf("Permission to %s.git denied to %s.", r.FullName(), t.login)
	if !t.reaches(r) && (r.settings.Private || level == "write") {
		if r.settings.Private {
			return "Repository not found."
		}
		return msg
	}
	if t.perms != nil && !tokenAllows(t.perms, "contents="+level) {
		return msg
	}
	if t.kind == User && !roleAtLeast(f.roleOf(r, t.login), role) {
		return msg
	}
	return ""
}

func (f *Fake) cgi(login string) http.Handler {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "ghfake: git not found: "+err.Error(), http.StatusInternalServerError)
		})
	}
	return &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Root: "/",
		Dir:  f.dir,
		Env: append(f.gitEnv(),
			"GIT_PROJECT_ROOT="+filepath.Join(f.dir, "repos"),
			"GIT_HTTP_EXPORT_ALL=1",
			"REMOTE_USER="+login,
		),
		Stderr: logWriter{f},
	}
}

type logWriter struct{ f *Fake }

func (l logWriter) Write(b []byte) (int, error) {
	l.f.logf("ghfake: git http-backend: %s", bytes.TrimSpace(b))
	return len(b), nil
}

type receiveCommand struct{ old, new, ref string }

// parseReceiveCommands reads the pkt-line command list at the start of a
// receive-pack request and the client's capabilities.
func parseReceiveCommands(body []byte) ([]receiveCommand, string) {
	var cmds []receiveCommand
	caps := ""
	for len(body) >= 4 {
		var n int
		if _, err := fmt.Sscanf(string(body[:4]), "%04x", &n); err != nil {
			break
		}
		if n == 0 || n < 4 || n > len(body) {
			break // flush: the pack follows
		}
		line := string(body[4:n])
		body = body[n:]
		line = strings.TrimSuffix(line, "\n")
		if l, c, ok := strings.Cut(line, "\x00"); ok {
			line, caps = l, c
		}
		fl := strings.Fields(line)
		if len(fl) == 3 {
			cmds = append(cmds, receiveCommand{old: fl[0], new: fl[1], ref: fl[2]})
		}
	}
	return cmds, caps
}

// packOffset finds the pack in a receive-pack request: after the command
// list's flush (and any push options), or -1.
func packOffset(body []byte) int {
	off := 0
	for off+4 <= len(body) {
		var n int
		if _, err := fmt.Sscanf(string(body[off:off+4]), "%04x", &n); err != nil {
			return -1
		}
		if n == 0 {
			off += 4
			break
		}
		if n < 4 || off+n > len(body) {
			return -1
		}
		off += n
	}
	i := bytes.Index(body[off:], []byte("PACK"))
	if i < 0 {
		return -1
	}
	return off + i
}

func pktLine(s string) string { return fmt.Sprintf("%04x%s", len(s)+4, s) }

// decidePush applies the repository's protection rules and rulesets to a
// push: the first refused branch and why (GitHub's pre-receive hook refuses
// the whole push). The pushed pack is read (without storing it) only when a
// rule needs the new commits. Caller holds f.mu.
func (f *Fake) decidePush(r *Repo, cmds []receiveCommand, body []byte, login string, kind AccountType) (string, violations) {
	var get commitGetter
	for _, c := range cmds {
		branch, ok := strings.CutPrefix(c.ref, "refs/heads/")
		if !ok || (r.protectionFor(branch) == nil && len(r.rulesetsFor(branch)) == 0) {
			continue
		}
		if get == nil {
			get = r.pushCommits(body)
		}
		u := refUpdate{branch: branch, old: strings.TrimPrefix(c.old, zeroSHA), new: strings.TrimPrefix(c.new, zeroSHA),
			login: login, kind: kind, get: get}
		if v := r.checkPush(u); v.any() {
			return c.ref, v
		}
	}
	return "", violations{}
}

// pushCommits reads commits from the repository and the pack a push
// carries, without writing the pack anywhere (git's quarantine, in
// effect).
// The pack is parsed on the first read, so rules that need no commits cost
// nothing.
func (r *Repo) pushCommits(body []byte) commitGetter {
	base := r.repoCommits()
	i := packOffset(body)
	if i < 0 {
		return base
	}
	var tx storage.Storer
	parsed := false
	return func(h plumbing.Hash) (*object.Commit, error) {
		r.gs.mu.Lock()
		defer r.gs.mu.Unlock()
		if !parsed {
			parsed = true
			st := transactional.NewStorage(r.gs.st, memory.NewStorage())
			if err := packfile.UpdateObjectStorage(st, bytes.NewReader(body[i:])); err != nil {
				r.f.logf("ghfake: reading pushed pack: %v", err)
			} else {
				tx = st
			}
		}
		if tx == nil {
			return r.gs.commit(h)
		}
		return object.GetCommit(tx, h)
	}
}

// writeRefusal answers a refused push the way GitHub's pre-receive hook
// does: every ref refused (the hook is all-or-nothing) with reason, and the
// hook's lines (GH006 or GH013) on the progress channel when the client
// asked for side-band.
func writeRefusal(w http.ResponseWriter, cmds []receiveCommand, caps string, lines []string, reason string) {
	var report strings.Builder
	report.WriteString(pktLine("unpack ok\n"))
	for _, c := range cmds {
		report.WriteString(pktLine("ng " + c.ref + " " + reason + "\n"))
	}
	report.WriteString("0000")
	w.Header().Set("Content-Type", "application/x-git-receive-pack-result")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	capList := " " + caps + " "
	if !strings.Contains(capList, " side-band-64k ") && !strings.Contains(capList, " side-band ") {
		_, _ = io.WriteString(w, report.String())
		return
	}
	var out strings.Builder
	for _, l := range lines {
		out.WriteString(pktLine("\x02" + l + "\n"))
	}
	out.WriteString(pktLine("\x01" + report.String()))
	out.WriteString("0000")
	_, _ = io.WriteString(w, out.String())
}

// workflowChange returns a workflow file (.github/workflows/…) that the
// push's new commits create, change or delete when the token may not
// (an App or GITHUB_TOKEN without workflows: write), else "". Caller holds
// f.mu.
func (r *Repo) workflowChange(cmds []receiveCommand, body []byte, t *token) string {
	if t == nil || t.kind == User {
		return ""
	}
	if !strings.EqualFold(t.login, ActionsLogin) && (t.perms == nil || tokenAllows(t.perms, "workflows=write")) {
		return ""
	}
	get := r.pushCommits(body)
	known := r.repoCommits()
	for _, c := range cmds {
		if c.new == zeroSHA {
			continue
		}
		seen := map[plumbing.Hash]bool{}
		queue := []plumbing.Hash{plumbing.NewHash(c.new)}
		for len(queue) > 0 && len(seen) < 10000 {
			h := queue[0]
			queue = queue[1:]
			if seen[h] {
				continue
			}
			seen[h] = true
			if _, err := known(h); err == nil {
				continue // already in the repository: not this push's
			}
			cm, err := get(h)
			if err != nil {
				continue
			}
			if file := workflowFileChanged(cm); file != "" {
				return file
			}
			queue = append(queue, cm.ParentHashes...)
		}
	}
	return ""
}

// workflowFileChanged is a workflow file cm changes against its first
// parent (or adds, for a root commit), or "".
func workflowFileChanged(cm *object.Commit) string {
	tree, err := cm.Tree()
	if err != nil {
		return ""
	}
	var parent *object.Tree
	if cm.NumParents() > 0 {
		if p, err := cm.Parent(0); err == nil {
			parent, _ = p.Tree()
		}
	}
	changes, err := object.DiffTree(parent, tree)
	if err != nil {
		return ""
	}
	for _, ch := range changes {
		for _, name := range []string{ch.From.Name, ch.To.Name} {
			if strings.HasPrefix(name, ".github/workflows/") {
				return name
			}
		}
	}
	return ""
}
