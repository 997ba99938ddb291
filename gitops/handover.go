package gitops

// GitHub mode splits a step between a job that runs code an agent wrote
// with a read-only token and a job that holds the write token and runs no
// repository code. These helpers serve both sides: the first lists its
// change as plain file data; the second fetches into a bare repository,
// rebuilds the commit from that data and pushes it with compare-and-set to a
// remote URL it names itself. Nothing here checks files out, runs hooks or
// reads a working copy's configuration.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
)

var (
	// ErrForbiddenPath: a change names a path no step may change (or one
	// that is not a clean relative path at all).
	ErrForbiddenPath = errors.New("path not allowed")
	// ErrStale: a branch is no longer where the step saw it.
	ErrStale = errors.New("the branch moved")
	// ErrSubmodule: a change adds a submodule (gitlink), which bazinga does
	// not hand over.
	ErrSubmodule = errors.New("submodules are not allowed")
)

// ConfigPath is bazinga's configuration file; no step may change it.
const ConfigPath = ".github/bazinga.yml"

// ChangeMode is what a change does to a path.
type ChangeMode int

// Change modes.
const (
	ChangeFile ChangeMode = iota + 1
	ChangeExecutable
	ChangeSymlink
	ChangeDelete
)

var changeModeNames = map[ChangeMode]string{ChangeFile: "file", ChangeExecutable: "executable", ChangeSymlink: "symlink", ChangeDelete: "delete"}

func (m ChangeMode) String() string {
	if s, ok := changeModeNames[m]; ok {
		return s
	}
	return fmt.Sprintf("ChangeMode(%d)", int(m))
}

// ParseChangeMode reads a mode's String.
func ParseChangeMode(s string) (ChangeMode, bool) {
	for m, n := range changeModeNames {
		if n == s {
			return m, true
		}
	}
	return 0, false
}

func (m ChangeMode) fileMode() filemode.FileMode {
	switch m {
	case ChangeExecutable:
		return filemode.Executable
	case ChangeSymlink:
		return filemode.Symlink
	}
	return filemode.Regular
}

// Change is one path that differs between two trees.
type Change struct {
	Path string
	Mode ChangeMode
	// Blob is the new content (zero for ChangeDelete).
	Blob plumbing.Hash
	Size int64
}

// PathPolicy says which paths a step may change.
type PathPolicy struct {
	// AllowWorkflowChanges lets changes touch .github/workflows/.
	AllowWorkflowChanges bool
	// Protected are further paths no change may touch (ConfigPath always is).
	Protected []string
}

// Check refuses a path that is not a clean, relative, slash-separated path
// inside the repository, that reaches into .git, or that the policy
// protects. Comparisons ignore case, as a case-insensitive checkout would.
func (p PathPolicy) Check(name string) error {
	bad := func(why string) error { return fmt.Errorf("%w: %q %s", ErrForbiddenPath, name, why) }
	switch {
	case name == "":
		return bad("is empty")
	case len(name) > 4096:
		return bad("is longer than 4096 bytes")
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case strings.ContainsAny(name, "\x00\\"):
		return bad("contains a NUL byte or a backslash")
	case strings.HasPrefix(name, "/"):
		return bad("is absolute")
	}
	for _, seg := range strings.Split(name, "/") {
		switch trimmed := strings.ToLower(strings.TrimRight(seg, ". ")); {
		case seg == "":
			return bad("has an empty segment")
		case seg == "." || seg == "..":
			return bad("has a . or .. segment")
		case trimmed == ".git" || trimmed == "git~1":
			return bad("reaches into .git")
		}
	}
	lower := strings.ToLower(name)
	if lower == ConfigPath {
		return bad("is bazinga's configuration, which only maintainers change")
	}
	for _, prot := range p.Protected {
		if prot = strings.ToLower(strings.TrimPrefix(path.Clean("/"+prot), "/")); prot != "" && lower == prot {
			return bad("is protected")
		}
	}
	if !p.AllowWorkflowChanges && strings.HasPrefix(lower, WorkflowDir) {
		return fmt.Errorf("%w: %s", ErrWorkflowChange, name)
	}
	return nil
}

// IsProtected reports whether a well-formed path is one the policy protects
// (a workflow unless allowed, the configuration, a Protected path): a change
// to it may only bring in what a merged base commit has there.
func (p PathPolicy) IsProtected(name string) bool {
	err := p.Check(name)
	if err == nil {
		return false
	}
	lower := strings.ToLower(name)
	if errors.Is(err, ErrWorkflowChange) || lower == ConfigPath {
		return true
	}
	for _, prot := range p.Protected {
		if prot = strings.ToLower(strings.TrimPrefix(path.Clean("/"+prot), "/")); prot != "" && lower == prot {
			return true
		}
	}
	return false
}

