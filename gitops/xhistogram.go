package gitops

// Histogram diff, the line matcher git's ort merge strategy uses (it sets
// the histogram algorithm in its merge options; git diff and git
// merge-file default to Myers). Where the two disagree on how to align
// moved or repeated blocks, the merge verdict itself can differ, so
// merges must match it.
//
// The algorithm, as xdiff implements it: in a region of the two files,
// index every line of the first file by content, counting occurrences.
// Walk the second file; for each line with a match, extend the match both
// ways and keep the longest common run, preferring runs whose rarest line
// occurs fewer times (a line that occurs once is the best anchor). Lines
// occurring more than histMaxChain times are not used as anchors; if that
// leaves no anchor though common lines exist, the region falls back to
// Myers. Recurse on both sides of the chosen run. Line numbers here are
// 1-based like xdiff's, so that 0 can mean "none".

// histMaxChain bounds both the occurrences of an anchor line and the
// number of distinct lines sharing one hash bucket (xdiff's
// max_chain_length).
const histMaxChain = 64

type histRegion struct {
	begin1, end1, begin2, end2 int
}

// histRec is one distinct line of the indexed region: its first
// occurrence and how many times it occurs.
type histRec struct {
	ptr, cnt int
}

type histogrammer struct {
	env *xdiffEnv
	// recOf maps a line class to 1+its record index in the current
	// region's index (0 = absent); entries are cleared after each region.
	recOf []int32
	// failed is set when a hash bucket overflows, where xdiff gives up
	// on the whole diff.
	failed bool
}

// histogramDiff marks the changed lines of env's files.
func histogramDiff(env *xdiffEnv) {
	h := &histogrammer{env: env, recOf: make([]int32, env.nclass)}
	if !h.diff(1, env.f1.nrec(), 1, env.f2.nrec()) {
		env.failed = true
	}
}

func (h *histogrammer) markAll(f *xfile, line, count int) {
	for ; count > 0; count-- {
		f.setChanged(line-1, true)
		line++
	}
}

// diff handles lines [line1, line1+count1) against [line2, line2+count2).
func (h *histogrammer) diff(line1, count1, line2, count2 int) bool {
	f1, f2 := h.env.f1, h.env.f2
	for {
		if count1 <= 0 && count2 <= 0 {
			return true
		}
		if count1 == 0 {
			h.markAll(f2, line2, count2)
			return true
		}
		if count2 == 0 {
			h.markAll(f1, line1, count1)
			return true
		}
		lcs, found := h.findLCS(line1, count1, line2, count2)
		switch {
		case found < 0:
			return false
		case found > 0:
			h.fallBack(line1, count1, line2, count2)
			return true
		case lcs.begin1 == 0 && lcs.begin2 == 0:
			h.markAll(f1, line1, count1)
			h.markAll(f2, line2, count2)
			return true
		}
		if !h.diff(line1, lcs.begin1-line1, line2, lcs.begin2-line2) {
			return false
		}
		end1, end2 := line1+count1-1, line2+count2-1
		count1, line1 = end1-lcs.end1, lcs.end1+1
		count2, line2 = end2-lcs.end2, lcs.end2+1
	}
}

// fallBack diffs a region with Myers, as if the region were two whole
// files (xdiff re-prepares it, so the pruning applies to the region).
func (h *histogrammer) fallBack(line1, count1, line2, count2 int) {
	f1, f2 := h.env.f1, h.env.f2
	sub := prepareEnv(f1.recs[line1-1:line1-1+count1], f2.recs[line2-1:line2-1+count2])
	myersMark(sub)
	for i := 0; i < count1; i++ {
		f1.setChanged(line1-1+i, sub.f1.isChanged(i))
	}
	for i := 0; i < count2; i++ {
		f2.setChanged(line2-1+i, sub.f2.isChanged(i))
	}
}

// hashBits is xdiff's table size: the smallest power of two ≥ size.
func hashBits(size int) uint {
	bits := uint(0)
	for val := 1; val < size && bits < 32; val <<= 1 {
		bits++
	}
	if bits == 0 {
		return 1
	}
	return bits
}

// findLCS picks the anchor run of a region. It returns 1 when the region
// must fall back to Myers, -1 when the index overflowed, 0 otherwise (a
// zero region then means nothing in common).
func (h *histogrammer) findLCS(line1, count1, line2, count2 int) (histRegion, int) {
	c1, c2 := h.env.f1.class, h.env.f2.class
	bits := hashBits(count1)
	mask := 1<<bits - 1
	bucketLen := make([]uint8, 1<<bits)
	lineMap := make([]int32, count1) // line-line1 → record index
	next := make([]int, count1)      // line-line1 → next occurrence (0 none)
	recs := make([]histRec, 0, count1/4+1)
	defer func() {
		for i := range recs {
			h.recOf[c1[recs[i].ptr-1]] = 0
		}
	}()
	end1, end2 := line1+count1-1, line2+count2-1

	// Index the first file's lines, last to first, so that each record's
	// chain of occurrences runs in line order.
	for ptr := end1; ptr >= line1; ptr-- {
		c := c1[ptr-1]
		if r := h.recOf[c]; r != 0 {
			rec := &recs[r-1]
			next[ptr-line1] = rec.ptr
			rec.ptr = ptr
			rec.cnt++
			lineMap[ptr-line1] = r - 1
			continue
		}
		// xdiff chains distinct lines per hash bucket and gives up when a
		// chain reaches its limit; the bucket is its hash of the class.
		b := (c + c>>bits) & mask
		if bucketLen[b] == histMaxChain {
			return histRegion{}, -1
		}
		bucketLen[b]++
		recs = append(recs, histRec{ptr: ptr, cnt: 1})
		h.recOf[c] = int32(len(recs))
		lineMap[ptr-line1] = int32(len(recs) - 1)
	}

	var lcs histRegion
	best := histMaxChain + 1 // occurrences of the best anchor so far
	hasCommon := false
	cnt := func(line int) int { return recs[lineMap[line-line1]].cnt }

	for bptr := line2; bptr <= end2; {
		bnext := bptr + 1
		r := h.recOf[c2[bptr-1]]
		if r == 0 {
			bptr = bnext
			continue
		}
		rec := recs[r-1]
		hasCommon = true
		if rec.cnt > best {
			bptr = bnext
			continue
		}
		as := rec.ptr
	occurrences:
		for {
			np := next[as-line1]
			bs, ae, be, rc := bptr, as, bptr, rec.cnt
			for line1 < as && line2 < bs && c1[as-2] == c2[bs-2] {
				as--
				bs--
				if rc > 1 {
					rc = min(rc, cnt(as))
				}
			}
			for ae < end1 && be < end2 && c1[ae] == c2[be] {
				ae++
				be++
				if rc > 1 {
					rc = min(rc, cnt(ae))
				}
			}
			if bnext <= be {
				bnext = be + 1
			}
			if lcs.end1-lcs.begin1 < ae-as || rc < best {
				lcs = histRegion{begin1: as, end1: ae, begin2: bs, end2: be}
				best = rc
			}
			if np == 0 {
				break
			}
			for np <= ae {
				np = next[np-line1]
				if np == 0 {
					break occurrences
				}
			}
			as = np
		}
		bptr = bnext
	}
	if hasCommon && best > histMaxChain {
		return histRegion{}, 1
	}
	return lcs, 0
}
