package gitops

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// ErrUnrelatedHistories is returned when two commits share no ancestor.
var ErrUnrelatedHistories = errors.New("refusing to merge unrelated histories")

// MergeResult is the outcome of a three-way merge of two commits.
type MergeResult struct {
	// Clean is true when the merge needs no human decision.
	Clean bool
	// Tree is the merged tree, written to the object store; zero unless Clean.
	Tree plumbing.Hash
	// Conflicts are the conflicting paths, sorted; empty when Clean.
	Conflicts []string
	// Base is the merge base used (zero when a virtual base was built
	// from several merge bases).
	Base plumbing.Hash
	// Files is the merged content of every path the merge changed relative
	// to ours, conflicting ones with conflict markers; nil Entry = removed.
	Files []MergedFile
}

// MergedFile is one path of a merge result that differs from ours.
type MergedFile struct {
	Path     string
	Mode     filemode.FileMode // zero when the path is removed
	Hash     plumbing.Hash     // blob hash when the content already exists
	Content  []byte            // new content (merged text), when Hash is zero
	Conflict bool
}

// MergeOptions names the two sides; the names label conflict markers and
// the paths git would give to files moved aside (path~name).
type MergeOptions struct {
	OursLabel   string
	TheirsLabel string
}

func (o MergeOptions) withDefaults() MergeOptions {
	if o.OursLabel == "" {
		o.OursLabel = "ours"
	}
	if o.TheirsLabel == "" {
		o.TheirsLabel = "theirs"
	}
	return o
}

// ThreeWayMergeWith merges commit theirs into commit ours as git's
// default (ort) strategy does: it finds the merge base, detects renames on
// each side (exact, and similar at 50% or more), merges the trees path by
// path and text files line by line, labelling conflict markers as opts
// says. A clean result's tree is written to the object store; otherwise
// Conflicts lists the conflicting paths.
func ThreeWayMergeWith(repo *git.Repository, ours, theirs plumbing.Hash, opts MergeOptions) (*MergeResult, error) {
	if repo == nil {
		return nil, errors.New("merge: nil repository")
	}
	opts = opts.withDefaults()
	// In a shallow working copy the boundary commits are roots, as in
	// git: the caller has fetched enough history to decide the merge.
	shallow, err := repo.Storer.Shallow()
	if err != nil {
		return nil, fmt.Errorf("merge: reading the shallow list: %w", err)
	}
	s, release := newMergeStore(repo.Storer)
	defer release()
	g := newCommitGraph(s, shallow)
	oc, err := g.commit(ours)
	if err != nil {
		return nil, fmt.Errorf("merge: reading commit %s (ours): %w", ours, err)
	}
	tc, err := g.commit(theirs)
	if err != nil {
		return nil, fmt.Errorf("merge: reading commit %s (theirs): %w", theirs, err)
	}
	baseTree, baseHash, err := mergeBaseTree(s, g, oc, tc, opts, 0)
	if err != nil {
		return nil, err
	}
	res, err := mergeTrees(s, baseTree, oc.tree, tc.tree, opts)
	if err != nil {
		return nil, err
	}
	res.Base = baseHash
	return res, nil
}