// SameAs reports whether, in commit's tree, path has exactly the change's
// result: the same mode and blob, or (ChangeDelete) no entry at all.
func SameAs(repo *git.Repository, commit plumbing.Hash, ch Change) (bool, error) {
	c, err := repo.CommitObject(commit)
	if err != nil {
		return false, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return false, fmt.Errorf("reading the tree of %s: %w", commit, err)
	}
	e, err := tree.FindEntry(ch.Path)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		return ch.Mode == ChangeDelete, nil
	}
	if err != nil {
		return false, fmt.Errorf("looking up %s in %s: %w", ch.Path, commit, err)
	}
	return ch.Mode != ChangeDelete && e.Mode == ch.Mode.fileMode() && e.Hash == ch.Blob, nil
}

// flatEntry is a file of a flattened tree.
type flatEntry struct {
	mode filemode.FileMode
	hash plumbing.Hash
}

// flatten lists every non-directory entry of a tree by path.
func flatten(repo *git.Repository, treeHash plumbing.Hash) (map[string]flatEntry, error) {
	out := map[string]flatEntry{}
	if treeHash.IsZero() {
		return out, nil
	}
	tree, err := repo.TreeObject(treeHash)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", treeHash, err)
	}
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("walking tree %s: %w", treeHash, err)
		}
		if e.Mode == filemode.Dir {
			continue
		}
		out[name] = flatEntry{mode: e.Mode, hash: e.Hash}
	}
	return out, nil
}

func commitTree(repo *git.Repository, commit plumbing.Hash) (plumbing.Hash, error) {
	if commit.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := repo.CommitObject(commit)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", commit, err)
	}
	return c.TreeHash, nil
}

// TreeChanges lists the paths whose content or mode differs between the
// trees of two commits (from may be zero: everything in to is new), sorted
// by path. A submodule in to is ErrSubmodule naming its path.
func TreeChanges(repo *git.Repository, from, to plumbing.Hash) ([]Change, error) {
	ft, err := commitTree(repo, from)
	if err != nil {
		return nil, err
	}
	tt, err := commitTree(repo, to)
	if err != nil {
		return nil, err
	}
	a, err := flatten(repo, ft)
	if err != nil {
		return nil, err
	}
	b, err := flatten(repo, tt)
	if err != nil {
		return nil, err
	}
	var out []Change
	for p, e := range b {
		if old, ok := a[p]; ok && old == e {
			continue
		}
		var m ChangeMode
		switch e.mode {
		case filemode.Regular, filemode.Deprecated:
			m = ChangeFile
		case filemode.Executable:
			m = ChangeExecutable
		case filemode.Symlink:
			m = ChangeSymlink
		case filemode.Submodule:
			return nil, fmt.Errorf("%w: %s", ErrSubmodule, p)
		default:
			return nil, fmt.Errorf("%s has an unsupported mode %s", p, e.mode)
		}
		size, err := repo.Storer.EncodedObjectSize(e.hash)
		if err != nil {
			return nil, fmt.Errorf("reading blob of %s: %w", p, err)
		}
		out = append(out, Change{Path: p, Mode: m, Blob: e.hash, Size: size})
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			out = append(out, Change{Path: p, Mode: ChangeDelete})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// NewFile is a change as data: the content of a file, or its deletion.
type NewFile struct {
	Path string
	Mode ChangeMode
	Data []byte
}

// CommitSpec describes a commit to write.
type CommitSpec struct {
	// Parents: the first is the commit whose tree the files apply to.
	Parents []plumbing.Hash
	// Author of the change; the committer is always BotIdentity.
	Author  Identity
	Message string
	When    time.Time
}

// WriteBlob stores data as a blob and returns its hash.
func WriteBlob(repo *git.Repository, data []byte) (plumbing.Hash, error) {
	obj := repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.Storer.SetEncodedObject(obj)
}

// BlobHash is the git hash of data as a blob, without storing it.
func BlobHash(data []byte) plumbing.Hash {
	return plumbing.ComputeHash(plumbing.BlobObject, data)
}

// CommitFiles writes a commit whose tree is the first parent's tree with
// files applied (written, or deleted), and returns the commit and its tree.
// Paths are not checked here: check them with a PathPolicy first.
func CommitFiles(repo *git.Repository, files []NewFile, spec CommitSpec) (commit, tree plumbing.Hash, err error) {
	if len(spec.Parents) == 0 {
		return plumbing.ZeroHash, plumbing.ZeroHash, errors.New("commit files: no parent")
	}
	pt, err := commitTree(repo, spec.Parents[0])
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	flat, err := flatten(repo, pt)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	for _, f := range files {
		if f.Mode == ChangeDelete {
			if _, ok := flat[f.Path]; !ok {
				return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("commit files: %s is deleted but is not in the parent", f.Path)
			}
			delete(flat, f.Path)
			continue
		}
		h, err := WriteBlob(repo, f.Data)
		if err != nil {
			return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("commit files: writing %s: %w", f.Path, err)
		}
		flat[f.Path] = flatEntry{mode: f.Mode.fileMode(), hash: h}
	}
	tree, err = writeFlatTree(repo, flat)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("commit files: %w", err)
	}
	when := spec.When
	if when.IsZero() {
		when = time.Now()
	}
	author := spec.Author
	if author.Name == "" {
		author = BotIdentity
	}
	c := &object.Commit{
		Author:       *author.signature(when),
		Committer:    *BotIdentity.signature(when),
		Message:      strings.TrimRight(spec.Message, "\n") + "\n",
		TreeHash:     tree,
		ParentHashes: spec.Parents,
	}
	commit, err = storeObject(repo, c)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("commit files: %w", err)
	}
	return commit, tree, nil
}

