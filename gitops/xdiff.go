package gitops

import "bytes"

// This file holds the line-level diff and three-way text merge.
//
// Why our own implementation rather than sergi/go-diff or a diff3 package:
// a clean merge must produce byte-for-byte the blob git produces, and the
// clean/conflict verdict must be git's. Both depend on exactly where the
// diff places its hunks (which of several equal lines it matches, how hunks
// slide) and on how xdiff's merge joins and then refines overlapping hunks
// ("zealous" conflict reduction). sergi/go-diff is a character-level
// Myers/bisect diff with semantic cleanups and diff3 packages use LCS diffs
// with their own hunk rules; neither places hunks as xdiff does. So this is
// a Go implementation of xdiff's algorithms: Myers' O(ND) divide and
// conquer with xdiff's record pre-filtering and cost heuristics (here),
// the histogram diff that git's ort merge uses (xhistogram.go; it falls
// back to Myers), xdiff's hunk compaction (without the indent heuristic:
// ort's merge options do not set it, diff.indentHeuristic only affects
// diff output), and the xdiff merge with ZEALOUS refinement (xmerge.go).
// merge_oracle_test.go, xhistogram_test.go and merge_real_test.go check
// it against git.

const (
	xdlMaxEqLimit    = 1024
	xdlSimscanWindow = 100
	xdlKpdisRun      = 4
	xdlMaxCostMin    = 256
	xdlHeurMinCost   = 256
	xdlSnakeCnt      = 20
	xdlKHeur         = 4
	xdlLineMax       = int(^uint(0) >> 1)
)

// xfile is one side of a diff: its lines, their equivalence classes and the
// per-line "changed" marks the algorithm produces.
type xfile struct {
	recs    [][]byte
	class   []int
	changed []bool // len(recs)+2; index i+1 is line i, so [-1] and [n] are sentinels
	rindex  []int  // records that take part in the core diff
	ha      []int  // their classes
	dstart  int
	dend    int
}

func (f *xfile) nrec() int { return len(f.recs) }
func (f *xfile) isChanged(i int) bool {
	return i >= -1 && i <= len(f.recs) && f.changed[i+1]
}
func (f *xfile) setChanged(i int, v bool) {
	f.changed[i+1] = v
}

// splitLines cuts data into records the way xdiff does: every record ends
// with its '\n', except a final line without one.
func splitLines(data []byte) [][]byte {
	var recs [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			recs = append(recs, data)
			break
		}
		recs = append(recs, data[:i+1])
		data = data[i+1:]
	}
	return recs
}

func bogosqrt(n int) int {
	i := 1
	for ; n > 0; n >>= 2 {
		i <<= 1
	}
	return i
}

// xdiffEnv is a prepared pair of files.
type xdiffEnv struct {
	f1, f2 *xfile
	nclass int // number of distinct lines over both files
	// failed: the histogram index overflowed, where xdiff's diff fails.
	failed bool
}

// classifyEnv splits nothing: it gives every distinct line of a and b a
// class number (equal lines, equal classes), as xdiff's classifier does.
// Both algorithms start from this; Myers then prunes records (see
// prepareEnv), histogram works on the whole files.
func classifyEnv(a, b [][]byte) *xdiffEnv {
	classes := make(map[string]int, len(a)+len(b))
	classify := func(recs [][]byte) *xfile {
		f := &xfile{recs: recs, class: make([]int, len(recs)), changed: make([]bool, len(recs)+2)}
		for i, r := range recs {
			c, ok := classes[string(r)]
			if !ok {
				c = len(classes)
				classes[string(r)] = c
			}
			f.class[i] = c
		}
		f.dstart, f.dend = 0, len(recs)-1
		return f
	}
	env := &xdiffEnv{f1: classify(a), f2: classify(b)}
	env.nclass = len(classes)
	return env
}

// prepareEnv is classifyEnv plus the pruning xdiff does before Myers:
// common ends trimmed, lines without a match (or with too many) set aside.
func prepareEnv(a, b [][]byte) *xdiffEnv {
	env := classifyEnv(a, b)
	env.trimEnds()
	env.cleanupRecords()
	return env
}

func (e *xdiffEnv) trimEnds() {
	f1, f2 := e.f1, e.f2
	lim := min(f1.nrec(), f2.nrec())
	i := 0
	for ; i < lim; i++ {
		if f1.class[i] != f2.class[i] {
			break
		}
	}
	f1.dstart, f2.dstart = i, i
	lim -= i
	j := 0
	for ; j < lim; j++ {
		if f1.class[f1.nrec()-1-j] != f2.class[f2.nrec()-1-j] {
			break
		}
	}
	f1.dend = f1.nrec() - j - 1
	f2.dend = f2.nrec() - j - 1
}

