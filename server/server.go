package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"runtime/debug"
	"sync"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/bazinga-bot/bazinga/bot"
	"github.com/bazinga-bot/bazinga/ghapi"
)

// Processor is what the server feeds; the core's *Bot implements it.
type Processor interface {
	// Key returns the serialisation key of a delivery: deliveries with the
	// same key are processed one at a time, in arrival order ("" = no
	// ordering needed). It is called on the request path, so it must be
	// cheap and must not call GitHub.
	Key(d bot.Delivery) string
	// Process handles one delivery. Return an error wrapping bot.ErrIgnored for
	// a delivery bazinga does not act on (counted as "ignored", not logged
	// as a failure).
	Process(ctx context.Context, d bot.Delivery) error
	// Sweep is called periodically (and once at start-up) to reconcile
	// active sessions: timeouts, orphans, clarification timeouts.
	Sweep(ctx context.Context) error
}

// Server is the App's HTTP front: it verifies webhook deliveries, answers 202
// once a delivery is queued and feeds a Processor, one key at a time, from
// the durable queue (durable.go, with Config.DatabaseURL) or from in-memory
// per-key lanes (queue.go).
type Server struct {
	cfg     Config
	p       Processor
	log     *slog.Logger
	metrics *Metrics
	q       *queue
	dq      *durable // the durable queue, when cfg.DatabaseURL is set (then q is unused)
	seen    *dedup
	budget  *bodyBudget // webhook body bytes held, in all and per address
	mux     *http.ServeMux

	workCtx    context.Context // cancelled when draining gives up
	workCancel context.CancelFunc
	workers    sync.WaitGroup
	stopOnce   sync.Once
	stopped    chan struct{}
}

// NewServer validates cfg (a webhook secret is required) and starts the
// workers, so Handler is usable at once; Shutdown (or Run's return) stops
// them.
func NewServer(cfg Config, p Processor, logger *slog.Logger) (*Server, error) {
	if len(cfg.WebhookSecret) == 0 {
		return nil, fmt.Errorf("server: a webhook secret is required (%s): unsigned deliveries are never accepted", EnvWebhookSecret)
	}
	if p == nil {
		return nil, errors.New("server: a Processor is required")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	s := &Server{
		cfg: cfg, p: p, log: logger, metrics: newMetrics(),
		q:       newQueue(cfg.QueueSize),
		seen:    newDedup(cfg.DedupSize, cfg.DedupTTL),
		budget:  newBodyBudget(cfg.BodyBudget, cfg.BodyBudgetPerIP),
		stopped: make(chan struct{}),
	}
	s.workCtx, s.workCancel = context.WithCancel(context.Background())
	if cfg.DatabaseURL != "" {
		if err := s.openDurable(); err != nil {
			s.workCancel()
			return nil, err
		}
	} else {
		s.metrics.setQueue(s.q.depth, cfg.QueueSize, s.q.running)
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /webhook", s.handleWebhook)
	s.mux.HandleFunc("GET /healthz", s.handleHealthz)
	s.mux.Handle("GET /metrics", s.metrics.handler(logger))
	for i := 0; s.dq == nil && i < cfg.Workers; i++ {
		s.workers.Add(1)
		go s.worker()
	}
	return s, nil
}

// Handler returns the HTTP handler: POST /webhook, GET /healthz, GET /metrics,
// and POST /token once MountTokenExchange is called.
func (s *Server) Handler() http.Handler { return s.mux }

// MountTokenExchange serves x at POST /token (call before Run or Serve).
func (s *Server) MountTokenExchange(x *TokenExchange) {
	c := s.metrics.tokenExchanges()
	x.count = func(outcome string) { c.WithLabelValues(outcome).Inc() }
	s.mux.Handle(TokenPath, x)
}

// Metrics returns the server's metrics (to attach API stats, or in tests).
func (s *Server) Metrics() *Metrics { return s.metrics }

// QueueDepth returns the number of deliveries waiting for a worker.
func (s *Server) QueueDepth() int {
	if s.dq != nil {
		return s.dq.stats.Load().Pending
	}
	return s.q.depth()
}

// Run listens on cfg.Listen, sweeps once at start and then every
// SweepInterval, and on ctx's end shuts down gracefully: it stops
// accepting, lets queued work finish (up to ShutdownGrace) and returns.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.cfg.Listen, err)
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on a listener the caller opened. At most MaxConns
// connections are open at once (at the cap the longest-waiting one without
// a request in a handler is closed), MaxConnsPerIP per client address; a
// client slower than HeaderTimeout to send its headers, or ReadTimeout its
// whole request, is cut off, and a webhook body slower than BodyMinRate
// after BodyGrace too (front.go).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	maxConns := s.cfg.MaxConns
	if lim := openFileLimit(); lim > 0 && maxConns > lim*3/4 {
		// Past the descriptor limit accept fails instead of evicting.
		maxConns = lim * 3 / 4
	}
	guard := newConnGuard(maxConns, s.cfg.MaxConnsPerIP, s.log)
	s.metrics.setConns(guard)
	ln = &guardListener{Listener: ln, g: guard}
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       s.cfg.IdleTimeout,
		ConnState:         guard.connState,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("bazinga serve listening", "addr", ln.Addr().String(), "config", s.cfg)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
		if s.dq != nil {
			s.sweepDurable(ctx)
			return
		}
		s.sweepLoop(ctx)
	}()

	var runErr error
	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errors.Is(err, http.ErrServerClosed) {
			runErr = fmt.Errorf("http server: %w", err)
		}
	}
	s.log.Info("bazinga serve shutting down")
	shCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	if err := hs.Shutdown(shCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("http shutdown: %w", err)
	}
	<-sweepDone
	if err := s.Shutdown(shCtx); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// Shutdown refuses new deliveries (503), waits for queued and running work
