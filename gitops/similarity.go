package gitops

import "sort"

// Rename similarity, computed the way git's diffcore does: both files are
// cut into spans that end at a newline or after 64 bytes (an unfinished
// last span is dropped), each span is
// hashed, and the score is the number of bytes of the destination that
// also appear in the source, scaled to maxScore by the larger size.

const (
	maxScore            = 60000
	defaultRenameScore  = 30000 // 50%, git's default
	basenameRenameScore = defaultRenameScore + (maxScore-defaultRenameScore)/2
	spanHashBase        = 107927
)

type spanCount struct {
	hash uint32
	cnt  uint32
}

func spanCounts(data []byte) []spanCount {
	text := !isBinary(data)
	counts := make(map[uint32]uint32)
	var accum1, accum2 uint32
	n := 0
	for i := 0; i < len(data); i++ {
		c := uint32(data[i])
		old1 := accum1
		if text && c == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			continue
		}
		accum1 = (accum1 << 7) ^ (accum2 >> 25)
		accum2 = (accum2 << 7) ^ (old1 >> 25)
		accum1 += c
		n++
		if n < 64 && c != '\n' {
			continue
		}
		counts[(accum1+accum2*0x61)%spanHashBase] += uint32(n)
		n = 0
		accum1, accum2 = 0, 0
	}
	// A last span without a newline is not counted, as in git.
	out := make([]spanCount, 0, len(counts))
	for h, c := range counts {
		out = append(out, spanCount{hash: h, cnt: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].hash < out[j].hash })
	return out
}

// copiedBytes is the number of destination bytes found in the source.
func copiedBytes(src, dst []spanCount) int {
	sc := 0
	j := 0
	for _, s := range src {
		for j < len(dst) && dst[j].hash < s.hash {
			j++
		}
		if j < len(dst) && dst[j].hash == s.hash {
			sc += int(min(s.cnt, dst[j].cnt))
			j++
		}
	}
	return sc
}

// similarity returns git's rename score (0..maxScore) of two regular files
// of the given sizes, or 0 when their sizes differ too much to be a rename.
func similarity(srcSize, dstSize int, src, dst func() []spanCount) int {
	maxSize, baseSize := max(srcSize, dstSize), min(srcSize, dstSize)
	delta := maxSize - baseSize
	if maxSize*(maxScore-defaultRenameScore) < delta*maxScore {
		return 0
	}
	if dstSize == 0 {
		return 0
	}
	return int(int64(copiedBytes(src(), dst())) * maxScore / int64(maxSize))
}

// basenameSame tells whether two paths have the same final component.
func basenameSame(a, b string) bool {
	i, j := len(a), len(b)
	for i > 0 && j > 0 {
		i--
		j--
		c1, c2 := a[i], b[j]
		if c1 != c2 {
			return false
		}
		if c1 == '/' {
			return true
		}
	}
	return (i == 0 || a[i-1] == '/') && (j == 0 || b[j-1] == '/')
}
