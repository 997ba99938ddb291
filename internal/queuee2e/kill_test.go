// Package queuee2e tests `bazinga serve` on its durable queue end to end:
// the real binary, killed with SIGKILL at random moments while deliveries
// arrive, on SQLite and on PostgreSQL.
package queuee2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/internal/testkey"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

// EnvKillRuns sets how many kill -9 rounds each backend gets (default 10;
// the figure is 100: BAZINGA_KILL_RUNS=100).
const EnvKillRuns = "BAZINGA_KILL_RUNS"

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bazinga-queuee2e")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "bazinga")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/bazinga")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building bazinga: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func killRuns(t *testing.T) int {
	v := os.Getenv(EnvKillRuns)
	if v == "" {
		return 10
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, EnvKillRuns)
	return n
}

// replica is one `bazinga serve` process.
type replica struct {
	cmd  *exec.Cmd
	log  string
	addr string
	done chan struct{}
}

type harness struct {
	t      testing.TB
	env    []string
	secret []byte
	dir    string
	n      int
}

func newHarness(t *testing.T, dbURL string) *harness {
	return newHarnessWith(t, ghfake.Start(t, ghfake.Options{}), dbURL)
}

// newHarnessWith runs replicas against fake on the queue at dbURL.
func newHarnessWith(t testing.TB, fake *ghfake.Fake, dbURL string) *harness {
	secret := make([]byte, 32)
	for i := range secret {
		secret[i] = byte(rand.IntN(256))
	}
	hexSecret := hex.EncodeToString(secret)
	dir := t.TempDir()
	env := append(os.Environ(),
		"BAZINGA_APP_ID=1",
		"BAZINGA_PRIVATE_KEY="+string(testkey.PEM(t)),
		"BAZINGA_PRIVATE_KEY_PATH=",
		"BAZINGA_WEBHOOK_SECRET="+hexSecret,
		"BAZINGA_STATE_KEY=5f0c8e1d9b7a4c3e2f6a8b0d1c3e5f7a9b2d4c6e8f0a1b3c5d7e9f2a4b6c8d0e",
		"BAZINGA_GITHUB_URL="+fake.URL(),
		"BAZINGA_CREDENTIALS_FILE="+filepath.Join(dir, "none.env"),
		"BAZINGA_DATABASE_URL="+dbURL,
		"BAZINGA_TOKEN_EXCHANGE=off",
		"BAZINGA_LOG_LEVEL=info",
		"BAZINGA_WORKERS=4",
		// A killed replica's in-flight deliveries wait this long.
		"BAZINGA_QUEUE_LEASE=2s",
	)
	return &harness{t: t, env: env, secret: []byte(hexSecret), dir: dir}
}

