package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
)

var (
	// ErrBranchNotFound: a branch that must exist does not.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrDirtyWorkingCopy: an operation needs a clean working copy.
	ErrDirtyWorkingCopy = errors.New("working copy has uncommitted changes")
	// ErrWorkflowChange: a push would change .github/workflows/ and the
	// configuration does not allow it.
	ErrWorkflowChange = errors.New("changes under .github/workflows/ are not allowed")
	// ErrNothingToCommit: the working copy has no changes.
	ErrNothingToCommit = errors.New("nothing to commit")
)

// WorkflowDir is the directory agents may not change unless allowed.
const WorkflowDir = ".github/workflows/"

// Identity is a commit author or committer.
type Identity struct {
	Name  string
	Email string
}

// BotIdentity is the committer of every commit bazinga makes.
var BotIdentity = Identity{Name: "bazinga[bot]", Email: "bazinga[bot]@users.noreply.github.com"}

func (id Identity) signature(when time.Time) *object.Signature {
	return &object.Signature{Name: id.Name, Email: id.Email, When: when}
}

// Remote says where a repository lives and how to authenticate. URL is a
// local path or file:// URL, or an https URL used with Token. The token
// only ever travels in memory as HTTP basic auth for user
// "x-access-token"; it is never put in a URL, a config file or a log.
type Remote struct {
	URL   string
	Token string
}

// String hides the token.
func (r Remote) String() string { return redactURL(r.URL) }

func (r Remote) auth() transport.AuthMethod {
	if r.Token == "" {
		return nil
	}
	return &http.BasicAuth{Username: "x-access-token", Password: r.Token}
}

var urlUserinfo = regexp.MustCompile(`://[^/@]*@`)

// redactURL removes credentials embedded in a URL.
func redactURL(u string) string { return urlUserinfo.ReplaceAllString(u, "://***@") }

// redactErr makes sure an error text does not carry the token.
func (r Remote) redactErr(err error) error {
	if err == nil || r.Token == "" || !strings.Contains(err.Error(), r.Token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), r.Token, "***"))
}

var branchPart = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// BranchName is the branch of a task group: bazinga/<session>-<group>.
func BranchName(session, group string) string {
	clean := func(s string) string { return strings.Trim(branchPart.ReplaceAllString(s, "-"), "-.") }
	return "bazinga/" + clean(session) + "-" + clean(group)
}

// Open opens the repository at dir (a working copy or a bare repository).
func Open(dir string) (*git.Repository, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("opening repository %s: %w", dir, err)
	}
	return repo, nil
}

// CloneOptions choose what to clone.
type CloneOptions struct {
	// Branch to check out; empty means the remote's default branch.
	Branch string
	// Shallow clones only the tip commit of Branch (enough to run tests
	// or read files; not enough to merge).
	Shallow bool
	// NoCheckout leaves the working copy empty.
	NoCheckout bool
}

// Clone clones remote into dir (which must not exist or be empty).
func Clone(ctx context.Context, remote Remote, dir string, opts CloneOptions) (*git.Repository, error) {
	co := &git.CloneOptions{URL: remote.URL, Auth: remote.auth(), NoCheckout: opts.NoCheckout, Tags: git.NoTags}
	if opts.Branch != "" {
		co.ReferenceName = plumbing.NewBranchReferenceName(opts.Branch)
		co.SingleBranch = opts.Shallow
	}
	if opts.Shallow {
		co.Depth = 1
	}
	repo, err := git.PlainCloneContext(ctx, dir, false, co)
	if err != nil {
		_ = os.RemoveAll(dir)
		if errors.Is(err, plumbing.ErrReferenceNotFound) || strings.Contains(err.Error(), "couldn't find remote ref") {
			return nil, fmt.Errorf("cloning %s branch %q: %w", remote, opts.Branch, ErrBranchNotFound)
		}
		return nil, fmt.Errorf("cloning %s: %w", remote, remote.redactErr(err))
	}
	return repo, nil
}

// remoteRefs lists the branches of a remote.
func remoteRefs(ctx context.Context, remote Remote) (map[string]plumbing.Hash, error) {
	rem := git.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{remote.URL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: remote.auth()})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return map[string]plumbing.Hash{}, nil
		}
		return nil, fmt.Errorf("listing branches of %s: %w", remote, remote.redactErr(err))
	}
	out := map[string]plumbing.Hash{}
	for _, r := range refs {
		if r.Name().IsBranch() && r.Type() == plumbing.HashReference {
			out[r.Name().Short()] = r.Hash()
		}
	}
	return out, nil
}

