package gitops

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// go-git's own file:// transport runs the git-upload-pack and
// git-receive-pack programs. bazinga uses go-git only, so local remotes
// (local mode, tests) are served in-process by go-git's server instead. Unlike
// git's receive-pack it lets a push update the branch checked out in a
// non-bare repository; local mode then brings that checkout up to date itself.
func init() {
	client.InstallProtocol("file", server.NewServer(localLoader{}))
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
	return filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()), nil
}
