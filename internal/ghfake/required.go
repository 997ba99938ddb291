package ghfake

import (
	"bytes"
	"encoding/json"
	"net/url"
)

// What GitHub's response schemas require that go-github's types drop
// (omitempty): null for a repository's unset description, homepage,
// language, license and mirror, wherever a repository appears (a pull
// request's head and base too) and its forks count under the older name;
// a check run's details_url, external_id, output texts, and its conclusion
// and completed_at until it completes; an
// installation's single_file_name and suspension;
// an empty labels list on a pull request or an issue; a workflow run's conclusion
// (null until it completes) and its pull requests; a review's _links.
// Checked by OpenAPI.Check against the description's schemas.
var repoNulls = []string{"description", "homepage", "language", "license", "mirror_url"}

// withNestedRequired adds them to an encoded answer.
func withNestedRequired(b []byte) []byte {
	if len(b) == 0 || (b[0] != '{' && b[0] != '[') ||
		!bytes.Contains(b, []byte(`"clone_url"`)) && !bytes.Contains(b, []byte(`"head"`)) && !bytes.Contains(b, []byte(`"run_number"`)) &&
			!bytes.Contains(b, []byte(`"labels_url"`)) && !bytes.Contains(b, []byte(`"pull_request_url"`)) &&
			!bytes.Contains(b, []byte(`"check_suite"`)) && !bytes.Contains(b, []byte(`"access_tokens_url"`)) {
		return b
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // ids stay exact
	if dec.Decode(&v) != nil {
		return b
	}
	fillRequired(v)
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}

func fillRequired(v any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["clone_url"]; ok {
			for _, k := range repoNulls {
				if _, ok := x[k]; !ok {
					x[k] = nil
				}
			}
			if _, ok := x["forks"]; !ok {
				x["forks"] = x["forks_count"] // GitHub's older name, same count
			}
		}
		_, head := x["head"]
		_, base := x["base"]
		_, number := x["number"]
		_, labelsURL := x["labels_url"]
		if number && (head && base || labelsURL) { // a pull request, an issue
			if _, ok := x["labels"]; !ok {
				x["labels"] = []any{}
			}
		}
		_, workflow := x["workflow_id"]
		_, runNumber := x["run_number"]
		if workflow && runNumber { // a workflow run
			if _, ok := x["conclusion"]; !ok {
				x["conclusion"] = nil // not completed yet
			}
			if _, ok := x["pull_requests"]; !ok {
				x["pull_requests"] = []any{}
			}
		}
		_, headSHA := x["head_sha"]
		_, suite := x["check_suite"]
		if headSHA && suite { // a check run: nullable, but required
			// conclusion and completed_at stay null until it completes.
			setNull(x, "details_url", "external_id", "conclusion", "started_at", "completed_at", "html_url")
			if _, ok := x["pull_requests"]; !ok {
				x["pull_requests"] = []any{}
			}
			if o, ok := x["output"].(map[string]any); ok {
				setNull(o, "title", "summary", "text")
			}
		}
		if _, ok := x["access_tokens_url"]; ok { // an installation
			setNull(x, "single_file_name", "suspended_by", "suspended_at")
		}
		prURL, review := x["pull_request_url"].(string)
		if _, ok := x["commit_id"]; review && ok {
			if _, ok := x["_links"]; !ok { // a review's links
				x["_links"] = map[string]any{"html": map[string]any{"href": x["html_url"]}, "pull_request": map[string]any{"href": prURL}}
			}
		}
		for _, e := range x {
			fillRequired(e)
		}
	case []any:
		for _, e := range x {
			fillRequired(e)
		}
	}
}

// host is the fake's host name, as GitHub's ssh_url names github.com.
func (f *Fake) host() string {
	u, err := url.Parse(f.srv.URL)
	if err != nil {
		return "localhost"
	}
	return u.Hostname()
}

// setNull sets each key that is absent to null.
func setNull(x map[string]any, keys ...string) {
	for _, k := range keys {
		if _, ok := x[k]; !ok {
			x[k] = nil
		}
	}
}