// mergeBaseTree returns the tree to use as the common ancestor of a and
// b, as git's ort does. With one merge base that is its tree. With
// several (criss-cross history) it merges them, oldest first, into a
// virtual base: each step merges the bases merged so far with the next
// one (recursively, with their own merge base), conflict markers
// included where they conflict, and the result becomes a commit of its
// own whose parents are the two it merged. depth is git's call depth.
func mergeBaseTree(s storer.EncodedObjectStorer, g *commitGraph, a, b *mbCommit, opts MergeOptions, depth int) (plumbing.Hash, plumbing.Hash, error) {
	bases, _, err := g.mergeBases(a, b)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("merge: finding merge base of %s and %s: %w", a.hash, b.hash, err)
	}
	if len(bases) == 0 {
		if depth == 0 {
			return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("merge: %s and %s: %w", a.hash, b.hash, ErrUnrelatedHistories)
		}
		// Merging merge bases that share no history: git uses the
		// empty tree as their base.
		return plumbing.ZeroHash, plumbing.ZeroHash, nil
	}
	if len(bases) == 1 {
		return bases[0].tree, bases[0].hash, nil
	}
	// mergeBases lists the newest first; git merges the oldest first.
	for i, j := 0, len(bases)-1; i < j; i, j = i+1, j-1 {
		bases[i], bases[j] = bases[j], bases[i]
	}
	virtualOpts := MergeOptions{OursLabel: "Temporary merge branch 1", TheirsLabel: "Temporary merge branch 2"}
	merged := bases[0]
	for _, next := range bases[1:] {
		if depth >= maxVirtualDepth {
			// A history this tangled is beyond reason; the newest base
			// stands in for all (the merge may then differ from git's).
			return bases[len(bases)-1].tree, bases[len(bases)-1].hash, nil
		}
		inner, _, err := mergeBaseTree(s, g, merged, next, opts, depth+1)
		if err != nil {
			return plumbing.ZeroHash, plumbing.ZeroHash, err
		}
		r, err := mergeTreesAt(s, inner, merged.tree, next.tree, virtualOpts, depth+1)
		if err != nil {
			return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("merge: building the virtual merge base: %w", err)
		}
		merged = g.virtual(r.Tree, merged.hash, next.hash)
	}
	return merged.tree, plumbing.ZeroHash, nil
}

// maxVirtualDepth bounds the recursion of virtual merge bases.
const maxVirtualDepth = 8

// entry is a tree entry below the root: a file, symlink or gitlink.
type entry struct {
	Mode filemode.FileMode
	Hash plumbing.Hash
}

func (e *entry) same(o *entry) bool {
	if e == nil || o == nil {
		return e == nil && o == nil
	}
	return e.Mode == o.Mode && e.Hash == o.Hash
}

func isRegular(m filemode.FileMode) bool {
	return m == filemode.Regular || m == filemode.Executable || m == filemode.Deprecated
}

// kind groups modes the way git's S_IFMT does.
func kind(m filemode.FileMode) int {
	switch {
	case isRegular(m):
		return 1
	case m == filemode.Symlink:
		return 2
	case m == filemode.Submodule:
		return 3
	}
	return 0
}

// fileChange is a path whose entry differs between two trees.
type fileChange struct {
	path     string
	from, to *entry
}

// treeReader reads trees with a cache; trees are immutable.
type treeReader struct {
	s     storer.EncodedObjectStorer
	cache map[plumbing.Hash]*object.Tree
}

func newTreeReader(s storer.EncodedObjectStorer) *treeReader {
	return &treeReader{s: s, cache: map[plumbing.Hash]*object.Tree{}}
}

func (r *treeReader) tree(h plumbing.Hash) (*object.Tree, error) {
	if t, ok := r.cache[h]; ok {
		return t, nil
	}
	t, err := object.GetTree(r.s, h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", h, err)
	}
	r.cache[h] = t
	return t, nil
}

