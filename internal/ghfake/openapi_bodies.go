package ghfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Schema is the shape of a JSON schema in GitHub's description, as the
// trimmed copy keeps it (scripts/trim-openapi.py): enough to check that an
// answer has every property GitHub marks required, and no null where the
// schema does not allow one.
type Schema struct {
	Ref                  string             `json:"$ref"`
	Type                 json.RawMessage    `json:"type"` // a name, or a list of names (OpenAPI 3.1)
	Nullable             bool               `json:"nullable"`
	Required             []string           `json:"required"`
	Properties           map[string]*Schema `json:"properties"`
	Items                *Schema            `json:"items"`
	AllOf                []*Schema          `json:"allOf"`
	OneOf                []*Schema          `json:"oneOf"`
	AnyOf                []*Schema          `json:"anyOf"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
}

// types are the schema's type names.
func (s *Schema) types() []string {
	if len(s.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(s.Type, &many)
	return many
}

func (s *Schema) allowsNull() bool {
	if s.Nullable {
		return true
	}
	for _, t := range s.types() {
		if t == "null" {
			return true
		}
	}
	return false
}

// CheckBodies returns where the fake's successful answers in calls lack
// what GitHub's response schemas require: a required property, or a value
// where only a non-null one is allowed. Each problem once.
func (o *OpenAPI) CheckBodies(calls []Call) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range calls {
		if c.Git || c.Fault != NoFault || c.Status < 200 || c.Status > 299 {
			continue
		}
		op := o.op(c.Method, c.Path)
		if op == nil {
			continue // Check reports it
		}
		for _, p := range o.checkBody(op, c) {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

// checkBody checks a successful call's answer against the schema GitHub
// documents for its status. Answers that are not JSON (a diff, a raw file)
// are not the schema's to judge.
func (o *OpenAPI) checkBody(op *openAPIOp, c Call) []string {
	sc := op.bodies[strconv.Itoa(c.Status)]
	body := bytes.TrimSpace(c.Body)
	if sc == nil || len(body) == 0 || (body[0] != '{' && body[0] != '[') {
		return nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []string{fmt.Sprintf("%s %s (%d): the answer is not JSON: %v", c.Method, op.path, c.Status, err)}
	}
	var out []string
	for _, p := range o.conform(sc, v, "", 0) {
		out = append(out, fmt.Sprintf("%s %s (%d): %s", c.Method, op.path, c.Status, p))
	}
	return out
}

// conform lists where v lacks what s requires: "pull_request.head.repo:
// required property \"ssh_url\" missing". Array elements are named "[]",
// so one problem in many elements is one line.
func (o *OpenAPI) conform(s *Schema, v any, at string, depth int) []string {
	if s == nil || depth > 64 {
		return nil
	}
	if s.Ref != "" {
		name := s.Ref[strings.LastIndex(s.Ref, "/")+1:]
		r := o.schemas[name]
		if r == nil {
			return []string{fmt.Sprintf("%s: schema %s is not in the trimmed description", where(at), name)}
		}
		return o.conform(r, v, at, depth+1)
	}
	if v == nil {
		if s.allowsNull() || len(s.types()) == 0 && len(s.AllOf)+len(s.OneOf)+len(s.AnyOf) == 0 {
			return nil
		}
		if alts := append(append([]*Schema(nil), s.OneOf...), s.AnyOf...); len(alts) > 0 {
			for _, a := range alts {
				if len(o.conform(a, v, at, depth+1)) == 0 {
					return nil
				}
			}
		}
		if len(s.AllOf) > 0 && len(s.types()) == 0 {
			// allOf: null only if every part allows it.
			var out []string
			for _, a := range s.AllOf {
				out = append(out, o.conform(a, v, at, depth+1)...)
			}
			return out
		}
		return []string{fmt.Sprintf("%s: null, which the schema does not allow", where(at))}
	}
	var out []string
	for _, a := range s.AllOf {
		out = append(out, o.conform(a, v, at, depth+1)...)
	}
	if alts := append(append([]*Schema(nil), s.OneOf...), s.AnyOf...); len(alts) > 0 {
		// Some alternative must fit; else the closest one's problems.
		var best []string
		for i, a := range alts {
			ps := o.conform(a, v, at, depth+1)
			if len(ps) == 0 {
				best = nil
				break
			}
			if i == 0 || len(ps) < len(best) {
				best = ps
			}
		}
		out = append(out, best...)
	}
	switch val := v.(type) {
	case map[string]any:
		for _, name := range s.Required {
			if _, ok := val[name]; !ok {
				out = append(out, fmt.Sprintf("%s: required property %q missing", where(at), name))
			}
		}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if pv, ok := val[name]; ok {
				out = append(out, o.conform(s.Properties[name], pv, join(at, name), depth+1)...)
			}
		}
	case []any:
		if s.Items != nil {
			seen := map[string]bool{}
			for _, e := range val {
				for _, p := range o.conform(s.Items, e, at+"[]", depth+1) {
					if !seen[p] {
						seen[p] = true
						out = append(out, p)
					}
				}
			}
		}
	}
	return out
}

func where(at string) string {
	if at == "" {
		return "the answer"
	}
	return at
}

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}
