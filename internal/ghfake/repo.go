package ghfake

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

const zeroSHA = "0000000000000000000000000000000000000000"

// Repo is a repository of the fake, backed by a real bare git repository.
// Its exported methods are test helpers; they are safe for concurrent use.
type Repo struct {
	f             *Fake
	id            int64
	owner, name   string
	defaultBranch string
	path          string
	gs            *store // go-git on path

	issues    []*issue // issues and pull requests, by number-1
	labels    []*label
	comments  map[int64]*comment
	workflows map[string]*workflow
	// actionsHeads are the commits a GITHUB_TOKEN pushed: GitHub starts no
	// workflow for check_suite events on them.
	actionsHeads map[string]bool
	runs         []*run
	actions      actionsState // concurrency groups, Actions settings (jobs.go)

	// Settings, rules, checks and mergeability (settings.go, protection.go,
	// checks.go, pulls.go).
	settings     RepoSettings
	protections  map[string]*Protection // classic, by branch pattern
	rulesets     []*Ruleset
	checkRuns    []*checkRun
	suites       []*checkSuite
	statuses     []*commitStatus
	mergeability map[int]*mergeCache   // by pull request number
	diffStats    map[string]diffStat   // by "head..base" (pulls.go fullPR)
	commitMetas  map[string]commitMeta // by sha (gitdata.go commitMetaOf)
	ci           []CI
	// renamedBranches maps a renamed branch's former name to its current
	// one (branches.go); GET …/branches/{former} answers 301.
	renamedBranches map[string]string
	// created is when the repository was created (created_at).
	created time.Time
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// CreateRepo creates an empty repository (no commits, like a new GitHub
// repository created without a README) owned by owner.
func (f *Fake) CreateRepo(owner, name, defaultBranch string) (*Repo, error) {
	return f.createRepo(owner, name, defaultBranch, "")
}

// CreateRepoFrom creates a repository whose default branch has one commit
// with the files of dir (its .git directory, if any, is ignored).
func (f *Fake) CreateRepoFrom(owner, name, defaultBranch, dir string) (*Repo, error) {
	if dir == "" {
		return nil, errors.New("ghfake: CreateRepoFrom: empty directory")
	}
	return f.createRepo(owner, name, defaultBranch, dir)
}

func (f *Fake) createRepo(owner, name, defaultBranch, seed string) (*Repo, error) {
	if !nameRE.MatchString(owner) || !nameRE.MatchString(name) || strings.HasSuffix(name, ".git") {
		return nil, fmt.Errorf("ghfake: invalid repository name %q", owner+"/"+name)
	}
	if defaultBranch == "" {
		defaultBranch = "main"
	}
	f.mu.Lock()
	if f.lookupRepo(owner+"/"+name) != nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("ghfake: repository %s/%s already exists", owner, name)
	}
	r := &Repo{
		f: f, id: f.id("repo"), owner: owner, name: name, defaultBranch: defaultBranch,
		path:     filepath.Join(f.dir, "repos", owner, name+".git"),
		comments: map[int64]*comment{}, workflows: map[string]*workflow{}, actionsHeads: map[string]bool{},
		settings: DefaultSettings(), protections: map[string]*Protection{}, mergeability: map[int]*mergeCache{},
		created: f.now(),
	}
	f.account(owner, "")
	// Reserve the name before the (slow) git work; the repository is
	// published only once it exists on disk.
	f.repoByName[strings.ToLower(owner+"/"+name)] = r
	f.mu.Unlock()

	err := r.initDisk(seed)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		delete(f.repoByName, strings.ToLower(owner+"/"+name))
		return nil, err
	}
	f.repos = append(f.repos, r)
	if f.defRepo == nil {
		f.defRepo = r
	}
	return r, nil
}

func (r *Repo) initDisk(seed string) error {
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return fmt.Errorf("ghfake: %w", err)
	}
	// go-git makes the bare repository (git init --bare would be a
	// process per repository); git's http-backend serves it as any other.
	repo, err := gogit.PlainInitWithOptions(r.path, &gogit.PlainInitOptions{
		Bare: true, InitOptions: gogit.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(r.defaultBranch)},
	})
	if err != nil {
		return fmt.Errorf("ghfake: init %s: %w", r.path, err)
	}
	cfg, err := repo.Config()
	if err != nil {
		return fmt.Errorf("ghfake: init %s: %w", r.path, err)
	}
	for _, kv := range [][3]string{
		{"http", "receivepack", "true"}, // pushes are authorised by the fake, not by http-backend
		{"receive", "autogc", "false"},  // keep pushes fast and deterministic
		{"gc", "auto", "0"},
		{"uploadpack", "allowReachableSHA1InWant", "true"},
		{"uploadpack", "allowAnySHA1InWant", "true"},
	} {
		cfg.Raw.Section(kv[0]).SetOption(kv[1], kv[2])
	}
	if err := repo.SetConfig(cfg); err != nil {
		return fmt.Errorf("ghfake: init %s: %w", r.path, err)
	}
	r.gs = newStore(r.path)
	if seed == "" {
		return nil
	}
	idx := filepath.Join(r.f.dir, fmt.Sprintf("index-%d", r.id))
	defer os.Remove(idx)
	env := []string{"GIT_INDEX_FILE=" + idx}
	if _, err := r.f.git(r.path, nil, env, "--work-tree="+seed, "add", "--all", "--force", "."); err != nil {
		return err
	}
	tree, err := r.f.git(r.path, nil, env, "write-tree")
	if err != nil {
		return err
	}
	sha, err := r.commitTree(tree, nil, "Initial commit", r.owner)
	if err != nil {
		return err
	}
	return r.updateRef("refs/heads/"+r.defaultBranch, sha, "")
}

