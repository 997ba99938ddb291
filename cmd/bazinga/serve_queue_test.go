package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
	"github.com/bazinga-bot/bazinga/server"
)

func TestServeDeadAndRetry(t *testing.T) {
	url := jobqtest.SQLiteURL(t)
	t.Setenv(server.EnvDatabaseURL, url)
	ctx := context.Background()
	st, err := jobq.Open(ctx, url)
	require.NoError(t, err)
	defer st.Close()
	for _, id := range []string{"d-1", "d-2"} {
		_, err := st.Enqueue(ctx, jobq.Job{ID: id, Key: "o/r#7", Event: "issue_comment", Payload: []byte(`{}`), Received: time.Now()})
		require.NoError(t, err)
	}
	c, err := st.Claim(ctx, "t", time.Minute)
	require.NoError(t, err)
	require.NoError(t, st.Finish(ctx, c, jobq.Result{Disposition: jobq.Dead, Outcome: "failed", Err: "GET …: 403\nResource not accessible"}))

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"serve", "dead"}, &out, &errOut), errOut.String())
	assert.Contains(t, out.String(), "DELIVERY")
	assert.Regexp(t, `d-1\s+issue_comment\s+o/r#7\s+1\s+\S+\s+GET …: 403 Resource not accessible`, out.String())
	assert.NotContains(t, out.String(), "d-2", "pending deliveries are not dead")

	out.Reset()
	errOut.Reset()
	assert.Equal(t, exitUsage, run([]string{"serve", "retry"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "give delivery ids or --all")
	assert.Equal(t, 1, run([]string{"serve", "retry", "d-1", "nope"}, &out, &errOut))
	assert.Contains(t, out.String(), "1 dead deliveries queued again")
	assert.Contains(t, errOut.String(), "1 of the ids given are not dead deliveries")
	e, _, err := st.Get(ctx, "d-1")
	require.NoError(t, err)
	assert.Equal(t, jobq.StatePending, e.State)

	out.Reset()
	require.Equal(t, 0, run([]string{"serve", "dead"}, &out, &errOut))
	assert.Equal(t, "no dead deliveries\n", out.String())

	t.Setenv(server.EnvDatabaseURL, "memory")
	assert.Equal(t, exitUsage, run([]string{"serve", "dead"}, &out, &errOut))
	assert.Contains(t, errOut.String(), "no queue to inspect")
}

func TestOneLineDropsControls(t *testing.T) {
	assert.Equal(t, "a b [31mred c", oneLine("a\nb\x1b[31mred\u202e\tc", 100))
	assert.Equal(t, "abc…", oneLine("abcdef", 3))
}
