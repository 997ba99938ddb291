package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
)

// Streaming through the gateway against a direct connection, side by side and interleaved: each iteration runs
// benchStreams concurrent Anthropic SSE streams of benchChunks content deltas straight from the upstream, then the
// same through the gateway. Each delta is stamped with the upstream's send time and the client takes its latency
// (received − sent). Reported per mode: p50 and p99 per-chunk latency, and the process's CPU time (user+sys; the
// upstream and the clients are in it too) per chunk — the gateway's own CPU is the difference.
const (
	benchStreams = 50
	benchChunks  = 100
)

func benchUpstream(b *testing.B, every time.Duration) *httptest.Server {
	pad := strings.Repeat("x", 60) // a delta of a few tokens, as the providers send them
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fl := w.(http.Flusher)
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n")
		fl.Flush()
		t := time.NewTicker(every)
		defer t.Stop()
		for i := range benchChunks {
			<-t.C
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s %d\"},\"sent\":%d}\n\n",
				pad, i, time.Now().UnixNano())
			fl.Flush()
		}
		fmt.Fprint(w, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2000}}\n\n")
		fmt.Fprint(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	b.Cleanup(s.Close)
	return s
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var sentField = []byte(`"sent":`)

// stream reads one answer, appending each delta's latency.
func stream(client *http.Client, url, key string, lat *[]time.Duration) error {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		i := bytes.Index(line, sentField)
		if i < 0 {
			continue
		}
		rest := line[i+len(sentField):]
		rest = rest[:bytes.IndexByte(rest, '}')]
		ns, err := strconv.ParseInt(string(rest), 10, 64)
		if err != nil {
			return err
		}
		*lat = append(*lat, time.Since(time.Unix(0, ns)))
		n++
	}
	if n != benchChunks {
		return fmt.Errorf("%d chunks, want %d", n, benchChunks)
	}
	return sc.Err()
}

// BenchmarkStream50 streams at 50 deltas a second per stream (every=20ms: faster than the providers send, a few
// tokens a delta at 50–100 tokens a second) and at 500 (every=2ms: enough to load both vCPUs).
func BenchmarkStream50(b *testing.B) {
	for _, every := range []time.Duration{20 * time.Millisecond, 2 * time.Millisecond} {
		b.Run("every="+every.String(), func(b *testing.B) { benchStream(b, every) })
	}
}

func benchStream(b *testing.B, every time.Duration) {
	up := benchUpstream(b, every)
	signer, err := gateway.NewSigner(nil)
	require.NoError(b, err)
	led := gateway.NewMemLedger()
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.UpstreamConfig{BaseURL: up.URL, Key: "sk-real"}, Signer: signer, Ledger: led})
	require.NoError(b, err)
	gsrv := httptest.NewServer(gw)
	b.Cleanup(gsrv.Close)
	tok, _, err := signer.Mint(scope, gateway.Limits{}, 0)
	require.NoError(b, err)
	modes := []struct{ name, url, key string }{
		{"direct", up.URL + "/v1/messages", "sk-real"},
		{"gateway", gsrv.URL + "/anthropic/v1/messages", tok},
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * benchStreams, DisableCompression: true}}
	all := make([][]time.Duration, len(modes))
	cpu := make([]time.Duration, len(modes))
	for b.Loop() {
		for m, mode := range modes {
			lats := make([][]time.Duration, benchStreams)
			var wg sync.WaitGroup
			errs := make(chan error, benchStreams)
			c0 := cpuTime()
			for i := range benchStreams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := stream(client, mode.url, mode.key, &lats[i]); err != nil {
						errs <- err
					}
				}()
			}
			wg.Wait()
			cpu[m] += cpuTime() - c0
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			for _, l := range lats {
				all[m] = append(all[m], l...)
			}
		}
	}
	for m, mode := range modes {
		lat := all[m]
		slices.Sort(lat)
		q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
		b.ReportMetric(q(0.50), mode.name+"-p50-µs")
		b.ReportMetric(q(0.99), mode.name+"-p99-µs")
		b.ReportMetric(float64(cpu[m].Nanoseconds())/float64(len(lat)), mode.name+"-cpu-ns/chunk")
	}
	b.ReportMetric(0, "ns/op")
	sp, _ := led.StepSpend(b.Context(), scope)
	if sp.Tokens.Output == 0 {
		b.Fatal("the gateway metered nothing")
	}
}

// BenchmarkMeter is the metering alone: reading one Anthropic content delta as it passes.
func BenchmarkMeter(b *testing.B) {
	ev := []byte("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" +
		strings.Repeat("x", 60) + "\"}}\n\n")
	m := gateway.NewMeterForBench()
	b.SetBytes(int64(len(ev)))
	b.ReportAllocs()
	for b.Loop() {
		_, _ = m.Write(ev)
	}
}
