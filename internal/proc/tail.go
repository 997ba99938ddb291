package proc

import "sync"

// Tail keeps the last max bytes written to it in a fixed ring, so a command
// that prints gigabytes costs a bounded amount of memory and the end of its
// output (where results and test failures usually are) survives. It is safe
// for concurrent writers, so stdout and stderr may share one.
type Tail struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	start int   // index of the oldest byte once the ring is full
	total int64 // bytes written in all
}

// NewTail returns a Tail keeping at most max bytes; max <= 0 keeps nothing
// but still counts.
func NewTail(max int) *Tail {
	return &Tail{max: max}
}

// Write keeps the end of p; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if t.max <= 0 {
		return n, nil
	}
	if len(p) >= t.max {
		// Only the last max bytes of p can survive.
		if cap(t.buf) < t.max {
			t.buf = make([]byte, t.max)
		}
		t.buf = t.buf[:t.max]
		copy(t.buf, p[len(p)-t.max:])
		t.start = 0
		return n, nil
	}
	if len(t.buf) < t.max {
		room := t.max - len(t.buf)
		if len(p) <= room {
			t.buf = append(t.buf, p...)
			return n, nil
		}
		t.buf = append(t.buf, p[:room]...)
		p = p[room:]
		t.start = 0
	}
	// The ring is full: overwrite the oldest bytes.
	for len(p) > 0 {
		c := copy(t.buf[t.start:], p)
		p = p[c:]
		t.start = (t.start + c) % t.max
	}
	return n, nil
}

// Bytes returns a copy of the kept tail, oldest byte first.
func (t *Tail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.start:]...)
	return append(out, t.buf[:t.start]...)
}

// String is Bytes as a string.
func (t *Tail) String() string { return string(t.Bytes()) }

// Total is how many bytes were written in all, kept or not.
func (t *Tail) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// Truncated reports whether bytes were dropped from the front.
func (t *Tail) Truncated() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total > int64(len(t.buf))
}
