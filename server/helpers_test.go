package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Test-only helpers of the server's types.

// Close stops the server at once, abandoning queued work.
func (s *Server) Close() {
	if s.dq != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		_ = s.shutdownDurable(ctx)
		return
	}
	s.q.close()
	s.stopOnce.Do(func() { close(s.stopped) })
	s.workCancel()
	s.workers.Wait()
}

// Sign returns the X-Hub-Signature-256 value of a payload: "sha256=" and the
// hex HMAC-SHA256 of the raw body keyed with the webhook secret.
func Sign(secret, payload []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(payload)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// EventCount returns the count of one (event, outcome) pair, for tests.
func (m *Metrics) EventCount(event, outcome string) uint64 {
	return uint64(m.value("bazinga_webhook_events_total", map[string]string{"event": event, "outcome": outcome}))
}

// Dropped returns the number of deliveries refused because the queue was full.
func (m *Metrics) Dropped() uint64 { return uint64(m.value("bazinga_webhook_dropped_total", nil)) }

// value reads one counter or gauge series from the registry without
// creating it (WithLabelValues would add a zero series to every scrape).
func (m *Metrics) value(name string, labels map[string]string) float64 {
	fams, err := m.reg.Gather()
	if err != nil {
		return 0
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if labelsMatch(s.GetLabel(), labels) {
				if c := s.GetCounter(); c != nil {
					return c.GetValue()
				}
				return s.GetGauge().GetValue()
			}
		}
	}
	return 0
}

func labelsMatch(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, p := range got {
		if v, ok := want[p.GetName()]; !ok || v != p.GetValue() {
			return false
		}
	}
	return true
}

// WriteTo writes every metric family in the Prometheus text format (0.0.4),
// families sorted by name and series by labels, as a scrape would.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	fams, err := m.reg.Gather()
	if err != nil {
		return 0, err
	}
	var n int64
	for _, f := range fams {
		k, err := expfmt.MetricFamilyToText(w, f)
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
