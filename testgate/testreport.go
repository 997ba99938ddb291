package testgate

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// This file names failing tests from what a test command leaves behind, so
// a run can be compared with the baseline (issue 13): `go test -json` events
// on its output (detected, not configured), or JUnit XML reports at a
// configured glob. Without either only the exit status is known.

// TestIdentity is how failing tests were told apart.
type TestIdentity int

const (
	IdentityExitStatus TestIdentity = iota
	IdentityGoTestJSON
	IdentityJUnit
)

func (i TestIdentity) String() string {
	switch i {
	case IdentityExitStatus:
		return "exit status"
	case IdentityGoTestJSON:
		return "go test -json"
	case IdentityJUnit:
		return "JUnit XML"
	}
	return fmt.Sprintf("TestIdentity(%d)", int(i))
}

// FailedTest is one failing test and the end of its output.
type FailedTest struct {
	Name   string
	Output string
}

// TestReport is what a run said about its tests.
type TestReport struct {
	Identity TestIdentity
	// Failed are the failing tests, sorted by name, each once.
	Failed []FailedTest
	// Passed counts the passing tests seen (0 for exit-status identity).
	Passed int
	// Note says how the report was read (e.g. no JUnit report matched).
	Note string
}

// Names are the failing tests' names, sorted.
func (r TestReport) Names() []string {
	if len(r.Failed) == 0 {
		return nil
	}
	out := make([]string, len(r.Failed))
	for i, f := range r.Failed {
		out[i] = f.Name
	}
	return out
}

// maxTestOutput bounds the output kept per failing test.
const maxTestOutput = 2 << 10

// maxTestLine bounds one line of `go test -json` output the reader parses;
// longer lines are skipped (a test printing megabytes on one line).
const maxTestLine = 1 << 20

// goTestEvent is one line of `go test -json` (cmd/test2json).
type goTestEvent struct {
	Action     string `json:"Action"`
	Package    string `json:"Package"`
	Test       string `json:"Test"`
	Output     string `json:"Output"`
	ImportPath string `json:"ImportPath"`
}

// goTestReader reads `go test -json` events as the command writes them, so
// a long run is parsed in passing rather than kept whole: what it keeps is
// bounded by the failing tests and the tail of each one's output.
type goTestReader struct {
	partial []byte
	skip    bool // inside a line longer than maxTestLine
	events  int
	passed  int
	// running holds the output tails of tests that have not ended.
	running map[string]*outTail
	failed  map[string]string
	// pkgFailed are packages that failed; pkgTests counts their failed tests.
	pkgFailed map[string]bool
	pkgTests  map[string]int
	pkgOut    map[string]*outTail
}

func newGoTestReader() *goTestReader {
	return &goTestReader{running: map[string]*outTail{}, failed: map[string]string{},
		pkgFailed: map[string]bool{}, pkgTests: map[string]int{}, pkgOut: map[string]*outTail{}}
}

func (g *goTestReader) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if !g.skip {
				g.partial = append(g.partial, p...)
				if len(g.partial) > maxTestLine {
					g.partial, g.skip = g.partial[:0], true
				}
			}
			break
		}
		if !g.skip {
			g.partial = append(g.partial, p[:i]...)
			g.line(g.partial)
		}
		g.partial, g.skip = g.partial[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (g *goTestReader) line(b []byte) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var ev goTestEvent
	if json.Unmarshal(b, &ev) != nil || ev.Action == "" {
		return
	}
	g.events++
	pkg := ev.Package
	if pkg == "" {
		// Build events name "pkg [pkg.test]"; the package's own fail follows.
		pkg, _, _ = strings.Cut(ev.ImportPath, " [")
	}
	if ev.Test == "" {
		switch ev.Action {
		case "output", "build-output":
			t := g.pkgOut[pkg]
			if t == nil {
				t = &outTail{max: maxTestOutput}
				g.pkgOut[pkg] = t
			}
			t.add(ev.Output)
		case "fail", "build-fail":
			g.pkgFailed[pkg] = true
		}
		return
	}
	key := pkg + "." + ev.Test
	switch ev.Action {
	case "output":
		t := g.running[key]
		if t == nil {
			t = &outTail{max: maxTestOutput}
			g.running[key] = t
		}
		t.add(ev.Output)
	case "pass", "skip":
		if ev.Action == "pass" {
			g.passed++
		}
		delete(g.running, key)
	case "fail":
		out := ""
		if t := g.running[key]; t != nil {
			out = t.String()
		}
		delete(g.running, key)
		if _, dup := g.failed[key]; !dup {
			g.pkgTests[pkg]++
		}
		g.failed[key] = out
	}
}

