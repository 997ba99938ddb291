package gitops

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// go-git's own file:// transport runs the git-upload-pack and
// git-receive-pack programs. bazinga uses go-git only, so local remotes
// (local mode, tests) are served in-process by go-git's server instead. Unlike
// git's receive-pack it lets a push update the branch checked out in a
// non-bare repository; local mode then brings that checkout up to date itself.
func init() {
	client.InstallProtocol("file", casTransport{server.NewServer(localLoader{})})
}

// casTransport guards go-git's in-process receive-pack, which updates a ref
// to the new value without checking that it still holds the old one: pushes
// to one repository are serialised and each update must find the ref where
// the pusher saw it, or the push fails as "fetch first" (a person committing
// on the base while a merge lands must not be overwritten).
type casTransport struct{ transport.Transport }

func (t casTransport) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	s, err := t.Transport.NewReceivePackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	return &casReceive{ReceivePackSession: s, path: ep.Path}, nil
}

type casReceive struct {
	transport.ReceivePackSession
	path string
}

var (
	repoLocksMu sync.Mutex
	repoLocks   = map[string]*sync.Mutex{}
)

func repoLock(path string) *sync.Mutex {
	repoLocksMu.Lock()
	defer repoLocksMu.Unlock()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if repoLocks[path] == nil {
		repoLocks[path] = &sync.Mutex{}
	}
	return repoLocks[path]
}

func (r *casReceive) ReceivePack(ctx context.Context, req *packp.ReferenceUpdateRequest) (*packp.ReportStatus, error) {
	mu := repoLock(r.path)
	mu.Lock()
	defer mu.Unlock()
	st, err := localLoader{}.Load(&transport.Endpoint{Path: r.path})
	if err != nil {
		return nil, err
	}
	for _, cmd := range req.Commands {
		if cmd.Action() == packp.Create {
			continue
		}
		cur, err := st.Reference(cmd.Name)
		if err != nil || cur.Hash() != cmd.Old {
			if req.Packfile != nil {
				_ = req.Packfile.Close()
			}
			return nil, fmt.Errorf("! [rejected] %s (fetch first): it moved since the push began", cmd.Name.Short())
		}
	}
	return r.ReceivePackSession.ReceivePack(ctx, req)
}

// localLoader opens the repository at an endpoint path: bare, or a working
// tree with its .git directory (or a .git file pointing elsewhere).
type localLoader struct{}

func (localLoader) Load(ep *transport.Endpoint) (storer.Storer, error) {
	dir := ep.Path
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		if fi.IsDir() {
			dir = filepath.Join(dir, ".git")
		} else if b, err := os.ReadFile(filepath.Join(dir, ".git")); err == nil {
			gitdir := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "gitdir:"))
			if !filepath.IsAbs(gitdir) {
				gitdir = filepath.Join(dir, gitdir)
			}
			dir = gitdir
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	if _, err := os.Stat(filepath.Join(dir, "objects")); err != nil {
		return nil, transport.ErrRepositoryNotFound
	}
	return newAtomicStorage(dir), nil
}
