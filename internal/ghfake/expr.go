package ghfake

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Expressions: the part of GitHub Actions' ${{ }} language that our
// workflows use, evaluated with GitHub's semantics
// (https://docs.github.com/en/actions/reference/workflows-and-actions/expressions):
// literals (null, booleans, numbers, 'strings' with '' escaping), context
// property access (a.b, a['b']), the operators ! == != < <= > >= && || and
// parentheses, and the functions contains, startsWith, endsWith, format and
// the status checks success, failure, cancelled and always. Anything else
// is an error naming it, so a workflow using more than the fake understands
// fails loudly instead of being evaluated wrongly.
//
// Surprising rules reproduced: string comparison and contains/startsWith/
// endsWith ignore case; == between different types compares them as numbers
// ('' and null are 0); && and || return an operand, not a boolean, so
// `a || b` picks the first truthy value and `c && 'x' || 'y'` is a
// conditional; a missing property is null, and so is any property of null.

// Contexts are the named contexts an expression may read (github, inputs,
// needs, steps, env, vars, secrets, runner, job, matrix, strategy). Values
// are JSON-shaped: nil, bool, float64, string, map[string]any, []any.
type Contexts map[string]any

// knownContexts are the context names GitHub defines; reading one that was
// not provided yields null, as on GitHub (e.g. needs in a job without
// needs), while any other name is an error.
var knownContexts = map[string]bool{
	"github": true, "env": true, "vars": true, "job": true, "jobs": true, "steps": true, "runner": true,
	"secrets": true, "strategy": true, "matrix": true, "needs": true, "inputs": true,
}

// JobStatus is what the status-check functions see: the results of the
// job's dependencies (a job) or of the previous steps (a step), and whether
// the run was cancelled.
type JobStatus struct {
	Failed    bool // a dependency (or previous step) failed
	Skipped   bool // a dependency was skipped: success() is false
	Cancelled bool // the run was cancelled
}

// exprEnv is an evaluation's environment.
type exprEnv struct {
	ctx    Contexts
	status JobStatus
}

// EvalExpression evaluates one expression (without the ${{ }}).
func EvalExpression(expr string, ctx Contexts, status JobStatus) (any, error) {
	n, err := parseExpr(expr)
	if err != nil {
		return nil, err
	}
	return n.eval(&exprEnv{ctx: ctx, status: status})
}

// Interpolate expands every ${{ }} in s. A value that is exactly one
// expression keeps its type (a boolean stays a boolean); otherwise the parts
// are converted to strings and joined.
func Interpolate(s string, ctx Contexts, status JobStatus) (any, error) {
	var parts []any
	rest := s
	for {
		i := strings.Index(rest, "${{")
		if i < 0 {
			if rest != "" {
				parts = append(parts, rest)
			}
			break
		}
		if i > 0 {
			parts = append(parts, rest[:i])
		}
		end := exprEnd(rest[i+3:])
		if end < 0 {
			return nil, fmt.Errorf("expression %q: no closing }}", s)
		}
		v, err := EvalExpression(rest[i+3:i+3+end], ctx, status)
		if err != nil {
			return nil, fmt.Errorf("expression %q: %w", s, err)
		}
		parts = append(parts, v)
		rest = rest[i+3+end+2:]
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(exprString(p))
	}
	return b.String(), nil
}

// InterpolateString is Interpolate converted to a string.
func InterpolateString(s string, ctx Contexts, status JobStatus) (string, error) {
	v, err := Interpolate(s, ctx, status)
	if err != nil {
		return "", err
	}
	return exprString(v), nil
}

// exprEnd finds the "}}" closing an expression, skipping string literals.
func exprEnd(s string) int {
	inStr := false
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\'':
			inStr = !inStr // '' inside a string toggles twice: still inside
		case !inStr && strings.HasPrefix(s[i:], "}}"):
			return i
		}
	}
	return -1
}

