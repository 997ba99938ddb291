package ghapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// GraphQL (issue 26). GitHub resolves a pull request review thread only
// through its GraphQL API, so the client carries a minimal GraphQL caller:
// a fixed document and its variables POSTed as JSON, the answer read into
// typed structs. The rules it follows (docs.github.com/graphql):
//   - one endpoint, beside the REST API: https://api.github.com/graphql, and
//     http(s)://HOST/api/graphql on GitHub Enterprise Server whose REST API is
//     http(s)://HOST/api/v3 (guides/forming-calls-with-graphql);
//   - errors come as a top-level "errors" array, each with a "type"
//     (NOT_FOUND, FORBIDDEN, …), with HTTP 200 and possibly partial "data";
//   - an exhausted primary limit is also HTTP 200, with an error and
//     X-RateLimit-Remaining 0; wait for X-RateLimit-Reset; its resource is
//     "graphql", counted apart from REST's "core"
//     (overview/rate-limits-and-query-limits-for-the-graphql-api).
//
// It goes through the client's HTTP stack (authentication and the
// transport chain) but not go-github's request code: go-github files
// /api/graphql under the "core" rate limit and would then refuse REST
// calls when GraphQL's points ran out.

// GraphQLError is one entry of a GraphQL answer's "errors".
type GraphQLError struct {
	Type    string `json:"type,omitempty"` // NOT_FOUND, FORBIDDEN, RATE_LIMITED, …; absent for a document the schema refuses
	Message string `json:"message"`
	Path    []any  `json:"path,omitempty"`
}

// GraphQLErrors are a GraphQL answer's errors. errors.Is(err, ErrNotFound)
// holds when every error is NOT_FOUND.
type GraphQLErrors []GraphQLError

func (e GraphQLErrors) Error() string {
	msgs := make([]string, 0, len(e))
	for _, x := range e {
		m := x.Message
		if x.Type != "" {
			m = x.Type + ": " + m
		}
		msgs = append(msgs, m)
	}
	return "graphql: " + strings.Join(msgs, "; ")
}

// Is makes errors.Is(err, ErrNotFound) true for NOT_FOUND errors only.
func (e GraphQLErrors) Is(target error) bool {
	if target != ErrNotFound || len(e) == 0 {
		return false
	}
	for _, x := range e {
		if x.Type != "NOT_FOUND" {
			return false
		}
	}
	return true
}

// Forbidden reports whether GitHub refused the operation to this identity
// (FORBIDDEN: a token without the permission, "Resource not accessible by
// integration").
func (e GraphQLErrors) Forbidden() bool {
	for _, x := range e {
		if x.Type == "FORBIDDEN" {
			return true
		}
	}
	return false
}

// graphqlURL is the GraphQL endpoint beside the REST base URL.
func graphqlURL(base *url.URL) string {
	u := *base
	p := strings.TrimSuffix(u.Path, "/")
	if rest, ok := strings.CutSuffix(p, "/api/v3"); ok {
		u.Path = rest + "/api/graphql"
	} else {
		u.Path = p + "/graphql"
	}
	u.RawPath = ""
	return u.String()
}

// maxGraphQLAnswer bounds what is read of an answer.
const maxGraphQLAnswer = 8 << 20

// graphql runs one operation: POST {query, variables}, data into out.
func (g *Client) graphql(ctx context.Context, op, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(struct {
		Query     string         `json:"query"`
		Variables map[string]any `json:"variables,omitempty"`
	}{query, vars})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, graphqlURL(g.c.BaseURL), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if g.c.UserAgent != "" {
		req.Header.Set("User-Agent", g.c.UserAgent)
	}
	resp, err := g.c.Client().Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxGraphQLAnswer+1))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", op, err)
	}
	if len(raw) > maxGraphQLAnswer {
		return fmt.Errorf("%s: answer over %d bytes", op, maxGraphQLAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		// Authentication and transport failures are REST-shaped:
		// {"message": …} with a 401, 403, 5xx.
		var m struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(raw, &m)
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%s: %w: %s", op, ErrNotFound, m.Message)
		}
		return fmt.Errorf("%s: HTTP %d: %s", op, resp.StatusCode, m.Message)
	}
	var ans struct {
		Data   json.RawMessage `json:"data"`
		Errors GraphQLErrors   `json:"errors"`
	}
	if err := json.Unmarshal(raw, &ans); err != nil {
		return fmt.Errorf("%s: answer is not GraphQL JSON: %w", op, err)
	}
	if len(ans.Errors) > 0 {
		for _, e := range ans.Errors {
			if e.Type == "RATE_LIMITED" {
				return fmt.Errorf("%s: %w", op, graphqlLimited(resp.Header))
			}
		}
		return fmt.Errorf("%s: %w", op, ans.Errors)
	}
	if out == nil {
		return nil
	}
	if len(ans.Data) == 0 || string(ans.Data) == "null" {
		return fmt.Errorf("%s: answer without data", op)
	}
	if err := json.Unmarshal(ans.Data, out); err != nil {
		return fmt.Errorf("%s: reading data: %w", op, err)
	}
	return nil
}

// graphqlLimited is the exhausted GraphQL limit an answer's headers name.
func graphqlLimited(h http.Header) *RateLimitedError {
	e := &RateLimitedError{Resource: "graphql", Reset: time.Now().Add(time.Minute).Truncate(time.Second)}
	e.Limit, _ = strconv.Atoi(h.Get("X-RateLimit-Limit"))
	if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
		e.Reset = time.Unix(reset, 0).UTC()
	}
	return e
}

