package bot

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/codec"
	"github.com/bazinga-bot/bazinga/gateway"
	"github.com/bazinga-bot/bazinga/internal/modelfake"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// A step's gateway token works while the step runs; once the bot applied the step's result, the same token is
// refused, naming the step.
func TestStepResultRevokesItsGatewayToken(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 1})
	store, err := jobq.Open(h.ctx, "sqlite:"+filepath.Join(t.TempDir(), "q.db"))
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	rev, err := gateway.NewSQLRevocations(h.ctx, store, nil)
	require.NoError(t, err)
	h.bot.o.StepEnded = func(ctx context.Context, _ int64, repo, session, step string) {
		assert.NoError(t, rev.Revoke(ctx, repo, session, step))
	}
	fake := modelfake.Start(t, modelfake.ByTurn(modelfake.Reply{Text: "ok", Usage: modelfake.Usage{InputTokens: 10, OutputTokens: 1}}))
	signer, err := gateway.NewSigner(nil)
	require.NoError(t, err)
	gw, err := gateway.New(gateway.Config{Anthropic: gateway.UpstreamConfig{BaseURL: fake.URL, Key: "sk-real"}, Signer: signer, Revocations: rev})
	require.NoError(t, err)
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)

	h.start()
	h.drain()
	st, ok := h.state()
	require.True(t, ok)
	inFlight := st.Session.InFlight()
	require.Len(t, inFlight, 1)
	step := inFlight[0].ID
	tok, _, err := signer.Mint(gateway.Scope{Installation: 1, Repository: coreOwner + "/" + coreRepo, Session: st.Session.ID, Step: step}, gateway.Limits{}, 0)
	require.NoError(t, err)
	call := func() (int, string) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/anthropic/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
		require.NoError(t, err)
		req.Header.Set("x-api-key", tok)
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := call()
	require.Equal(t, http.StatusOK, code, body)

	r, ok := h.nextRun()
	require.True(t, ok)
	require.Equal(t, step, r.Inputs["step"])
	h.job(r)
	h.drain()
	st, _ = h.state()
	require.Equal(t, pipeline.StepDone, st.Session.Step(step).State, "the result was applied")
	code, body = call()
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.Contains(t, body, fmt.Sprintf("step %s has ended; its token is no longer accepted", step))
	assert.Len(t, fake.Requests(), 1)
}

// Over a whole session — results, a step that timed out, cancellations — every step that left flight is told
// once or more, and no step still in flight is.
func TestStepEndedCoversEveryEnd(t *testing.T) {
	h := newCoreHarness(t, coreOpts{groups: 2})
	var mu sync.Mutex
	ended := map[string]bool{}
	h.bot.o.StepEnded = func(_ context.Context, inst int64, repo, session, step string) {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, coreOwner+"/"+coreRepo, repo)
		assert.True(t, strings.HasPrefix(step, session+"/"), step)
		ended[step] = true
	}
	held := ""
	h.hold = func(step string) bool {
		ref, _ := codec.ParseStepID(step)
		if held == "" && ref.Role == pipeline.RoleDeveloper {
			held = step
		}
		return step == held
	}
	h.start()
	h.run(400)
	st, ok := h.state()
	require.True(t, ok)
	require.NotEmpty(t, held)
	mu.Lock()
	defer mu.Unlock()
	assert.True(t, ended[held], "the step that timed out")
	states := map[pipeline.StepState]int{}
	for _, s := range st.Session.Steps {
		states[s.State]++
		assert.Equal(t, s.State != pipeline.StepInFlight, ended[s.ID], "step %s is %s", s.ID, s.State)
	}
	assert.Positive(t, states[pipeline.StepDone])
	assert.Positive(t, states[pipeline.StepFailed]+states[pipeline.StepCancelled], "%v", states)
}
