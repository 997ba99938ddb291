package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"sync"
	"time"

	"github.com/bazinga-bot/bazinga/bot"
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
// at once and feeds a Processor from a bounded queue with per-key lanes.
type Server struct {
	cfg     Config
	p       Processor
	log     *slog.Logger
	metrics *Metrics
	q       *queue
	seen    *dedup
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
		stopped: make(chan struct{}),
	}
	s.metrics.setQueue(s.q.depth, cfg.QueueSize, s.q.running)
	s.workCtx, s.workCancel = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /webhook", s.handleWebhook)
	s.mux.HandleFunc("GET /healthz", s.handleHealthz)
	s.mux.Handle("GET /metrics", s.metrics.handler(logger))
	for i := 0; i < cfg.Workers; i++ {
		s.workers.Add(1)
		go s.worker()
	}
	return s, nil
}

// Handler returns the HTTP handler: POST /webhook, GET /healthz, GET /metrics.
func (s *Server) Handler() http.Handler { return s.mux }

// Metrics returns the server's metrics (to attach API stats, or in tests).
func (s *Server) Metrics() *Metrics { return s.metrics }

// QueueDepth returns the number of deliveries waiting for a worker.
func (s *Server) QueueDepth() int { return s.q.depth() }

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

// Serve is Run on a listener the caller opened.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("bazinga serve listening", "addr", ln.Addr().String(), "config", s.cfg)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	sweepDone := make(chan struct{})
	go func() {
		defer close(sweepDone)
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

// Close stops the server at once, abandoning queued work (tests).
func (s *Server) Close() {
	s.q.close()
	s.stopOnce.Do(func() { close(s.stopped) })
	s.workCancel()
	s.workers.Wait()
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

// webhookEnvelope is the part of a payload the server routes on.
type webhookEnvelope struct {
	Action       string `json:"action"`
	Installation *struct {
		ID int64 `json:"id"`
	} `json:"installation"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
}

func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := http.StatusAccepted
	defer func() { s.metrics.request(status, time.Since(start)) }()
	fail := func(code int, msg string, attrs ...any) {
		status = code
		s.log.Warn("webhook refused", append([]any{"status", code, "reason", msg,
			"delivery", r.Header.Get("X-GitHub-bot.Delivery"), "event", r.Header.Get("X-GitHub-Event")}, attrs...)...)
		http.Error(w, msg, code)
	}

	sig := r.Header.Get("X-Hub-Signature-256")
	if sig == "" {
		if r.Header.Get("X-Hub-Signature") != "" {
			fail(http.StatusUnauthorized, ErrSHA1Only.Error())
		} else {
			fail(http.StatusUnauthorized, ErrNoSignature.Error())
		}
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			fail(http.StatusRequestEntityTooLarge, fmt.Sprintf("payload larger than %d bytes", s.cfg.MaxBodyBytes))
		} else {
			fail(http.StatusBadRequest, "cannot read body", "err", err)
		}
		return
	}
	if err := VerifySignature(s.cfg.WebhookSecret, body, sig); err != nil {
		fail(http.StatusUnauthorized, err.Error())
		return
	}
	event := r.Header.Get("X-GitHub-Event")
	if event == "" {
		fail(http.StatusBadRequest, "missing X-GitHub-Event")
		return
	}
	payload := body
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		// GitHub's form content type: the JSON is the "payload" field; the
		// signature covers the raw body, checked above.
		vals, err := url.ParseQuery(string(body))
		if err != nil || vals.Get("payload") == "" {
			fail(http.StatusBadRequest, "form body without a payload field")
			return
		}
		payload = []byte(vals.Get("payload"))
	}
	var env webhookEnvelope
	if err := json.Unmarshal(payload, &env); err != nil {
		fail(http.StatusBadRequest, "malformed JSON payload", "err", err)
		return
	}
	d := bot.Delivery{
		ID: r.Header.Get("X-GitHub-bot.Delivery"), Event: event, Action: env.Action,
		Payload: payload, Received: start,
	}
	if env.Installation != nil {
		d.Installation = env.Installation.ID
	}
	if env.Repository != nil {
		d.Repo = env.Repository.FullName
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
	}{"ok", s.q.depth(), s.cfg.QueueSize, s.q.running()})
}