// report is what the events named, nil when there were none (not `go test -json`).
func (g *goTestReader) report() *TestReport {
	if g.events == 0 {
		return nil
	}
	r := &TestReport{Identity: IdentityGoTestJSON, Passed: g.passed}
	for name, out := range g.failed {
		r.Failed = append(r.Failed, FailedTest{Name: name, Output: out})
	}
	// A package that failed with no failing test (a build error, a panic in
	// init or TestMain) is named by itself.
	for pkg := range g.pkgFailed {
		if g.pkgTests[pkg] == 0 {
			out := ""
			if t := g.pkgOut[pkg]; t != nil {
				out = t.String()
			}
			r.Failed = append(r.Failed, FailedTest{Name: pkg + " (package)", Output: out})
		}
	}
	slices.SortFunc(r.Failed, func(a, b FailedTest) int { return strings.Compare(a.Name, b.Name) })
	return r
}

// outTail keeps the last max bytes written, cut at a rune boundary.
type outTail struct {
	max int
	b   []byte
	cut bool
}

func (t *outTail) add(s string) {
	t.b = append(t.b, s...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
		t.cut = true
	}
}

func (t *outTail) String() string {
	b := t.b
	cut := t.cut
	if len(b) > t.max {
		b, cut = b[len(b)-t.max:], true
	}
	for len(b) > 0 && !utf8.RuneStart(b[0]) {
		b = b[1:]
	}
	if cut {
		return "…" + string(b)
	}
	return string(b)
}

