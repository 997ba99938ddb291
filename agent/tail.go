package agent

import "sync"

// tailBuffer keeps the last max bytes written to it in a fixed ring, so an
// agent that prints gigabytes costs a bounded amount of memory, and the end
// of its output (where the result usually is) survives.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	start int   // index of the oldest byte once the ring is full
	total int64 // bytes written in all
}

func newTailBuffer(max int) *tailBuffer {
	return &tailBuffer{max: max}
}

func (t *tailBuffer) Write(p []byte) (int, error) {
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
func (t *tailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, len(t.buf))
	out = append(out, t.buf[t.start:]...)
	return append(out, t.buf[:t.start]...)
}

// Total is how many bytes were written in all, kept or not.
func (t *tailBuffer) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