func freeAddr(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// start runs a replica on addr and waits for its /healthz.
func (h *harness) start(addr string) *replica {
	h.t.Helper()
	h.n++
	r := &replica{log: filepath.Join(h.dir, fmt.Sprintf("serve-%03d.log", h.n)), addr: addr, done: make(chan struct{})}
	f, err := os.Create(r.log)
	require.NoError(h.t, err)
	r.cmd = exec.Command(binary, "serve")
	r.cmd.Env = append(h.env, "BAZINGA_LISTEN="+addr)
	r.cmd.Stdout, r.cmd.Stderr = f, f
	require.NoError(h.t, r.cmd.Start())
	go func() { _ = r.cmd.Wait(); f.Close(); close(r.done) }()
	h.t.Cleanup(func() { r.kill() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		select {
		case <-r.done:
			b, _ := os.ReadFile(r.log)
			h.t.Fatalf("bazinga serve exited at start:\n%s", b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(r.log)
			h.t.Fatalf("bazinga serve not healthy after 30s:\n%s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (r *replica) kill() {
	if r.cmd.Process != nil {
		_ = r.cmd.Process.Signal(syscall.SIGKILL)
	}
	<-r.done
}

func (r *replica) stop(t testing.TB) {
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("bazinga serve did not stop on SIGTERM")
	}
}

// deliveryBody is a ping, which the bot acknowledges without calling
// GitHub: what is measured is the queue, not the bot.
func deliveryBody(id string) []byte {
	return []byte(fmt.Sprintf(`{"zen":"Keep it logically awesome.","hook_id":%d,"hook":{"type":"App","id":1,"events":["issues"]}}`, len(id)))
}

// post sends one signed ping; ok when it was acknowledged (202).
func (h *harness) post(client *http.Client, addr, id string) bool {
	return h.postEvent(client, addr, id, "ping", deliveryBody(id))
}

// postEvent sends one signed delivery; ok when it was acknowledged (202).
func (h *harness) postEvent(client *http.Client, addr, id, event string, body []byte) bool {
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/webhook", bytes.NewReader(body))
	m := hmac.New(sha256.New, h.secret)
	m.Write(body)
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m.Sum(nil)))
	req.Header.Set("X-GitHub-Event", event)
	req.Header.Set("X-GitHub-Delivery", id)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusAccepted
}

// processed counts, per delivery id, the "delivery processed" log lines of
// every replica that ran.
func (h *harness) processed() map[string]int {
	h.t.Helper()
	out := map[string]int{}
	logs, err := filepath.Glob(filepath.Join(h.dir, "serve-*.log"))
	require.NoError(h.t, err)
	for _, l := range logs {
		f, err := os.Open(l)
		require.NoError(h.t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var rec struct {
				Msg      string `json:"msg"`
				Delivery string `json:"delivery"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "delivery processed" {
				out[rec.Delivery]++
			}
		}
		f.Close()
	}
	return out
}

// TestKillNineLosesNothing: deliveries arrive while `bazinga serve` is
// killed with SIGKILL at a random moment, again and again; after a last
// start every acknowledged delivery has been processed, and processed once
// unless a kill interrupted its very run (then it ran again, which the
// queue's attempt count shows). Redeliveries of acknowledged ids after a
// restart are duplicates.
func TestKillNineLosesNothing(t *testing.T) {
	for _, b := range jobqtest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			dbURL := b.URL(t)
			h := newHarness(t, dbURL)
			addr := freeAddr(t)
			runs := killRuns(t)
			client := &http.Client{Timeout: 5 * time.Second}
			var mu sync.Mutex
			acked := map[string]bool{}
			var order []string
			seq := 0
			for run := 0; run < runs; run++ {
				r := h.start(addr)
				// Redeliveries of acknowledged ids: duplicates, whatever happened since.
				mu.Lock()
				var again []string
				for i := 0; i < 3 && len(order) > 0; i++ {
					again = append(again, order[rand.IntN(len(order))])
				}
				mu.Unlock()
				for _, id := range again {
					h.post(client, addr, id)
				}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				for s := 0; s < 4; s++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for ctx.Err() == nil {
							mu.Lock()
							seq++
							id := fmt.Sprintf("run%03d-%05d", run, seq)
							mu.Unlock()
							if h.post(client, addr, id) {
								mu.Lock()
								acked[id] = true
								order = append(order, id)
								mu.Unlock()
							}
						}
					}()
				}
				time.Sleep(time.Duration(20+rand.IntN(280)) * time.Millisecond)
				r.kill()
				cancel()
				wg.Wait()
			}
			final := h.start(addr)
			st, err := jobq.Open(context.Background(), dbURL)
			require.NoError(t, err)
			defer st.Close()
			require.Eventually(t, func() bool {
				s, err := st.Stats(context.Background())
				return err == nil && s.Pending == 0
			}, 60*time.Second, 20*time.Millisecond, "the queue drains after the last start")
			final.stop(t)

			require.NotEmpty(t, acked)
			all, err := st.All(context.Background())
			require.NoError(t, err)
			state := map[string]jobq.Entry{}
			for _, e := range all {
				state[e.ID] = e
			}
			counts := h.processed()
			twice := 0
			for id := range acked {
				e, ok := state[id]
				if !assert.True(t, ok, "acknowledged delivery %s is in the queue", id) {
					continue
				}
				assert.Equal(t, jobq.StateDone, e.State, id)
				switch n := counts[id]; {
				case n == 0:
					t.Errorf("acknowledged delivery %s was never processed", id)
				case n > 1:
					twice++
					assert.GreaterOrEqual(t, e.Attempts, n, "%s processed %d times: only a run a kill interrupted runs again", id, n)
				}
			}
			for id, n := range counts {
				if _, ok := state[id]; !ok {
					t.Errorf("%s processed %d times but not in the queue", id, n)
				}
			}
			// A kill interrupts at most the runs in flight (4 workers).
			assert.LessOrEqual(t, twice, runs*4)
			t.Logf("%s: %d kill -9 runs, %d deliveries acknowledged, all processed; %d ran again after a kill interrupted their run",
				b.Name, runs, len(acked), twice)
		})
	}
}
