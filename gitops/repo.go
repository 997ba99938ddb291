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

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
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
// "x-access-token", to URL and nowhere else (no redirect is followed, and
// no working copy's git configuration is read for a URL); it is never put
// in a URL, a config file or a log.
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

// CloneOptions choose what to clone.
type CloneOptions struct {
	// Branch to check out; empty means the remote's default branch.
	Branch string
	// Shallow clones only the tip commit of Branch (enough to run tests
	// or read files; not enough to merge) and no other branch. Otherwise
	// every branch comes with its whole history.
	Shallow bool
	// NoCheckout leaves the working copy empty.
	NoCheckout bool
}

// Clone clones remote into dir (which must not exist or be empty). No
// tags are fetched.
func Clone(ctx context.Context, remote Remote, dir string, opts CloneOptions) (*git.Repository, error) {
	repo, err := clone(ctx, remote, dir, opts)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return repo, nil
}

func clone(ctx context.Context, remote Remote, dir string, opts CloneOptions) (*git.Repository, error) {
	w, err := dial(remote)
	if err != nil {
		return nil, err
	}
	refs, err := w.refs(ctx)
	if err != nil {
		return nil, fmt.Errorf("cloning %s: %w", remote, remote.redactErr(err))
	}
	branch := opts.Branch
	if branch == "" {
		if branch = defaultBranch(refs); branch == "" {
			return nil, fmt.Errorf("cloning %s: the remote has no default branch: %w", remote, ErrBranchNotFound)
		}
	}
	head, ok := refs[plumbing.NewBranchReferenceName(branch)]
	if !ok {
		return nil, fmt.Errorf("cloning %s branch %q: %w", remote, branch, ErrBranchNotFound)
	}
	repo, local, err := initWorkingCopy(dir, remote)
	if err != nil {
		return nil, fmt.Errorf("cloning %s: %w", remote, err)
	}
	branches := []string{branch}
	depth := 1
	if !opts.Shallow {
		branches, depth = branchNames(refs), 0
	}
	if err := fetchBranches(ctx, w, remote, local, refs, branches, depth); err != nil {
		return nil, fmt.Errorf("cloning %s: %w", remote, err)
	}
	if err := checkoutBranch(repo, branch, head, opts.NoCheckout); err != nil {
		return nil, fmt.Errorf("cloning %s: %w", remote, err)
	}
	return repo, nil
}

// defaultBranch is the branch HEAD points at (by hash: not every server
// says which name), main or master first when several match.
func defaultBranch(refs map[plumbing.ReferenceName]plumbing.Hash) string {
	head, ok := refs[plumbing.HEAD]
	names := branchNames(refs)
	for _, pref := range []string{"main", "master"} {
		for _, n := range names {
			if n == pref && (!ok || refs[plumbing.NewBranchReferenceName(n)] == head) {
				return n
			}
		}
	}
	for _, n := range names {
		if ok && refs[plumbing.NewBranchReferenceName(n)] == head {
			return n
		}
	}
	return ""
}

func branchNames(refs map[plumbing.ReferenceName]plumbing.Hash) []string {
	var out []string
	for name := range refs {
		if name.IsBranch() {
			out = append(out, name.Short())
		}
	}
	sort.Strings(out)
	return out
}

// initWorkingCopy makes an empty repository at dir whose origin is
// remote's URL (for the agent's convenience: bazinga itself never reads
// it back, and the token is never written).
func initWorkingCopy(dir string, remote Remote) (*git.Repository, *localRepo, error) {
	wt := osfs.New(dir)
	dot, err := wt.Chroot(git.GitDirName)
	if err != nil {
		return nil, nil, err
	}
	// go-git's default object cache is 96 MiB; a working copy's reads
	// (checkout, merge, push) are mostly one pass over a tree each.
	repo, err := git.Init(filesystem.NewStorage(dot, cache.NewObjectLRU(workingCopyCache)), wt)
	if err != nil {
		return nil, nil, err
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{redactURL(remote.URL)}}); err != nil {
		return nil, nil, err
	}
	local, err := localOf(repo)
	if err != nil {
		return nil, nil, err
	}
	return repo, local, nil
}

// workingCopyCache bounds the object cache of the repositories bazinga
// makes (working copies, landing).
const workingCopyCache = 16 * cache.MiByte

// localOf finds where a repository opened from disk keeps its files.
func localOf(repo *git.Repository) (*localRepo, error) {
	fsys, ok := repo.Storer.(interface{ Filesystem() billy.Filesystem })
	if !ok {
		return nil, errors.New("the repository is not on disk")
	}
	return &localRepo{gitDir: fsys.Filesystem().Root(), st: repo.Storer}, nil
}

