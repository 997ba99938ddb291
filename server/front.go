package server

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The webhook front: what keeps anonymous clients from starving genuine
// deliveries. GitHub gives a delivery 10 s and does not redeliver by itself,
// so a delivery that waits behind idle or trickling connections is lost.
//
// The model is Apache's mod_reqtimeout (a body must keep up a minimum rate
// after a short grace) and nginx's limit_conn (per-client connection caps),
// plus eviction under pressure: when a cap is reached, a connection that
// waits without a request in a handler (an idle keep-alive connection, or
// one still sending its headers or nothing at all) is closed to admit the
// new one, the longest-waiting first. A genuine delivery sends its headers
// at once and is then in its handler, out of reach. Slow clients therefore
// cost neither body-read slots (the body budget counts bytes, not requests)
// nor the connection slots a genuine delivery needs.
//
// The caps are generous (a waiting connection costs a goroutine and 8 KiB
// of buffers) because eviction is a race: a newcomer evicted before its
// headers are read is lost, and the time a waiting connection survives is
// the number of waiting slots divided by the rate at which an attacker
// reconnects. Below the caps nothing is evicted and only the timeouts act.

// connGuard tracks the server's connections: a global cap and a cap per
// client address. A newcomer is refused only when every connection in its
// way is busy in a handler, where the body's minimum rate bounds how long
// it stays.
type connGuard struct {
	max, perIP int
	log        *slog.Logger
	evicted    atomic.Uint64
	refused    atomic.Uint64

	mu      sync.Mutex
	open_   int
	seq     uint64
	waiting list.List // *guardConn not busy, oldest first
	byIP    map[netip.Addr]*ipConns
}

// ipConns is one client address's connections.
type ipConns struct {
	open    int
	waiting list.List // its *guardConn not busy, oldest first
}

func newConnGuard(max, perIP int, log *slog.Logger) *connGuard {
	return &connGuard{max: max, perIP: perIP, log: log, byIP: map[netip.Addr]*ipConns{}}
}

// guardConn is a tracked connection. It is busy while a request of it is in
// a handler (http.StateActive); otherwise it is in the waiting lists.
type guardConn struct {
	net.Conn
	g       *connGuard
	ip      netip.Addr
	tracked bool
	since   uint64        // when it started waiting, in admission order
	at      time.Time     // when it started waiting
	gElem   *list.Element // in g.waiting, nil when busy
	ipElem  *list.Element // in byIP[ip].waiting, nil when busy
	once    sync.Once
}

func (c *guardConn) Close() error {
	c.once.Do(func() { c.g.forget(c) })
	return c.Conn.Close()
}

