package gitops

import (
	"bytes"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// Merge-base search the way git does it (commit-reach.c, without a
// commit-graph): walk down from both commits newest-first by committer
// date, painting what each side reaches, and stop as soon as everything
// left to walk is reachable from both. Only the commits since the fork
// point (and a few around it) are read, where go-git's Commit.MergeBase
// indexes every ancestor of one side — the whole history, which on a
// repository of tens of thousands of commits costs seconds per merge.
// Following git's order exactly also gives git's answer when committer
// dates are skewed.
//
// A working copy holds only part of the history: each branch is fetched
// shallow and deepened when a question needs more. The walk reads a
// commit at the shallow boundary as a root (as git does) and says when
// the answer could change with more history (decided), so the caller
// fetches more and asks again.

const (
	mbParent1 uint8 = 1 << iota
	mbParent2
	mbStale
	mbResult
)

// mbCommit is the part of a commit the search and the merge need.
type mbCommit struct {
	hash    plumbing.Hash
	tree    plumbing.Hash
	parents []plumbing.Hash
	date    int64
	flags   uint8
}

// commitGraph reads commits once and keeps them for the merge.
type commitGraph struct {
	s storer.EncodedObjectStorer
	// shallow are the commits at the shallow boundary: their parents
	// are not in the repository.
	shallow map[plumbing.Hash]bool
	commits map[plumbing.Hash]*mbCommit
	touched []*mbCommit // commits whose flags are set
	// nvirtual counts virtual merge-base commits made so far.
	nvirtual int
}

// newCommitGraph reads commits from s; shallow lists the commits whose
// parents s lacks.
func newCommitGraph(s storer.EncodedObjectStorer, shallow []plumbing.Hash) *commitGraph {
	g := &commitGraph{s: s, shallow: map[plumbing.Hash]bool{}, commits: map[plumbing.Hash]*mbCommit{}}
	for _, h := range shallow {
		g.shallow[h] = true
	}
	return g
}

// newHistoryGraph is the commit graph of a possibly shallow repository.
func newHistoryGraph(st storage.Storer) (*commitGraph, error) {
	sh, err := st.Shallow()
	if err != nil {
		return nil, fmt.Errorf("reading the shallow list: %w", err)
	}
	return newCommitGraph(st, sh), nil
}

// parents are a commit's parents as far as the history goes: none for a
// commit at the shallow boundary.
func (g *commitGraph) parents(c *mbCommit) []plumbing.Hash {
	if g.shallow[c.hash] {
		return nil
	}
	return c.parents
}

// commit reads (once) the commit h.
func (g *commitGraph) commit(h plumbing.Hash) (*mbCommit, error) {
	if c, ok := g.commits[h]; ok {
		return c, nil
	}
	obj, err := g.s.EncodedObject(plumbing.CommitObject, h)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", h, err)
	}
	var data []byte
	if p, ok := obj.(*packedObject); ok {
		data = p.data
	} else {
		rd, err := obj.Reader()
		if err != nil {
			return nil, fmt.Errorf("reading commit %s: %w", h, err)
		}
		data, err = io.ReadAll(rd)
		rd.Close()
		if err != nil {
			return nil, fmt.Errorf("reading commit %s: %w", h, err)
		}
	}
	c, err := parseCommitHeader(h, data)
	if err != nil {
		return nil, err
	}
	g.commits[h] = c
	return c, nil
}

// parseCommitHeader reads tree, parents and committer date from a raw
// commit; the message and the rest of the header are not needed.
func parseCommitHeader(h plumbing.Hash, data []byte) (*mbCommit, error) {
	c := &mbCommit{hash: h}
	sawTree := false
	for len(data) > 0 {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			nl = len(data)
		}
		line := data[:nl]
		data = data[min(nl+1, len(data)):]
		if len(line) == 0 {
			break // end of header
		}
		key, val, _ := bytes.Cut(line, []byte{' '})
		switch string(key) {
		case "tree":
			if !plumbing.IsHash(string(val)) {
				return nil, fmt.Errorf("commit %s: malformed tree line %q", h, line)
			}
			c.tree, sawTree = plumbing.NewHash(string(val)), true
		case "parent":
			if !plumbing.IsHash(string(val)) {
				return nil, fmt.Errorf("commit %s: malformed parent line %q", h, line)
			}
			c.parents = append(c.parents, plumbing.NewHash(string(val)))
		case "committer":
			// "Name <email> 1700000000 +0000": the date follows the last '>'.
			if gt := bytes.LastIndexByte(val, '>'); gt >= 0 {
				f := bytes.Fields(val[gt+1:])
				if len(f) > 0 {
					if d, err := strconv.ParseInt(string(f[0]), 10, 64); err == nil {
						c.date = d
					}
				}
			}
		}
	}
	if !sawTree {
		return nil, fmt.Errorf("commit %s: no tree", h)
	}
	return c, nil
}