// fetchBranches fetches the named branches (heads as listed in refs) to
// depth commits (0: all) and points refs/remotes/origin/<name> at them.
func fetchBranches(ctx context.Context, w wire, remote Remote, local *localRepo, refs map[plumbing.ReferenceName]plumbing.Hash, names []string, depth int) error {
	var wants []plumbing.Hash
	for _, b := range names {
		h, ok := refs[plumbing.NewBranchReferenceName(b)]
		if !ok {
			return fmt.Errorf("fetching %s from %s: %w", b, remote, ErrBranchNotFound)
		}
		wants = append(wants, h)
	}
	if !w.shallow() {
		depth = 0
	}
	if err := w.fetch(ctx, local, wants, depth); err != nil {
		return fmt.Errorf("fetching %v from %s: %w", names, remote, remote.redactErr(err))
	}
	for _, b := range names {
		ref := plumbing.NewHashReference(plumbing.NewRemoteReferenceName("origin", b), refs[plumbing.NewBranchReferenceName(b)])
		if err := local.st.SetReference(ref); err != nil {
			return fmt.Errorf("recording origin/%s: %w", b, err)
		}
	}
	return nil
}

// checkoutBranch creates the local branch at head, makes it HEAD with
// origin as its upstream, and checks it out.
func checkoutBranch(repo *git.Repository, branch string, head plumbing.Hash, noCheckout bool) error {
	name := plumbing.NewBranchReferenceName(branch)
	if err := repo.Storer.SetReference(plumbing.NewHashReference(name, head)); err != nil {
		return fmt.Errorf("creating branch %s: %w", branch, err)
	}
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference(plumbing.HEAD, name)); err != nil {
		return fmt.Errorf("pointing HEAD at %s: %w", branch, err)
	}
	if err := repo.CreateBranch(&config.Branch{Name: branch, Remote: "origin", Merge: name}); err != nil && !errors.Is(err, git.ErrBranchExists) {
		return fmt.Errorf("configuring branch %s: %w", branch, err)
	}
	if noCheckout {
		return nil
	}
	wt, err := repo.Worktree()
	if err != nil {
		return err
	}
	if err := wt.Reset(&git.ResetOptions{Commit: head, Mode: git.HardReset}); err != nil {
		return fmt.Errorf("checking out %s: %w", branch, err)
	}
	return nil
}

func branchHeads(refs map[plumbing.ReferenceName]plumbing.Hash) map[string]plumbing.Hash {
	out := map[string]plumbing.Hash{}
	for name, h := range refs {
		if name.IsBranch() {
			out[name.Short()] = h
		}
	}
	return out
}

func ensureBranch(ctx context.Context, w wire, remote Remote, refs map[plumbing.ReferenceName]plumbing.Hash, base, branch string) (plumbing.Hash, error) {
	if h, ok := refs[plumbing.NewBranchReferenceName(branch)]; ok {
		return h, nil
	}
	baseHash, ok := refs[plumbing.NewBranchReferenceName(base)]
	if !ok {
		return plumbing.ZeroHash, fmt.Errorf("creating branch %s from %s on %s: base: %w", branch, base, remote, ErrBranchNotFound)
	}
	// The remote has every object already: the push is the ref alone.
	upd := refUpdate{Name: plumbing.NewBranchReferenceName(branch), New: baseHash}
	if err := w.push(ctx, memory.NewStorage(), nil, []refUpdate{upd}); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("creating branch %s on %s: %w", branch, remote, remote.redactErr(err))
	}
	refs[upd.Name] = baseHash
	return baseHash, nil
}

// MaxHistoryDepth bounds how deep a shallow working copy is deepened to
// find a merge base (commits from each tip).
const MaxHistoryDepth = 16384

// historyDepthLimit is MaxHistoryDepth; tests lower it.
var historyDepthLimit = MaxHistoryDepth

// deepenUntilDecided fetches more history of a and b until the merge of
// the two is decided by the history at hand: their merge bases are in it
// (and, for several, theirs in turn). Past MaxHistoryDepth it gives up
// with ErrShallowHistory. tips are the remote's branch heads to deepen
// from (a server sends history only below the refs it advertises); depth is
// how deep the history at hand is.
func deepenUntilDecided(ctx context.Context, w wire, remote Remote, local *localRepo, a, b plumbing.Hash, tips []plumbing.Hash, depth int) error {
	for {
		g, err := newHistoryGraph(local.st)
		if err != nil {
			return err
		}
		ok, err := g.mergeDecidedHashes(a, b)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if !w.shallow() || depth >= historyDepthLimit {
			return fmt.Errorf("no merge base of %s and %s within %d commits of each: %w", a, b, depth, ErrShallowHistory)
		}
		depth = max(depth*4, 32)
		if depth > historyDepthLimit {
			depth = historyDepthLimit
		}
		if err := w.fetch(ctx, local, tips, depth); err != nil {
			return fmt.Errorf("deepening the history to %d commits from %s: %w", depth, remote, remote.redactErr(err))
		}
	}
}

