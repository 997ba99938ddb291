package ghfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode"
)

// GitHub's GraphQL API, as far as bazinga uses it (issue 26): listing a
// pull request's review threads and resolving one. The fake answers only
// the documents the product sends, compared token by token (GraphQL's
// whitespace and commas are insignificant); any other document is refused
// with GitHub's error shape rather than answered wrongly. The rules:
//   - POST /graphql (GitHub Enterprise Server: /api/graphql) with a JSON body
//     {"query", "variables"}; a body that is not JSON is 400 "Problems
//     parsing JSON"; no credentials, 401
//     (docs.github.com/graphql/guides/forming-calls-with-graphql);
//   - errors come in a top-level "errors" array with HTTP 200, beside
//     whatever "data" could be resolved (null where an error is); a
//     repository, pull request or node the identity cannot see is a
//     NOT_FOUND error ("Could not resolve to a Repository with the name
//     'o/r'."), never a 404;
//   - an installation token (a GITHUB_TOKEN too) needs the App permission
//     the REST equivalent needs: pull_requests read to list threads,
//     pull_requests write to resolve one, else a FORBIDDEN error "Resource
//     not accessible by integration"; a person resolves a conversation on
//     a pull request they opened or with write access to the repository
//     (docs.github.com/pull-requests/collaborating-with-pull-requests/reviewing-changes-in-pull-requests/commenting-on-a-pull-request#resolving-conversations);
//   - GraphQL's primary limit is counted in points, apart from REST's
//     (X-RateLimit-Resource: graphql); an exhausted one answers HTTP 200
//     with a RATE_LIMITED error and X-RateLimit-Remaining 0. Each of the
//     product's documents costs the minimum, 1 point
//     (graphql/overview/rate-limits-and-query-limits-for-the-graphql-api);
//   - connections take first (1–100); threads are listed in creation
//     order with opaque cursors; a thread's comment ids are BigInt, sent as
//     strings (fullDatabaseId).
//
// The fake's review threads are the inline comments of submitted reviews
// (it models no replies); their node ids are "PRRT_" ids.