// ReviewThread is a pull request review thread, with its first comment:
// the one a review opened it with.
type ReviewThread struct {
	ID       string // GraphQL node id, what ResolveReviewThread takes
	Resolved bool
	// CanResolve is GitHub's viewerCanResolve: whether this identity may
	// resolve it (write access, or a token with pull_requests write).
	CanResolve bool
	Path       string
	// Line and StartLine are where the first comment was placed (the
	// thread's original lines; StartLine 0 for one line).
	Line, StartLine int
	// CommentID and ReviewID are the REST ids of the first comment and
	// of the review it came with (0 when GitHub gives none).
	CommentID, ReviewID int64
}

// reviewThreadsQuery lists a pull request's review threads, 100 at a time
// (GraphQL connections take first ≤ 100), each with its first comment.
// fullDatabaseId (a BigInt, sent as a string) replaces the deprecated
// 32-bit databaseId.
const reviewThreadsQuery = `query($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          viewerCanResolve
          path
          originalLine
          originalStartLine
          comments(first: 1) {
            nodes { fullDatabaseId pullRequestReview { fullDatabaseId } }
          }
        }
      }
    }
  }
}`

// maxThreadPages bounds the pages read (100 threads each).
const maxThreadPages = 50

// ListReviewThreads lists a pull request's review threads.
func (g *Client) ListReviewThreads(ctx context.Context, repo RepoRef, number int) ([]ReviewThread, error) {
	op := fmt.Sprintf("list review threads of %s#%d", repo, number)
	var out []ReviewThread
	var after *string
	for page := 0; page < maxThreadPages; page++ {
		var data struct {
			Repository *struct {
				PullRequest *struct {
					ReviewThreads struct {
						PageInfo struct {
							HasNextPage bool    `json:"hasNextPage"`
							EndCursor   *string `json:"endCursor"`
						} `json:"pageInfo"`
						Nodes []struct {
							ID                string `json:"id"`
							IsResolved        bool   `json:"isResolved"`
							ViewerCanResolve  bool   `json:"viewerCanResolve"`
							Path              string `json:"path"`
							OriginalLine      *int   `json:"originalLine"`
							OriginalStartLine *int   `json:"originalStartLine"`
							Comments          struct {
								Nodes []struct {
									FullDatabaseID    bigInt `json:"fullDatabaseId"`
									PullRequestReview *struct {
										FullDatabaseID bigInt `json:"fullDatabaseId"`
									} `json:"pullRequestReview"`
								} `json:"nodes"`
							} `json:"comments"`
						} `json:"nodes"`
					} `json:"reviewThreads"`
				} `json:"pullRequest"`
			} `json:"repository"`
		}
		vars := map[string]any{"owner": repo.Owner, "name": repo.Name, "number": number, "after": after}
		if err := g.graphql(ctx, op, reviewThreadsQuery, vars, &data); err != nil {
			return nil, err
		}
		if data.Repository == nil || data.Repository.PullRequest == nil {
			return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
		}
		rt := data.Repository.PullRequest.ReviewThreads
		for _, n := range rt.Nodes {
			t := ReviewThread{ID: n.ID, Resolved: n.IsResolved, CanResolve: n.ViewerCanResolve, Path: n.Path}
			if n.OriginalLine != nil {
				t.Line = *n.OriginalLine
			}
			if n.OriginalStartLine != nil {
				t.StartLine = *n.OriginalStartLine
			}
			if len(n.Comments.Nodes) > 0 {
				c := n.Comments.Nodes[0]
				t.CommentID = int64(c.FullDatabaseID)
				if c.PullRequestReview != nil {
					t.ReviewID = int64(c.PullRequestReview.FullDatabaseID)
				}
			}
			out = append(out, t)
		}
		if !rt.PageInfo.HasNextPage || rt.PageInfo.EndCursor == nil {
			return out, nil
		}
		after = rt.PageInfo.EndCursor
	}
	return nil, fmt.Errorf("%s: more than %d threads", op, maxThreadPages*100)
}

// resolveReviewThreadMutation marks a review thread resolved.
const resolveReviewThreadMutation = `mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) {
    thread { id isResolved }
  }
}`

// ResolveReviewThread marks a review thread resolved (its node id, from
// ListReviewThreads).
func (g *Client) ResolveReviewThread(ctx context.Context, threadID string) error {
	op := fmt.Sprintf("resolve review thread %s", threadID)
	var data struct {
		ResolveReviewThread *struct {
			Thread *struct {
				ID         string `json:"id"`
				IsResolved bool   `json:"isResolved"`
			} `json:"thread"`
		} `json:"resolveReviewThread"`
	}
	if err := g.graphql(ctx, op, resolveReviewThreadMutation, map[string]any{"threadId": threadID}, &data); err != nil {
		return err
	}
	if data.ResolveReviewThread == nil || data.ResolveReviewThread.Thread == nil || !data.ResolveReviewThread.Thread.IsResolved {
		return fmt.Errorf("%s: GitHub did not report the thread resolved", op)
	}
	return nil
}

// bigInt reads GraphQL's BigInt scalar, which GitHub sends as a string
// (it may exceed 32 bits); a number is taken too.
type bigInt int64

func (b *bigInt) UnmarshalJSON(p []byte) error {
	s := strings.Trim(string(p), `"`)
	if s == "null" || s == "" {
		*b = 0
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("BigInt %s: %w", p, err)
	}
	*b = bigInt(n)
	return nil
}

// IsGraphQLForbidden reports whether err is GitHub's FORBIDDEN GraphQL error.
func IsGraphQLForbidden(err error) bool {
	var ge GraphQLErrors
	return errors.As(err, &ge) && ge.Forbidden()
}
