package gitops

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// A working copy holds only part of the history: each branch is fetched
// shallow and deepened when a question needs more. The walks here read a
// shallow commit as a root (as git does), and say when the answer could
// change with more history, so the caller fetches more and asks again.

const (
	flagP1 = 1 << iota
	flagP2
	flagStale
	flagResult
)

// commitQueue orders commits newest first (ties: first queued first), the
// order git's merge-base walk uses.
type commitQueue struct {
	items []queued
	n     int
}

type queued struct {
	c   *object.Commit
	seq int
}

func (q *commitQueue) Len() int { return len(q.items) }
func (q *commitQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if !a.c.Committer.When.Equal(b.c.Committer.When) {
		return a.c.Committer.When.After(b.c.Committer.When)
	}
	return a.seq < b.seq
}
func (q *commitQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *commitQueue) Push(x any)    { q.items = append(q.items, x.(queued)) }
func (q *commitQueue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}
func (q *commitQueue) push(c *object.Commit) { q.n++; heap.Push(q, queued{c: c, seq: q.n}) }
func (q *commitQueue) pop() *object.Commit   { return heap.Pop(q).(queued).c }

// graph reads commits of a possibly shallow repository.
type graph struct {
	s       storer.EncodedObjectStorer
	shallow map[plumbing.Hash]bool
	commits map[plumbing.Hash]*object.Commit
}

func newGraph(st storage.Storer) (*graph, error) {
	sh, err := st.Shallow()
	if err != nil {
		return nil, fmt.Errorf("reading the shallow list: %w", err)
	}
	g := &graph{s: st, shallow: map[plumbing.Hash]bool{}, commits: map[plumbing.Hash]*object.Commit{}}
	for _, h := range sh {
		g.shallow[h] = true
	}
	return g, nil
}

func (g *graph) commit(h plumbing.Hash) (*object.Commit, error) {
	if c, ok := g.commits[h]; ok {
		return c, nil
	}
	c, err := object.GetCommit(g.s, h)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", h, err)
	}
	g.commits[h] = c
	return c, nil
}

// parents are a commit's parents as far as the history goes: none for a
// commit at the shallow boundary.
func (g *graph) parents(c *object.Commit) []plumbing.Hash {
	if g.shallow[c.Hash] {
		return nil
	}
	return c.ParentHashes
}

// mergeBases finds the best common ancestors of a and b with git's
// algorithm (paint both sides down in date order until only commits known
// to be below a common ancestor remain). decided is false when the walk
// reached the shallow boundary on a path only one side had painted: more
// history could hold a common ancestor (or a better one).
func (g *graph) mergeBases(a, b plumbing.Hash) (bases []plumbing.Hash, decided bool, err error) {
	if a == b {
		return []plumbing.Hash{a}, true, nil
	}
	flags := map[plumbing.Hash]int{}
	var q commitQueue
	ca, err := g.commit(a)
	if err != nil {
		return nil, false, err
	}
	cb, err := g.commit(b)
	if err != nil {
		return nil, false, err
	}
	flags[a] |= flagP1
	flags[b] |= flagP2
	q.push(ca)
	q.push(cb)
	decided = true
	var results []plumbing.Hash
	nonStale := func() bool {
		for _, it := range q.items {
			if flags[it.c.Hash]&flagStale == 0 {
				return true
			}
		}
		return false
	}
	for q.Len() > 0 && nonStale() {
		c := q.pop()
		f := flags[c.Hash] & (flagP1 | flagP2 | flagStale)
		if f == flagP1|flagP2 {
			if flags[c.Hash]&flagResult == 0 {
				flags[c.Hash] |= flagResult
				results = append(results, c.Hash)
			}
			f |= flagStale
		}
		if g.shallow[c.Hash] && f&flagStale == 0 {
			// Painted by one side only, and its parents are not here.
			decided = false
		}
		for _, p := range g.parents(c) {
			if flags[p]&f == f {
				continue
			}
			pc, err := g.commit(p)
			if err != nil {
				return nil, false, err
			}
			flags[p] |= f
			q.push(pc)
		}
	}
	for _, h := range results {
		// A result later reached from another one is below it: not best.
		if flags[h]&flagStale == 0 {
			bases = append(bases, h)
		}
	}
	bases, err = g.independent(bases)
	if err != nil {
		return nil, false, err
	}
	if len(bases) == 0 && len(g.shallow) > 0 {
		decided = false
	}
	return bases, decided, nil
}

// independent drops every commit that is an ancestor of another in the list
// (git's remove_redundant), within the history at hand.
func (g *graph) independent(hs []plumbing.Hash) ([]plumbing.Hash, error) {
	if len(hs) < 2 {
		return hs, nil
	}
	var out []plumbing.Hash
	for i, h := range hs {
		redundant := false
		for j, o := range hs {
			if i == j {
				continue
			}
			anc, err := g.reaches(o, h)
			if err != nil {
				return nil, err
			}
			if anc {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, h)
		}
	}
	return out, nil
}