// gqlThreadsQuery and gqlResolveMutation are the documents the fake
// answers: the product's, kept here as the fake's own copy of the schema
// it models.
const (
	gqlThreadsQuery = `query($owner: String!, $name: String!, $number: Int!, $after: String) {
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
	gqlResolveMutation = `mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) {
    thread { id isResolved }
  }
}`
)

// gqlTokens splits a GraphQL document into its significant tokens:
// whitespace, commas and comments are ignored, as the spec says.
func gqlTokens(doc string) []string {
	var out []string
	rs := []rune(doc)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r) || r == ',' || r == '\uFEFF':
			i++
		case r == '#':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			out = append(out, string(rs[i:min(j+1, len(rs))]))
			i = j + 1
		case r == '.' && i+2 < len(rs) && rs[i+1] == '.' && rs[i+2] == '.':
			out = append(out, "...")
			i += 3
		case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-':
			j := i + 1
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j]) || rs[j] == '.') {
				j++
			}
			out = append(out, string(rs[i:j]))
			i = j
		default:
			out = append(out, string(r))
			i++
		}
	}
	return out
}

func sameDocument(a, b string) bool {
	return strings.Join(gqlTokens(a), " ") == strings.Join(gqlTokens(b), " ")
}

// gqlError is one entry of a GraphQL answer's "errors".
type gqlError struct {
	Type      string        `json:"type,omitempty"`
	Path      []any         `json:"path,omitempty"`
	Locations []gqlLocation `json:"locations,omitempty"`
	Message   string        `json:"message"`
}

type gqlLocation struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// gqlAnswer sets a GraphQL answer: HTTP 200, data and errors.
func (c *rc) gqlAnswer(data any, errs ...gqlError) {
	out := map[string]any{"data": data}
	if len(errs) > 0 {
		out["errors"] = errs
	}
	c.json(http.StatusOK, out)
}

// gqlInvalid refuses a document before running it: errors only, no data.
func (c *rc) gqlInvalid(msg string) {
	c.json(http.StatusOK, map[string]any{"errors": []gqlError{{Message: msg}}})
}

func (f *Fake) graphqlHandler(c *rc) {
	var req struct {
		Query     *string                    `json:"query"`
		Variables map[string]json.RawMessage `json:"variables"`
	}
	if err := json.Unmarshal(c.body, &req); err != nil {
		c.fail(http.StatusBadRequest, "Problems parsing JSON")
		return
	}
	if req.Query == nil || strings.TrimSpace(*req.Query) == "" {
		c.gqlInvalid("A query attribute must be specified and must be a string.")
		return
	}
	switch {
	case sameDocument(*req.Query, gqlThreadsQuery):
		f.gqlReviewThreads(c, req.Variables)
	case sameDocument(*req.Query, gqlResolveMutation):
		f.gqlResolveThread(c, req.Variables)
	default:
		c.gqlInvalid("ghfake: this GraphQL document is not one the fake models (it answers only bazinga's own documents)")
	}
}

// gqlVar reads a variable of a declared type; a required one that is
// missing or null, or one of the wrong type, refuses the document as
// GitHub does.
func (c *rc) gqlVar(vars map[string]json.RawMessage, name, typ string, into any) bool {
	raw, ok := vars[name]
	required := strings.HasSuffix(typ, "!")
	if !ok || string(raw) == "null" {
		if required {
			c.gqlInvalid(fmt.Sprintf("Variable $%s of type %s was provided invalid value", name, typ))
			return false
		}
		return true
	}
	if json.Unmarshal(raw, into) != nil {
		c.gqlInvalid(fmt.Sprintf("Variable $%s of type %s was provided invalid value", name, typ))
		return false
	}
	return true
}

// gqlRepo resolves a repository for the identity: nil (with the NOT_FOUND
// error GitHub gives) when it does not exist or is out of the identity's
// sight. Caller holds f.mu.
func (f *Fake) gqlRepo(c *rc, full string) (*Repo, *gqlError) {
	r := f.lookupRepo(full)
	notFound := &gqlError{Type: "NOT_FOUND", Path: []any{"repository"}, Locations: []gqlLocation{{2, 3}},
		Message: fmt.Sprintf("Could not resolve to a Repository with the name '%s'.", full)}
	if r == nil {
		return nil, notFound
	}
	if r.settings.Private {
		if c.tok != nil && c.tok.repo != nil && c.tok.repo != r {
			return nil, notFound
		}
		if c.kind == User && f.roleOf(r, c.login) == "none" {
			return nil, notFound
		}
	}
	return r, nil
}

// gqlAllows checks an installation token's permission; a user's role is
// checked by the caller.
func (c *rc) gqlAllows(perm string) bool {
	return c.tok == nil || c.tok.perms == nil || tokenAllows(c.tok.perms, perm)
}

const forbiddenIntegration = "Resource not accessible by integration"

func (f *Fake) gqlReviewThreads(c *rc, vars map[string]json.RawMessage) {
	var owner, name string
	var number int
	var after *string
	if !c.gqlVar(vars, "owner", "String!", &owner) || !c.gqlVar(vars, "name", "String!", &name) ||
		!c.gqlVar(vars, "number", "Int!", &number) || !c.gqlVar(vars, "after", "String", &after) {
		return
	}
	r, gerr := f.gqlRepo(c, owner+"/"+name)
	if gerr != nil {
		c.gqlAnswer(map[string]any{"repository": nil}, *gerr)
		return
	}
	path := []any{"repository", "pullRequest"}
	if !c.gqlAllows(pullsRead) {
		c.gqlAnswer(map[string]any{"repository": map[string]any{"pullRequest": nil}},
			gqlError{Type: "FORBIDDEN", Path: path, Locations: []gqlLocation{{3, 5}}, Message: forbiddenIntegration})
		return
	}
	is := r.issue(number)
	if is == nil || is.pr == nil {
		c.gqlAnswer(map[string]any{"repository": map[string]any{"pullRequest": nil}},
			gqlError{Type: "NOT_FOUND", Path: path, Locations: []gqlLocation{{3, 5}},
				Message: fmt.Sprintf("Could not resolve to a PullRequest with the number of %d.", number)})
		return
	}
	threads := f.threadsOf(is, c.login)
	canResolve := f.cannotResolve(c, r, is) == ""
	start := 0
	if after != nil {
		n, ok := decodeCursor(*after)
		if !ok {
			c.gqlAnswer(map[string]any{"repository": map[string]any{"pullRequest": nil}},
				gqlError{Type: "INVALID_CURSOR_ARGUMENTS", Path: append(path, "reviewThreads"), Locations: []gqlLocation{{4, 7}},
					Message: fmt.Sprintf("`%s` does not appear to be a valid cursor.", *after)})
			return
		}
		start = min(n, len(threads))
	}
	end := min(start+100, len(threads))
	nodes := []any{}
	for _, t := range threads[start:end] {
		var startLine any
		if t.c.startLine > 0 {
			startLine = t.c.startLine
		}
		nodes = append(nodes, map[string]any{
			"id": threadNodeID(t.c.id), "isResolved": t.c.resolvedBy != "", "viewerCanResolve": canResolve, "path": t.c.path,
			"originalLine": t.c.line, "originalStartLine": startLine,
			"comments": map[string]any{"nodes": []any{map[string]any{
				"fullDatabaseId":    strconv.FormatInt(t.c.id, 10),
				"pullRequestReview": map[string]any{"fullDatabaseId": strconv.FormatInt(t.rv.id, 10)},
			}}},
		})
	}
	var endCursor any
	if end > start {
		endCursor = encodeCursor(end)
	}
	c.gqlAnswer(map[string]any{"repository": map[string]any{"pullRequest": map[string]any{"reviewThreads": map[string]any{
		"pageInfo": map[string]any{"hasNextPage": end < len(threads), "endCursor": endCursor},
		"nodes":    nodes,
	}}}})
}

// fakeThread is a review thread: a submitted review's inline comment.
type fakeThread struct {
	rv *review
	c  *reviewComment
}

// threadsOf lists a pull request's review threads the viewer sees: a
// pending review's comments only its author does. Caller holds f.mu.
func (f *Fake) threadsOf(is *issue, viewer string) []fakeThread {
	var out []fakeThread
	for _, rv := range is.pr.reviews {
		if rv.state == "PENDING" && !strings.EqualFold(rv.user, viewer) {
			continue
		}
		for i := range rv.comments {
			out = append(out, fakeThread{rv: rv, c: &rv.comments[i]})
		}
	}
	return out
}

func threadNodeID(commentID int64) string { return "PRRT_fake" + strconv.FormatInt(commentID, 10) }

func encodeCursor(n int) string {
	return base64.StdEncoding.EncodeToString([]byte("cursor:v2:" + strconv.Itoa(n)))
}

func decodeCursor(s string) (int, bool) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), "cursor:v2:")
	n, err := strconv.Atoi(rest)
	return n, ok && err == nil && n >= 0
}

func (f *Fake) gqlResolveThread(c *rc, vars map[string]json.RawMessage) {
	var id string
	if !c.gqlVar(vars, "threadId", "ID!", &id) {
		return
	}
	notFound := gqlError{Type: "NOT_FOUND", Path: []any{"resolveReviewThread"}, Locations: []gqlLocation{{2, 3}},
		Message: fmt.Sprintf("Could not resolve to a node with the global id of '%s'", id)}
	r, is, t := f.findThread(id)
	if t.c == nil {
		c.gqlAnswer(map[string]any{"resolveReviewThread": nil}, notFound)
		return
	}
	if _, gerr := f.gqlRepo(c, r.owner+"/"+r.name); gerr != nil {
		c.gqlAnswer(map[string]any{"resolveReviewThread": nil}, notFound)
		return
	}
	if t.rv.state == "PENDING" && !strings.EqualFold(t.rv.user, c.login) {
		c.gqlAnswer(map[string]any{"resolveReviewThread": nil}, notFound)
		return
	}
	if msg := f.cannotResolve(c, r, is); msg != "" {
		c.gqlAnswer(map[string]any{"resolveReviewThread": nil},
			gqlError{Type: "FORBIDDEN", Path: []any{"resolveReviewThread"}, Locations: []gqlLocation{{2, 3}}, Message: msg})
		return
	}
	// Resolving a resolved thread changes nothing and is no error.
	if t.c.resolvedBy == "" {
		t.c.resolvedBy = c.login
	}
	c.gqlAnswer(map[string]any{"resolveReviewThread": map[string]any{"thread": map[string]any{"id": id, "isResolved": true}}})
}

// cannotResolve says why the identity may not resolve a thread of pull
// request is in r, "" when it may. Caller holds f.mu.
func (f *Fake) cannotResolve(c *rc, r *Repo, is *issue) string {
	switch {
	case c.tok != nil && c.tok.repo != nil && c.tok.repo != r:
		return forbiddenIntegration // a GITHUB_TOKEN writes only its own repository
	case !c.gqlAllows(pullsWrite):
		return forbiddenIntegration
	case c.kind == User && !strings.EqualFold(c.login, is.user) && !roleAtLeast(f.roleOf(r, c.login), "write"):
		return fmt.Sprintf("%s does not have permission to resolve this thread.", c.login)
	}
	return ""
}

// findThread finds a thread by node id. Caller holds f.mu.
func (f *Fake) findThread(id string) (*Repo, *issue, fakeThread) {
	n, err := strconv.ParseInt(strings.TrimPrefix(id, "PRRT_fake"), 10, 64)
	if !strings.HasPrefix(id, "PRRT_fake") || err != nil {
		return nil, nil, fakeThread{}
	}
	for _, r := range f.repos {
		for _, is := range r.issues {
			if is.pr == nil {
				continue
			}
			for _, rv := range is.pr.reviews {
				for i := range rv.comments {
					if rv.comments[i].id == n {
						return r, is, fakeThread{rv: rv, c: &rv.comments[i]}
					}
				}
			}
		}
	}
	return nil, nil, fakeThread{}
}

// ReviewThread is a review thread as a test reads it.
type ReviewThread struct {
	ID         string // GraphQL node id
	Review     int64
	Comment    int64
	Path       string
	Line       int
	StartLine  int
	Resolved   bool
	ResolvedBy string
}

// ReviewThreads returns pull request n's review threads, in order.
func (r *Repo) ReviewThreads(n int) []ReviewThread {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	is := r.issue(n)
	if is == nil || is.pr == nil {
		return nil
	}
	var out []ReviewThread
	for _, rv := range is.pr.reviews {
		for _, c := range rv.comments {
			out = append(out, ReviewThread{ID: threadNodeID(c.id), Review: rv.id, Comment: c.id, Path: c.path, Line: c.line,
				StartLine: c.startLine, Resolved: c.resolvedBy != "", ResolvedBy: c.resolvedBy})
		}
	}
	return out
}

// SetGraphQLRateRemaining sets how many GraphQL points the identity behind
// tok has left in the current window (0 makes its next GraphQL call fail
// with GitHub's RATE_LIMITED error).
func (f *Fake) SetGraphQLRateRemaining(tok string, remaining int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.tokens[tok]
	if !ok {
		return fmt.Errorf("token: %w", ErrNotFound)
	}
	key := "user:" + strings.ToLower(t.login)
	if t.install {
		key = "installation"
	}
	b := f.bucket("graphql:"+key, f.opts.RateLimit)
	b.used = max(0, b.limit-remaining)
	return nil
}