// EvalCondition evaluates an `if:` as GitHub does: with or without ${{ }},
// and with an implicit success() && in front unless the expression calls a
// status function itself. An empty condition is success().
func EvalCondition(cond string, ctx Contexts, status JobStatus) (bool, error) {
	c := strings.TrimSpace(cond)
	if strings.HasPrefix(c, "${{") && strings.HasSuffix(c, "}}") && exprEnd(c[3:]) == len(c)-5 {
		c = strings.TrimSpace(c[3 : len(c)-2])
	}
	if c == "" {
		c = "success()"
	}
	n, err := parseExpr(c)
	if err != nil {
		return false, fmt.Errorf("if %q: %w", cond, err)
	}
	if !n.callsStatus() {
		n = &binNode{op: "&&", l: &callNode{name: "success"}, r: n}
	}
	v, err := n.eval(&exprEnv{ctx: ctx, status: status})
	if err != nil {
		return false, fmt.Errorf("if %q: %w", cond, err)
	}
	return truthy(v), nil
}

// --- values ---

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

// exprString converts a value to a string as GitHub does: null is empty,
// numbers without a needless fraction, objects as JSON.
func exprString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func toNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		s := strings.TrimSpace(v)
		if s == "" {
			return 0
		}
		if strings.HasPrefix(s, "0x") {
			if n, err := strconv.ParseInt(s[2:], 16, 64); err == nil {
				return float64(n)
			}
		}
		if n, err := strconv.ParseFloat(s, 64); err == nil {
			return n
		}
	}
	return math.NaN()
}

// compare returns -1, 0, 1, or 2 when the values are not comparable (NaN,
// objects).
func compare(a, b any) int {
	sa, aStr := a.(string)
	sb, bStr := b.(string)
	if aStr && bStr {
		return strings.Compare(strings.ToLower(sa), strings.ToLower(sb))
	}
	_, aObj := a.(map[string]any)
	_, bObj := b.(map[string]any)
	_, aArr := a.([]any)
	_, bArr := b.([]any)
	if aObj || bObj || aArr || bArr {
		return 2 // objects are equal only to themselves; the fake has no identity
	}
	if a == nil && b == nil {
		return 0
	}
	x, y := toNumber(a), toNumber(b)
	switch {
	case math.IsNaN(x) || math.IsNaN(y):
		return 2
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// --- parser ---

type exprNode interface {
	eval(*exprEnv) (any, error)
	callsStatus() bool
}

type litNode struct{ v any }

func (n *litNode) eval(*exprEnv) (any, error) { return n.v, nil }
func (n *litNode) callsStatus() bool          { return false }

// ctxNode reads a context.
type ctxNode struct{ name string }

func (n *ctxNode) eval(e *exprEnv) (any, error) { return e.ctx[n.name], nil }
func (n *ctxNode) callsStatus() bool            { return false }

// propNode is x.name or x[expr]. mapped: x is an object filter's result
// (x.*, x.*.a, …), so the property is taken of every item.
type propNode struct {
	x      exprNode
	key    exprNode
	mapped bool
}

func (n *propNode) eval(e *exprEnv) (any, error) {
	x, err := n.x.eval(e)
	if err != nil {
		return nil, err
	}
	k, err := n.key.eval(e)
	if err != nil {
		return nil, err
	}
	if n.mapped {
		// An object filter maps the property over the items, dropping the
		// ones that lack it ("Object filters" in GitHub's expressions docs:
		// fruits.*.name is the array of the fruits' names).
		items, _ := x.([]any)
		out := []any{}
		for _, it := range items {
			if v := property(it, k); v != nil {
				out = append(out, v)
			}
		}
		return out, nil
	}
	return property(x, k), nil
}

// filterNode is x.*: the items of an array, or the values of an object
// (in key order, so that output never depends on map iteration).
type filterNode struct{ x exprNode }

func (n *filterNode) callsStatus() bool { return n.x.callsStatus() }

func (n *filterNode) eval(e *exprEnv) (any, error) {
	x, err := n.x.eval(e)
	if err != nil {
		return nil, err
	}
	switch x := x.(type) {
	case []any:
		return append([]any{}, x...), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]any, 0, len(keys))
		for _, k := range keys {
			out = append(out, x[k])
		}
		return out, nil
	}
	return []any{}, nil
}

