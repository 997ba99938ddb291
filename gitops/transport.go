package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Every fetch and push goes to the URL of the Remote the caller passes,
// through a client chosen here for that one operation: never through a
// working copy's configuration (which an agent can edit: remote URLs,
// pushurl, insteadOf) and never through go-git's process-wide protocol
// registry. Over HTTP the token goes only to that URL: redirects are
// refused rather than followed with or without it.

// errRefMoved: a ref was not where the pusher saw it (someone pushed
// first), or another process holds its lock; the push changed nothing.
var errRefMoved = errors.New("fetch first: the remote ref moved since it was read")

// ErrShallowHistory: the part of the history fetched so far does not
// decide the question (a merge base, an ancestry check), and fetching
// more was not possible or went past the bound.
var ErrShallowHistory = errors.New("not enough history fetched")

// refUpdate is one ref a push sets from Old to New (Old zero: create).
type refUpdate struct {
	Name     plumbing.ReferenceName
	Old, New plumbing.Hash
}

// wire is one remote repository reached at an explicit URL.
type wire interface {
	// refs lists the remote's references by full name (peeled tags are
	// left out; symbolic refs are resolved).
	refs(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error)
	// fetch stores the commits wants, with depth commits of history each
	// (0: all of it), and everything they reference, into local.
	fetch(ctx context.Context, local *localRepo, wants []plumbing.Hash, depth int) error
	// push sends objects from src and then sets each ref, refusing (with
	// errRefMoved) when the ref no longer holds Old.
	push(ctx context.Context, src storer.EncodedObjectStorer, objects []plumbing.Hash, updates []refUpdate) error
	// shallow tells whether fetch honours depth; a local remote copies its
	// object files instead, which is cheaper than any negotiation.
	shallow() bool
}

// localRepo is a repository of ours on disk: its git directory and the
// storage go-git reads and writes it through.
type localRepo struct {
	gitDir string
	st     storage.Storer
}

// dial returns the wire for remote.URL: a local path or file:// URL, or
// an http(s) URL.
func dial(remote Remote) (wire, error) {
	u := remote.URL
	if u == "" {
		return nil, errors.New("remote: empty URL")
	}
	switch {
	case strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://"):
		ep, err := transport.NewEndpoint(u)
		if err != nil {
			return nil, fmt.Errorf("remote %s: %w", remote, err)
		}
		return &httpWire{remote: remote, ep: ep, client: httpClient()}, nil
	case strings.HasPrefix(u, "file://"):
		return &localWire{path: strings.TrimPrefix(u, "file://")}, nil
	case strings.Contains(u, "://"):
		return nil, fmt.Errorf("remote %s: only local paths, file:// and http(s):// URLs are supported", remote)
	}
	return &localWire{path: u}, nil
}

// httpClient is a go-git smart-HTTP client for one operation: it follows
// no redirect, so the credential is never sent to a URL it was not given.
func httpClient() transport.Transport {
	return githttp.NewClientWithOptions(&http.Client{Transport: http.DefaultTransport},
		&githttp.ClientOptions{RedirectPolicy: githttp.NoFollowRedirects})
}

type httpWire struct {
	remote Remote
	ep     *transport.Endpoint
	client transport.Transport
}

func (w *httpWire) shallow() bool { return true }

func (w *httpWire) refs(ctx context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	s, err := w.client.NewUploadPackSession(w.ep, w.remote.auth())
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ar, err := s.AdvertisedReferencesContext(ctx)
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return map[plumbing.ReferenceName]plumbing.Hash{}, nil
		}
		return nil, err
	}
	return advRefs(ar)
}

func advRefs(ar *packp.AdvRefs) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	all, err := ar.AllReferences()
	if err != nil {
		return nil, err
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	for name, ref := range all {
		if ref.Type() == plumbing.HashReference {
			out[name] = ref.Hash()
		}
	}
	return out, nil
}

