package gitops

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage"
)

// objectsToSend lists what a push of news must send to a remote that has
// the commits haves (and, being where our history came from, the commits
// at our shallow boundary): the commits reachable from news and not from
// haves, and the trees and blobs they introduce compared to their parents.
// The walk goes down in date order and stops when only commits the remote
// has are left, as git's does.
func objectsToSend(st storage.Storer, news, haves []plumbing.Hash) ([]plumbing.Hash, error) {
	g, err := newHistoryGraph(st)
	if err != nil {
		return nil, err
	}
	const unint = 1
	flags := map[plumbing.Hash]int{}
	queuedOnce := map[plumbing.Hash]bool{}
	var q dateQueue
	add := func(h plumbing.Hash, f int) error {
		if g.shallow[h] {
			f = unint
		}
		if queuedOnce[h] && flags[h]|f == flags[h] {
			return nil
		}
		flags[h] |= f
		c, err := g.commit(h)
		if err != nil {
			return err
		}
		queuedOnce[h] = true
		q.put(c)
		return nil
	}
	for _, h := range haves {
		if ok, _ := hasObject(st, h); ok {
			if err := add(h, unint); err != nil {
				return nil, err
			}
		}
	}
	for _, h := range news {
		if err := add(h, 0); err != nil {
			return nil, err
		}
	}
	interesting := func() bool {
		for _, it := range q.items {
			if flags[it.c.hash]&unint == 0 {
				return true
			}
		}
		return false
	}
	var commits []*mbCommit
	done := map[plumbing.Hash]bool{}
	for q.Len() > 0 && interesting() {
		c := q.pop()
		f := flags[c.hash]
		if f&unint == 0 {
			if done[c.hash] {
				continue
			}
			done[c.hash] = true
			commits = append(commits, c)
		}
		for _, p := range g.parents(c) {
			if f&unint != 0 {
				if ok, _ := hasObject(st, p); !ok {
					continue // below what we fetched: the remote has it
				}
			}
			if err := add(p, f&unint); err != nil {
				return nil, err
			}
		}
	}
	seen := map[plumbing.Hash]bool{}
	var out []plumbing.Hash
	tr := newTreeReader(st)
	for _, c := range commits {
		if flags[c.hash]&unint != 0 {
			continue // found below a have after all (clock skew)
		}
		if !seen[c.hash] {
			seen[c.hash] = true
			out = append(out, c.hash)
		}
		var parentTrees []plumbing.Hash
		for _, p := range c.parents {
			pc, err := g.commit(p)
			if err != nil {
				return nil, err
			}
			parentTrees = append(parentTrees, pc.tree)
		}
		if err := newObjects(tr, c.tree, parentTrees, seen, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// newObjects adds tree and everything below it that none of the parent
// trees has at the same path.
func newObjects(tr *treeReader, tree plumbing.Hash, parents []plumbing.Hash, seen map[plumbing.Hash]bool, out *[]plumbing.Hash) error {
	for _, p := range parents {
		if p == tree {
			return nil
		}
	}
	if !seen[tree] {
		seen[tree] = true
		*out = append(*out, tree)
	}
	t, err := tr.tree(tree)
	if err != nil {
		return err
	}
	var pts []*object.Tree
	for _, p := range parents {
		if p.IsZero() {
			continue
		}
		pt, err := tr.tree(p)
		if err != nil {
			return err
		}
		pts = append(pts, pt)
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Submodule {
			continue // a gitlink names a commit of another repository
		}
		var same bool
		var sub []plumbing.Hash
		for _, pt := range pts {
			pe, err := pt.FindEntry(e.Name)
			if err != nil {
				if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
					continue
				}
				return err
			}
			if pe.Hash == e.Hash {
				same = true
				break
			}
			if pe.Mode == filemode.Dir {
				sub = append(sub, pe.Hash)
			}
		}
		if same {
			continue
		}
		if e.Mode == filemode.Dir {
			if err := newObjects(tr, e.Hash, sub, seen, out); err != nil {
				return err
			}
			continue
		}
		if !seen[e.Hash] {
			seen[e.Hash] = true
			*out = append(*out, e.Hash)
		}
	}
	return nil
}