// PrepareWorkingCopy clones remote into dir and checks out the group
// branch, creating it on the remote from base first when it is missing.
// This is the working copy an agent step runs in. Over HTTP it holds the
// tips of the branch and the base only (origin/<base> too), one commit
// deep; MergeRemoteIntoWorkingCopy fetches more history when a merge needs it.
func PrepareWorkingCopy(ctx context.Context, remote Remote, base, branch, dir string) (*git.Repository, error) {
	repo, err := prepareWorkingCopy(ctx, remote, base, branch, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("preparing working copy of %s: %w", branch, err)
	}
	return repo, nil
}

func prepareWorkingCopy(ctx context.Context, remote Remote, base, branch, dir string) (*git.Repository, error) {
	w, err := dial(remote)
	if err != nil {
		return nil, err
	}
	refs, err := w.refs(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing branches of %s: %w", remote, remote.redactErr(err))
	}
	head, err := ensureBranch(ctx, w, remote, refs, base, branch)
	if err != nil {
		return nil, err
	}
	repo, local, err := initWorkingCopy(dir, remote)
	if err != nil {
		return nil, err
	}
	names := []string{branch}
	if base != branch {
		names = append(names, base) // needed to merge it in after a conflict
	}
	if err := fetchBranches(ctx, w, remote, local, refs, names, 1); err != nil {
		return nil, err
	}
	if err := checkoutBranch(repo, branch, head, false); err != nil {
		return nil, err
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

// Push pushes the local branch to remote.URL without force (never to a
// URL in the working copy's configuration, which the agent may have
// changed). Before it does, it refuses changes under .github/workflows/
// (relative to the remote branch, or to the remote base when the branch
// is new) unless allowed; the error names the paths.
func Push(ctx context.Context, repo *git.Repository, remote Remote, base, branch string, opts PushOptions) error {
	ref, err := repo.Reference(plumbing.NewBranchReferenceName(branch), true)
	if err != nil {
		return fmt.Errorf("push %s: %w: %v", branch, ErrBranchNotFound, err)
	}
	w, err := dial(remote)
	if err != nil {
		return fmt.Errorf("push %s: %w", branch, err)
	}
	all, err := w.refs(ctx)
	if err != nil {
		return fmt.Errorf("push %s: listing branches of %s: %w", branch, remote, remote.redactErr(err))
	}
	refs := branchHeads(all)
	old := refs[branch]
	from := old
	if from.IsZero() {
		from = refs[base]
	}
	local, err := localOf(repo)
	if err != nil {
		return fmt.Errorf("push %s: %w", branch, err)
	}
	if !from.IsZero() {
		if ok, _ := hasObject(repo.Storer, from); !ok {
			names := []string{base}
			if !old.IsZero() {
				names = []string{branch, base}
			}
			if err := fetchBranches(ctx, w, remote, local, all, names, 1); err != nil {
				return fmt.Errorf("push %s: %w", branch, err)
			}
		}
	}
	if !old.IsZero() && old != ref.Hash() {
		g, err := newHistoryGraph(repo.Storer)
		if err != nil {
			return fmt.Errorf("push %s: %w", branch, err)
		}
		ff, err := g.isAncestor(old, ref.Hash())
		if err != nil || !ff {
			return fmt.Errorf("push %s to %s: non-fast-forward update (the remote branch has commits the working copy lacks): %w", branch, remote, errRefMoved)
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
	if old == ref.Hash() {
		return nil
	}
	var haves []plumbing.Hash
	for _, h := range all {
		haves = append(haves, h)
	}
	objects, err := objectsToSend(repo.Storer, []plumbing.Hash{ref.Hash()}, haves)
	if err != nil {
		return fmt.Errorf("push %s: listing objects to send: %w", branch, err)
	}
	upd := refUpdate{Name: plumbing.NewBranchReferenceName(branch), Old: old, New: ref.Hash()}
	if err := w.push(ctx, repo.Storer, objects, []refUpdate{upd}); err != nil {
		return fmt.Errorf("push %s to %s: %w", branch, remote, remote.redactErr(err))
	}
	_ = repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewRemoteReferenceName("origin", branch), ref.Hash()))
	return nil
}

// IsMerged tells whether commit branch is already contained in base
// (branch is an ancestor of, or equal to, base). In a shallow repository
// whose history does not decide it, the error wraps ErrShallowHistory.
func IsMerged(repo *git.Repository, branch, base plumbing.Hash) (bool, error) {
	if branch == base {
		return true, nil
	}
	g, err := newHistoryGraph(repo.Storer)
	if err != nil {
		return false, fmt.Errorf("merged check: %w", err)
	}
	ok, err := g.isAncestor(branch, base)
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