// WriteCommit stores a commit object (e.g. a merge) and returns its hash.
func WriteCommit(repo *git.Repository, tree plumbing.Hash, parents []plumbing.Hash, author Identity, message string, when time.Time) (plumbing.Hash, error) {
	if author.Name == "" {
		author = BotIdentity
	}
	c := &object.Commit{
		Author:       *author.signature(when),
		Committer:    *BotIdentity.signature(when),
		Message:      strings.TrimRight(message, "\n") + "\n",
		TreeHash:     tree,
		ParentHashes: parents,
	}
	return storeObject(repo, c)
}

type encoder interface {
	Encode(plumbing.EncodedObject) error
}

func storeObject(repo *git.Repository, o encoder) (plumbing.Hash, error) {
	obj := repo.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.Storer.SetEncodedObject(obj)
}

// dirNode is a directory being built.
type dirNode struct {
	files map[string]flatEntry
	dirs  map[string]*dirNode
}

// writeFlatTree writes the trees of a flat path → entry map and returns the
// root tree. A name that is both a file and a directory is an error.
func writeFlatTree(repo *git.Repository, flat map[string]flatEntry) (plumbing.Hash, error) {
	root := &dirNode{files: map[string]flatEntry{}, dirs: map[string]*dirNode{}}
	paths := make([]string, 0, len(flat))
	for p := range flat {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		parts := strings.Split(p, "/")
		n := root
		for i, part := range parts[:len(parts)-1] {
			if _, clash := n.files[part]; clash {
				return plumbing.ZeroHash, fmt.Errorf("%s is a file and a directory", strings.Join(parts[:i+1], "/"))
			}
			next := n.dirs[part]
			if next == nil {
				next = &dirNode{files: map[string]flatEntry{}, dirs: map[string]*dirNode{}}
				n.dirs[part] = next
			}
			n = next
		}
		leaf := parts[len(parts)-1]
		if _, clash := n.dirs[leaf]; clash {
			return plumbing.ZeroHash, fmt.Errorf("%s is a file and a directory", p)
		}
		n.files[leaf] = flat[p]
	}
	return writeDir(repo, root)
}

func writeDir(repo *git.Repository, n *dirNode) (plumbing.Hash, error) {
	entries := make([]object.TreeEntry, 0, len(n.files)+len(n.dirs))
	for name, e := range n.files {
		entries = append(entries, object.TreeEntry{Name: name, Mode: e.mode, Hash: e.hash})
	}
	for name, d := range n.dirs {
		h, err := writeDir(repo, d)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h})
	}
	// Git orders tree entries by name, a directory's name as if it ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	return storeObject(repo, &object.Tree{Entries: entries})
}

// bareRemote is remote as an in-memory remote of repo: its URL is the one
// the caller names, never a configuration file's.
func bareRemote(repo *git.Repository, remote Remote) *git.Remote {
	return git.NewRemote(repo.Storer, &config.RemoteConfig{Name: "bazinga", URLs: []string{remote.URL}})
}

