package ghfake

import (
	"sort"
	"strings"
	"time"
)

// Concurrent writes to one conversation: a session's orchestrator writes
// its issue's comments and its tracking comment one delivery at a time, so
// two such writes in flight at once mean two workers drive one session.
// GitHub would accept both (the last edit wins, silently): the fake only
// records it, for tests of the server's queue.

// commentWrite marks a comment write in flight until the returned func is
// called (after Options.CommentWriteHold); other requests cost nothing.
func (f *Fake) commentWrite(rt *route, params map[string]string) func() {
	if rt == nil {
		return func() {}
	}
	var key string
	switch {
	case strings.HasSuffix(rt.tmpl, "/issues/{number}/comments") && rt.method == "POST":
		key = strings.ToLower(params["owner"]+"/"+params["repo"]) + "#" + params["number"]
	case strings.HasSuffix(rt.tmpl, "/issues/comments/{comment_id}") && (rt.method == "PATCH" || rt.method == "DELETE"):
		key = "comment " + params["comment_id"]
	default:
		return func() {}
	}
	f.mu.Lock()
	if f.writing == nil {
		f.writing = map[string]int{}
		f.overlapped = map[string]int{}
	}
	f.writing[key]++
	if f.writing[key] > 1 {
		f.overlapped[key]++
	}
	f.mu.Unlock()
	return func() {
		time.Sleep(f.opts.CommentWriteHold)
		f.mu.Lock()
		f.writing[key]--
		f.mu.Unlock()
	}
}

// ConcurrentCommentWrites lists the issues ("owner/repo#N") and comments
// ("comment ID") that had two writes in flight at once, sorted.
func (f *Fake) ConcurrentCommentWrites() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for k := range f.overlapped {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
