package server

import (
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/hashicorp/golang-lru/v2/expirable"
)

// lane holds the pending deliveries of one serialisation key. A lane is in
// the ready channel at most once, and only while no worker holds it, so a
// key's deliveries run one at a time and in arrival order, while different
// keys run in parallel on different workers.
type lane struct {
	key   string
	items []bot.Delivery
}

// queue is the bounded work queue of the server: pending counts every
// delivery accepted and not yet started, across all lanes.
type queue struct {
	mu       sync.Mutex
	cap      int
	pending  int
	inFlight int
	lanes    map[string]*lane // keyed lanes that have pending or running work
	ready    chan *lane       // lanes with work and no worker
	closed   bool
	idle     chan struct{} // closed (and replaced) when pending+inFlight reaches 0
}

func newQueue(capacity int) *queue {
	return &queue{
		cap: capacity, lanes: map[string]*lane{},
		// Every lane in ready holds at least one pending delivery, so
		// capacity slots always suffice and a send never blocks.
		ready: make(chan *lane, capacity),
		idle:  make(chan struct{}),
	}
}

// push enqueues d under key; false if the queue is full or closed.
func (q *queue) push(key string, d bot.Delivery) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.pending >= q.cap {
		return false
	}
	q.pending++
	if key != "" {
		if l, ok := q.lanes[key]; ok {
			// Running or already ready: the worker picks it up in turn.
			l.items = append(l.items, d)
			return true
		}
		l := &lane{key: key, items: []bot.Delivery{d}}
		q.lanes[key] = l
		q.ready <- l
		return true
	}
	q.ready <- &lane{items: []bot.Delivery{d}}
	return true
}

// take removes the head of a lane a worker received from ready.
func (q *queue) take(l *lane) bot.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	d := l.items[0]
	l.items[0] = bot.Delivery{}
	l.items = l.items[1:]
	q.pending--
	q.inFlight++
	return d
}

// done finishes the lane's head: the lane goes back to ready if it has more
// work (at the tail, so a busy key cannot starve others), else it is dropped.
func (q *queue) done(l *lane) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.inFlight--
	if len(l.items) > 0 {
		q.ready <- l
	} else if l.key != "" {
		delete(q.lanes, l.key)
	}
	if q.pending == 0 && q.inFlight == 0 {
		close(q.idle)
		q.idle = make(chan struct{})
	}
}

// close refuses further pushes.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
}

// waitIdle returns a channel closed once nothing is pending or running.
func (q *queue) waitIdle() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.pending == 0 && q.inFlight == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return q.idle
}

func (q *queue) depth() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending
}

func (q *queue) running() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.inFlight
}

// dedup remembers recent delivery ids: at most size ids, each for ttl from
// its first arrival. A delivery is reserved when it is accepted (so a
// redelivery racing the first copy is a duplicate even while the first is
// still queued or running) and released when it could not be queued, so
// GitHub's redelivery of a refused delivery is accepted.
//
// The store is hashicorp/golang-lru/v2's expirable LRU (size bound, TTL,
// eviction of the oldest); the mutex makes check-and-add one step, which
// the LRU's own Peek then Add would not be. Peek checks the TTL and leaves
// the recency alone, so a flood of redeliveries cannot keep an id alive.
type dedup struct {
	mu  sync.Mutex
	ids *expirable.LRU[string, struct{}]
}

func newDedup(size int, ttl time.Duration) *dedup {
	return &dedup{ids: expirable.NewLRU[string, struct{}](size, nil, ttl)}
}

// reserve records id and reports true if it was not seen recently.
func (d *dedup) reserve(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.ids.Peek(id); ok {
		return false
	}
	d.ids.Add(id, struct{}{})
	return true
}

// release forgets id, so a delivery that could not be queued is accepted
// when GitHub redelivers it.
func (d *dedup) release(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ids.Remove(id)
}
