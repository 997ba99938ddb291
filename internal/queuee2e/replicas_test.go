package queuee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/bazinga-bot/bazinga/internal/ghfake"
	"github.com/bazinga-bot/bazinga/jobq"
	"github.com/bazinga-bot/bazinga/jobq/jobqtest"
)

// commentDelivery is an issue_comment.created of "/bazinga help" by the
// repository's owner: the real bot checks the author's permission on the
// fake GitHub and answers with a comment on the issue, one per delivery,
// written by whichever replica runs it.
func commentDelivery(repo string, issue int, inst int64, commentID int) []byte {
	owner, _, _ := strings.Cut(repo, "/")
	user := map[string]any{"login": owner, "id": 1002, "type": "User"}
	b, _ := json.Marshal(map[string]any{
		"action": "created",
		"issue": map[string]any{"number": issue, "title": "session", "state": "open", "user": user,
			"author_association": "OWNER", "labels": []any{}},
		"comment": map[string]any{"id": commentID, "body": "/bazinga help", "user": user, "author_association": "OWNER",
			"created_at": time.Now().UTC().Format(time.RFC3339)},
		"repository":   map[string]any{"name": repo[len(owner)+1:], "full_name": repo, "owner": user, "default_branch": "main"},
		"sender":       user,
		"installation": map[string]any{"id": inst},
	})
	return b
}

// session is one issue a delivery is for.
type session struct {
	repo  string
	issue int
}

// fiftySessions creates 5 repositories × 10 issues on the fake.
func fiftySessions(tb testing.TB, fake *ghfake.Fake) []session {
	tb.Helper()
	var sessions []session
	for r := 0; r < 5; r++ {
		repo, err := fake.CreateRepo("acme", fmt.Sprintf("widgets%d", r), "main")
		require.NoError(tb, err)
		for i := 0; i < 10; i++ {
			n, err := repo.CreateIssue("acme", fmt.Sprintf("session %d", i), "")
			require.NoError(tb, err)
			sessions = append(sessions, session{repo: repo.FullName(), issue: n})
		}
	}
	return sessions
}

// TestReplicasOnePostgres: three `bazinga serve` replicas on one
// PostgreSQL, 50 sessions (5 repositories × 10 issues), bursts of
// deliveries spread over the replicas, one replica killed with SIGKILL
// midway. Every acknowledged delivery is answered on its issue, and the
// fake GitHub never sees two comment writes to one issue at once (each
// write is held 20 ms to make an overlap visible): no session is driven by
// two workers at once.
func TestReplicasOnePostgres(t *testing.T) {
	dbURL := jobqtest.PostgresURL(t)
	fake := ghfake.Start(t, ghfake.Options{CommentWriteHold: 20 * time.Millisecond})
	sessions := fiftySessions(t, fake)
	h := newHarnessWith(t, fake, dbURL)
	var replicas []*replica
	for range 3 {
		replicas = append(replicas, h.start(freeAddr(t)))
	}
	var alive atomic.Int32
	alive.Store(int32(len(replicas)))

	client := &http.Client{Timeout: 5 * time.Second}
	var mu sync.Mutex
	acked := map[string]int{} // delivery id → session index
	var lat []time.Duration
	const bursts, perBurst = 4, 250
	id := 0
	for burst := 0; burst < bursts; burst++ {
		if burst == bursts/2 {
			replicas[0].kill() // midway, with deliveries queued and running on it
			alive.Store(int32(len(replicas) - 1))
		}
		var wg sync.WaitGroup
		work := make(chan int, perBurst)
		for i := 0; i < perBurst; i++ {
			id++
			work <- id
		}
		close(work)
		for s := 0; s < 8; s++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := range work {
					si := n % len(sessions)
					se := sessions[si]
					// The load balancer: round robin over the replicas alive.
					r := replicas[len(replicas)-int(alive.Load())+n%int(alive.Load())]
					did := fmt.Sprintf("d-%05d", n)
					t0 := time.Now()
					ok := h.postEvent(client, r.addr, did, "issue_comment", commentDelivery(se.repo, se.issue, fake.InstallationID(), 200_000+n))
					d := time.Since(t0)
					if ok {
						mu.Lock()
						acked[did] = si
						lat = append(lat, d)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
	}
	st, err := jobq.Open(context.Background(), dbURL)
	require.NoError(t, err)
	defer st.Close()
	require.Eventually(t, func() bool {
		s, err := st.Stats(context.Background())
		return err == nil && s.Pending == 0
	}, 120*time.Second, 50*time.Millisecond, "the surviving replicas drain the queue, the killed one's sessions included")
	for _, r := range replicas[1:] {
		r.stop(t)
	}

	assert.Empty(t, fake.ConcurrentCommentWrites(), "a session was driven by two workers at once")
	all, err := st.All(context.Background())
	require.NoError(t, err)
	attempts := map[string]jobq.Entry{}
	for _, e := range all {
		attempts[e.ID] = e
	}
	perSession := make([]int, len(sessions))
	extra := make([]int, len(sessions))
	for did, si := range acked {
		e, ok := attempts[did]
		if assert.True(t, ok, did) {
			assert.Equal(t, jobq.StateDone, e.State, "%s: %s", did, e.Err)
			assert.Equal(t, "processed", e.Outcome, "%s: %s", did, e.Err)
			perSession[si]++
			extra[si] += e.Attempts - 1
		}
	}
	reran := 0
	for si, se := range sessions {
		got := len(fake.Repo(se.repo).Comments(se.issue))
		// A delivery the kill interrupted after its comment runs again on
		// another replica; its reply carries the delivery's marker, so the
		// second run finds it and posts nothing.
		assert.Equal(t, perSession[si], got, "%s#%d: every acknowledged delivery answered, once", se.repo, se.issue)
		reran += extra[si]
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	require.NotEmpty(t, lat)
	t.Logf("3 replicas (one killed after burst %d): %d deliveries acknowledged of %d, all processed; %d runs again after the kill (answered once all the same); "+
		"ack p50 %v p99 %v", bursts/2, len(acked), bursts*perBurst, reran, lat[len(lat)/2], lat[len(lat)*99/100])
	assert.Greater(t, len(acked), bursts*perBurst*9/10, "the surviving replicas acknowledge")
}
