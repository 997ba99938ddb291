package ghfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// OpenAPI is GitHub's REST API description trimmed to the endpoints the
// fake answers (testdata/github-rest-trimmed.json, made by
// scripts/trim-openapi.py from @octokit/openapi's api.github.com.json; its
// info names the version and the source's sha256): for each operation, the
// statuses GitHub documents.
type OpenAPI struct {
	Version string
	ops     []openAPIOp
}

type openAPIOp struct {
	method, path string
	re           *regexp.Regexp
	statuses     map[string]bool
}

// LoadOpenAPI reads a trimmed description.
func LoadOpenAPI(file string) (*OpenAPI, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
		Paths map[string]map[string]struct {
			Responses map[string]json.RawMessage `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	o := &OpenAPI{Version: doc.Info.Version}
	for path, methods := range doc.Paths {
		re := openAPIPathRE(path)
		for method, op := range methods {
			st := map[string]bool{}
			for code := range op.Responses {
				st[code] = true
			}
			o.ops = append(o.ops, openAPIOp{method: strings.ToUpper(method), path: path, re: re, statuses: st})
		}
	}
	// Literal segments before parameters: /git/ref/{ref} is not
	// /git/{x}/{y}; the most specific (fewest parameters) wins.
	sort.Slice(o.ops, func(i, j int) bool {
		pi, pj := strings.Count(o.ops[i].path, "{"), strings.Count(o.ops[j].path, "{")
		if pi != pj {
			return pi < pj
		}
		return o.ops[i].path < o.ops[j].path
	})
	return o, nil
}

// Parameters that may hold slashes: refs, branch names, file paths.
var slashParams = map[string]bool{"ref": true, "branch": true, "path": true, "name": true}

func openAPIPathRE(path string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for _, seg := range strings.Split(strings.Trim(path, "/"), "/") {
		b.WriteString("/")
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			if slashParams[strings.Trim(seg, "{}")] {
				b.WriteString(".+")
			} else {
				b.WriteString("[^/]+")
			}
			continue
		}
		b.WriteString(regexp.QuoteMeta(seg))
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

// Check returns what in calls GitHub's description does not allow: a
// request to an endpoint it does not have, or a status it does not
// document for it. Injected faults, dropped connections and 304s (GitHub
// answers any conditional GET so) are not the fake's answers to judge.
func (o *OpenAPI) Check(calls []Call) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range calls {
		if c.Git || c.GraphQL || c.Fault != NoFault || c.Status == 0 || c.NotModified || c.Status == http.StatusNotModified {
			continue
		}
		op := o.op(c.Method, c.Path)
		var p string
		switch {
		case op == nil:
			p = fmt.Sprintf("%s %s: no such endpoint in GitHub's REST API %s", c.Method, c.Path, o.Version)
		case c.Status == http.StatusUnauthorized || c.Status == http.StatusNotFound,
			c.Status == http.StatusMovedPermanently || c.Status == http.StatusFound || c.Status == http.StatusTemporaryRedirect:
			// Any endpoint: a bad token, a resource the token may not see
			// ("404 instead of 403" for private resources), a renamed or
			// transferred repository (GitHub redirects its old name; the
			// REST docs say so in general, not per operation).
			continue
		case c.Status == http.StatusUnprocessableEntity && c.Method == http.MethodPost && strings.HasSuffix(op.path, "/dispatches"):
			// GitHub answers 422 to a dispatch it refuses (no
			// workflow_dispatch trigger, a bad input, no such ref); the
			// description lists only the successes.
			continue
		case !op.statuses[strconv.Itoa(c.Status)] && !op.statuses["default"]:
			p = fmt.Sprintf("%s %s (%s): status %d is not documented (documented: %s)", c.Method, op.path, c.Path, c.Status, strings.Join(sortedKeys(op.statuses), ", "))
		default:
			continue
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func (o *OpenAPI) op(method, path string) *openAPIOp {
	for i := range o.ops {
		if o.ops[i].method == method && o.ops[i].re.MatchString(path) {
			return &o.ops[i]
		}
	}
	return nil
}

// Endpoint returns the description's path template of a request, if it
// has the endpoint.
func (o *OpenAPI) Endpoint(method, path string) (string, bool) {
	if op := o.op(method, path); op != nil {
		return op.path, true
	}
	return "", false
}