// diff lists the files that differ between trees a and b, skipping
// identical subtrees by hash.
func (r *treeReader) diff(a, b plumbing.Hash, prefix string, out *[]fileChange) error {
	if a == b {
		return nil
	}
	var ae, be []object.TreeEntry
	if !a.IsZero() {
		t, err := r.tree(a)
		if err != nil {
			return err
		}
		ae = t.Entries
	}
	if !b.IsZero() {
		t, err := r.tree(b)
		if err != nil {
			return err
		}
		be = t.Entries
	}
	type pair struct{ a, b *object.TreeEntry }
	byName := make(map[string]*pair, len(ae)+len(be))
	names := make([]string, 0, len(ae)+len(be))
	for i := range ae {
		byName[ae[i].Name] = &pair{a: &ae[i]}
		names = append(names, ae[i].Name)
	}
	for i := range be {
		if p, ok := byName[be[i].Name]; ok {
			p.b = &be[i]
		} else {
			byName[be[i].Name] = &pair{b: &be[i]}
			names = append(names, be[i].Name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		p := byName[name]
		full := prefix + name
		aDir := p.a != nil && p.a.Mode == filemode.Dir
		bDir := p.b != nil && p.b.Mode == filemode.Dir
		var aSub, bSub plumbing.Hash
		if aDir {
			aSub = p.a.Hash
		}
		if bDir {
			bSub = p.b.Hash
		}
		if aDir || bDir {
			if err := r.diff(aSub, bSub, full+"/", out); err != nil {
				return err
			}
		}
		var af, bf *entry
		if p.a != nil && !aDir {
			af = &entry{Mode: p.a.Mode, Hash: p.a.Hash}
		}
		if p.b != nil && !bDir {
			bf = &entry{Mode: p.b.Mode, Hash: p.b.Hash}
		}
		if !af.same(bf) {
			*out = append(*out, fileChange{path: full, from: af, to: bf})
		}
	}
	return nil
}

// lookup finds the entry at path p in tree root: a file entry, or isDir.
func (r *treeReader) lookup(root plumbing.Hash, p string) (e *entry, isDir bool, err error) {
	cur := root
	parts := strings.Split(p, "/")
	for i, part := range parts {
		if cur.IsZero() {
			return nil, false, nil
		}
		t, err := r.tree(cur)
		if err != nil {
			return nil, false, err
		}
		var found *object.TreeEntry
		for j := range t.Entries {
			if t.Entries[j].Name == part {
				found = &t.Entries[j]
				break
			}
		}
		if found == nil {
			return nil, false, nil
		}
		if i == len(parts)-1 {
			if found.Mode == filemode.Dir {
				return nil, true, nil
			}
			return &entry{Mode: found.Mode, Hash: found.Hash}, false, nil
		}
		if found.Mode != filemode.Dir {
			return nil, false, nil
		}
		cur = found.Hash
	}
	return nil, false, nil
}

func (r *treeReader) blob(h plumbing.Hash) ([]byte, error) {
	obj, err := r.s.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	if p, ok := obj.(*packedObject); ok {
		// Already in memory; the merge never modifies blob contents.
		return p.data, nil
	}
	b, err := object.DecodeBlob(obj)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	defer rd.Close()
	data, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	return data, nil
}

func (r *treeReader) blobSize(h plumbing.Hash) (int64, error) {
	return r.s.EncodedObjectSize(h)
}

// pathInfo is the three stages of one path during the merge.
type pathInfo struct {
	path   string
	stages [3]*entry // base, ours, theirs
	// basePath is where the base stage came from (a rename source).
	basePath string
	// sidePaths are the paths of base, ours and theirs when a rename put
	// them at different paths; git then labels conflict markers
	// branch:path. Empty otherwise.
	sidePaths [3]string
	// forced conflict from rename handling (rename/delete, rename/rename).
	conflict bool
	// resolved short-circuits the normal rules (a rename source).
	resolved bool
	result   *entry
	content  []byte // merged content when result.Hash is not yet known
	clean    bool
}

type treeMerger struct {
	// markerSize is the length of conflict markers (7, longer in
	// virtual merge bases).
	markerSize int
	r          *treeReader
	opts       MergeOptions
	trees      [3]plumbing.Hash
	infos      map[string]*pathInfo
	blobs      map[plumbing.Hash][]byte
	spans      map[plumbing.Hash][]spanCount
	extras     []string // extra conflicting paths (rename/rename sources)
	// unclean marks a conflict that no single path carries.
	unclean bool
}

func (m *treeMerger) info(p string) *pathInfo {
	if pi, ok := m.infos[p]; ok {
		return pi
	}
	pi := &pathInfo{path: p}
	m.infos[p] = pi
	return pi
}

func (m *treeMerger) readBlob(h plumbing.Hash) ([]byte, error) {
	if d, ok := m.blobs[h]; ok {
		return d, nil
	}
	d, err := m.r.blob(h)
	if err != nil {
		return nil, err
	}
	m.blobs[h] = d
	return d, nil
}

func (m *treeMerger) spansOf(h plumbing.Hash) ([]spanCount, error) {
	if s, ok := m.spans[h]; ok {
		return s, nil
	}
	d, err := m.readBlob(h)
	if err != nil {
		return nil, err
	}
	s := spanCounts(d)
	m.spans[h] = s
	return s, nil
}

// mergeTrees merges trees ours and theirs with base as their ancestor.
func mergeTrees(s storer.EncodedObjectStorer, base, ours, theirs plumbing.Hash, opts MergeOptions) (*MergeResult, error) {
	return mergeTreesAt(s, base, ours, theirs, opts, 0)
}

// mergeTreesAt is mergeTrees at git's call depth: 0 for the merge asked
// for, more for the merges building a virtual merge base, whose conflict
// markers git makes two characters longer per level. Building a virtual
// merge base, it skips directory renames and writes the tree even with
// conflicts, as git does.
func mergeTreesAt(s storer.EncodedObjectStorer, base, ours, theirs plumbing.Hash, opts MergeOptions, depth int) (*MergeResult, error) {
	virtualBase := depth > 0
	m := &treeMerger{
		markerSize: defaultMarkerSize + 2*depth,
		r:          newTreeReader(s),
		opts:       opts,
		trees:      [3]plumbing.Hash{base, ours, theirs},
		infos:      map[string]*pathInfo{},
		blobs:      map[plumbing.Hash][]byte{},
		spans:      map[plumbing.Hash][]spanCount{},
	}
	var oursCh, theirsCh []fileChange
	if err := m.r.diff(base, ours, "", &oursCh); err != nil {
		return nil, fmt.Errorf("merge: diffing base and ours: %w", err)
	}
	if err := m.r.diff(base, theirs, "", &theirsCh); err != nil {
		return nil, fmt.Errorf("merge: diffing base and theirs: %w", err)
	}
	// Stages of every changed path; a side that did not change a path
	// has the base entry there.
	for _, c := range oursCh {
		pi := m.info(c.path)
		pi.stages[0], pi.stages[1], pi.stages[2] = c.from, c.to, c.from
	}
	for _, c := range theirsCh {
		pi, ok := m.infos[c.path]
		if !ok {
			pi = m.info(c.path)
			pi.stages[0], pi.stages[1] = c.from, c.from
		}
		pi.stages[2] = c.to
	}
	changes := [3][]fileChange{nil, oursCh, theirsCh}
	var dr *dirRenameInfo
	if !virtualBase {
		var err error
		if dr, err = m.findRemovedDirs(changes); err != nil {
			return nil, fmt.Errorf("merge: directory renames: %w", err)
		}
	}
	var rens [3][]rename
	for side := 1; side <= 2; side++ {
		other := 3 - side
		relevant := func(p string) bool {
			if pi := m.infos[p]; pi != nil && !pi.stages[other].same(pi.stages[0]) {
				return true
			}
			return dr != nil && dr.locationRelevant(side, p)
		}
		var err error
		if rens[side], err = m.detectRenames(changes[side], side, relevant); err != nil {
			return nil, err
		}
		if dr != nil && dr.guessRenamedDirs(side, rens[side]) {
			m.unclean = true
		}
	}
	if dr != nil {
		unclean, err := m.applyDirRenames(dr, changes, rens)
		if err != nil {
			return nil, fmt.Errorf("merge: directory renames: %w", err)
		}
		m.unclean = m.unclean || unclean
	}
	m.applyRenames(rens[1], rens[2])
	if err := m.resolveAll(); err != nil {
		return nil, err
	}
	return m.finish(virtualBase)
}

type rename struct {
	src, dst string
}

// detectRenames finds the renames of one side (1 = ours, 2 = theirs) the
// way git's diffcore does for a merge: exact renames first, then renames
// between files with the same unique basename at a higher threshold, then
// the best-scoring pairs at 50% similarity or more. Only relevant sources
// are considered for inexact renames, as in git's ort strategy: those
// whose content matters (the other side changed or removed them), or
// whose new location does (see locationRelevant).
func (m *treeMerger) detectRenames(changes []fileChange, side int, relevant func(string) bool) ([]rename, error) {
	var srcs, dsts []fileChange
	for _, c := range changes {
		switch {
		case c.from != nil && c.to == nil:
			srcs = append(srcs, c)
		case c.from == nil && c.to != nil:
			dsts = append(dsts, c)
		}
	}
	if len(srcs) == 0 || len(dsts) == 0 {
		return nil, nil
	}
	sort.Slice(srcs, func(i, j int) bool { return srcs[i].path < srcs[j].path })
	sort.Slice(dsts, func(i, j int) bool { return dsts[i].path < dsts[j].path })
	srcUsed := make([]bool, len(srcs))
	dstDone := make([]bool, len(dsts))
	var out []rename

	// Exact renames.
	bySrcHash := map[plumbing.Hash][]int{}
	for i, s := range srcs {
		bySrcHash[s.from.Hash] = append(bySrcHash[s.from.Hash], i)
	}
	for di, d := range dsts {
		best, bestScore := -1, -1
		for _, si := range bySrcHash[d.to.Hash] {
			s := srcs[si]
			if (!isRegular(s.from.Mode) || !isRegular(d.to.Mode)) && s.from.Mode != d.to.Mode {
				continue
			}
			if srcUsed[si] {
				continue
			}
			score := 1
			if basenameSame(s.path, d.path) {
				score++
			}
			if score > bestScore {
				best, bestScore = si, score
				if score == 2 {
					break
				}
			}
		}
		if best >= 0 {
			srcUsed[best] = true
			dstDone[di] = true
			out = append(out, rename{src: srcs[best].path, dst: d.path})
		}
	}

	// Relevant remaining sources.
	var rsrc []int
	for i, s := range srcs {
		if srcUsed[i] {
			continue
		}
		if relevant(s.path) {
			rsrc = append(rsrc, i)
		}
	}
	if len(rsrc) == 0 {
		return out, nil
	}
	score := func(si, di int) (int, error) {
		s, d := srcs[si], dsts[di]
		if !isRegular(s.from.Mode) || !isRegular(d.to.Mode) {
			return 0, nil
		}
		ss, err := m.r.blobSize(s.from.Hash)
		if err != nil {
			return 0, fmt.Errorf("merge: rename detection: %w", err)
		}
		ds, err := m.r.blobSize(d.to.Hash)
		if err != nil {
			return 0, fmt.Errorf("merge: rename detection: %w", err)
		}
		var ferr error
		sc := similarity(int(ss), int(ds), func() []spanCount {
			v, err := m.spansOf(s.from.Hash)
			if err != nil {
				ferr = err
			}
			return v
		}, func() []spanCount {
			v, err := m.spansOf(d.to.Hash)
			if err != nil {
				ferr = err
			}
			return v
		})
		if ferr != nil {
			return 0, fmt.Errorf("merge: rename detection: %w", ferr)
		}
		return sc, nil
	}

	// Basename-guided renames: a basename unique among remaining sources
	// and among remaining destinations.
	srcBase := map[string]int{}
	for _, si := range rsrc {
		b := path.Base(srcs[si].path)
		if _, ok := srcBase[b]; ok {
			srcBase[b] = -1
		} else {
			srcBase[b] = si
		}
	}
	dstBase := map[string]int{}
	for di, d := range dsts {
		if dstDone[di] {
			continue
		}
		b := path.Base(d.path)
		if _, ok := dstBase[b]; ok {
			dstBase[b] = -1
		} else {
			dstBase[b] = di
		}
	}
	for _, si := range rsrc {
		b := path.Base(srcs[si].path)
		di, ok := dstBase[b]
		if !ok || srcBase[b] == -1 || di == -1 || dstDone[di] {
			continue
		}
		sc, err := score(si, di)
		if err != nil {
			return nil, err
		}
		if sc < basenameRenameScore {
			continue
		}
		srcUsed[si] = true
		dstDone[di] = true
		out = append(out, rename{src: srcs[si].path, dst: dsts[di].path})
	}

	// Inexact renames: best four candidates per destination, then the
	// best pairs overall, each source and destination used once.
	type cand struct {
		dst, src, score, nameScore int
	}
	less := func(a, b cand) bool { // a sorts before b
		if a.dst < 0 {
			return false
		}
		if b.dst < 0 {
			return true
		}
		if a.score != b.score {
			return a.score > b.score
		}
		return a.nameScore > b.nameScore
	}
	var mx []cand
	for di := range dsts {
		if dstDone[di] {
			continue
		}
		top := [4]cand{{dst: -1}, {dst: -1}, {dst: -1}, {dst: -1}}
		for _, si := range rsrc {
			if srcUsed[si] {
				continue
			}
			sc, err := score(si, di)
			if err != nil {
				return nil, err
			}
			c := cand{dst: di, src: si, score: sc}
			if basenameSame(srcs[si].path, dsts[di].path) {
				c.nameScore = 1
			}
			worst := 0
			for k := 1; k < 4; k++ {
				if less(top[worst], top[k]) {
					worst = k
				}
			}
			if less(c, top[worst]) {
				top[worst] = c
			}
		}
		mx = append(mx, top[:]...)
	}
	sort.SliceStable(mx, func(i, j int) bool { return less(mx[i], mx[j]) })
	for _, c := range mx {
		if c.dst < 0 || c.score < defaultRenameScore {
			break
		}
		if dstDone[c.dst] || srcUsed[c.src] {
			continue
		}
		dstDone[c.dst] = true
		srcUsed[c.src] = true
		out = append(out, rename{src: srcs[c.src].path, dst: dsts[c.dst].path})
	}
	return out, nil
}

// applyRenames moves base (and the other side's) stages from rename
// sources to their destinations, as git does before merging paths.
func (m *treeMerger) applyRenames(oursRen, theirsRen []rename) {
	bySrc := [3]map[string]string{nil, {}, {}}
	byDst := [3]map[string]string{nil, {}, {}}
	for _, r := range oursRen {
		bySrc[1][r.src] = r.dst
		byDst[1][r.dst] = r.src
	}
	for _, r := range theirsRen {
		bySrc[2][r.src] = r.dst
		byDst[2][r.dst] = r.src
	}
	handled := map[string]bool{}
	for side := 1; side <= 2; side++ {
		other := 3 - side
		rens := oursRen
		if side == 2 {
			rens = theirsRen
		}
		for _, r := range rens {
			src := m.infos[r.src]
			dst := m.infos[r.dst]
			if otherDst, ok := bySrc[other][r.src]; ok {
				// Both sides renamed the same file.
				if handled[r.src] {
					continue
				}
				handled[r.src] = true
				src.resolved, src.result, src.clean = true, nil, true
				if otherDst == r.dst {
					dst.stages[0] = src.stages[0]
					dst.basePath = r.src
					continue
				}
				// rename/rename(1to2): each side's file keeps its own
				// name; git reports the source and both targets.
				od := m.infos[otherDst]
				dst.stages[0], od.stages[0] = src.stages[0], src.stages[0]
				dst.stages[other] = src.stages[other]
				od.stages[side] = src.stages[side]
				dst.conflict, od.conflict = true, true
				m.extras = append(m.extras, r.src)
				continue
			}
			collision := dst.stages[other] != nil || byDst[other][r.dst] != ""
			deleted := src.stages[other] == nil
			src.resolved, src.result, src.clean = true, nil, true
			dst.stages[0] = src.stages[0]
			dst.basePath = r.src
			switch {
			case collision:
				// rename/add or rename/rename(2to1): not merged
				// automatically.
				dst.conflict = true
			case deleted:
				// rename/delete
				dst.conflict = true
			default:
				dst.stages[other] = src.stages[other]
				dst.sidePaths = [3]string{r.src, r.src, r.src}
				dst.sidePaths[side] = r.dst
			}
		}
	}
}

func (m *treeMerger) resolveAll() error {
	paths := make([]string, 0, len(m.infos))
	for p := range m.infos {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := m.resolve(m.infos[p]); err != nil {
			return err
		}
	}
	return nil
}

// resolve merges one path's three stages.
func (m *treeMerger) resolve(pi *pathInfo) error {
	if pi.resolved {
		return nil
	}
	b, o, t := pi.stages[0], pi.stages[1], pi.stages[2]
	pi.clean = !pi.conflict
	switch {
	case o.same(t):
		pi.result = o
		return nil
	case b.same(o) && !pi.conflict:
		pi.result = t
		return nil
	case b.same(t) && !pi.conflict:
		pi.result = o
		return nil
	case o == nil || t == nil:
		// modify/delete (or rename/delete): keep the surviving version.
		pi.clean = false
		if o != nil {
			pi.result = o
		} else {
			pi.result = t
		}
		return nil
	}
	if kind(o.Mode) != kind(t.Mode) {
		// Distinct types are split later into path~label entries.
		pi.clean = false
		pi.result = o
		return nil
	}
	if !isRegular(o.Mode) {
		// Symlinks and submodules that changed differently.
		pi.clean = false
		pi.result = o
		return nil
	}
	// Regular files: modes, then content.
	mode := t.Mode
	var bMode filemode.FileMode
	if b != nil {
		bMode = b.Mode
	}
	if !(o.Mode == t.Mode || o.Mode == bMode) {
		mode = o.Mode
		if t.Mode != bMode {
			pi.clean = false
		}
	}
	switch {
	case o.Hash == t.Hash:
		pi.result = &entry{Mode: mode, Hash: o.Hash}
	case b != nil && b.Hash == o.Hash:
		pi.result = &entry{Mode: mode, Hash: t.Hash}
	case b != nil && b.Hash == t.Hash:
		pi.result = &entry{Mode: mode, Hash: o.Hash}
	default:
		var baseData []byte
		if b != nil {
			var err error
			if baseData, err = m.readBlob(b.Hash); err != nil {
				return fmt.Errorf("merge: %s: %w", pi.path, err)
			}
		}
		od, err := m.readBlob(o.Hash)
		if err != nil {
			return fmt.Errorf("merge: %s: %w", pi.path, err)
		}
		td, err := m.readBlob(t.Hash)
		if err != nil {
			return fmt.Errorf("merge: %s: %w", pi.path, err)
		}
		if isBinary(baseData) || isBinary(od) || isBinary(td) {
			pi.clean = false
			pi.result = &entry{Mode: mode, Hash: o.Hash}
			return nil
		}
		oursLabel, theirsLabel := m.opts.OursLabel, m.opts.TheirsLabel
		if pi.sidePaths[0] != "" {
			oursLabel += ":" + pi.sidePaths[1]
			theirsLabel += ":" + pi.sidePaths[2]
		}
		tm := mergeTextWith(baseData, od, td, oursLabel, theirsLabel, algoHistogram, m.markerSize)
		if tm.Conflicts > 0 {
			pi.clean = false
		}
		pi.result = &entry{Mode: mode}
		pi.content = tm.Content
	}
	return nil
}
