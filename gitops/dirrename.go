package gitops

import (
	"path"
	"sort"
	"strings"
)

// Directory rename detection, as git's ort strategy does it with its
// default merge.directoryRenames=conflict: when one side removed a
// directory by moving its files elsewhere, files the other side added in
// that directory follow it to its new place, and each such move is
// reported as a conflict (git's "CONFLICT (file location)").

// dirRelevance is how much a removed directory's new location matters.
type dirRelevance int

const (
	notRelevant dirRelevance = iota
	relevantForAncestor
	relevantForSelf // the other side added a file directly in it
)

// dirRenameInfo is what one merge knows about removed directories.
type dirRenameInfo struct {
	// removed[side] maps every base directory that side no longer has
	// to its relevance.
	removed [3]map[string]dirRelevance
	// renamed[side] maps a directory that side renamed to its new name.
	renamed [3]map[string]string
}

// parentDir is path.Dir with "" for the root.
func parentDir(p string) string {
	d := path.Dir(p)
	if d == "." {
		return ""
	}
	return d
}

// findRemovedDirs fills removed[side] for both sides. A removed directory
// held only files that side deleted, so the deletions name every
// candidate.
func (m *treeMerger) findRemovedDirs(changes [3][]fileChange) (*dirRenameInfo, error) {
	dr := &dirRenameInfo{}
	for side := 1; side <= 2; side++ {
		removed := map[string]dirRelevance{}
		kept := map[string]bool{}
		for _, c := range changes[side] {
			if c.from == nil || c.to != nil {
				continue
			}
			for d := parentDir(c.path); d != ""; d = parentDir(d) {
				if _, ok := removed[d]; ok || kept[d] {
					break
				}
				_, isDir, err := m.r.lookup(m.trees[side], d)
				if err != nil {
					return nil, err
				}
				if isDir {
					kept[d] = true
					break // its parents are kept too
				}
				removed[d] = notRelevant
			}
		}
		dr.removed[side] = removed
	}
	// A removed directory matters to itself when the other side added a
	// file directly in it, and to its subdirectories from then on.
	for side := 1; side <= 2; side++ {
		removed := dr.removed[side]
		if len(removed) == 0 {
			continue
		}
		for _, c := range changes[3-side] {
			if c.from != nil || c.to == nil {
				continue
			}
			if d := parentDir(c.path); d != "" {
				if _, ok := removed[d]; ok {
					removed[d] = relevantForSelf
				}
			}
		}
		for d, rel := range removed {
			if rel != notRelevant {
				continue
			}
			for a := parentDir(d); a != ""; a = parentDir(a) {
				if removed[a] == relevantForSelf {
					removed[d] = relevantForAncestor
					break
				}
			}
		}
	}
	return dr, nil
}

// locationRelevant tells whether where a file deleted on side went
// matters: it lies in a removed directory whose new name is needed.
func (dr *dirRenameInfo) locationRelevant(side int, p string) bool {
	for d := parentDir(p); d != ""; d = parentDir(d) {
		rel, ok := dr.removed[side][d]
		if !ok {
			return false
		}
		if rel == relevantForSelf {
			return true
		}
	}
	return false
}