// property is x[k] as expressions read it: names ignore case, an index
// out of range or a missing name is null.
func property(x, k any) any {
	switch x := x.(type) {
	case map[string]any:
		key := exprString(k)
		if v, ok := x[key]; ok {
			return v
		}
		for name, v := range x { // property names ignore case
			if strings.EqualFold(name, key) {
				return v
			}
		}
	case []any:
		i := toNumber(k)
		if i >= 0 && int(i) < len(x) && float64(int(i)) == i {
			return x[int(i)]
		}
	}
	return nil
}

func (n *propNode) callsStatus() bool { return n.x.callsStatus() || n.key.callsStatus() }

type notNode struct{ x exprNode }

func (n *notNode) eval(e *exprEnv) (any, error) {
	v, err := n.x.eval(e)
	if err != nil {
		return nil, err
	}
	return !truthy(v), nil
}
func (n *notNode) callsStatus() bool { return n.x.callsStatus() }

type binNode struct {
	op   string
	l, r exprNode
}

func (n *binNode) callsStatus() bool { return n.l.callsStatus() || n.r.callsStatus() }

func (n *binNode) eval(e *exprEnv) (any, error) {
	l, err := n.l.eval(e)
	if err != nil {
		return nil, err
	}
	switch n.op {
	case "&&":
		if !truthy(l) {
			return l, nil
		}
		return n.r.eval(e)
	case "||":
		if truthy(l) {
			return l, nil
		}
		return n.r.eval(e)
	}
	r, err := n.r.eval(e)
	if err != nil {
		return nil, err
	}
	c := compare(l, r)
	switch n.op {
	case "==":
		return c == 0, nil
	case "!=":
		return c != 0, nil
	case "<":
		return c == -1, nil
	case "<=":
		return c == -1 || c == 0, nil
	case ">":
		return c == 1, nil
	case ">=":
		return c == 1 || c == 0, nil
	}
	return nil, fmt.Errorf("unknown operator %s", n.op)
}

type callNode struct {
	name string
	args []exprNode
}

var statusFuncs = map[string]bool{"success": true, "failure": true, "cancelled": true, "always": true}

func (n *callNode) callsStatus() bool {
	if statusFuncs[n.name] {
		return true
	}
	for _, a := range n.args {
		if a.callsStatus() {
			return true
		}
	}
	return false
}

