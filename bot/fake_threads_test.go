package bot

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bazinga-bot/bazinga/ghapi"
)

// Review threads on the in-memory fake (issue 26), with GitHub's GraphQL
// rules that matter here: each inline comment of a submitted review opens
// a thread with a node id; resolving an unknown id is a NOT_FOUND error;
// resolving a resolved thread changes nothing and is no error. The fake's
// identity is the bot, which has write access: viewerCanResolve holds.
// (internal/ghfake models the permissions and the wire format.)

func fakeThreadID(review int64, i int) string { return fmt.Sprintf("PRRT_mem%d_%d", review, i) }

func (f *fakeGitHub) ListReviewThreads(_ context.Context, repo ghapi.RepoRef, n int) ([]ghapi.ReviewThread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	is, err := f.pr(repo, n)
	if err != nil {
		return nil, f.record("ListReviewThreads", err, n)
	}
	var out []ghapi.ReviewThread
	for _, rc := range is.reviewComments {
		for i, c := range rc.comments {
			t := ghapi.ReviewThread{ID: fakeThreadID(rc.review, i), Resolved: rc.resolved[i], CanResolve: true, Path: c.Path,
				Line: c.Line, ReviewID: rc.review}
			if c.StartLine > 0 {
				t.StartLine = c.StartLine
			}
			out = append(out, t)
		}
	}
	return out, f.record("ListReviewThreads", nil, n)
}

func (f *fakeGitHub) ResolveReviewThread(_ context.Context, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest, ok := strings.CutPrefix(id, "PRRT_mem")
	rs, is, _ := strings.Cut(rest, "_")
	review, err1 := strconv.ParseInt(rs, 10, 64)
	i, err2 := strconv.Atoi(is)
	if ok && err1 == nil && err2 == nil {
		for _, iss := range f.issues {
			for k := range iss.reviewComments {
				rc := &iss.reviewComments[k]
				if rc.review == review && i >= 0 && i < len(rc.comments) {
					if rc.resolved == nil {
						rc.resolved = map[int]bool{}
					}
					rc.resolved[i] = true
					return f.record("ResolveReviewThread", nil, id)
				}
			}
		}
	}
	return f.record("ResolveReviewThread", fmt.Errorf("resolve review thread %s: %w", id, ghapi.GraphQLErrors{{Type: "NOT_FOUND",
		Message: "Could not resolve to a node with the global id of '" + id + "'"}}), id)
}

// threadsOn returns the review threads of PR n, resolved or not, as
// "path:line=resolved".
func (f *fakeGitHub) threadsOn(n int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	if is := f.issues[n]; is != nil {
		for _, rc := range is.reviewComments {
			for i, c := range rc.comments {
				out = append(out, fmt.Sprintf("%s:%d=%v", c.Path, c.Line, rc.resolved[i]))
			}
		}
	}
	return out
}