// remoteIP is the client address of a connection or request, unmapped so
// an IPv4 client counts once however it arrived.
func remoteIP(addr string) netip.Addr {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// maxFairnessScan bounds the addresses compared when choosing a victim at
// the global cap; beyond it the globally longest-waiting connection goes.
const maxFairnessScan = 256

// admit registers a new connection, evicting a waiting one when a cap is
// reached: at the address's cap, the address's longest-waiting one; at the
// global cap, the longest-waiting one of the address with the most open
// connections (so an address's flood evicts its own first). It reports
// false if the newcomer must be refused: nothing in its way is waiting.
func (g *connGuard) admit(c *guardConn) bool {
	var victim *guardConn
	g.mu.Lock()
	ic := g.byIP[c.ip]
	ipFull := g.perIP > 0 && ic != nil && ic.open >= g.perIP
	full := g.max > 0 && g.open_ >= g.max
	switch {
	case ipFull:
		if f := ic.waiting.Front(); f != nil {
			victim = f.Value.(*guardConn)
		}
	case full:
		victim = g.victimLocked()
	}
	if victim == nil && (ipFull || full) {
		g.mu.Unlock()
		g.refused.Add(1)
		return false
	}
	if victim != nil {
		g.removeLocked(victim)
	}
	if ic = g.byIP[c.ip]; ic == nil {
		ic = &ipConns{}
		g.byIP[c.ip] = ic
	}
	c.tracked = true
	g.open_++
	ic.open++
	g.waitLocked(c)
	g.mu.Unlock()
	if victim != nil {
		g.evicted.Add(1)
		// Closing makes the server's pending read fail; the server's own
		// Close then finds the connection already forgotten.
		_ = victim.Conn.Close()
	}
	return true
}

func (g *connGuard) victimLocked() *guardConn {
	if len(g.byIP) > maxFairnessScan {
		if f := g.waiting.Front(); f != nil {
			return f.Value.(*guardConn)
		}
		return nil
	}
	// Connections that started waiting a moment ago are spared while an
	// older one exists: a genuine newcomer's headers are on their way.
	settled := time.Now().Add(-newcomerGrace)
	var best, young *ipConns
	better := func(a, b *ipConns) bool {
		return b == nil || a.open > b.open ||
			(a.open == b.open && a.waiting.Front().Value.(*guardConn).since < b.waiting.Front().Value.(*guardConn).since)
	}
	for _, ic := range g.byIP {
		if ic.waiting.Len() == 0 {
			continue
		}
		if ic.waiting.Front().Value.(*guardConn).at.Before(settled) {
			if better(ic, best) {
				best = ic
			}
		} else if better(ic, young) {
			young = ic
		}
	}
	if best == nil {
		best = young
	}
	if best == nil {
		return nil
	}
	return best.waiting.Front().Value.(*guardConn)
}

// newcomerGrace is how long a connection that started waiting is spared
// from eviction while an older waiting one exists.
const newcomerGrace = 250 * time.Millisecond

func (g *connGuard) forget(c *guardConn) {
	g.mu.Lock()
	g.removeLocked(c)
	g.mu.Unlock()
}

func (g *connGuard) removeLocked(c *guardConn) {
	if !c.tracked {
		return
	}
	g.busyLocked(c)
	c.tracked = false
	g.open_--
	if ic := g.byIP[c.ip]; ic != nil {
		if ic.open--; ic.open <= 0 {
			delete(g.byIP, c.ip)
		}
	}
}

// busyLocked takes c out of the waiting lists.
func (g *connGuard) busyLocked(c *guardConn) {
	if c.gElem == nil {
		return
	}
	g.waiting.Remove(c.gElem)
	if ic := g.byIP[c.ip]; ic != nil {
		ic.waiting.Remove(c.ipElem)
	}
	c.gElem, c.ipElem = nil, nil
}

// waitLocked puts c at the tail of the waiting lists.
func (g *connGuard) waitLocked(c *guardConn) {
	if !c.tracked || c.gElem != nil {
		return
	}
	g.seq++
	c.since, c.at = g.seq, time.Now()
	c.gElem = g.waiting.PushBack(c)
	c.ipElem = g.byIP[c.ip].waiting.PushBack(c)
}

// connState is the http.Server's ConnState hook: a connection is busy from
// the moment its request headers are read (StateActive) until it goes idle.
func (g *connGuard) connState(nc net.Conn, st http.ConnState) {
	c, ok := nc.(*guardConn)
	if !ok {
		return
	}
	g.mu.Lock()
	switch st {
	case http.StateActive:
		g.busyLocked(c)
	case http.StateIdle:
		g.waitLocked(c)
	}
	g.mu.Unlock()
}

func (g *connGuard) open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open_
}

// guardListener admits connections through a connGuard.
type guardListener struct {
	net.Listener
	g *connGuard
}

func (l *guardListener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c := &guardConn{Conn: nc, g: l.g, ip: remoteIP(nc.RemoteAddr().String())}
		if l.g.admit(c) {
			return c, nil
		}
		// Refused: closed at once (the client sees a reset, not a wait).
		_ = nc.Close()
	}
}

// bodyBudget bounds the bytes of webhook bodies held at once, in all and
// per client address, counted as they arrive: a trickling client holds only
// what it sent, so slow clients cannot take what a genuine delivery needs,
// and one address cannot take the whole budget.
type bodyBudget struct {
	max, perIP int64 // perIP <= 0: no per-address bound
	used       atomic.Int64

	mu   sync.Mutex
	byIP map[netip.Addr]int64
}