// EnsureBranch creates branch on the remote from base when it is missing,
// and returns the branch's head. An existing branch is left as it is.
func EnsureBranch(ctx context.Context, remote Remote, base, branch string) (plumbing.Hash, error) {
	refs, err := remoteRefs(ctx, remote)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if h, ok := refs[branch]; ok {
		return h, nil
	}
	baseHash, ok := refs[base]
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("creating branch %s from %s on %s: base: %w", branch, base, remote, ErrBranchNotFound)
	}
	dir, err := os.MkdirTemp("", "bazinga-branch-")
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	defer os.RemoveAll(dir)
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remote.URL}}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("creating branch %s: %w", branch, err)
	}
	if err := fetch(ctx, repo, remote, base); err != nil {
		return plumbing.ZeroHash, err
	}
	spec := config.RefSpec(fmt.Sprintf("%s:refs/heads/%s", baseHash, branch))
	err = repo.PushContext(ctx, &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: remote.auth()})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return plumbing.ZeroHash, fmt.Errorf("creating branch %s on %s: %w", branch, remote, remote.redactErr(err))
	}
	return baseHash, nil
}

// fetch updates refs/remotes/origin/<branch> for each branch.
func fetch(ctx context.Context, repo *git.Repository, remote Remote, branches ...string) error {
	specs := make([]config.RefSpec, 0, len(branches))
	for _, b := range branches {
		specs = append(specs, config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/origin/%s", b, b)))
	}
	err := repo.FetchContext(ctx, &git.FetchOptions{RemoteName: "origin", RefSpecs: specs, Auth: remote.auth(), Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		if strings.Contains(err.Error(), "couldn't find remote ref") {
			return fmt.Errorf("fetching %v from %s: %w", branches, remote, ErrBranchNotFound)
		}
		return fmt.Errorf("fetching %v from %s: %w", branches, remote, remote.redactErr(err))
	}
	return nil
}

// PrepareWorkingCopy clones remote into dir and checks out the group
// branch, creating it on the remote from base first when it is missing.
// This is the working copy an agent step runs in.
func PrepareWorkingCopy(ctx context.Context, remote Remote, base, branch, dir string) (*git.Repository, error) {
	if _, err := EnsureBranch(ctx, remote, base, branch); err != nil {
		return nil, fmt.Errorf("preparing working copy of %s: %w", branch, err)
	}
	repo, err := Clone(ctx, remote, dir, CloneOptions{Branch: branch})
	if err != nil {
		return nil, fmt.Errorf("preparing working copy of %s: %w", branch, err)
	}
	// The base is needed to merge it in after a conflict.
	if err := fetch(ctx, repo, remote, base); err != nil {
		return nil, fmt.Errorf("preparing working copy of %s: %w", branch, err)
	}
	return repo, nil
}

// CommitOptions describe a step's commit.
type CommitOptions struct {
	// Author of the change; the committer is always BotIdentity.
	Author Identity
	// Message is the commit message; the step trailer is appended.
	Message string
	// StepID goes into a "Bazinga-Step: <id>" trailer.
	StepID string
	// MergeParent, when set, makes this a merge commit with that second
	// parent (used after merging the base into a working copy).
	MergeParent plumbing.Hash
	// When is the commit time; zero means now.
	When time.Time
}

// CommitAll stages every change in the working copy (new, modified and
// deleted files) and commits it. It returns ErrNothingToCommit when there
// is nothing to commit and no merge to record.
func CommitAll(repo *git.Repository, opts CommitOptions) (plumbing.Hash, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: staging changes: %w", err)
	}
	st, err := wt.Status()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: reading status: %w", err)
	}
	if st.IsClean() && opts.MergeParent.IsZero() {
		return plumbing.ZeroHash, ErrNothingToCommit
	}
	when := opts.When
	if when.IsZero() {
		when = time.Now()
	}
	author := opts.Author
	if author.Name == "" {
		author = BotIdentity
	}
	msg := strings.TrimRight(opts.Message, "\n")
	if msg == "" {
		msg = "bazinga: step " + opts.StepID
	}
	if opts.StepID != "" {
		msg += "\n\nBazinga-Step: " + opts.StepID
	}
	co := &git.CommitOptions{
		Author:            author.signature(when),
		Committer:         BotIdentity.signature(when),
		AllowEmptyCommits: !opts.MergeParent.IsZero(),
	}
	if !opts.MergeParent.IsZero() {
		head, err := repo.Head()
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("commit: reading HEAD: %w", err)
		}
		co.Parents = []plumbing.Hash{head.Hash(), opts.MergeParent}
	}
	h, err := wt.Commit(msg+"\n", co)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("commit: %w", err)
	}
	return h, nil
}

