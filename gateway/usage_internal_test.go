package gateway

import (
	"encoding/json"
	"testing"
)

// FuzzMayHoldKey checks the meter's skip test against encoding/json itself: whenever json would fill a usage or
// model field from an event, mayHoldKey must have let the event through. `go test` runs the seeds; `go test
// -fuzz FuzzMayHoldKey ./gateway` searches further.
func FuzzMayHoldKey(f *testing.F) {
	for _, s := range []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the \"usage\" of a message"}}`,
		`{"usage":{"output_tokens":1}}`, `{"Usage":{}}`, `{"USAGE":{}}`, "{\"u\u017fage\":{}}", `{"\u0075sage":{}}`,
		`{"usag\u0065":{}}`, `{"usageMetadata":{}}`, "{\"u\u017fagemetadata\":{}}", `{"usage\u004detadata":{}}`,
		`{"MODEL":"x"}`, `{"mod\u0065l":"x"}`, `{"modelVersion":"x"}`, `{"MODELversion":"x"}`, `{ "usage" : {} }`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ev struct {
			Usage         json.RawMessage `json:"usage"`
			UsageMetadata json.RawMessage `json:"usageMetadata"`
			Model         json.RawMessage `json:"model"`
			ModelVersion  json.RawMessage `json:"modelVersion"`
		}
		if json.Unmarshal(data, &ev) != nil {
			return
		}
		for _, c := range []struct {
			name     string
			found    bool
			end, alt [3]byte
		}{
			{"usage", ev.Usage != nil, endUsage, endModel},
			{"usageMetadata", ev.UsageMetadata != nil, endUsageMetadata, endModelVersion},
			{"model", ev.Model != nil, endModel, endUsage},
			{"modelVersion", ev.ModelVersion != nil, endModelVersion, endUsageMetadata},
		} {
			if c.found && !mayHoldKey(data, c.end, nil) {
				t.Errorf("json reads %s from %q, mayHoldKey skips it", c.name, data)
			}
			if c.found && !mayHoldKey(data, c.alt, &c.end) {
				t.Errorf("json reads %s from %q, mayHoldKey with it as the alternative skips it", c.name, data)
			}
		}
	})
}