// reaches tells whether target is reachable from start in the history at
// hand.
func (g *graph) reaches(start, target plumbing.Hash) (bool, error) {
	seen := map[plumbing.Hash]bool{start: true}
	stack := []plumbing.Hash{start}
	for len(stack) > 0 {
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if h == target {
			return true, nil
		}
		c, err := g.commit(h)
		if err != nil {
			return false, err
		}
		for _, p := range g.parents(c) {
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false, nil
}

// mergeDecided tells whether the history at hand decides the merge of a
// and b as ThreeWayMerge computes it: their merge bases, and for several
// (criss-cross), the merge bases of those in turn, recursively.
func (g *graph) mergeDecided(a, b plumbing.Hash, level int) (bool, error) {
	bases, decided, err := g.mergeBases(a, b)
	if err != nil || !decided {
		return false, err
	}
	if len(bases) < 2 || level > 8 {
		return true, nil
	}
	first := bases[0]
	for _, h := range bases[1:] {
		if h.String() < first.String() {
			first = h
		}
	}
	for _, h := range bases {
		if h == first {
			continue
		}
		ok, err := g.mergeDecided(first, h, level+1)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// isAncestor tells whether a is an ancestor of (or equal to) b.
func (g *graph) isAncestor(a, b plumbing.Hash) (bool, error) {
	if a == b {
		return true, nil
	}
	bases, decided, err := g.mergeBases(a, b)
	if err != nil {
		return false, err
	}
	for _, h := range bases {
		if h == a {
			return true, nil
		}
	}
	if !decided {
		return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, ErrShallowHistory)
	}
	return false, nil
}

// graftStorage shows the commits at the shallow boundary without parents,
// as git does, so go-git's history walks (which fail on a missing parent)
// stop there. Everything else passes through.
type graftStorage struct {
	storage.Storer
	shallow map[plumbing.Hash]bool
}

func newGraftStorage(st storage.Storer) (storage.Storer, error) {
	sh, err := st.Shallow()
	if err != nil {
		return nil, fmt.Errorf("reading the shallow list: %w", err)
	}
	if len(sh) == 0 {
		return st, nil
	}
	g := graftStorage{Storer: st, shallow: map[plumbing.Hash]bool{}}
	for _, h := range sh {
		g.shallow[h] = true
	}
	return g, nil
}

func (g graftStorage) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := g.Storer.EncodedObject(t, h)
	if err != nil || !g.shallow[h] || o.Type() != plumbing.CommitObject {
		return o, err
	}
	return withoutParents(o)
}

// withoutParents is a commit object with its parent lines removed that
// keeps its own hash (it stands for the commit, not a new one).
func withoutParents(o plumbing.EncodedObject) (plumbing.EncodedObject, error) {
	r, err := o.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	body, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	end := bytes.Index(body, []byte("\n\n"))
	if end < 0 {
		end = len(body)
	}
	var out bytes.Buffer
	for _, line := range bytes.SplitAfter(body[:end], []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("parent ")) {
			out.Write(line)
		}
	}
	out.Write(body[end:])
	m := &plumbing.MemoryObject{}
	m.SetType(plumbing.CommitObject)
	if _, err := m.Write(out.Bytes()); err != nil {
		return nil, err
	}
	return fixedHash{MemoryObject: m, h: o.Hash()}, nil
}

type fixedHash struct {
	*plumbing.MemoryObject
	h plumbing.Hash
}

func (f fixedHash) Hash() plumbing.Hash { return f.h }

// objectsToSend lists what a push of news must send to a remote that has
// the commits haves (and, being where our history came from, the commits
// at our shallow boundary): the commits reachable from news and not from
// haves, and the trees and blobs they introduce compared to their parents.
// The walk goes down in date order and stops when only commits the remote
// has are left, as git's does.
func objectsToSend(st storage.Storer, news, haves []plumbing.Hash) ([]plumbing.Hash, error) {
	g, err := newGraph(st)
	if err != nil {
		return nil, err
	}
	const unint = 1
	flags := map[plumbing.Hash]int{}
	queuedOnce := map[plumbing.Hash]bool{}
	var q commitQueue
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
		q.push(c)
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
			if flags[it.c.Hash]&unint == 0 {
				return true
			}
		}
		return false
	}
	var commits []*object.Commit
	done := map[plumbing.Hash]bool{}
	for q.Len() > 0 && interesting() {
		c := q.pop()
		f := flags[c.Hash]
		if f&unint == 0 {
			if done[c.Hash] {
				continue
			}
			done[c.Hash] = true
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
		if flags[c.Hash]&unint != 0 {
			continue // found below a have after all (clock skew)
		}
		if !seen[c.Hash] {
			seen[c.Hash] = true
			out = append(out, c.Hash)
		}
		var parentTrees []plumbing.Hash
		for _, p := range c.ParentHashes {
			pc, err := g.commit(p)
			if err != nil {
				return nil, err
			}
			parentTrees = append(parentTrees, pc.TreeHash)
		}
		if err := newObjects(tr, c.TreeHash, parentTrees, seen, &out); err != nil {
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