func (n *callNode) eval(e *exprEnv) (any, error) {
	var args []any
	for _, a := range n.args {
		v, err := a.eval(e)
		if err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	switch n.name {
	case "success":
		return !e.status.Failed && !e.status.Skipped && !e.status.Cancelled, nil
	case "failure":
		return e.status.Failed && !e.status.Cancelled, nil
	case "cancelled":
		return e.status.Cancelled, nil
	case "always":
		return true, nil
	case "contains":
		if arr, ok := args[0].([]any); ok {
			for _, item := range arr {
				if compare(item, args[1]) == 0 {
					return true, nil
				}
			}
			return false, nil
		}
		return strings.Contains(strings.ToLower(exprString(args[0])), strings.ToLower(exprString(args[1]))), nil
	case "startsWith":
		return strings.HasPrefix(strings.ToLower(exprString(args[0])), strings.ToLower(exprString(args[1]))), nil
	case "endsWith":
		return strings.HasSuffix(strings.ToLower(exprString(args[0])), strings.ToLower(exprString(args[1]))), nil
	case "format":
		return formatExpr(exprString(args[0]), args[1:])
	case "join":
		// join(array, separator = ","): a string is returned as is.
		if len(args) > 2 {
			return nil, fmt.Errorf("join takes 1 or 2 arguments, not %d", len(args))
		}
		sep := ","
		if len(args) == 2 {
			sep = exprString(args[1])
		}
		arr, ok := args[0].([]any)
		if !ok {
			return exprString(args[0]), nil
		}
		parts := make([]string, len(arr))
		for i, v := range arr {
			parts[i] = exprString(v)
		}
		return strings.Join(parts, sep), nil
	}
	return nil, fmt.Errorf("function %s is not supported by the fake", n.name)
}

// formatExpr is format('{0} and {1}', a, b); {{ and }} escape braces.
func formatExpr(f string, args []any) (any, error) {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		switch {
		case strings.HasPrefix(f[i:], "{{"):
			b.WriteByte('{')
			i++
		case strings.HasPrefix(f[i:], "}}"):
			b.WriteByte('}')
			i++
		case f[i] == '{':
			end := strings.IndexByte(f[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("format %q: unclosed {", f)
			}
			k, err := strconv.Atoi(f[i+1 : i+end])
			if err != nil || k < 0 || k >= len(args) {
				return nil, fmt.Errorf("format %q: bad argument index %q", f, f[i+1:i+end])
			}
			b.WriteString(exprString(args[k]))
			i += end
		default:
			b.WriteByte(f[i])
		}
	}
	return b.String(), nil
}

// funcArity is the number of arguments each supported function takes (-1:
// one or more).
var funcArity = map[string]int{
	"success": 0, "failure": 0, "cancelled": 0, "always": 0,
	"contains": 2, "startsWith": 2, "endsWith": 2, "format": -1, "join": -1,
}

type exprParser struct {
	src  string
	toks []exprTok
	i    int
}

type exprTok struct {
	kind string // num, str, ident, op, eof
	text string
	num  float64
}

func parseExpr(src string) (exprNode, error) {
	toks, err := lexExpr(src)
	if err != nil {
		return nil, err
	}
	p := &exprParser{src: src, toks: toks}
	n, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != "eof" {
		return nil, fmt.Errorf("expression %q: unexpected %q", src, t.text)
	}
	return n, nil
}

func lexExpr(src string) ([]exprTok, error) {
	var out []exprTok
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '\'':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(src) {
					return nil, fmt.Errorf("expression %q: unterminated string", src)
				}
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				b.WriteByte(src[j])
				j++
			}
			out = append(out, exprTok{kind: "str", text: b.String()})
			i = j + 1
		case c >= '0' && c <= '9' || (c == '-' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i + 1
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.' || src[j] == 'x' || src[j] == 'e' ||
				src[j] >= 'a' && src[j] <= 'f' || src[j] >= 'A' && src[j] <= 'F') {
				j++
			}
			n := toNumber(src[i:j])
			if math.IsNaN(n) {
				return nil, fmt.Errorf("expression %q: bad number %q", src, src[i:j])
			}
			out = append(out, exprTok{kind: "num", text: src[i:j], num: n})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(src) && (src[j] == '_' || src[j] == '-' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z' || src[j] >= '0' && src[j] <= '9') {
				j++
			}
			out = append(out, exprTok{kind: "ident", text: src[i:j]})
			i = j
		default:
			op := ""
			for _, o := range []string{"==", "!=", "<=", ">=", "&&", "||", "!", "<", ">", "(", ")", "[", "]", ".", ",", "*"} {
				if strings.HasPrefix(src[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("expression %q: unexpected character %q", src, c)
			}
			out = append(out, exprTok{kind: "op", text: op})
			i += len(op)
		}
	}
	return append(out, exprTok{kind: "eof"}), nil
}

func (p *exprParser) peek() exprTok { return p.toks[p.i] }
func (p *exprParser) next() exprTok { t := p.toks[p.i]; p.i++; return t }

func (p *exprParser) accept(op string) bool {
	if t := p.peek(); t.kind == "op" && t.text == op {
		p.i++
		return true
	}
	return false
}