// WorkflowChanges lists the paths under .github/workflows/ that differ
// between two commits (from may be zero: everything in to counts).
func WorkflowChanges(repo *git.Repository, from, to plumbing.Hash) ([]string, error) {
	var fromTree, toTree plumbing.Hash
	if !from.IsZero() {
		c, err := repo.CommitObject(from)
		if err != nil {
			return nil, fmt.Errorf("checking workflow changes: %w", err)
		}
		fromTree = c.TreeHash
	}
	c, err := repo.CommitObject(to)
	if err != nil {
		return nil, fmt.Errorf("checking workflow changes: %w", err)
	}
	toTree = c.TreeHash
	var changes []fileChange
	if err := newTreeReader(repo.Storer).diff(fromTree, toTree, "", &changes); err != nil {
		return nil, fmt.Errorf("checking workflow changes: %w", err)
	}
	var out []string
	for _, ch := range changes {
		if strings.HasPrefix(ch.path, WorkflowDir) {
			out = append(out, ch.path)
		}
	}
	sort.Strings(out)
	return out, nil
}

func workflowError(paths []string) error {
	return fmt.Errorf("%w: %s", ErrWorkflowChange, strings.Join(paths, ", "))
}

// PushOptions configure Push.
type PushOptions struct {
	// AllowWorkflowChanges lets the push change .github/workflows/.
	AllowWorkflowChanges bool
}

// Push pushes the local branch to the remote without force. Before it
// does, it refuses changes under .github/workflows/ (relative to the
// remote branch, or to the remote base when the branch is new) unless
// allowed; the error names the paths.
func Push(ctx context.Context, repo *git.Repository, remote Remote, base, branch string, opts PushOptions) error {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return fmt.Errorf("push %s: %w: %v", branch, ErrBranchNotFound, err)
	}
	if err := ensureOrigin(repo, remote); err != nil {
		return err
	}
	refs, err := remoteRefs(ctx, remote)
	if err != nil {
		return fmt.Errorf("push %s: %w", branch, err)
	}
	from, ok := refs[branch]
	if !ok {
		from = refs[base]
	}
	if !from.IsZero() {
		if _, err := repo.CommitObject(from); err != nil {
			if err := fetch(ctx, repo, remote, branch, base); err != nil {
				return fmt.Errorf("push %s: %w", branch, err)
			}
		}
	}
	if !opts.AllowWorkflowChanges {
		paths, err := WorkflowChanges(repo, from, ref.Hash())
		if err != nil {
			return fmt.Errorf("push %s: %w", branch, err)
		}
		if len(paths) > 0 {
			return fmt.Errorf("push %s: %w", branch, workflowError(paths))
		}
	}
	spec := config.RefSpec(fmt.Sprintf("refs/heads/%s:refs/heads/%s", branch, branch))
	err = repo.PushContext(ctx, &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: remote.auth()})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return fmt.Errorf("push %s to %s: %w", branch, remote, remote.redactErr(err))
	}
	return nil
}

// ensureOrigin points remote "origin" at remote.URL.
func ensureOrigin(repo *git.Repository, remote Remote) error {
	rem, err := repo.Remote("origin")
	if err == nil && len(rem.Config().URLs) > 0 && rem.Config().URLs[0] == remote.URL {
		return nil
	}
	if err == nil {
		if err := repo.DeleteRemote("origin"); err != nil {
			return fmt.Errorf("configuring remote: %w", err)
		}
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{remote.URL}}); err != nil {
		return fmt.Errorf("configuring remote: %w", err)
	}
	return nil
}

// IsMerged tells whether commit branch is already contained in base
// (branch is an ancestor of, or equal to, base).
func IsMerged(repo *git.Repository, branch, base plumbing.Hash) (bool, error) {
	if branch == base {
		return true, nil
	}
	bc, err := repo.CommitObject(branch)
	if err != nil {
		return false, fmt.Errorf("merged check: reading %s: %w", branch, err)
	}
	basec, err := repo.CommitObject(base)
	if err != nil {
		return false, fmt.Errorf("merged check: reading %s: %w", base, err)
	}
	ok, err := bc.IsAncestor(basec)
	if err != nil {
		return false, fmt.Errorf("merged check: %w", err)
	}
	return ok, nil
}

// ResolveBranch returns the head of a local or remote-tracking branch.
func ResolveBranch(repo *git.Repository, branch string) (plumbing.Hash, error) {
	for _, name := range []plumbing.ReferenceName{
		plumbing.NewBranchReferenceName(branch),
		plumbing.NewRemoteReferenceName("origin", branch),
	} {
		if ref, err := repo.Reference(name, true); err == nil {
			return ref.Hash(), nil
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("%w: %s", ErrBranchNotFound, branch)
}
