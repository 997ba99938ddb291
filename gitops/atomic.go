package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// atomicStorage is go-git's filesystem storage with the writes that replace
// a file in place — references and the index — done through a temporary
// file and a rename. go-git truncates a ref file and then writes it, so a
// process killed in between leaves an empty ref and a repository that no
// longer opens; local mode writes into the user's own repository and may be
// killed at any moment, so every such write must leave the old file or the new.
type atomicStorage struct {
	*filesystem.Storage
	gitDir string
}

func newAtomicStorage(gitDir string) atomicStorage {
	return atomicStorage{Storage: filesystem.NewStorage(osfs.New(gitDir), cache.NewObjectLRUDefault()), gitDir: gitDir}
}

func (s atomicStorage) SetReference(ref *plumbing.Reference) error { return s.writeRef(ref) }

func (s atomicStorage) CheckAndSetReference(ref, old *plumbing.Reference) error {
	if old != nil {
		cur, err := s.Storage.Reference(old.Name())
		if err != nil {
			return err
		}
		if cur.Hash() != old.Hash() {
			return storage.ErrReferenceHasChanged
		}
	}
	return s.writeRef(ref)
}

func (s atomicStorage) writeRef(ref *plumbing.Reference) error {
	var content string
	switch ref.Type() {
	case plumbing.HashReference:
		content = ref.Hash().String() + "\n"
	case plumbing.SymbolicReference:
		content = "ref: " + ref.Target().String() + "\n"
	default:
		return fmt.Errorf("reference %s has no type", ref.Name())
	}
	return WriteFileAtomic(s.gitDir, filepath.Join(s.gitDir, filepath.FromSlash(ref.Name().String())), []byte(content), 0o644)
}

func (s atomicStorage) SetIndex(idx *index.Index) error {
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(idx); err != nil {
		return fmt.Errorf("encoding the index: %w", err)
	}
	return WriteFileAtomic(s.gitDir, filepath.Join(s.gitDir, "index"), buf.Bytes(), 0o644)
}

// WriteFileAtomic replaces path with body through a synced temporary file
// in tmpDir (on the same file system) and a rename, so a reader — or a run
// resumed after a kill — sees the old file or the new one, never half. Put
// tmpDir where a leftover temporary file is harmless: the .git directory, not
// refs/ (where it would read as a broken reference) nor a working tree.
func WriteFileAtomic(tmpDir, path string, body []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(tmpDir, ".bazinga-tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(body)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr, os.Chmod(name, perm)); err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// OpenWorktree opens a repository with a working tree (not bare) whose refs
// and index are written atomically: the way to open a repository that is
// someone's own, as local mode does.
func OpenWorktree(dir string) (*git.Repository, error) {
	gitDir := filepath.Join(dir, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", dir, git.ErrRepositoryNotExists)
	}
	repo, err := git.Open(newAtomicStorage(gitDir), osfs.New(dir))
	if err != nil {
		return nil, fmt.Errorf("opening repository %s: %w", dir, err)
	}
	return repo, nil
}