// FullName is "owner/name".
func (r *Repo) FullName() string { return r.owner + "/" + r.name }

// Owner is the owner's login.
func (r *Repo) Owner() string { return r.owner }

// Name is the repository name.
func (r *Repo) Name() string { return r.name }

// DefaultBranch is the default branch's name.
func (r *Repo) DefaultBranch() string { return r.defaultBranch }

// Path is the bare repository's directory, for inspection with git.
func (r *Repo) Path() string { return r.path }

// CloneURL is the HTTP clone URL (git smart HTTP on the fake).
func (r *Repo) CloneURL() string { return r.f.srv.URL + "/" + r.FullName() + ".git" }

// ProtectBranch refuses every push (and ref API update) to branch with
// GitHub's protected branch error, admins included; merges through the pull
// request API are still allowed. It is Protect(branch, Protection{RequirePR:
// true, EnforceAdmins: true}) where the plan allows protection.
func (r *Repo) ProtectBranch(branch string) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.protections[branch] = &Protection{RequirePR: true, EnforceAdmins: true}
}

// ProtectBranch is Repo.ProtectBranch on the repository "owner/name".
func (f *Fake) ProtectBranch(repo, branch string) error {
	r := f.Repo(repo)
	if r == nil {
		return fmt.Errorf("repository %s: %w", repo, ErrNotFound)
	}
	r.ProtectBranch(branch)
	return nil
}

// protectedBranch reports whether branch has a classic rule or an active
// ruleset, as a branch's "protected" field does. Caller holds f.mu.
func (r *Repo) protectedBranch(branch string) bool {
	return r.protectionFor(branch) != nil || len(r.rulesetsFor(branch)) > 0
}

// --- git plumbing ---

// git runs git in dir (the bare repository if dir is empty and args
// address one) with a clean, deterministic environment.
func (f *Fake) git(dir string, stdin []byte, env []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if dir == "" {
		cmd.Dir = f.dir
	}
	cmd.Env = append(f.gitEnv(), env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(out.String()), fmt.Errorf("ghfake: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// gitEnv is a minimal environment: no user or system configuration, no
// inherited GIT_DIR, no prompts.
func (f *Fake) gitEnv() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + f.dir,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"LC_ALL=C",
		"TMPDIR=" + os.TempDir(),
	}
}

func (r *Repo) git(args ...string) (string, error) {
	return r.f.git(r.path, nil, nil, args...)
}

// resolve returns the commit a revision names (rev-parse --verify
// rev^{commit}); go-git answers full names and refs, git the rest.
func (r *Repo) resolve(rev string) (string, bool) {
	if sha, ok, handled := r.gs.resolveCommit(rev); handled {
		return sha, ok
	}
	out, err := r.git("rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil || out == "" {
		return "", false
	}
	return out, true
}

// objectType is the type of an object ("commit", "tree", …) or "".
func (r *Repo) objectType(sha string) string { return r.gs.typeOf(sha) }

// refs returns every ref and its value.
func (r *Repo) refs() (map[string]string, error) { return r.gs.refs() }

// heads returns the branches (refs/heads/*) and their values.
func (r *Repo) heads() (map[string]string, error) { return r.gs.refsUnder("refs/heads/") }

// ref returns a ref's value (exact name, e.g. "refs/heads/main").
func (r *Repo) ref(name string) (string, bool) {
	if !strings.HasPrefix(name, "refs/") {
		return "", false
	}
	return r.gs.ref(name)
}

// updateRef sets ref to sha if it currently is old ("" = must not exist),
// atomically.
func (r *Repo) updateRef(ref, sha, old string) error {
	if old == "" {
		old = zeroSHA
	}
	return r.gs.updateRef(ref, sha, old)
}

// isAncestor reports whether commit a is reachable from commit b.
func (r *Repo) isAncestor(a, b string) bool { return r.gs.isAncestor(a, b) }

// commitTree creates a commit as login (authored and committed now).
func (r *Repo) commitTree(tree string, parents []string, msg, login string) (string, error) {
	return r.commitTreeAs(tree, parents, msg, login, login)
}

func (r *Repo) commitTreeAs(tree string, parents []string, msg, author, committer string) (string, error) {
	// Seconds, in UTC, as GIT_*_DATE=RFC3339 gave git.
	when := r.f.now().UTC().Truncate(time.Second)
	return r.gs.commitTree(tree, parents, msg,
		object.Signature{Name: author, Email: noreply(author), When: when},
		object.Signature{Name: committer, Email: noreply(committer), When: when})
}

func noreply(login string) string {
	if login == "GitHub" {
		return "noreply@github.com"
	}
	return login + "@users.noreply.github.com"
}

// mergeTree merges head into base without a worktree and returns the
// resulting tree, or conflict=true.
func (r *Repo) mergeTree(base, head string) (tree string, conflict bool, err error) {
	out, err := r.git("merge-tree", "--write-tree", "--no-messages", base, head)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", true, nil
		}
		return "", false, err
	}
	tree, _, _ = strings.Cut(out, "\n")
	return tree, false, nil
}

