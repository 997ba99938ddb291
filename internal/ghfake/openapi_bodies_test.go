package ghfake

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Answers checked against GitHub's response schemas (issue 22): required
// properties, recursively through $ref, arrays, allOf/oneOf/anyOf;
// nullable respected.
func TestOpenAPICheckBodies(t *testing.T) {
	o, err := LoadOpenAPI("testdata/github-rest-trimmed.json")
	require.NoError(t, err)
	user := `{"login":"alice","id":1,"node_id":"U","avatar_url":"a","gravatar_id":null,"url":"u","html_url":"h","followers_url":"f","following_url":"f","gists_url":"g","starred_url":"s","subscriptions_url":"s","organizations_url":"o","repos_url":"r","events_url":"e","received_events_url":"r","type":"User","site_admin":false}`
	comment := `{"id":1,"node_id":"C","url":"u","html_url":"h","body":"b","user":` + user + `,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","issue_url":"i","author_association":"OWNER"}`
	for _, tc := range []struct {
		name string
		call Call
		want []string
	}{
		{name: "complete", call: Call{Method: "GET", Path: "/repos/o/r/issues/comments/1", Status: 200, Body: []byte(comment)}},
		{name: "a list of complete ones", call: Call{Method: "GET", Path: "/repos/o/r/issues/1/comments", Status: 200, Body: []byte("[" + comment + "," + comment + "]")}},
		{name: "a missing property, once for many elements",
			call: Call{Method: "GET", Path: "/repos/o/r/issues/1/comments", Status: 200, Body: []byte("[" + drop(t, comment, "html_url") + "," + drop(t, comment, "html_url") + "]")},
			want: []string{`GET /repos/{owner}/{repo}/issues/{issue_number}/comments (200): []: required property "html_url" missing`}},
		{name: "nested through a $ref",
			call: Call{Method: "GET", Path: "/repos/o/r/issues/comments/1", Status: 200, Body: []byte(`{"id":1,"node_id":"C","url":"u","html_url":"h","body":"b","user":` + drop(t, user, "avatar_url") + `,"created_at":"x","updated_at":"x","issue_url":"i","author_association":"OWNER"}`)},
			want: []string{`GET /repos/{owner}/{repo}/issues/comments/{comment_id} (200): user: required property "avatar_url" missing`}},
		{name: "a nullable user may be null",
			call: Call{Method: "GET", Path: "/repos/o/r/issues/comments/1", Status: 200, Body: []byte(`{"id":1,"node_id":"C","url":"u","html_url":"h","body":"b","user":null,"created_at":"x","updated_at":"x","issue_url":"i","author_association":"OWNER"}`)}},
		{name: "a non-nullable one may not",
			call: Call{Method: "GET", Path: "/repos/o/r/issues/comments/1", Status: 200, Body: []byte(`{"id":1,"node_id":null,"url":"u","html_url":"h","body":"b","user":null,"created_at":"x","updated_at":"x","issue_url":"i","author_association":"OWNER"}`)},
			want: []string{`GET /repos/{owner}/{repo}/issues/comments/{comment_id} (200): node_id: null, which the schema does not allow`}},
		{name: "not JSON is not judged", call: Call{Method: "GET", Path: "/repos/o/r/pulls/1", Status: 200, Body: []byte("diff --git a b")}},
		{name: "a {ref} with slashes is not a longer endpoint", call: Call{Method: "GET", Path: "/repos/o/r/commits/abc/check-runs", Status: 200, Body: []byte(`{"total_count":0,"check_runs":[]}`)}},
		{name: "an error is not judged", call: Call{Method: "GET", Path: "/repos/o/r/issues/comments/1", Status: 404, Body: []byte(`{"message":"Not Found"}`)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, o.CheckBodies([]Call{tc.call}))
		})
	}
	// oneOf/anyOf: an answer fits if one alternative fits; else the
	// closest alternative's problems.
	o.schemas["alt-a"] = &Schema{Type: json.RawMessage(`"object"`), Required: []string{"a"}}
	o.schemas["alt-b"] = &Schema{Type: json.RawMessage(`"object"`), Required: []string{"b", "c"}}
	alt := &Schema{OneOf: []*Schema{{Ref: "#/components/schemas/alt-a"}, {Ref: "#/components/schemas/alt-b"}}}
	assert.Empty(t, o.conform(alt, map[string]any{"b": 1, "c": 2}, "", 0))
	assert.Equal(t, []string{`the answer: required property "a" missing`}, o.conform(alt, map[string]any{"b": 1}, "", 0))
	all := &Schema{AllOf: []*Schema{{Ref: "#/components/schemas/alt-a"}, {Ref: "#/components/schemas/alt-b"}}}
	assert.Equal(t, []string{`x: required property "b" missing`, `x: required property "c" missing`}, o.conform(all, map[string]any{"a": 1}, "x", 0))
}

func drop(t *testing.T, obj, key string) string {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(obj), &m))
	delete(m, key)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}
