package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/gateway"
)

// BenchmarkStreamPaired isolates what the gateway adds per chunk from the machine's noise, in two ways, in one run.
//
// Paired: each of benchStreams pairs is two streams of the same answer, one straight from the upstream and one
// through the gateway, both open at once. The upstream writes each chunk to both connections back to back (which
// first alternates per chunk) from one goroutine, so both copies leave together; the client notes when each copy
// arrives, and the chunk's added latency is the gateway copy's arrival minus the direct copy's. Whatever delays the
// whole process (the machine's load, the GC) delays both copies and cancels out; what is left is the extra hop, with
// the scheduling of its goroutines. Reported: p1, p50 and p99 of that difference.
//
// Own time: the gateway's copy loop clocks, per read it passes on, its metering, write and flush to the client
// (gateway.ObservePump): the gateway's own work per chunk, apart from the wait for a CPU before the read returns.
// Reported: p50 and p99.
//
// Also reported: each path's own p99 (arrival − send time), and the 1-minute load average at the end (/proc/loadavg).
func BenchmarkStreamPaired(b *testing.B) {
	for _, every := range []time.Duration{20 * time.Millisecond, 2 * time.Millisecond} {
		b.Run("every="+every.String(), func(b *testing.B) { benchPaired(b, every) })
	}
}

// pairHub matches the two requests of a pair at the upstream; the second to arrive writes both answers.
type pairHub struct {
	mu    sync.Mutex
	first map[string]*pairSide
}

type pairSide struct {
	w    http.ResponseWriter
	via  string
	done chan struct{}
}

func pairedUpstream(b *testing.B, every time.Duration) *httptest.Server {
	hub := &pairHub{first: map[string]*pairSide{}}
	pad := strings.Repeat("x", 60)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pair, via := r.Header.Get("X-Bench-Pair"), r.Header.Get("X-Bench-Via")
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		me := &pairSide{w: w, via: via, done: make(chan struct{})}
		hub.mu.Lock()
		other, ok := hub.first[pair]
		if !ok {
			hub.first[pair] = me
		} else {
			delete(hub.first, pair)
		}
		hub.mu.Unlock()
		if !ok {
			<-me.done // the other side writes both answers
			return
		}
		defer close(other.done)
		sides := [2]*pairSide{me, other}
		if me.via != "direct" {
			sides = [2]*pairSide{other, me}
		}
		write := func(i int, text string) {
			for k := range 2 {
				s := sides[(i+k)%2] // alternate which copy goes first
				fmt.Fprint(s.w, text)
				s.w.(http.Flusher).Flush()
			}
		}
		write(0, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1000,\"output_tokens\":1}}}\n\n")
		t := time.NewTicker(every)
		defer t.Stop()
		for i := range benchChunks {
			<-t.C
			write(i, fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s\"},\"chunk\":%d,\"sent\":%d}\n\n",
				pad, i, time.Now().UnixNano()))
		}
		write(0, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2000}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	b.Cleanup(s.Close)
	return s
}

var chunkField = []byte(`"chunk":`)

// pairedStream reads one answer and notes each chunk's arrival (unix ns) by index, and its latency.
func pairedStream(client *http.Client, url, key, pair, via string, arrived []int64, lat *[]time.Duration) error {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("x-api-key", key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("X-Bench-Pair", pair)
	req.Header.Set("X-Bench-Via", via)
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
		now := time.Now().UnixNano()
		i := bytes.Index(line, chunkField)
		if i < 0 {
			continue
		}
		rest := line[i+len(chunkField):]
		idx, err := strconv.Atoi(string(rest[:bytes.IndexByte(rest, ',')]))
		if err != nil || idx < 0 || idx >= len(arrived) {
			return fmt.Errorf("chunk index in %q", line)
		}
		j := bytes.Index(rest, sentField)
		sent, err := strconv.ParseInt(string(rest[j+len(sentField):bytes.IndexByte(rest, '}')]), 10, 64)
		if err != nil {
			return err
		}
		arrived[idx] = now
		*lat = append(*lat, time.Duration(now-sent))
		n++
	}
	if n != benchChunks {
		return fmt.Errorf("%s: %d chunks, want %d", via, n, benchChunks)
	}
	return sc.Err()
}

func benchPaired(b *testing.B, every time.Duration) {
	up := pairedUpstream(b, every)
	signer, err := gateway.NewSigner(nil)
	require.NoError(b, err)
	led := gateway.NewMemLedger()
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.UpstreamConfig{BaseURL: up.URL, Key: "sk-real"}, Signer: signer, Ledger: led})
	require.NoError(b, err)
	gsrv := httptest.NewServer(gw)
	b.Cleanup(gsrv.Close)
	tok, _, err := signer.Mint(scope, gateway.Limits{}, 0)
	require.NoError(b, err)
	var own []time.Duration
	var ownMu sync.Mutex
	stop := gateway.ObservePump(func(_ int, d time.Duration) {
		ownMu.Lock()
		own = append(own, d)
		ownMu.Unlock()
	})
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * benchStreams, DisableCompression: true}}
	var added, direct, through []time.Duration
	round := 0
	for b.Loop() {
		round++
		arr := make([][2][]int64, benchStreams)
		lats := make([][2][]time.Duration, benchStreams)
		errs := make(chan error, 2*benchStreams)
		var wg sync.WaitGroup
		for p := range benchStreams {
			arr[p] = [2][]int64{make([]int64, benchChunks), make([]int64, benchChunks)}
			pair := strconv.Itoa(round) + "/" + strconv.Itoa(p)
			for k, mode := range []struct{ via, url, key string }{
				{"direct", up.URL + "/v1/messages", "sk-real"},
				{"gateway", gsrv.URL + "/anthropic/v1/messages", tok},
			} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := pairedStream(client, mode.url, mode.key, pair, mode.via, arr[p][k], &lats[p][k]); err != nil {
						errs <- err
					}
				}()
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		for p := range benchStreams {
			for i := range benchChunks {
				added = append(added, time.Duration(arr[p][1][i]-arr[p][0][i]))
			}
			direct = append(direct, lats[p][0]...)
			through = append(through, lats[p][1]...)
		}
	}
	stop()
	q := func(d []time.Duration, p float64) float64 {
		slices.Sort(d)
		return float64(d[int(p*float64(len(d)-1))].Microseconds())
	}
	b.ReportMetric(q(added, 0.01), "added-p1-µs")
	b.ReportMetric(q(added, 0.50), "added-p50-µs")
	b.ReportMetric(q(added, 0.99), "added-p99-µs")
	ownMu.Lock()
	b.ReportMetric(q(own, 0.50), "own-p50-µs")
	b.ReportMetric(q(own, 0.99), "own-p99-µs")
	ownMu.Unlock()
	b.ReportMetric(q(direct, 0.99), "direct-p99-µs")
	b.ReportMetric(q(through, 0.99), "gateway-p99-µs")
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f, err := strconv.ParseFloat(strings.Fields(string(la))[0], 64); err == nil {
			b.ReportMetric(f, "load1")
		}
	}
	b.ReportMetric(0, "ns/op")
	sp, _ := led.StepSpend(b.Context(), scope)
	if sp.Tokens.Output == 0 {
		b.Fatal("the gateway metered nothing")
	}
}