// commitFiles writes a commit with files changed on top of parent ("" for a
// root commit) and returns it.
func (r *Repo) commitFiles(parent string, files map[string]string, msg, login string) (string, error) {
	tree, err := r.gs.treeWithFiles(parent, files)
	if err != nil {
		return "", err
	}
	var parents []string
	if parent != "" {
		parents = []string{parent}
	}
	return r.commitTree(tree, parents, msg, login)
}

// Push commits files (path -> content) on top of branch as user and
// updates the branch as a push would, with the same effects (push webhook,
// pull request synchronize, pull requests merged by the push). A missing
// branch starts from the default branch (or a root commit in an empty
// repository). It returns the new commit.
func (r *Repo) Push(user, branch string, files map[string]string, message string) (string, error) {
	ref := "refs/heads/" + branch
	old, _ := r.ref(ref)
	parent := old
	if parent == "" {
		parent, _ = r.ref("refs/heads/" + r.defaultBranch)
	}
	sha, err := r.commitFiles(parent, files, message, user)
	if err != nil {
		return "", err
	}
	if err := r.updateRef(ref, sha, old); err != nil {
		return "", err
	}
	r.f.mu.Lock()
	r.f.account(user, "")
	r.f.refChanged(r, ref, old, sha, user)
	r.f.mu.Unlock()
	r.f.afterChange()
	return sha, nil
}

// ForcePush commits files on top of onto (a revision: "main", a sha,
// "<sha>^") as user and moves branch to that commit whatever it held — a
// `git push --force` that rewrites the branch (an amended or rebased head) —
// with a push's effects (push webhook with forced set, pull request
// synchronize). GitHub lets a writer force-push any branch that no rule
// protects; bazinga's group branches have none. It returns the new commit.
func (r *Repo) ForcePush(user, branch, onto string, files map[string]string, message string) (string, error) {
	parent, ok := r.resolve(onto)
	if !ok {
		return "", fmt.Errorf("ghfake: force-push %s: %q names no commit: %w", branch, onto, ErrNotFound)
	}
	ref := "refs/heads/" + branch
	old, _ := r.ref(ref)
	sha, err := r.commitFiles(parent, files, message, user)
	if err != nil {
		return "", err
	}
	if err := r.updateRef(ref, sha, old); err != nil {
		return "", err
	}
	r.f.mu.Lock()
	r.f.account(user, "")
	r.f.refChanged(r, ref, old, sha, user)
	r.f.mu.Unlock()
	r.f.afterChange()
	return sha, nil
}

// Ref returns a ref's commit ("refs/heads/main", "refs/bazinga/claims/x").
func (r *Repo) Ref(name string) (string, bool) { return r.ref(name) }

// Refs returns every ref name, sorted.
func (r *Repo) Refs() []string {
	m, err := r.refs()
	if err != nil {
		return nil
	}
	return sortedKeys(m)
}

// ReadFile returns a file's content at a revision.
func (r *Repo) ReadFile(rev, path string) ([]byte, error) {
	// go-git when rev names a commit; git for the rest (a tree's name,
	// revision syntax).
	if sha, ok, handled := r.gs.resolveCommit(rev); handled && (ok || !hexRE.MatchString(rev)) {
		if ok {
			if data, ok := r.gs.readFile(sha, path); ok {
				return data, nil
			}
		}
		return nil, fmt.Errorf("%s:%s: %w", rev, path, ErrNotFound)
	}
	out, err := r.f.gitRaw(r.path, "cat-file", "blob", rev+":"+path)
	if err != nil {
		return nil, fmt.Errorf("%s:%s: %w", rev, path, ErrNotFound)
	}
	return out, nil
}

// gitRaw runs git and returns its raw stdout (for file contents).
func (f *Fake) gitRaw(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = f.gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ghfake: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// Ref returns a ref of the repository "owner/name" (see Repo.Ref).
func (f *Fake) Ref(repo, name string) (string, bool) {
	r := f.Repo(repo)
	if r == nil {
		return "", false
	}
	return r.ref(name)
}