func (w *httpWire) fetch(ctx context.Context, local *localRepo, wants []plumbing.Hash, depth int) (err error) {
	s, err := w.client.NewUploadPackSession(w.ep, w.remote.auth())
	if err != nil {
		return err
	}
	defer s.Close()
	ar, err := s.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	// A thin pack may hold deltas against objects outside it, which
	// go-git cannot index; a whole pack is only slightly larger.
	req.Capabilities.Delete(capability.ThinPack)
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	shallows, err := local.st.Shallow()
	if err != nil {
		return fmt.Errorf("reading the shallow list: %w", err)
	}
	if depth > 0 || len(shallows) > 0 {
		if !ar.Capabilities.Supports(capability.Shallow) {
			return fmt.Errorf("%w: the server cannot send part of the history", ErrShallowHistory)
		}
		if err := req.Capabilities.Set(capability.Shallow); err != nil {
			return err
		}
		req.Shallows = shallows
	}
	if depth > 0 {
		req.Depth = packp.DepthCommits(depth)
	}
	req.Wants = wants
	// What we already have (with its shallow boundary, sent above) need
	// not come again; deepening asks for parents of the old boundary.
	for _, h := range wants {
		if ok, _ := hasObject(local.st, h); ok {
			req.Haves = append(req.Haves, h)
		}
	}
	if req.IsEmpty() {
		return nil
	}
	resp, err := s.UploadPack(ctx, req)
	if err != nil {
		if errors.Is(err, transport.ErrEmptyUploadPackRequest) {
			return nil
		}
		return err
	}
	defer func() {
		if cerr := resp.Close(); err == nil && cerr != nil {
			err = cerr
		}
	}()
	var r io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	if err := packfile.UpdateObjectStorage(local.st, r); err != nil && !errors.Is(err, packfile.ErrEmptyPackfile) {
		return fmt.Errorf("storing the fetched objects: %w", err)
	}
	if depth > 0 || len(shallows) > 0 {
		return updateShallow(local.st, shallows, resp.Shallows, resp.Unshallows)
	}
	return nil
}

// updateShallow records the new history boundary: commits the server
// cut at are shallow, commits it sent the parents of no longer are.
func updateShallow(st storage.Storer, old, add, remove []plumbing.Hash) error {
	set := map[plumbing.Hash]bool{}
	for _, h := range old {
		set[h] = true
	}
	for _, h := range add {
		set[h] = true
	}
	for _, h := range remove {
		delete(set, h)
	}
	list := make([]plumbing.Hash, 0, len(set))
	for h := range set {
		list = append(list, h)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].String() < list[j].String() })
	if err := st.SetShallow(list); err != nil {
		return fmt.Errorf("writing the shallow list: %w", err)
	}
	return nil
}

