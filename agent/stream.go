package agent

import (
	"bytes"
	"sync"
)

// MaxLineBytes is the longest output line a driver reads whole. A CLI prints
// its final answer as one JSON line, so this bounds the answer it can give
// (a 3 MB answer is read whole); anything longer is reported as cut, never
// read from a tail.
const MaxLineBytes = 64 << 20

// lineWriter splits a stream into lines for an OutputReader as it arrives,
// holding at most one line (MaxLineBytes) in memory.
type lineWriter struct {
	mu   sync.Mutex
	r    OutputReader
	max  int
	buf  []byte
	cut  bool // the line in buf lost bytes past max
	done bool
}

func newLineWriter(r OutputReader, max int) *lineWriter {
	if max <= 0 {
		max = MaxLineBytes
	}
	return &lineWriter{r: r, max: max}
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := w.max - len(w.buf); room > 0 {
			if len(chunk) > room {
				w.buf = append(w.buf, chunk[:room]...)
				w.cut = true
			} else {
				w.buf = append(w.buf, chunk...)
			}
		} else if len(chunk) > 0 {
			w.cut = true
		}
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) emit() {
	line := bytes.TrimSuffix(w.buf, []byte("\r"))
	w.r.Line(line, w.cut)
	w.buf, w.cut = w.buf[:0], false
	if cap(w.buf) > 1<<20 {
		w.buf = nil // do not hold a huge line's memory for the rest of the run
	}
}

// close gives the reader the last line if it had no newline.
func (w *lineWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.done {
		return
	}
	w.done = true
	if len(w.buf) > 0 || w.cut {
		w.emit()
	}
}
