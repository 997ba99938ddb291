package gitops

import (
	"errors"
	"log/slog"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// mergeStore is the object store a merge reads through. A repository
// opened the ordinary way (git.PlainOpen) reopens its pack file for every
// object it reads: a stat, an open and a close per commit, tree and blob,
// which on a deep history is most of a merge's time. For the merge's
// duration, reads go through a second view of the same directory that
// keeps its pack files open; writes (the merged trees and blobs) still go
// through the caller's store. Anything the fast view cannot find (for
// instance objects behind alternates it was not told about) is read from
// the caller's store.
type mergeStore struct {
	*filesystem.Storage                            // reads
	orig                storer.EncodedObjectStorer // writes, and the fallback
}

// newMergeStore returns the store to merge with and a function releasing
// it; for stores other than go-git's filesystem one it is s itself.
func newMergeStore(s storer.EncodedObjectStorer) (storer.EncodedObjectStorer, func()) {
	fs, ok := s.(*filesystem.Storage)
	if !ok {
		return s, func() {}
	}
	fast := filesystem.NewStorageWithOptions(fs.Filesystem(), cache.NewObjectLRUDefault(),
		filesystem.Options{KeepDescriptors: true})
	return &mergeStore{Storage: fast, orig: s}, func() {
		if err := fast.Close(); err != nil {
			// Read-only descriptors; nothing was written through them.
			slog.Debug("merge: closing pack files", "err", err)
		}
	}
}

func (m *mergeStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, err := m.Storage.EncodedObject(t, h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return m.orig.EncodedObject(t, h)
	}
	return obj, err
}

func (m *mergeStore) HasEncodedObject(h plumbing.Hash) error {
	if err := m.Storage.HasEncodedObject(h); !errors.Is(err, plumbing.ErrObjectNotFound) {
		return err
	}
	return m.orig.HasEncodedObject(h)
}

func (m *mergeStore) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	n, err := m.Storage.EncodedObjectSize(h)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return m.orig.EncodedObjectSize(h)
	}
	return n, err
}

func (m *mergeStore) NewEncodedObject() plumbing.EncodedObject { return m.orig.NewEncodedObject() }

func (m *mergeStore) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	return m.orig.SetEncodedObject(obj)
}