func (w *httpWire) push(ctx context.Context, src storer.EncodedObjectStorer, objects []plumbing.Hash, updates []refUpdate) (err error) {
	s, err := w.client.NewReceivePackSession(w.ep, w.remote.auth())
	if err != nil {
		return err
	}
	defer s.Close()
	ar, err := s.AdvertisedReferencesContext(ctx)
	if err != nil {
		return err
	}
	cur, err := advRefs(ar)
	if err != nil {
		return err
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	if ar.Capabilities.Supports(capability.Atomic) {
		_ = req.Capabilities.Set(capability.Atomic)
	}
	for _, u := range updates {
		if cur[u.Name] != u.Old {
			return fmt.Errorf("%s: %w", u.Name.Short(), errRefMoved)
		}
		req.Commands = append(req.Commands, &packp.Command{Name: u.Name, Old: u.Old, New: u.New})
	}
	pr, pw := io.Pipe()
	req.Packfile = pr
	done := make(chan error, 1)
	go func() {
		done <- pw.CloseWithError(encodePack(pw, src, objects, !ar.Capabilities.Supports(capability.OFSDelta)))
	}()
	rs, err := s.ReceivePack(ctx, req)
	_ = pr.Close()
	if perr := <-done; err == nil && perr != nil {
		err = perr
	}
	if err != nil {
		return err
	}
	if rs != nil {
		if err := rs.Error(); err != nil {
			return err
		}
	}
	return nil
}

// encodePack writes objects from src as one packfile. The window is small:
// a step's push is a handful of new objects.
func encodePack(w io.Writer, src storer.EncodedObjectStorer, objects []plumbing.Hash, refDeltas bool) error {
	_, err := packfile.NewEncoder(w, src, refDeltas).Encode(objects, 10)
	return err
}

// localWire is a repository on this machine (local mode, tests). A fetch
// links (or copies) its object files, as `git clone --local` does, rather
// than packing them; a push writes the new objects as a pack and moves each
// ref only if it still holds the value the pusher saw (casRef), so a person
// committing on the base while a merge lands is not overwritten. Unlike git's
// receive-pack it lets a push update the branch checked out in a non-bare
// repository; local mode then brings that checkout up to date itself.
type localWire struct{ path string }

func (w *localWire) shallow() bool { return false }

// dirs finds the repository's git directory and the directory holding its
// objects and shared refs (different for a linked worktree).
func (w *localWire) dirs() (gitDir, common string, err error) {
	gitDir = w.path
	if fi, err := os.Stat(filepath.Join(gitDir, ".git")); err == nil {
		if fi.IsDir() {
			gitDir = filepath.Join(gitDir, ".git")
		} else if b, err := os.ReadFile(filepath.Join(gitDir, ".git")); err == nil {
			g := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "gitdir:"))
			if !filepath.IsAbs(g) {
				g = filepath.Join(gitDir, g)
			}
			gitDir = g
		}
	}
	common = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = c
	}
	if _, err := os.Stat(filepath.Join(gitDir, "HEAD")); err != nil {
		return "", "", fmt.Errorf("%s: %w", w.path, transport.ErrRepositoryNotFound)
	}
	if _, err := os.Stat(filepath.Join(common, "objects")); err != nil {
		return "", "", fmt.Errorf("%s: %w", w.path, transport.ErrRepositoryNotFound)
	}
	return gitDir, common, nil
}

func (w *localWire) storage() (*filesystem.Storage, string, error) {
	_, common, err := w.dirs()
	if err != nil {
		return nil, "", err
	}
	return newAtomicStorage(common).Storage, common, nil
}

func (w *localWire) refs(context.Context) (map[plumbing.ReferenceName]plumbing.Hash, error) {
	st, _, err := w.storage()
	if err != nil {
		return nil, err
	}
	iter, err := st.IterReferences()
	if err != nil {
		return nil, err
	}
	out := map[plumbing.ReferenceName]plumbing.Hash{}
	err = iter.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference && strings.HasPrefix(r.Name().String(), "refs/") {
			out[r.Name()] = r.Hash()
		}
		return nil
	})
	return out, err
}

// fetch makes every object of the remote available to local: pack files
// are hard-linked (copied across file systems), loose objects likewise.
// depth is irrelevant: no history is cut, and nothing is transferred.
func (w *localWire) fetch(ctx context.Context, local *localRepo, wants []plumbing.Hash, _ int) error {
	_, common, err := w.dirs()
	if err != nil {
		return err
	}
	src := filepath.Join(common, "objects")
	dst := filepath.Join(local.gitDir, "objects")
	// A repack in the remote between listing and linking removes a pack
	// we were about to link; a second pass finds the new one.
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := linkObjects(src, dst)
		if fs, ok := local.st.(interface{ Reindex() }); ok {
			fs.Reindex()
		}
		missing := false
		for _, h := range wants {
			if ok, _ := hasObject(local.st, h); !ok {
				missing = true
			}
		}
		if err == nil && !missing {
			return nil
		}
		if attempt == 2 {
			if err == nil {
				err = fmt.Errorf("objects of %s missing after copying", w.path)
			}
			return err
		}
	}
}