// cleanMatch tells whether a line with many matches sits in a run of lines
// that have none, in which case it is left out of the core diff.
func cleanMatch(dis []byte, i, s, e int) bool {
	if i-s > xdlSimscanWindow {
		s = i - xdlSimscanWindow
	}
	if e-i > xdlSimscanWindow {
		e = i + xdlSimscanWindow
	}
	rdis0, rpdis0 := 0, 1
	for r := 1; i-r >= s; r++ {
		if dis[i-r] == 0 {
			rdis0++
		} else if dis[i-r] == 2 {
			rpdis0++
		} else {
			break
		}
	}
	if rdis0 == 0 {
		return false
	}
	rdis1, rpdis1 := 0, 1
	for r := 1; i+r <= e; r++ {
		if dis[i+r] == 0 {
			rdis1++
		} else if dis[i+r] == 2 {
			rpdis1++
		} else {
			break
		}
	}
	if rdis1 == 0 {
		return false
	}
	rdis1 += rdis0
	rpdis1 += rpdis0
	return rpdis1*xdlKpdisRun < rpdis1+rdis1
}

func (e *xdiffEnv) cleanupRecords() {
	f1, f2 := e.f1, e.f2
	count := func(f *xfile) map[int]int {
		m := make(map[int]int, f.nrec())
		for _, c := range f.class {
			m[c]++
		}
		return m
	}
	cnt1, cnt2 := count(f1), count(f2)
	mark := func(f *xfile, other map[int]int) []byte {
		// The limit is sized by this file's own record count, as in xdiff.
		mlim := min(bogosqrt(f.nrec()), xdlMaxEqLimit)
		dis := make([]byte, f.nrec()+1)
		for i := f.dstart; i <= f.dend; i++ {
			nm := other[f.class[i]]
			switch {
			case nm == 0:
				dis[i] = 0
			case nm >= mlim:
				dis[i] = 2
			default:
				dis[i] = 1
			}
		}
		return dis
	}
	dis1 := mark(f1, cnt2)
	dis2 := mark(f2, cnt1)
	keep := func(f *xfile, dis []byte) {
		for i := f.dstart; i <= f.dend; i++ {
			if dis[i] == 1 || (dis[i] == 2 && !cleanMatch(dis, i, f.dstart, f.dend)) {
				f.rindex = append(f.rindex, i)
				f.ha = append(f.ha, f.class[i])
			} else {
				f.setChanged(i, true)
			}
		}
	}
	keep(f1, dis1)
	keep(f2, dis2)
}

type xsplit struct {
	i1, i2       int
	minLo, minHi bool
}

type xalgo struct {
	f1, f2     *xfile
	kvdf, kvdb []int
	koff       int
	mxcost     int
}

func (x *xalgo) kf(d int) int   { return x.kvdf[d+x.koff] }
func (x *xalgo) setKf(d, v int) { x.kvdf[d+x.koff] = v }
func (x *xalgo) kb(d int) int   { return x.kvdb[d+x.koff] }
func (x *xalgo) setKb(d, v int) { x.kvdb[d+x.koff] = v }
func (x *xalgo) h1(i int) int   { return x.f1.ha[i] }
func (x *xalgo) h2(i int) int   { return x.f2.ha[i] }