func (p *exprParser) expect(op string) error {
	if !p.accept(op) {
		return fmt.Errorf("expression %q: expected %q, found %q", p.src, op, p.peek().text)
	}
	return nil
}

func (p *exprParser) or() (exprNode, error) {
	return p.binary([]string{"||"}, p.and)
}

func (p *exprParser) and() (exprNode, error) {
	return p.binary([]string{"&&"}, p.equality)
}

func (p *exprParser) equality() (exprNode, error) {
	return p.binary([]string{"==", "!="}, p.relation)
}

func (p *exprParser) relation() (exprNode, error) {
	return p.binary([]string{"<=", ">=", "<", ">"}, p.unary)
}

func (p *exprParser) binary(ops []string, sub func() (exprNode, error)) (exprNode, error) {
	l, err := sub()
	if err != nil {
		return nil, err
	}
	for {
		matched := ""
		for _, op := range ops {
			if p.accept(op) {
				matched = op
				break
			}
		}
		if matched == "" {
			return l, nil
		}
		r, err := sub()
		if err != nil {
			return nil, err
		}
		l = &binNode{op: matched, l: l, r: r}
	}
}

func (p *exprParser) unary() (exprNode, error) {
	if p.accept("!") {
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &notNode{x: x}, nil
	}
	return p.postfix()
}

func (p *exprParser) postfix() (exprNode, error) {
	x, err := p.primary()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.accept("."):
			t := p.next()
			if t.kind == "op" && t.text == "*" {
				x = &filterNode{x: x}
				continue
			}
			if t.kind != "ident" {
				return nil, fmt.Errorf("expression %q: expected a property name after '.', found %q", p.src, t.text)
			}
			x = &propNode{x: x, key: &litNode{v: t.text}, mapped: isFiltered(x)}
		case p.accept("["):
			k, err := p.or()
			if err != nil {
				return nil, err
			}
			if err := p.expect("]"); err != nil {
				return nil, err
			}
			x = &propNode{x: x, key: k}
		default:
			return x, nil
		}
	}
}

// isFiltered reports whether x is an object filter's result: its
// properties are taken item by item.
func isFiltered(x exprNode) bool {
	switch x := x.(type) {
	case *filterNode:
		return true
	case *propNode:
		return x.mapped
	}
	return false
}

func (p *exprParser) primary() (exprNode, error) {
	t := p.next()
	switch t.kind {
	case "num":
		return &litNode{v: t.num}, nil
	case "str":
		return &litNode{v: t.text}, nil
	case "op":
		if t.text == "(" {
			x, err := p.or()
			if err != nil {
				return nil, err
			}
			return x, p.expect(")")
		}
	case "ident":
		switch t.text {
		case "true":
			return &litNode{v: true}, nil
		case "false":
			return &litNode{v: false}, nil
		case "null":
			return &litNode{v: nil}, nil
		}
		if p.accept("(") {
			return p.call(t.text)
		}
		if !knownContexts[t.text] {
			return nil, fmt.Errorf("expression %q: unknown context %q", p.src, t.text)
		}
		return &ctxNode{name: t.text}, nil
	case "eof":
		return nil, fmt.Errorf("expression %q: unexpected end", p.src)
	}
	return nil, fmt.Errorf("expression %q: unexpected %q", p.src, t.text)
}

func (p *exprParser) call(name string) (exprNode, error) {
	arity, ok := funcArity[name]
	if !ok {
		return nil, fmt.Errorf("expression %q: function %s is not supported by the fake", p.src, name)
	}
	n := &callNode{name: name}
	if !p.accept(")") {
		for {
			a, err := p.or()
			if err != nil {
				return nil, err
			}
			n.args = append(n.args, a)
			if p.accept(")") {
				break
			}
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
	}
	if (arity >= 0 && len(n.args) != arity) || (arity < 0 && len(n.args) == 0) {
		return nil, fmt.Errorf("expression %q: %s takes %d arguments, not %d", p.src, name, arity, len(n.args))
	}
	return n, nil
}