// FetchBare makes a bare repository in dir (which must not exist or be
// empty) holding the named branches of remote that exist, and returns their
// heads; a branch missing on the remote is missing from the map.
func FetchBare(ctx context.Context, remote Remote, dir string, branches ...string) (*git.Repository, map[string]plumbing.Hash, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("fetching from %s: %w", remote, err)
	}
	repo, err := git.PlainInit(dir, true)
	if err != nil {
		return nil, nil, fmt.Errorf("fetching from %s: %w", remote, err)
	}
	rem := bareRemote(repo, remote)
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: remote.auth()})
	if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, nil, fmt.Errorf("listing branches of %s: %w", remote, remote.redactErr(err))
	}
	heads := map[string]plumbing.Hash{}
	for _, r := range refs {
		if r.Name().IsBranch() && r.Type() == plumbing.HashReference {
			heads[r.Name().Short()] = r.Hash()
		}
	}
	out := map[string]plumbing.Hash{}
	var specs []config.RefSpec
	for _, b := range branches {
		if h, ok := heads[b]; ok {
			out[b] = h
			specs = append(specs, config.RefSpec(fmt.Sprintf("+refs/heads/%s:refs/remotes/bazinga/%s", b, b)))
		}
	}
	if len(specs) == 0 {
		return repo, out, nil
	}
	err = rem.FetchContext(ctx, &git.FetchOptions{RefSpecs: specs, Auth: remote.auth(), Tags: git.NoTags})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil, nil, fmt.Errorf("fetching %v from %s: %w", branches, remote, remote.redactErr(err))
	}
	// The fetch may have seen newer heads than the listing: report those.
	for b := range out {
		if r, err := repo.Reference(plumbing.NewRemoteReferenceName("bazinga", b), true); err == nil {
			out[b] = r.Hash()
		}
	}
	return repo, out, nil
}

// PushCommit sets branch on remote to commit if the branch is still at old
// (zero: it must not exist), and returns ErrStale when it moved. The server
// checks the old value as it updates the ref, so two pushers cannot both win.
func PushCommit(ctx context.Context, repo *git.Repository, remote Remote, commit plumbing.Hash, branch string, old plumbing.Hash) error {
	rem := bareRemote(repo, remote)
	opts := &git.PushOptions{
		RemoteName: "bazinga",
		RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:refs/heads/%s", commit, branch))},
		Auth:       remote.auth(),
	}
	if old.IsZero() {
		refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: remote.auth()})
		if err != nil && !errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return fmt.Errorf("push %s to %s: %w", branch, remote, remote.redactErr(err))
		}
		for _, r := range refs {
			if r.Name() == plumbing.NewBranchReferenceName(branch) {
				return fmt.Errorf("push %s: %w: it now exists at %s", branch, ErrStale, r.Hash())
			}
		}
	} else {
		opts.RequireRemoteRefs = []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:refs/heads/%s", old, branch))}
	}
	err := rem.PushContext(ctx, opts)
	if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	msg := err.Error()
	if strings.Contains(msg, "required to be") || strings.Contains(msg, "but is absent") || strings.Contains(msg, "non-fast-forward") ||
		strings.Contains(msg, "fetch first") || strings.Contains(msg, "failed to lock") || strings.Contains(msg, "already exists") {
		return fmt.Errorf("push %s: %w: %v", branch, ErrStale, remote.redactErr(err))
	}
	return fmt.Errorf("push %s to %s: %w", branch, remote, remote.redactErr(err))
}

// PrepareReadOnly clones remote into dir for a step that may not write to
// the remote: the group branch when it exists, else the base with a local
// branch of that name at its head. It returns the commit the step starts
// from and whether the branch existed. Every branch is fetched (the base is
// needed to merge it in after a conflict).
func PrepareReadOnly(ctx context.Context, remote Remote, base, branch, dir string) (*git.Repository, plumbing.Hash, bool, error) {
	rem := git.NewRemote(nil, &config.RemoteConfig{Name: "origin", URLs: []string{remote.URL}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: remote.auth()})
	if err != nil {
		return nil, plumbing.ZeroHash, false, fmt.Errorf("listing branches of %s: %w", remote, remote.redactErr(err))
	}
	existed := false
	for _, r := range refs {
		if r.Name() == plumbing.NewBranchReferenceName(branch) {
			existed = true
		}
	}
	from := base
	if existed {
		from = branch
	}
	repo, err := Clone(ctx, remote, dir, CloneOptions{Branch: from})
	if err != nil {
		return nil, plumbing.ZeroHash, false, fmt.Errorf("preparing a working copy of %s: %w", branch, err)
	}
	head, err := repo.Head()
	if err != nil {
		return nil, plumbing.ZeroHash, false, fmt.Errorf("preparing a working copy of %s: %w", branch, err)
	}
	if !existed {
		wt, err := repo.Worktree()
		if err != nil {
			return nil, plumbing.ZeroHash, false, err
		}
		if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(branch), Hash: head.Hash(), Create: true}); err != nil {
			return nil, plumbing.ZeroHash, false, fmt.Errorf("creating local branch %s: %w", branch, err)
		}
	}
	return repo, head.Hash(), existed, nil
}