// guessRenamedDirs turns one side's file renames into directory renames:
// each directory goes where most of its files went; a tie is a conflict
// with no path of its own (git's "directory rename split"). A rename
// counts for its source's directory, and for that directory's ancestors
// as long as the trailing directory names agree.
func (dr *dirRenameInfo) guessRenamedDirs(side int, renames []rename) (split bool) {
	removed := dr.removed[side]
	if len(removed) == 0 || len(renames) == 0 {
		return false
	}
	counts := map[string]map[string]int{}
	for _, r := range renames {
		oldDir, newDir := parentDir(r.src), parentDir(r.dst)
		for first := true; ; first = false {
			rel, ok := removed[oldDir]
			if !ok {
				break
			}
			if rel == relevantForSelf || first {
				if counts[oldDir] == nil {
					counts[oldDir] = map[string]int{}
				}
				counts[oldDir][newDir]++
			}
			if rel == notRelevant || oldDir == "" || newDir == "" {
				break
			}
			if path.Base(oldDir) != path.Base(newDir) {
				break
			}
			oldDir, newDir = parentDir(oldDir), parentDir(newDir)
		}
	}
	dr.renamed[side] = map[string]string{}
	for oldDir, targets := range counts {
		if removed[oldDir] != relevantForSelf {
			continue
		}
		best, bestN, tie := "", 0, false
		for d, n := range targets {
			switch {
			case n > bestN:
				best, bestN, tie = d, n, false
			case n == bestN:
				tie = true
			}
		}
		if tie {
			split = true
			continue
		}
		dr.renamed[side][oldDir] = best
	}
	return split
}

// renamedTo returns where a path moves because side renamed one of its
// directories (the deepest one), or "" when it stays.
func (dr *dirRenameInfo) renamedTo(side int, p string) (newPath, newDir string) {
	ren := dr.renamed[side]
	if len(ren) == 0 {
		return "", ""
	}
	for d := parentDir(p); d != ""; d = parentDir(d) {
		if nd, ok := ren[d]; ok {
			rest := strings.TrimPrefix(p, d+"/")
			if nd == "" {
				return rest, nd
			}
			return nd + "/" + rest, nd
		}
	}
	return "", ""
}

// applyDirRenames moves the files each side added (or renamed) into a
// directory the other side renamed, updating the destinations in rens.
// It reports whether a conflict without a path of its own arose.
func (m *treeMerger) applyDirRenames(dr *dirRenameInfo, changes [3][]fileChange, rens [3][]rename) (bool, error) {
	unclean := false
	// A directory both sides renamed stays where it was.
	for d := range dr.renamed[1] {
		if _, ok := dr.renamed[2][d]; ok {
			delete(dr.renamed[1], d)
			delete(dr.renamed[2], d)
		}
	}
	type move struct{ from, to string }
	for side := 1; side <= 2; side++ {
		other := 3 - side
		if len(dr.renamed[other]) == 0 {
			continue
		}
		// Every path this side added: plain additions and rename targets.
		var added []string
		for _, c := range changes[side] {
			if c.from == nil && c.to != nil {
				added = append(added, c.path)
			}
		}
		sort.Strings(added)
		targets := map[string]int{}
		for _, p := range added {
			if np, _ := dr.renamedTo(other, p); np != "" {
				targets[np]++
			}
		}
		var moves []move
		for _, p := range added {
			np, nd := dr.renamedTo(other, p)
			if np == "" {
				continue
			}
			// Not into a directory this side renamed away itself.
			if _, ok := dr.renamed[side][nd]; ok {
				continue
			}
			e, isDir, err := m.r.lookup(m.trees[side], np)
			if err != nil {
				return false, err
			}
			if e != nil || isDir || targets[np] > 1 {
				// Something in the way, or several paths would land
				// there: the file stays, and the merge is not clean.
				unclean = true
				continue
			}
			moves = append(moves, move{p, np})
		}
		for _, mv := range moves {
			src := m.infos[mv.from]
			dst, ok := m.infos[mv.to]
			if !ok {
				dst = m.info(mv.to)
				for _, s := range []int{0, other} {
					e, _, err := m.r.lookup(m.trees[s], mv.to)
					if err != nil {
						return false, err
					}
					dst.stages[s] = e
				}
				dst.stages[side] = dst.stages[0]
			}
			dst.stages[side] = src.stages[side]
			src.stages[side] = src.stages[0]
			dst.conflict = true
			for i := range rens[side] {
				if rens[side][i].dst == mv.from {
					rens[side][i].dst = mv.to
				}
			}
		}
	}
	return unclean, nil
}
