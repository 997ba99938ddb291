package gitops

import (
	"log/slog"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// mergeStore is the object store a merge works with: reads come from the
// repository's pack files through packReader when it has the object
// (see packread.go for why), everything else — loose objects, alternates,
// and every write (the merged trees and blobs) — goes through the
// caller's store.
type mergeStore struct {
	storer.EncodedObjectStorer // the caller's store
	packs                      *packReader
}

// newMergeStore returns the store to merge with and a function releasing
// it; for stores other than go-git's filesystem one it is s itself.
func newMergeStore(s storer.EncodedObjectStorer) (storer.EncodedObjectStorer, func()) {
	fs, ok := s.(*filesystem.Storage)
	if !ok {
		return s, func() {}
	}
	packs, err := openPackReader(fs.Filesystem())
	if err != nil {
		// Unreadable by us (an old index format, say): go-git reads it.
		slog.Debug("merge: reading packs through go-git", "err", err)
		return s, func() {}
	}
	if packs == nil {
		return s, func() {}
	}
	return &mergeStore{EncodedObjectStorer: s, packs: packs}, packs.Close
}

func (m *mergeStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	obj, ok, err := m.packs.object(h)
	if err != nil {
		return nil, err
	}
	if !ok {
		return m.EncodedObjectStorer.EncodedObject(t, h)
	}
	if t != plumbing.AnyObject && obj.Type() != t {
		return nil, plumbing.ErrObjectNotFound
	}
	return obj, nil
}

func (m *mergeStore) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := m.packs.locate(h); ok {
		return nil
	}
	return m.EncodedObjectStorer.HasEncodedObject(h)
}

func (m *mergeStore) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	n, ok, err := m.packs.size(h)
	if err != nil {
		return 0, err
	}
	if !ok {
		return m.EncodedObjectStorer.EncodedObjectSize(h)
	}
	return n, nil
}