// junitFiles lists the files under dir whose slash path matches glob, where
// a "**" segment matches any number of directories. .git is not searched.
func junitFiles(dir, glob string) ([]string, error) {
	pattern := strings.Split(glob, "/")
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if globMatch(pattern, strings.Split(filepath.ToSlash(rel), "/")) {
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

func globMatch(pattern, parts []string) bool {
	if len(pattern) == 0 {
		return len(parts) == 0
	}
	if pattern[0] == "**" {
		for i := 0; i <= len(parts); i++ {
			if globMatch(pattern[1:], parts[i:]) {
				return true
			}
		}
		return false
	}
	if len(parts) == 0 {
		return false
	}
	ok, err := path.Match(pattern[0], parts[0])
	return err == nil && ok && globMatch(pattern[1:], parts[1:])
}

// fileStamps records the modification times of the files a glob matches, so
// reports left in the checkout from before the run are not read as its own.
func fileStamps(dir, glob string) map[string]time.Time {
	files, _ := junitFiles(dir, glob)
	out := map[string]time.Time{}
	for _, f := range files {
		if fi, err := os.Stat(filepath.Join(dir, f)); err == nil {
			out[f] = fi.ModTime()
		}
	}
	return out
}

// maxJUnitFile bounds one JUnit report read.
const maxJUnitFile = 64 << 20

// readJUnit reads the reports the run wrote (new files, or files changed
// since before) and names their failing test cases as classname.name.
// It returns nil when the run wrote no report.
func readJUnit(dir, glob string, before map[string]time.Time) (*TestReport, error) {
	files, err := junitFiles(dir, glob)
	if err != nil {
		return nil, fmt.Errorf("finding JUnit reports %q: %w", glob, err)
	}
	r := &TestReport{Identity: IdentityJUnit}
	failed := map[string]string{}
	read := 0
	for _, f := range files {
		p := filepath.Join(dir, f)
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if old, ok := before[f]; ok && !fi.ModTime().After(old) {
			continue
		}
		fh, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("reading JUnit report %s: %w", f, err)
		}
		passed, err := parseJUnit(io.LimitReader(fh, maxJUnitFile), failed)
		fh.Close()
		if err != nil {
			return nil, fmt.Errorf("reading JUnit report %s: %w", f, err)
		}
		r.Passed += passed
		read++
	}
	if read == 0 {
		return nil, nil
	}
	for name, out := range failed {
		r.Failed = append(r.Failed, FailedTest{Name: name, Output: out})
	}
	slices.SortFunc(r.Failed, func(a, b FailedTest) int { return strings.Compare(a.Name, b.Name) })
	r.Note = fmt.Sprintf("%d JUnit report(s)", read)
	return r, nil
}

// parseJUnit walks one report's tokens: any nesting of testsuites works, and
// a testcase fails when it holds a <failure> or <error>.
func parseJUnit(rd io.Reader, failed map[string]string) (passed int, err error) {
	dec := xml.NewDecoder(rd)
	dec.Strict = false
	var (
		inCase  bool
		name    string
		bad     bool
		skipped bool
		msg     strings.Builder
		seen    bool
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return passed, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "testsuite", "testsuites":
				seen = true
			case "testcase":
				seen = true
				inCase, bad, skipped = true, false, false
				msg.Reset()
				var class, n string
				for _, a := range t.Attr {
					switch a.Name.Local {
					case "classname":
						class = a.Value
					case "name":
						n = a.Value
					}
				}
				name = n
				if class != "" {
					name = class + "." + n
				}
			case "failure", "error":
				if inCase {
					bad = true
					for _, a := range t.Attr {
						if a.Name.Local == "message" && msg.Len() < maxTestOutput {
							msg.WriteString(a.Value + "\n")
						}
					}
				}
			case "skipped":
				skipped = true
			}
		case xml.CharData:
			if inCase && bad && msg.Len() < maxTestOutput {
				msg.Write(t)
			}
		case xml.EndElement:
			if t.Name.Local == "testcase" && inCase {
				inCase = false
				switch {
				case bad:
					failed[name] = strings.TrimSpace(msg.String())
				case !skipped:
					passed++
				}
			}
		}
	}
	if !seen {
		return passed, errors.New("not a JUnit report: no <testsuite> or <testcase>")
	}
	return passed, nil
}

// KnownFailures is the baseline a run is compared with: what already failed
// on the base.
type KnownFailures struct {
	Identity TestIdentity
	// Tests are the failing tests' names.
	Tests []string
	// Unnamed: the base failed without naming (all) its failures, so any
	// failure counts as pre-existing.
	Unnamed bool
	// At names the base commit, for notes.
	At string
}

// compare decides a failed run against the baseline: pass when every failure
// is one the base has, with a note saying what was compared and how.
func (k *KnownFailures) compare(res *GateResult) (pass bool, note string) {
	if k.Unnamed {
		return true, fmt.Sprintf("the base (%s) fails too, without naming its failures (%s): any failure counts as pre-existing", k.At, k.Identity)
	}
	if res.TestsOutcome == GateTimeout {
		return false, "timed out: cannot be compared with the baseline"
	}
	if res.Tests.Identity != k.Identity {
		return false, fmt.Sprintf("failing tests named by %s, the baseline by %s: cannot compare", res.Tests.Identity, k.Identity)
	}
	if len(res.Tests.Failed) == 0 {
		return false, fmt.Sprintf("the tests failed without naming a failing test (%s): cannot compare with the baseline", res.Tests.Identity)
	}
	for _, f := range res.Tests.Failed {
		if slices.Contains(k.Tests, f.Name) {
			res.PreExisting = append(res.PreExisting, f.Name)
		} else {
			res.New = append(res.New, f.Name)
		}
	}
	if len(res.New) > 0 {
		return false, fmt.Sprintf("new failures (not failing on the base %s; %s): %s", k.At, k.Identity, listNames(res.New, 8))
	}
	return true, fmt.Sprintf("only failures the base %s already has (%s): %s", k.At, k.Identity, listNames(res.PreExisting, 8))
}

func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