func (g *commitGraph) mark(c *mbCommit, f uint8) {
	if c.flags == 0 {
		g.touched = append(g.touched, c)
	}
	c.flags |= f
}

func (g *commitGraph) clearMarks() {
	for _, c := range g.touched {
		c.flags = 0
	}
	g.touched = g.touched[:0]
}

// dateQueue pops the newest commit first; equal dates leave in the order
// they came (git's prio_queue breaks ties by insertion).
type dateQueue struct {
	items []dateItem
	ctr   int
}

type dateItem struct {
	c   *mbCommit
	ctr int
}

func (q *dateQueue) Len() int { return len(q.items) }
func (q *dateQueue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.c.date != b.c.date {
		return a.c.date > b.c.date
	}
	return a.ctr < b.ctr
}
func (q *dateQueue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *dateQueue) Push(x any)    { q.items = append(q.items, x.(dateItem)) }
func (q *dateQueue) Pop() any {
	it := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return it
}
func (q *dateQueue) put(c *mbCommit) {
	heap.Push(q, dateItem{c: c, ctr: q.ctr})
	q.ctr++
}
func (q *dateQueue) pop() *mbCommit { return heap.Pop(q).(dateItem).c }

func (q *dateQueue) hasNonStale() bool {
	for _, it := range q.items {
		if it.c.flags&mbStale == 0 {
			return true
		}
	}
	return false
}

