package ghfake

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// The repository reads and most writes are done in-process with go-git on
// the bare repositories: a session's hundreds of ref and object reads were
// each a git process, and process spawns dominated the bot's test suite.
// git itself still serves clones and pushes (http-backend), merges
// (merge-tree) and rebases, and both work on the same directory:
//   - refs are written with git's own lock protocol (<ref>.lock created
//     exclusively, then renamed), so go-git and git exclude each other;
//   - objects are content-addressed loose files, written atomically;
//   - a pack that a push adds after the index was loaded is found by
//     reindexing when an object is missing.

// store is a repository's go-git storage; one per Repo, used under mu
// because go-git's filesystem storage is not safe for concurrent use.
type store struct {
	mu  sync.Mutex
	dir string
	st  *filesystem.Storage
}

func newStore(dir string) *store {
	return &store{dir: dir, st: filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())}
}

// object returns an object by hash, reindexing once when it is missing (a
// push may have added a pack). Caller holds s.mu.
func (s *store) object(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.st.EncodedObject(t, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		s.st.ObjectStorage.Reindex()
		o, err = s.st.EncodedObject(t, h)
	}
	return o, err
}

func (s *store) commit(h plumbing.Hash) (*object.Commit, error) {
	o, err := s.object(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	return object.DecodeCommit(s.st, o)
}

func (s *store) tree(h plumbing.Hash) (*object.Tree, error) {
	o, err := s.object(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	return object.DecodeTree(s.st, o)
}

// peel follows tags down to a non-tag object. Caller holds s.mu.
func (s *store) peel(h plumbing.Hash) (plumbing.EncodedObject, error) {
	for i := 0; i < 16; i++ {
		o, err := s.object(plumbing.AnyObject, h)
		if err != nil {
			return nil, err
		}
		if o.Type() != plumbing.TagObject {
			return o, nil
		}
		tag, err := object.DecodeTag(s.st, o)
		if err != nil {
			return nil, err
		}
		h = tag.Target
	}
	return nil, errors.New("ghfake: tag chain too long")
}

// refValue returns the object a ref points at, following symbolic refs.
// Caller holds s.mu.
func (s *store) refValue(name string) (plumbing.Hash, bool) {
	for i := 0; i < 5; i++ {
		ref, err := s.st.Reference(plumbing.ReferenceName(name))
		if err != nil {
			return plumbing.ZeroHash, false
		}
		if ref.Type() == plumbing.HashReference {
			return ref.Hash(), true
		}
		name = ref.Target().String()
	}
	return plumbing.ZeroHash, false
}

var hexRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

// simpleRev reports whether go-git can resolve rev exactly as git would: a
// full object name or a ref name without revision syntax or abbreviation.
// Anything else (HEAD~2, abbreviated names, rev:path) goes to git.
var revSyntaxRE = regexp.MustCompile(`[~^:@{}\s\\*?\[]|\.\.`)
var shortHexRE = regexp.MustCompile(`^[0-9a-fA-F]{4,39}$`)

// resolveCommit resolves rev to a commit the way rev-parse --verify
// rev^{commit} does for full names and refs (refs are tried in git's
// order: rev, refs/rev, refs/tags/rev, refs/heads/rev, refs/remotes/rev,
// refs/remotes/rev/HEAD). ok=false, handled=false means git must decide.
func (s *store) resolveCommit(rev string) (sha string, ok, handled bool) {
	if revSyntaxRE.MatchString(rev) || rev == "" {
		return "", false, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var h plumbing.Hash
	found := false
	if hexRE.MatchString(rev) {
		if _, err := s.object(plumbing.AnyObject, plumbing.NewHash(rev)); err == nil {
			h, found = plumbing.NewHash(rev), true
		}
	}
	if !found {
		for _, name := range []string{rev, "refs/" + rev, "refs/tags/" + rev, "refs/heads/" + rev, "refs/remotes/" + rev, "refs/remotes/" + rev + "/HEAD"} {
			if name == rev && !strings.HasPrefix(rev, "refs/") && rev != "HEAD" && !isRootRef(rev) {
				continue
			}
			if v, ok := s.refValue(name); ok {
				h, found = v, true
				break
			}
		}
	}
	if !found {
		if shortHexRE.MatchString(rev) {
			return "", false, false // maybe an abbreviated object name
		}
		return "", false, true
	}
	o, err := s.peel(h)
	if err != nil || o.Type() != plumbing.CommitObject {
		return "", false, true
	}
	return o.Hash().String(), true, true
}

// isRootRef is git's rule for names looked up directly under $GIT_DIR
// (HEAD, FETCH_HEAD, ORIG_HEAD …): all capitals and underscores.
func isRootRef(name string) bool {
	if name == "" {
		return false
	}
	for _, c := range name {
		if !(c >= 'A' && c <= 'Z') && c != '_' {
			return false
		}
	}
	return true
}

// entryAt returns the tree entry at p ("" for the tree itself) of the
// commit's tree. Caller holds s.mu.
func (s *store) entryAt(commit plumbing.Hash, p string) (hash plumbing.Hash, mode filemode.FileMode, err error) {
	c, err := s.commit(commit)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	p = strings.Trim(p, "/")
	if p == "" {
		return c.TreeHash, filemode.Dir, nil
	}
	t, err := s.tree(c.TreeHash)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	e, err := t.FindEntry(p)
	if err != nil {
		return plumbing.ZeroHash, 0, err
	}
	return e.Hash, e.Mode, nil
}

// typeOf is "commit", "tree", "blob", "tag" or "" for a missing object.
func (s *store) typeOf(sha string) string {
	if !hexRE.MatchString(sha) {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, err := s.object(plumbing.AnyObject, plumbing.NewHash(sha))
	if err != nil {
		return ""
	}
	return o.Type().String()
}

// blob reads a blob's content. Caller holds s.mu.
func (s *store) blob(h plumbing.Hash) ([]byte, error) {
	o, err := s.object(plumbing.BlobObject, h)
	if err != nil {
		return nil, err
	}
	rd, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// refs lists every ref under refs/ with the object it names (for-each-ref).
// It reads the ref files directly (loose refs override packed-refs, as in
// git): go-git's walk resolves every path component through its chroot,
// and the fake lists refs for every pull request event it sends.
func (s *store) refs() (map[string]string, error) { return s.refsUnder("refs/") }

// refsUnder is refs for the refs whose names start with dir ("refs/heads/").
func (s *store) refsUnder(dir string) (map[string]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, err := s.packedRefs()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for name, sha := range all {
		if strings.HasPrefix(name, dir) {
			m[name] = sha
		}
	}
	var sym []string
	root := filepath.Join(s.dir, filepath.FromSlash(strings.TrimSuffix(dir, "/")))
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // deleted while walking (a concurrent push)
			}
			return err
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		v := strings.TrimSpace(string(b))
		switch {
		case hexRE.MatchString(v):
			m[name] = v
		case strings.HasPrefix(v, "ref:"):
			sym = append(sym, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ghfake: listing refs of %s: %w", s.dir, err)
	}
	for _, name := range sym {
		delete(m, name)
		if h, ok := s.refValue(name); ok {
			m[name] = h.String()
		}
	}
	return m, nil
}

// packedRefs parses packed-refs (absent: none). Caller holds s.mu.
func (s *store) packedRefs() (map[string]string, error) {
	m := map[string]string{}
	b, err := os.ReadFile(filepath.Join(s.dir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ghfake: reading packed-refs: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok && hexRE.MatchString(sha) && strings.HasPrefix(name, "refs/") {
			m[name] = sha
		}
	}
	return m, nil
}

// ref returns the value of an exact ref name (show-ref --verify).
func (s *store) ref(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if validRefName(name) {
		// The common case, read directly (see refs).
		b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(name)))
		if err == nil {
			if v := strings.TrimSpace(string(b)); hexRE.MatchString(v) {
				return v, true
			}
		} else if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			m, err := s.packedRefs()
			if err != nil {
				return "", false
			}
			v, ok := m[name]
			return v, ok
		}
	}
	h, ok := s.refValue(name)
	if !ok {
		return "", false
	}
	return h.String(), true
}

// isAncestor reports whether commit a is reachable from commit b
// (merge-base --is-ancestor a b).
func (s *store) isAncestor(a, b string) bool {
	if !hexRE.MatchString(a) || !hexRE.MatchString(b) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ca, err := s.commit(plumbing.NewHash(a))
	if err != nil {
		return false
	}
	cb, err := s.commit(plumbing.NewHash(b))
	if err != nil {
		return false
	}
	if ca.Hash == cb.Hash {
		return true
	}
	ok, err := ca.IsAncestor(cb)
	return err == nil && ok
}

// commitInfo is what the fake shows of a commit.
type commitInfo struct {
	sha, tree              string
	authorName, authorMail string
	authorDate             time.Time
	committerName          string
	committerMail          string
	message                string // trimmed, as the fake showed %B
}

func infoOf(c *object.Commit) commitInfo {
	return commitInfo{
		sha: c.Hash.String(), tree: c.TreeHash.String(),
		authorName: c.Author.Name, authorMail: c.Author.Email, authorDate: c.Author.When,
		committerName: c.Committer.Name, committerMail: c.Committer.Email,
		message: strings.TrimSpace(c.Message),
	}
}

// log returns the commits reachable from head but not from exclude (""
// for none), at most max of them, oldest first: git log --reverse -n max
// exclude..head. The walk is git's default order: newest committer date
// first, ties in the order the commits were reached.
func (s *store) log(exclude, head string, max int) ([]commitInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hidden := map[plumbing.Hash]bool{}
	if exclude != "" {
		ex, err := s.commit(plumbing.NewHash(exclude))
		if err != nil {
			return nil, fmt.Errorf("ghfake: log: %w", err)
		}
		stack := []*object.Commit{ex}
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if hidden[c.Hash] {
				continue
			}
			hidden[c.Hash] = true
			for _, p := range c.ParentHashes {
				if hidden[p] {
					continue
				}
				pc, err := s.commit(p)
				if err != nil {
					return nil, fmt.Errorf("ghfake: log: %w", err)
				}
				stack = append(stack, pc)
			}
		}
	}
	start, err := s.commit(plumbing.NewHash(head))
	if err != nil {
		return nil, fmt.Errorf("ghfake: log: %w", err)
	}
	q := &commitQueue{}
	seen := map[plumbing.Hash]bool{start.Hash: true}
	heap.Push(q, queued{start, 0})
	seq := 1
	var out []commitInfo
	for q.Len() > 0 && len(out) < max {
		c := heap.Pop(q).(queued).c
		if hidden[c.Hash] {
			continue
		}
		out = append(out, infoOf(c))
		for _, p := range c.ParentHashes {
			if seen[p] || hidden[p] {
				continue
			}
			seen[p] = true
			pc, err := s.commit(p)
			if err != nil {
				return nil, fmt.Errorf("ghfake: log: %w", err)
			}
			heap.Push(q, queued{pc, seq})
			seq++
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

type queued struct {
	c   *object.Commit
	seq int
}

// commitQueue orders commits newest committer date first, then in the
// order they were queued.
type commitQueue []queued

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	ti, tj := q[i].c.Committer.When.Unix(), q[j].c.Committer.When.Unix()
	if ti != tj {
		return ti > tj
	}
	return q[i].seq < q[j].seq
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *commitQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// treeEntry is one line of ls-tree -l.
type treeEntry struct {
	name, kind, sha string // kind: blob, tree, commit
	size            int
}

// pathObject looks up path in the commit's tree: its type ("blob",
// "tree", "commit" for a submodule, "" when absent), hash and, for a blob,
// its content; for a tree, its entries.
func (s *store) pathObject(commit, p string) (typ, sha string, data []byte, entries []treeEntry, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, mode, err := s.entryAt(plumbing.NewHash(commit), p)
	if err != nil {
		return "", "", nil, nil, nil
	}
	switch mode {
	case filemode.Dir:
		t, err := s.tree(h)
		if err != nil {
			return "", "", nil, nil, fmt.Errorf("ghfake: tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			te := treeEntry{name: e.Name, sha: e.Hash.String()}
			switch e.Mode {
			case filemode.Dir:
				te.kind = "tree"
			case filemode.Submodule:
				te.kind = "commit"
			default:
				te.kind = "blob"
				o, err := s.object(plumbing.BlobObject, e.Hash)
				if err != nil {
					return "", "", nil, nil, fmt.Errorf("ghfake: blob %s: %w", e.Hash, err)
				}
				te.size = int(o.Size())
			}
			entries = append(entries, te)
		}
		return "tree", h.String(), nil, entries, nil
	case filemode.Submodule:
		return "commit", h.String(), nil, nil, nil
	default:
		data, err := s.blob(h)
		if err != nil {
			return "", "", nil, nil, fmt.Errorf("ghfake: blob %s: %w", h, err)
		}
		return "blob", h.String(), data, nil, nil
	}
}

// --- writes ---

// writeObject stores an object as a loose object. Caller holds s.mu.
func (s *store) writeObject(o interface {
	Encode(plumbing.EncodedObject) error
}) (plumbing.Hash, error) {
	eo := s.st.NewEncodedObject()
	if err := o.Encode(eo); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.st.SetEncodedObject(eo)
}

func (s *store) writeBlob(data []byte) (plumbing.Hash, error) {
	eo := s.st.NewEncodedObject()
	eo.SetType(plumbing.BlobObject)
	eo.SetSize(int64(len(data)))
	w, err := eo.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return s.st.SetEncodedObject(eo)
}

// commitTree writes a commit object (git commit-tree).
func (s *store) commitTree(tree string, parents []string, msg string, author, committer object.Signature) (string, error) {
	c := &object.Commit{Author: author, Committer: committer, Message: msg, TreeHash: plumbing.NewHash(tree)}
	for _, p := range parents {
		c.ParentHashes = append(c.ParentHashes, plumbing.NewHash(p))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.tree(c.TreeHash); err != nil {
		return "", fmt.Errorf("ghfake: commit-tree: tree %s: %w", tree, err)
	}
	for _, p := range c.ParentHashes {
		if _, err := s.commit(p); err != nil {
			return "", fmt.Errorf("ghfake: commit-tree: parent %s: %w", p, err)
		}
	}
	h, err := s.writeObject(c)
	if err != nil {
		return "", fmt.Errorf("ghfake: commit-tree: %w", err)
	}
	return h.String(), nil
}

// treeWithFiles returns the tree of parent ("" for none) with files
// (path -> content, mode 100644) written in, like read-tree, update-index
// --add and write-tree.
func (s *store) treeWithFiles(parent string, files map[string]string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	root := plumbing.ZeroHash
	if parent != "" {
		c, err := s.commit(plumbing.NewHash(parent))
		if err != nil {
			return "", fmt.Errorf("ghfake: commit %s: %w", parent, err)
		}
		root = c.TreeHash
	}
	h, err := s.editTree(root, files)
	if err != nil {
		return "", fmt.Errorf("ghfake: writing tree: %w", err)
	}
	return h.String(), nil
}

// editTree writes the tree h (zero for an empty one) with files (paths
// relative to it) replaced or added. Caller holds s.mu.
func (s *store) editTree(h plumbing.Hash, files map[string]string) (plumbing.Hash, error) {
	entries := map[string]object.TreeEntry{}
	if !h.IsZero() {
		t, err := s.tree(h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		for _, e := range t.Entries {
			entries[e.Name] = e
		}
	}
	sub := map[string]map[string]string{}
	for p, content := range files {
		p = strings.Trim(path.Clean("/"+p), "/")
		dir, rest, nested := strings.Cut(p, "/")
		if !nested {
			bh, err := s.writeBlob([]byte(content))
			if err != nil {
				return plumbing.ZeroHash, err
			}
			entries[p] = object.TreeEntry{Name: p, Mode: filemode.Regular, Hash: bh}
			continue
		}
		if sub[dir] == nil {
			sub[dir] = map[string]string{}
		}
		sub[dir][rest] = content
	}
	for dir, fs := range sub {
		base := plumbing.ZeroHash
		if e, ok := entries[dir]; ok && e.Mode == filemode.Dir {
			base = e.Hash
		}
		th, err := s.editTree(base, fs)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries[dir] = object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: th}
	}
	t := &object.Tree{}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	// git's tree order: names compared as if a directory's had a
	// trailing slash.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(t.Entries, func(i, j int) bool { return key(t.Entries[i]) < key(t.Entries[j]) })
	return s.writeObject(t)
}

// errRefChanged is a compare-and-swap failure of updateRef.
var errRefChanged = errors.New("ref changed")

// updateRef sets ref to sha if its current value is old (zeroSHA: the ref
// must not exist), with git's lock protocol so that git processes writing
// the same repository (pushes) and this one exclude each other.
func (s *store) updateRef(ref, sha, old string) error {
	if !validRefName(ref) || !hexRE.MatchString(sha) {
		return fmt.Errorf("ghfake: update-ref %s %s: invalid ref or object name", ref, sha)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.object(plumbing.AnyObject, plumbing.NewHash(sha)); err != nil {
		return fmt.Errorf("ghfake: update-ref %s: object %s: %w", ref, sha, err)
	}
	file := filepath.Join(s.dir, filepath.FromSlash(ref))
	lock := file + ".lock"
	lf, err := os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrNotExist) {
		// The ref's directory is new (mkdir only then: it is slow).
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			return fmt.Errorf("ghfake: update-ref %s: %w", ref, err)
		}
		lf, err = os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	if err != nil {
		return fmt.Errorf("ghfake: update-ref %s: cannot lock: %w", ref, err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = os.Remove(lock)
		}
	}()
	cur, exists := s.refValue(ref)
	switch {
	case old == zeroSHA && exists:
		_ = lf.Close()
		return fmt.Errorf("ghfake: update-ref %s: %w: it exists", ref, errRefChanged)
	case old != zeroSHA && (!exists || cur.String() != old):
		_ = lf.Close()
		return fmt.Errorf("ghfake: update-ref %s: %w: it is %s, not %s", ref, errRefChanged, cur, old)
	}
	if _, err := lf.WriteString(sha + "\n"); err != nil {
		_ = lf.Close()
		return fmt.Errorf("ghfake: update-ref %s: %w", ref, err)
	}
	if err := lf.Close(); err != nil {
		return fmt.Errorf("ghfake: update-ref %s: %w", ref, err)
	}
	if err := os.Rename(lock, file); err != nil {
		return fmt.Errorf("ghfake: update-ref %s: %w", ref, err)
	}
	committed = true
	return nil
}

// readFile returns the blob at path in rev (cat-file blob rev:path).
func (s *store) readFile(commit, p string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, mode, err := s.entryAt(plumbing.NewHash(commit), p)
	if err != nil || mode == filemode.Dir || mode == filemode.Submodule {
		return nil, false
	}
	data, err := s.blob(h)
	if err != nil {
		return nil, false
	}
	return data, true
}