func newBodyBudget(max, perIP int64) *bodyBudget {
	return &bodyBudget{max: max, perIP: perIP, byIP: map[netip.Addr]int64{}}
}

func (b *bodyBudget) reserve(ip netip.Addr, n int64) bool {
	if b.perIP > 0 {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.byIP[ip]+n > b.perIP {
			return false
		}
	}
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			break
		}
	}
	if b.perIP > 0 {
		b.byIP[ip] += n
	}
	return true
}

func (b *bodyBudget) release(ip netip.Addr, n int64) {
	if n == 0 {
		return
	}
	b.used.Add(-n)
	if b.perIP > 0 {
		b.mu.Lock()
		if b.byIP[ip] -= n; b.byIP[ip] <= 0 {
			delete(b.byIP, ip)
		}
		b.mu.Unlock()
	}
}

// Body read failures besides the size cap.
var (
	errBodyBudget = errors.New("too many webhook bytes being received (from this address or in all), retry later")
	errBodySlow   = errors.New("request body sent too slowly")
)

// deadliner sets the connection's read deadline (http.ResponseController;
// a ResponseRecorder in tests has none, which is fine).
type deadliner interface{ SetReadDeadline(time.Time) error }

// readBody reads at most limit bytes of r, growing its buffer only as bytes
// arrive and reserving every growth from the budget first. Before each read
// the connection's deadline is set so that the body keeps up minRate bytes
// per second after grace (mod_reqtimeout's MinRate), and never past
// hardDeadline. It returns the body and the bytes reserved (to release once
// the body is no longer needed), or an error: *http.MaxBytesError,
// errBodyBudget, errBodySlow, or the read's.
func readBody(r io.Reader, limit int64, budget *bodyBudget, ip netip.Addr, dl deadliner, minRate int64, grace time.Duration, hardDeadline time.Time) ([]byte, int64, error) {
	const first = 4 << 10
	if !budget.reserve(ip, first) {
		return nil, 0, errBodyBudget
	}
	reserved := int64(first)
	buf := make([]byte, 0, first)
	start := time.Now()
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, reserved, &http.MaxBytesError{Limit: limit}
			}
			grow := min(int64(cap(buf)), limit+1-int64(cap(buf)))
			if !budget.reserve(ip, grow) {
				return nil, reserved, errBodyBudget
			}
			reserved += grow
			nb := make([]byte, len(buf), int64(cap(buf))+grow)
			copy(nb, buf)
			buf = nb
		}
		if dl != nil && minRate > 0 {
			d := start.Add(grace + time.Duration(int64(len(buf))*int64(time.Second)/minRate))
			if !hardDeadline.IsZero() && d.After(hardDeadline) {
				d = hardDeadline
			}
			_ = dl.SetReadDeadline(d)
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, reserved, &http.MaxBytesError{Limit: limit}
		}
		if err == io.EOF {
			return buf, reserved, nil
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return nil, reserved, errBodySlow
			}
			return nil, reserved, err
		}
	}
}

// ParseSources reads a comma-separated list of CIDRs (or single addresses),
// the webhook source ranges to accept (GitHub publishes its own as the
// `hooks` of GET /meta).
func ParseSources(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 140.82.112.0/20 or an address", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a CIDR such as 140.82.112.0/20: %w", f, err)
		}
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	if len(out) == 0 {
		return nil, errors.New("no CIDR given")
	}
	return out, nil
}

func sourceAllowed(sources []netip.Prefix, ip netip.Addr) bool {
	if len(sources) == 0 {
		return true
	}
	for _, p := range sources {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// validEvent reports whether v could be an X-GitHub-Event value: GitHub's
// event names are lower-case words joined by underscores.
func validEvent(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}

// validDeliveryID reports whether v could be an X-GitHub-Delivery value
// (a GUID; tests and redelivery tools use other short tokens).
func validDeliveryID(v string) bool {
	if v == "" || len(v) > 100 {
		return false
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}