// insertByDate keeps list newest first, a new commit after equal dates.
func insertByDate(list []*mbCommit, c *mbCommit) []*mbCommit {
	i := 0
	for i < len(list) && list[i].date >= c.date {
		i++
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = c
	return list
}

// paintDown marks what one reaches PARENT1 and what twos reach PARENT2,
// and returns the commits reached from both (newest first), some of which
// may later turn out stale. decided is false when the walk reached the
// shallow boundary on a path only one side had painted: more history
// could hold a common ancestor (or a better one).
func (g *commitGraph) paintDown(one *mbCommit, twos []*mbCommit) (result []*mbCommit, decided bool, err error) {
	g.mark(one, mbParent1)
	if len(twos) == 0 {
		return []*mbCommit{one}, true, nil
	}
	q := &dateQueue{}
	q.put(one)
	for _, t := range twos {
		g.mark(t, mbParent2)
		q.put(t)
	}
	decided = true
	for q.hasNonStale() {
		c := q.pop()
		flags := c.flags & (mbParent1 | mbParent2 | mbStale)
		if flags == mbParent1|mbParent2 {
			if c.flags&mbResult == 0 {
				g.mark(c, mbResult)
				result = insertByDate(result, c)
			}
			flags |= mbStale
		}
		if flags&mbStale == 0 && g.shallow[c.hash] {
			// Painted by one side only, and its parents are not here.
			decided = false
		}
		for _, ph := range g.parents(c) {
			p, err := g.commit(ph)
			if err != nil {
				return nil, false, err
			}
			if p.flags&flags == flags {
				continue
			}
			g.mark(p, flags)
			q.put(p)
		}
	}
	return result, decided, nil
}

// mergeBases returns the best common ancestors of a and b, newest first,
// as git's get_merge_bases does, within the history at hand; decided is
// false when more history could change the answer.
func (g *commitGraph) mergeBases(a, b *mbCommit) (bases []*mbCommit, decided bool, err error) {
	defer g.clearMarks()
	if a == b {
		return []*mbCommit{a}, true, nil
	}
	list, decided, err := g.paintDown(a, []*mbCommit{b})
	if err != nil {
		return nil, false, err
	}
	var result []*mbCommit
	for _, c := range list {
		if c.flags&mbStale == 0 {
			result = insertByDate(result, c)
		}
	}
	g.clearMarks()
	if len(result) == 0 && len(g.shallow) > 0 {
		decided = false // the common history may lie below the boundary
	}
	if len(result) <= 1 {
		return result, decided, nil
	}
	// Several candidates: drop those reachable from another.
	redundant := make([]bool, len(result))
	for i := range result {
		if redundant[i] {
			continue
		}
		var work []*mbCommit
		var idx []int
		for j := range result {
			if i != j && !redundant[j] {
				work = append(work, result[j])
				idx = append(idx, j)
			}
		}
		if _, _, err := g.paintDown(result[i], work); err != nil {
			return nil, false, err
		}
		if result[i].flags&mbParent2 != 0 {
			redundant[i] = true
		}
		for k, w := range work {
			if w.flags&mbParent1 != 0 {
				redundant[idx[k]] = true
			}
		}
		g.clearMarks()
	}
	var out []*mbCommit
	for i, c := range result {
		if !redundant[i] {
			out = insertByDate(out, c)
		}
	}
	return out, decided, nil
}

// mergeDecided tells whether the history at hand decides the merge of a
// and b as ThreeWayMergeWith computes it (mergeBaseTree): their merge bases,
// and for several (criss-cross), oldest first, the merge bases of the
// bases merged so far (a virtual commit) and the next, recursively.
func (g *commitGraph) mergeDecided(a, b *mbCommit, depth int) (bool, error) {
	bases, decided, err := g.mergeBases(a, b)
	if err != nil || !decided {
		return false, err
	}
	if len(bases) < 2 {
		return true, nil
	}
	slices.Reverse(bases)
	merged := bases[0]
	for _, next := range bases[1:] {
		if depth >= maxVirtualDepth {
			return true, nil // the merge stops here too
		}
		ok, err := g.mergeDecided(merged, next, depth+1)
		if err != nil || !ok {
			return false, err
		}
		// The tree is not needed to decide, only the parents.
		merged = g.virtual(plumbing.ZeroHash, merged.hash, next.hash)
	}
	return true, nil
}

// mergeDecidedHashes is mergeDecided for two commits by name.
func (g *commitGraph) mergeDecidedHashes(a, b plumbing.Hash) (bool, error) {
	ca, err := g.commit(a)
	if err != nil {
		return false, err
	}
	cb, err := g.commit(b)
	if err != nil {
		return false, err
	}
	return g.mergeDecided(ca, cb, 0)
}

// isAncestor tells whether a is an ancestor of (or equal to) b. When the
// history at hand does not decide it, the error wraps ErrShallowHistory.
func (g *commitGraph) isAncestor(a, b plumbing.Hash) (bool, error) {
	if a == b {
		return true, nil
	}
	ca, err := g.commit(a)
	if err != nil {
		return false, err
	}
	cb, err := g.commit(b)
	if err != nil {
		return false, err
	}
	bases, decided, err := g.mergeBases(ca, cb)
	if err != nil {
		return false, err
	}
	for _, c := range bases {
		if c == ca {
			return true, nil
		}
	}
	if !decided {
		return false, fmt.Errorf("is %s an ancestor of %s: %w", a, b, ErrShallowHistory)
	}
	return false, nil
}

// virtual makes the commit git makes of a merged merge base: the tree,
// the two commits merged as parents, no date. It gets a made-up name no
// real object has, so that later searches can walk through it.
func (g *commitGraph) virtual(tree plumbing.Hash, p1, p2 plumbing.Hash) *mbCommit {
	g.nvirtual++
	var h plumbing.Hash
	for i := range h {
		h[i] = 0xff
	}
	binary.BigEndian.PutUint64(h[12:], uint64(g.nvirtual))
	c := &mbCommit{hash: h, tree: tree, parents: []plumbing.Hash{p1, p2}}
	g.commits[h] = c
	return c
}