// linkObjects links the object files of src into dst, keeping what dst
// has. Pack indexes are linked after their packs so a reader never sees an
// index without its pack.
func linkObjects(src, dst string) error {
	var idx []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel == "info" || strings.HasPrefix(rel, "pack"+string(filepath.Separator)+"tmp") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if strings.HasPrefix(name, "tmp") || strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".keep") {
			return nil
		}
		if strings.HasSuffix(name, ".idx") {
			idx = append(idx, rel)
			return nil
		}
		return linkFile(p, filepath.Join(dst, rel))
	})
	if err != nil {
		return fmt.Errorf("linking objects from %s: %w", src, err)
	}
	for _, rel := range idx {
		if err := linkFile(filepath.Join(src, rel), filepath.Join(dst, rel)); err != nil {
			return fmt.Errorf("linking objects from %s: %w", src, err)
		}
	}
	return nil
}

func linkFile(from, to string) error {
	if _, err := os.Lstat(to); err == nil {
		return nil // objects are immutable: what is there is the same
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	err := os.Link(from, to)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// Another file system (or no hard links): copy through a temporary
	// file so a reader never sees half an object.
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(to), "tmp-link-")
	if err != nil {
		return err
	}
	_, cerr := io.Copy(tmp, in)
	if err := errors.Join(cerr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	_ = os.Chmod(tmp.Name(), 0o444)
	if err := os.Rename(tmp.Name(), to); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

func (w *localWire) push(ctx context.Context, src storer.EncodedObjectStorer, objects []plumbing.Hash, updates []refUpdate) error {
	st, common, err := w.storage()
	if err != nil {
		return err
	}
	if len(objects) > 0 {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(encodePack(pw, src, objects, false)) }()
		err := packfile.UpdateObjectStorage(st, pr)
		_ = pr.Close()
		if err != nil {
			return fmt.Errorf("writing objects into %s: %w", w.path, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, u := range updates {
		if err := casRef(ctx, common, st, u); err != nil {
			return err
		}
	}
	return nil
}

// casRef moves one ref from u.Old to u.New. It holds the repository's
// ref lock (lockRefs: a kernel lock that dies with its holder, so a killed
// run never leaves the repository locked), respects a <ref>.lock a git
// process holds, checks the current value and replaces the ref file
// through a rename.
func casRef(ctx context.Context, gitDir string, st storer.ReferenceStorer, u refUpdate) error {
	unlock, err := lockRefs(ctx, gitDir)
	if err != nil {
		return fmt.Errorf("locking the refs of %s: %w", gitDir, err)
	}
	defer unlock()
	path := filepath.Join(gitDir, filepath.FromSlash(u.Name.String()))
	if _, err := os.Stat(path + ".lock"); err == nil {
		return fmt.Errorf("%s is locked by another process (%s.lock): %w", u.Name.Short(), path, errRefMoved)
	}
	var cur plumbing.Hash
	ref, err := st.Reference(u.Name)
	switch {
	case err == nil:
		cur = ref.Hash()
	case !errors.Is(err, plumbing.ErrReferenceNotFound):
		return fmt.Errorf("reading %s: %w", u.Name, err)
	}
	if cur != u.Old {
		return fmt.Errorf("! [rejected] %s: %w", u.Name.Short(), errRefMoved)
	}
	if err := WriteFileAtomic(gitDir, path, []byte(u.New.String()+"\n"), 0o644); err != nil {
		return fmt.Errorf("updating %s: %w", u.Name, err)
	}
	return nil
}

func hasObject(s storer.EncodedObjectStorer, h plumbing.Hash) (bool, error) {
	err := s.HasEncodedObject(h)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	return false, err
}

// LockRefs holds the ref lock of the repository at dir (a working tree or
// a git directory) that local pushes take (see casRef) until unlock is
// called: for code that must read a branch and write it back unchanged
// (go-git's Reset rewrites the current branch) without undoing a push made
// in between.
func LockRefs(ctx context.Context, dir string) (unlock func(), err error) {
	_, common, err := (&localWire{path: dir}).dirs()
	if err != nil {
		return nil, err
	}
	return lockRefs(ctx, common)
}
