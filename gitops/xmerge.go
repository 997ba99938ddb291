package gitops

import "bytes"

// Merge hunk modes, as in xdiff.
const (
	mmConflict  = 0
	mmOurs      = 1
	mmTheirs    = 2
	mmIdentical = 4
)

// mergeHunk describes one region of the merge: <i1,chg1> in ours,
// <i2,chg2> in theirs, <i0,chg0> in the base.
type mergeHunk struct {
	mode                   int
	i0, chg0, i1, chg1, i2 int
	chg2                   int
}

// TextMerge is the result of a line-level three-way merge.
type TextMerge struct {
	Content   []byte // merged text, with conflict markers where needed
	Conflicts int    // number of conflicting hunks; 0 means clean
}

// isBinary reports whether git would treat data as binary: a NUL byte in
// its first 8000 bytes.
func isBinary(data []byte) bool {
	if len(data) > 8000 {
		data = data[:8000]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// defaultMarkerSize is the length of git's conflict markers.
const defaultMarkerSize = 7

// mergeTextWith merges the changes base→ours and base→theirs line by line
// as git's xdiff does ("merge" conflict style, zealous level) with the
// diff algorithm algo (ort uses histogram). Conflicting regions are
// written with markers of markerSize characters labelled with oursLabel
// and theirsLabel.
func mergeTextWith(base, ours, theirs []byte, oursLabel, theirsLabel string, algo diffAlgo, markerSize int) TextMerge {
	b, o, t := splitLines(base), splitLines(ours), splitLines(theirs)
	script1, env1 := diffLinesWith(b, o, algo)
	script2, env2 := diffLinesWith(b, t, algo)
	if env1.failed || env2.failed {
		// xdiff fails the whole content merge here, and git stops; never
		// report such a file as merged.
		return TextMerge{Content: ours, Conflicts: 1}
	}
	if len(script1) == 0 {
		return TextMerge{Content: theirs}
	}
	if len(script2) == 0 {
		return TextMerge{Content: ours}
	}
	m := &textMerger{base: b, ours: o, theirs: t, algo: algo}
	hunks, ok := m.merge(script1, script2), true
	if hunks, ok = m.refine(hunks); !ok {
		return TextMerge{Content: ours, Conflicts: 1}
	}
	hunks = simplifyNonConflicts(hunks)
	out := m.fill(hunks, oursLabel, theirsLabel, markerSize)
	n := 0
	for _, h := range hunks {
		if h.mode == mmConflict {
			n++
		}
	}
	return TextMerge{Content: out, Conflicts: n}
}

type textMerger struct {
	base, ours, theirs [][]byte
	algo               diffAlgo
}

func appendMerge(hs []mergeHunk, mode, i0, chg0, i1, chg1, i2, chg2 int) []mergeHunk {
	if n := len(hs); n > 0 {
		m := &hs[n-1]
		if i1 <= m.i1+m.chg1 || i2 <= m.i2+m.chg2 {
			if mode != m.mode {
				m.mode = mmConflict
			}
			m.chg0 = i0 + chg0 - m.i0
			m.chg1 = i1 + chg1 - m.i1
			m.chg2 = i2 + chg2 - m.i2
			return hs
		}
	}
	return append(hs, mergeHunk{mode: mode, i0: i0, chg0: chg0, i1: i1, chg1: chg1, i2: i2, chg2: chg2})
}

func equalLines(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

func (m *textMerger) merge(x1, x2 []xchange) []mergeHunk {
	var hs []mergeHunk
	nb, no, nt := len(m.base), len(m.ours), len(m.theirs)
	p, q := 0, 0
	for p < len(x1) && q < len(x2) {
		c1, c2 := x1[p], x2[q]
		if c1.i1+c1.chg1 < c2.i1 {
			hs = appendMerge(hs, mmOurs, c1.i1, c1.chg1, c1.i2, c1.chg2, c2.i2-c2.i1+c1.i1, c1.chg1)
			p++
			continue
		}
		if c2.i1+c2.chg1 < c1.i1 {
			hs = appendMerge(hs, mmTheirs, c2.i1, c2.chg1, c1.i2-c1.i1+c2.i1, c2.chg1, c2.i2, c2.chg2)
			q++
			continue
		}
		if c1.i1 != c2.i1 || c1.chg1 != c2.chg1 || c1.chg2 != c2.chg2 ||
			!equalLines(m.ours[c1.i2:c1.i2+c1.chg2], m.theirs[c2.i2:c2.i2+c2.chg2]) {
			off := c1.i1 - c2.i1
			ffo := off + c1.chg1 - c2.chg1
			i0, i1, i2 := c1.i1, c1.i2, c2.i2
			if off > 0 {
				i0 -= off
				i1 -= off
			} else {
				i2 += off
			}
			chg0 := c1.i1 + c1.chg1 - i0
			chg1 := c1.i2 + c1.chg2 - i1
			chg2 := c2.i2 + c2.chg2 - i2
			if ffo < 0 {
				chg0 -= ffo
				chg1 -= ffo
			} else {
				chg2 += ffo
			}
			hs = appendMerge(hs, mmConflict, i0, chg0, i1, chg1, i2, chg2)
		}
		e1 := c1.i1 + c1.chg1
		e2 := c2.i1 + c2.chg1
		if e1 >= e2 {
			q++
		}
		if e2 >= e1 {
			p++
		}
	}
	for ; p < len(x1); p++ {
		c1 := x1[p]
		hs = appendMerge(hs, mmOurs, c1.i1, c1.chg1, c1.i2, c1.chg2, c1.i1+nt-nb, c1.chg1)
	}
	for ; q < len(x2); q++ {
		c2 := x2[q]
		hs = appendMerge(hs, mmTheirs, c2.i1, c2.chg1, c2.i1+no-nb, c2.chg1, c2.i2, c2.chg2)
	}
	return hs
}

// refine diffs the two sides of every conflict against each other and keeps
// only the lines that really differ as conflicts (xdiff's ZEALOUS level).
func (m *textMerger) refine(hs []mergeHunk) ([]mergeHunk, bool) {
	out := make([]mergeHunk, 0, len(hs))
	for _, h := range hs {
		if h.mode != mmConflict || h.chg1 == 0 || h.chg2 == 0 {
			out = append(out, h)
			continue
		}
		// The C code re-splits the concatenated chunks; the lines are the
		// same records, so slicing is equivalent.
		a := m.ours[h.i1 : h.i1+h.chg1]
		b := m.theirs[h.i2 : h.i2+h.chg2]
		script, env := diffLinesWith(a, b, m.algo)
		if env.failed {
			return nil, false
		}
		if len(script) == 0 {
			h.mode = mmIdentical
			out = append(out, h)
			continue
		}
		for _, c := range script {
			n := h
			n.mode = mmConflict
			n.i1 = c.i1 + h.i1
			n.chg1 = c.chg1
			n.i2 = c.i2 + h.i2
			n.chg2 = c.chg2
			out = append(out, n)
		}
	}
	return out, true
}

// simplifyNonConflicts joins conflicts separated by at most three
// unchanged lines, which only changes how the markers look.
func simplifyNonConflicts(hs []mergeHunk) []mergeHunk {
	if len(hs) == 0 {
		return hs
	}
	out := []mergeHunk{hs[0]}
	for _, next := range hs[1:] {
		m := &out[len(out)-1]
		begin := m.i1 + m.chg1
		end := next.i1
		if m.mode != mmConflict || next.mode != mmConflict || end-begin > 3 {
			out = append(out, next)
			continue
		}
		m.chg1 = next.i1 + next.chg1 - m.i1
		m.chg2 = next.i2 + next.chg2 - m.i2
	}
	return out
}

func copyRecs(dst []byte, recs [][]byte, i, count int, addNL bool) []byte {
	if count < 1 {
		return dst
	}
	for _, r := range recs[i : i+count] {
		dst = append(dst, r...)
	}
	if addNL {
		last := recs[i+count-1]
		if len(last) == 0 || last[len(last)-1] != '\n' {
			dst = append(dst, '\n')
		}
	}
	return dst
}

func (m *textMerger) fill(hs []mergeHunk, name1, name2 string, markerSize int) []byte {
	var out []byte
	i := 0
	for _, h := range hs {
		switch h.mode {
		case mmConflict:
			out = copyRecs(out, m.ours, i, h.i1-i, false)
			out = append(out, bytes.Repeat([]byte{'<'}, markerSize)...)
			if name1 != "" {
				out = append(out, ' ')
				out = append(out, name1...)
			}
			out = append(out, '\n')
			out = copyRecs(out, m.ours, h.i1, h.chg1, true)
			out = append(out, bytes.Repeat([]byte{'='}, markerSize)...)
			out = append(out, '\n')
			out = copyRecs(out, m.theirs, h.i2, h.chg2, true)
			out = append(out, bytes.Repeat([]byte{'>'}, markerSize)...)
			if name2 != "" {
				out = append(out, ' ')
				out = append(out, name2...)
			}
			out = append(out, '\n')
		case mmOurs:
			out = copyRecs(out, m.ours, i, h.i1+h.chg1-i, false)
		case mmTheirs:
			out = copyRecs(out, m.theirs, h.i2-h.i1+i, h.i1+h.chg2-i, false)
		default:
			continue
		}
		i = h.i1 + h.chg1
	}
	return copyRecs(out, m.ours, i, len(m.ours)-i, false)
}