// split finds a point on an optimal (or, past the cost limits, a good
// enough) edit path through the box, searching from both corners.
func (x *xalgo) split(off1, lim1, off2, lim2 int, needMin bool) xsplit {
	dmin, dmax := off1-lim2, lim1-off2
	fmid, bmid := off1-off2, lim1-lim2
	odd := (fmid-bmid)&1 != 0
	fmin, fmax := fmid, fmid
	bmin, bmax := bmid, bmid
	x.setKf(fmid, off1)
	x.setKb(bmid, lim1)
	for ec := 1; ; ec++ {
		gotSnake := false
		if fmin > dmin {
			fmin--
			x.setKf(fmin-1, -1)
		} else {
			fmin++
		}
		if fmax < dmax {
			fmax++
			x.setKf(fmax+1, -1)
		} else {
			fmax--
		}
		for d := fmax; d >= fmin; d -= 2 {
			var i1 int
			if x.kf(d-1) >= x.kf(d+1) {
				i1 = x.kf(d-1) + 1
			} else {
				i1 = x.kf(d + 1)
			}
			prev1 := i1
			i2 := i1 - d
			for i1 < lim1 && i2 < lim2 && x.h1(i1) == x.h2(i2) {
				i1++
				i2++
			}
			if i1-prev1 > xdlSnakeCnt {
				gotSnake = true
			}
			x.setKf(d, i1)
			if odd && bmin <= d && d <= bmax && x.kb(d) <= i1 {
				return xsplit{i1: i1, i2: i2, minLo: true, minHi: true}
			}
		}
		if bmin > dmin {
			bmin--
			x.setKb(bmin-1, xdlLineMax)
		} else {
			bmin++
		}
		if bmax < dmax {
			bmax++
			x.setKb(bmax+1, xdlLineMax)
		} else {
			bmax--
		}
		for d := bmax; d >= bmin; d -= 2 {
			var i1 int
			if x.kb(d-1) < x.kb(d+1) {
				i1 = x.kb(d - 1)
			} else {
				i1 = x.kb(d+1) - 1
			}
			prev1 := i1
			i2 := i1 - d
			for i1 > off1 && i2 > off2 && x.h1(i1-1) == x.h2(i2-1) {
				i1--
				i2--
			}
			if prev1-i1 > xdlSnakeCnt {
				gotSnake = true
			}
			x.setKb(d, i1)
			if !odd && fmin <= d && d <= fmax && i1 <= x.kf(d) {
				return xsplit{i1: i1, i2: i2, minLo: true, minHi: true}
			}
		}
		if needMin {
			continue
		}
		if gotSnake && ec > xdlHeurMinCost {
			best := 0
			var spl xsplit
			for d := fmax; d >= fmin; d -= 2 {
				dd := d - fmid
				if dd < 0 {
					dd = -dd
				}
				i1 := x.kf(d)
				i2 := i1 - d
				v := (i1 - off1) + (i2 - off2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1+xdlSnakeCnt <= i1 && i1 < lim1 &&
					off2+xdlSnakeCnt <= i2 && i2 < lim2 {
					for k := 1; x.h1(i1-k) == x.h2(i2-k); k++ {
						if k == xdlSnakeCnt {
							best = v
							spl.i1, spl.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				spl.minLo, spl.minHi = true, false
				return spl
			}
			for d := bmax; d >= bmin; d -= 2 {
				dd := d - bmid
				if dd < 0 {
					dd = -dd
				}
				i1 := x.kb(d)
				i2 := i1 - d
				v := (lim1 - i1) + (lim2 - i2) - dd
				if v > xdlKHeur*ec && v > best &&
					off1 < i1 && i1 <= lim1-xdlSnakeCnt &&
					off2 < i2 && i2 <= lim2-xdlSnakeCnt {
					for k := 0; x.h1(i1+k) == x.h2(i2+k); k++ {
						if k == xdlSnakeCnt-1 {
							best = v
							spl.i1, spl.i2 = i1, i2
							break
						}
					}
				}
			}
			if best > 0 {
				spl.minLo, spl.minHi = false, true
				return spl
			}
		}
		if ec >= x.mxcost {
			fbest, fbest1 := -1, -1
			for d := fmax; d >= fmin; d -= 2 {
				i1 := min(x.kf(d), lim1)
				i2 := i1 - d
				if lim2 < i2 {
					i1 = lim2 + d
					i2 = lim2
				}
				if fbest < i1+i2 {
					fbest = i1 + i2
					fbest1 = i1
				}
			}
			bbest, bbest1 := xdlLineMax, xdlLineMax
			for d := bmax; d >= bmin; d -= 2 {
				i1 := max(off1, x.kb(d))
				i2 := i1 - d
				if i2 < off2 {
					i1 = off2 + d
					i2 = off2
				}
				if i1+i2 < bbest {
					bbest = i1 + i2
					bbest1 = i1
				}
			}
			if (lim1+lim2)-bbest < fbest-(off1+off2) {
				return xsplit{i1: fbest1, i2: fbest - fbest1, minLo: true, minHi: false}
			}
			return xsplit{i1: bbest1, i2: bbest - bbest1, minLo: false, minHi: true}
		}
	}
}

func (x *xalgo) compare(off1, lim1, off2, lim2 int, needMin bool) {
	for off1 < lim1 && off2 < lim2 && x.h1(off1) == x.h2(off2) {
		off1++
		off2++
	}
	for off1 < lim1 && off2 < lim2 && x.h1(lim1-1) == x.h2(lim2-1) {
		lim1--
		lim2--
	}
	switch {
	case off1 == lim1:
		for ; off2 < lim2; off2++ {
			x.f2.setChanged(x.f2.rindex[off2], true)
		}
	case off2 == lim2:
		for ; off1 < lim1; off1++ {
			x.f1.setChanged(x.f1.rindex[off1], true)
		}
	default:
		spl := x.split(off1, lim1, off2, lim2, needMin)
		x.compare(off1, spl.i1, off2, spl.i2, spl.minLo)
		x.compare(spl.i1, lim1, spl.i2, lim2, spl.minHi)
	}
}

// xchange is one hunk: lines [i1, i1+chg1) of the first file become lines
// [i2, i2+chg2) of the second.
type xchange struct {
	i1, i2, chg1, chg2 int
}

// diffAlgo selects the line-matching algorithm; compaction and the
// script are the same for both, as in xdiff.
type diffAlgo int

const (
	// algoMyers is xdiff's default (git diff, git merge-file).
	algoMyers diffAlgo = iota
	// algoHistogram is what git's ort merge strategy diffs with.
	algoHistogram
)

// diffLinesWith runs the whole pipeline (prepare, Myers or histogram,
// compaction) and returns the hunks in order.
func diffLinesWith(a, b [][]byte, algo diffAlgo) ([]xchange, *xdiffEnv) {
	var env *xdiffEnv
	if algo == algoHistogram {
		env = classifyEnv(a, b)
		histogramDiff(env)
	} else {
		env = prepareEnv(a, b)
		myersMark(env)
	}
	compact(env.f1, env.f2)
	compact(env.f2, env.f1)
	return buildScript(env), env
}

// myersMark runs Myers on a prepared env, marking changed lines.
func myersMark(env *xdiffEnv) {
	n1, n2 := len(env.f1.rindex), len(env.f2.rindex)
	ndiags := n1 + n2 + 3
	x := &xalgo{
		f1: env.f1, f2: env.f2,
		kvdf: make([]int, ndiags+2), kvdb: make([]int, ndiags+2),
		koff:   n2 + 1,
		mxcost: max(bogosqrt(ndiags), xdlMaxCostMin),
	}
	x.compare(0, n1, 0, n2, false)
}

type xgroup struct{ start, end int }

func groupInit(f *xfile) xgroup {
	g := xgroup{}
	for f.isChanged(g.end) {
		g.end++
	}
	return g
}

func groupNext(f *xfile, g *xgroup) bool {
	if g.end == f.nrec() {
		return false
	}
	g.start = g.end + 1
	for g.end = g.start; f.isChanged(g.end); g.end++ {
	}
	return true
}

func groupPrevious(f *xfile, g *xgroup) bool {
	if g.start == 0 {
		return false
	}
	g.end = g.start - 1
	for g.start = g.end; f.isChanged(g.start - 1); g.start-- {
	}
	return true
}

func groupSlideDown(f *xfile, g *xgroup) bool {
	if g.end < f.nrec() && f.class[g.start] == f.class[g.end] {
		f.setChanged(g.start, false)
		g.start++
		f.setChanged(g.end, true)
		g.end++
		for f.isChanged(g.end) {
			g.end++
		}
		return true
	}
	return false
}

func groupSlideUp(f *xfile, g *xgroup) bool {
	if g.start > 0 && f.class[g.start-1] == f.class[g.end-1] {
		g.start--
		f.setChanged(g.start, true)
		g.end--
		f.setChanged(g.end, false)
		for f.isChanged(g.start - 1) {
			g.start--
		}
		return true
	}
	return false
}

// compact slides groups of changed lines up and down so that they join
// neighbouring groups and line up with changes in the other file, as
// xdiff does before building its script.
func compact(f, fo *xfile) {
	g := groupInit(f)
	gother := groupInit(fo)
	for {
		if g.end != g.start {
			var earliestEnd, endMatchingOther int
			for {
				groupsize := g.end - g.start
				endMatchingOther = -1
				for groupSlideUp(f, &g) {
					groupPrevious(fo, &gother)
				}
				earliestEnd = g.end
				if gother.end > gother.start {
					endMatchingOther = g.end
				}
				for groupSlideDown(f, &g) {
					groupNext(fo, &gother)
					if gother.end > gother.start {
						endMatchingOther = g.end
					}
				}
				if groupsize == g.end-g.start {
					break
				}
			}
			if g.end != earliestEnd && endMatchingOther != -1 {
				for gother.end == gother.start {
					groupSlideUp(f, &g)
					groupPrevious(fo, &gother)
				}
			}
		}
		if !groupNext(f, &g) {
			break
		}
		groupNext(fo, &gother)
	}
}

func buildScript(env *xdiffEnv) []xchange {
	f1, f2 := env.f1, env.f2
	var rev []xchange
	for i1, i2 := f1.nrec(), f2.nrec(); i1 >= 0 || i2 >= 0; i1, i2 = i1-1, i2-1 {
		if f1.isChanged(i1-1) || f2.isChanged(i2-1) {
			l1, l2 := i1, i2
			for f1.isChanged(i1 - 1) {
				i1--
			}
			for f2.isChanged(i2 - 1) {
				i2--
			}
			rev = append(rev, xchange{i1: i1, i2: i2, chg1: l1 - i1, chg2: l2 - i2})
		}
	}
	out := make([]xchange, len(rev))
	for i, c := range rev {
		out[len(rev)-1-i] = c
	}
	return out
}