// to finish or ctx to end, and stops the workers. A Process still running
// when ctx ends has its context cancelled.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.dq != nil {
		return s.shutdownDurable(ctx)
	}
	s.q.close()
	var err error
	select {
	case <-s.q.waitIdle():
	case <-ctx.Done():
		err = fmt.Errorf("shutdown: %d deliveries not processed: %w", s.q.depth(), ctx.Err())
	}
	s.stopOnce.Do(func() { close(s.stopped) })
	s.workCancel()
	// A Process that ignores its cancelled context must not hold the
	// process forever: give it a last moment, then return regardless.
	done := make(chan struct{})
	go func() { s.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		err = errors.Join(err, errors.New("shutdown: a delivery is still running after cancellation"))
	}
	return err
}

func (s *Server) sweepLoop(ctx context.Context) {
	s.sweep(ctx)
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.sweep(ctx)
		}
	}
}

// sweep runs Processor.Sweep once, recovering a panic like a delivery's.
func (s *Server) sweep(ctx context.Context) {
	start := time.Now()
	outcome := OutcomeProcessed
	defer func() {
		if r := recover(); r != nil {
			outcome = OutcomePanicked
			s.log.Error("sweep panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		s.metrics.sweep(outcome)
	}()
	if err := s.p.Sweep(ctx); err != nil {
		if reset, ok := onlyRateLimited(err); ok {
			// Not a failure: the sessions it left wait for the reset and
			// resume by themselves (bot records the wait).
			outcome = OutcomeRateLimited
			s.log.Warn("sweep rate-limited", "reset", reset.UTC().Format(time.RFC3339), "err", err, "duration", time.Since(start))
			return
		}
		outcome = OutcomeFailed
		s.log.Error("sweep failed", "err", err, "duration", time.Since(start))
		return
	}
	s.log.Debug("sweep done", "duration", time.Since(start))
}

func (s *Server) worker() {
	defer s.workers.Done()
	for {
		select {
		case <-s.stopped:
			return
		case l := <-s.q.ready:
			d := s.q.take(l)
			s.process(d)
			s.q.done(l)
		}
	}
}

// process runs one delivery, recovering a panic so one bad event never
// takes the server (or the lane) down.
func (s *Server) process(d bot.Delivery) {
	log := s.log.With(deliveryAttrs(d)...)
	start := time.Now()
	outcome := OutcomeProcessed
	defer func() {
		if r := recover(); r != nil {
			outcome = OutcomePanicked
			log.Error("delivery panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
		s.metrics.event(d.Event, outcome)
	}()
	err := s.p.Process(s.workCtx, d)
	switch {
	case err == nil:
		log.Info("delivery processed", "duration", time.Since(start), "queued", start.Sub(d.Received))
	case errors.Is(err, bot.ErrIgnored):
		outcome = OutcomeIgnored
		log.Debug("delivery ignored", "reason", err.Error())
	default:
		outcome = OutcomeFailed
		log.Error("delivery failed", "err", err, "duration", time.Since(start))
	}
}

func deliveryAttrs(d bot.Delivery) []any {
	a := []any{"delivery", d.ID, "event", d.Event}
	if d.Action != "" {
		a = append(a, "action", d.Action)
	}
	if d.Installation != 0 {
		a = append(a, "installation", d.Installation)
	}
	if d.Repo != "" {
		a = append(a, "repo", d.Repo)
	}
	return a
}

func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := http.StatusAccepted
	defer func() { s.metrics.request(status, time.Since(start)) }()
	fail := func(code int, msg string, attrs ...any) {
		status = code
		s.log.Warn("webhook refused", append([]any{"status", code, "reason", msg,
			"delivery", r.Header.Get(headerDelivery), "event", r.Header.Get(headerEvent)}, attrs...)...)
		http.Error(w, msg, code)
	}

	// Everything that can be refused without the body is refused first: an
	// unauthenticated, oversized or foreign request costs no body read.
	ip := remoteIP(r.RemoteAddr)
	if !sourceAllowed(s.cfg.WebhookSources, ip) {
		w.Header().Set("Connection", "close")
		fail(http.StatusForbidden, "deliveries are accepted only from the configured webhook source ranges", "remote", ip.String())
		return
	}
	sig := r.Header.Get("X-Hub-Signature-256")
	if sig == "" && r.Header.Get("X-Hub-Signature") != "" {
		fail(http.StatusUnauthorized, ErrSHA1Only.Error())
		return
	}
	if err := checkSignatureHeader(sig); err != nil {
		fail(http.StatusUnauthorized, err.Error())
		return
	}
	// GitHub sends both headers with every delivery.
	if event := r.Header.Get(headerEvent); !validEvent(event) {
		fail(http.StatusBadRequest, "missing or malformed "+headerEvent)
		return
	}
	if !validDeliveryID(r.Header.Get(headerDelivery)) {
		fail(http.StatusBadRequest, "missing or malformed "+headerDelivery)
		return
	}
	if r.ContentLength > s.cfg.MaxBodyBytes {
		// Close rather than drain what the sender still has to send.
		w.Header().Set("Connection", "close")
		fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("payload larger than %d bytes", s.cfg.MaxBodyBytes))
		return
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "":
		ct = "application/json" // GitHub always sends one; curl users may not
	case "application/json", "application/x-www-form-urlencoded":
	default:
		fail(http.StatusUnsupportedMediaType, fmt.Sprintf("unsupported Content-Type %q: GitHub sends application/json or application/x-www-form-urlencoded", ct))
		return
	}
	var hard time.Time
	if s.cfg.ReadTimeout > 0 {
		hard = start.Add(s.cfg.ReadTimeout)
	}
	raw, reserved, rerr := readBody(r.Body, s.cfg.MaxBodyBytes, s.budget, ip, http.NewResponseController(w), s.cfg.BodyMinRate, s.cfg.BodyGrace, hard)
	defer s.budget.release(ip, reserved)
	if rerr != nil {
		var mbe *http.MaxBytesError
		w.Header().Set("Connection", "close")
		switch {
		case errors.As(rerr, &mbe):
			fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("payload larger than %d bytes", s.cfg.MaxBodyBytes))
		case errors.Is(rerr, errBodyBudget):
			w.Header().Set("Retry-After", "1")
			fail(http.StatusServiceUnavailable, rerr.Error())
		case errors.Is(rerr, errBodySlow):
			fail(http.StatusRequestTimeout, rerr.Error(), "remote", ip.String())
		default:
			fail(http.StatusBadRequest, "cannot read body", "err", rerr)
		}
		return
	}
	payload, err := github.ValidatePayloadFromBody(ct, bytes.NewReader(raw), sig, s.cfg.WebhookSecret)
	if err != nil {
		// The header is well-formed, so what is left is a mismatch (or, for
		// a form body, a malformed form, which is no more authenticated).
		fail(http.StatusUnauthorized, ErrBadSignature.Error(), "err", err)
		return
	}
	event := r.Header.Get(headerEvent)
	if len(payload) == 0 {
		fail(http.StatusBadRequest, "form body without a payload field")
		return
	}
	// Decoded once: the bot routes and handles the same decoded payload.
	d, err := bot.ParseDelivery(bot.Delivery{ID: r.Header.Get(headerDelivery), Event: event, Payload: payload, Received: start})
	if err != nil {
		fail(http.StatusBadRequest, "malformed JSON payload", "err", err)
		return
	}
	if s.dq != nil {
		key := s.key(d)
		accepted, dup, err := s.enqueueDurable(r.Context(), key, d)
		switch {
		case err != nil:
			s.metrics.event(d.Event, OutcomeDropped)
			w.Header().Set("Retry-After", "5")
			fail(http.StatusServiceUnavailable, "the queue's database is unavailable, retry later", "err", err)
		case dup:
			s.metrics.event(d.Event, OutcomeDuplicate)
			s.log.Info("duplicate delivery skipped", deliveryAttrs(d)...)
			w.WriteHeader(status)
		case !accepted:
			s.metrics.event(d.Event, OutcomeDropped)
			fail(http.StatusServiceUnavailable, "queue full or shutting down, retry later", "depth", s.QueueDepth())
		default:
			s.log.Debug("delivery queued", append(deliveryAttrs(d), "key", key)...)
			w.WriteHeader(status)
		}
		return
	}
	if d.ID != "" && !s.seen.reserve(d.ID) {
		s.metrics.event(d.Event, OutcomeDuplicate)
		s.log.Info("duplicate delivery skipped", deliveryAttrs(d)...)
		w.WriteHeader(status)
		return
	}
	key := s.key(d)
	if !s.q.push(key, d) {
		if d.ID != "" {
			s.seen.release(d.ID)
		}
		s.metrics.event(d.Event, OutcomeDropped)
		fail(http.StatusServiceUnavailable, "queue full, retry later", "depth", s.q.depth())
		return
	}
	s.log.Debug("delivery queued", append(deliveryAttrs(d), "key", key)...)
	w.WriteHeader(status)
}

// GitHub's delivery headers.
const (
	headerDelivery = "X-GitHub-Delivery"
	headerEvent    = "X-GitHub-Event"
)

// key calls Processor.Key, treating a panic as "no ordering" rather than
// failing the request.
func (s *Server) key(d bot.Delivery) (k string) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("Processor.Key panicked", append(deliveryAttrs(d), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))...)
			k = ""
		}
	}()
	return s.p.Key(d)
}

func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Status     string `json:"status"`
		QueueDepth int    `json:"queue_depth"`
		QueueCap   int    `json:"queue_capacity"`
		InFlight   int    `json:"in_flight"`
	}{"ok", s.QueueDepth(), s.cfg.QueueSize, s.inFlight()})
}

func (s *Server) inFlight() int {
	if s.dq != nil {
		return s.dq.runner.Running()
	}
	return s.q.running()
}

// onlyRateLimited reports whether every error err joins is a GitHub rate
// limit, and the latest reset among them.
func onlyRateLimited(err error) (time.Time, bool) {
	if rl, ok := err.(*ghapi.RateLimitedError); ok {
		return rl.Reset, true
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var latest time.Time
		found := false
		for _, e := range j.Unwrap() {
			if e == nil {
				continue
			}
			r, ok := onlyRateLimited(e)
			if !ok {
				return time.Time{}, false
			}
			found = true
			if r.After(latest) {
				latest = r
			}
		}
		return latest, found
	}
	if u := errors.Unwrap(err); u != nil {
		return onlyRateLimited(u)
	}
	return time.Time{}, false
}
