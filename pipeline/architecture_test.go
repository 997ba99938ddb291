package pipeline

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateArchitecture = flag.Bool("update-architecture", false, "rewrite ARCHITECTURE.md's routing table from RoutingTable")

const (
	routingBegin = "<!-- routing-table:begin -->"
	routingEnd   = "<!-- routing-table:end -->"
)

// routingMarkdown renders RoutingTable as ARCHITECTURE.md shows it.
func routingMarkdown() string {
	names := func(n int, name func(i int) string) string {
		if n == 0 {
			return "any"
		}
		out := make([]string, n)
		for i := range out {
			out[i] = "`" + name(i) + "`"
		}
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	b.WriteString("| role | status | purpose | worst finding | route | where the work goes |\n|---|---|---|---|---|---|\n")
	for _, r := range RoutingTable {
		purposes, worst := "", ""
		if len(r.Purposes) > 0 {
			purposes = names(len(r.Purposes), func(i int) string { return r.Purposes[i].String() })
		}
		if len(r.Worst) > 0 {
			worst = names(len(r.Worst), func(i int) string { return r.Worst[i].String() })
		}
		b.WriteString("| " + names(len(r.Roles), func(i int) string { return r.Roles[i].String() }) +
			" | " + names(len(r.Statuses), func(i int) string { return r.Statuses[i].String() }) +
			" | " + purposes + " | " + worst + " | `" + r.Route.String() + "` | " + strings.ReplaceAll(r.Next, "|", "\\|") + " |\n")
	}
	return b.String()
}

// TestArchitectureRoutingTable holds ARCHITECTURE.md's routing table to the
// engine's: the page a maintainer reads first cannot drift from the code.
// go test ./pipeline -run TestArchitectureRoutingTable -update-architecture
// rewrites it.
func TestArchitectureRoutingTable(t *testing.T) {
	const path = "../ARCHITECTURE.md"
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	text := string(doc)
	begin, end := strings.Index(text, routingBegin), strings.Index(text, routingEnd)
	require.True(t, begin >= 0 && end > begin, "ARCHITECTURE.md has no routing-table markers")
	want := routingMarkdown()
	got := strings.TrimPrefix(text[begin+len(routingBegin):end], "\n")
	if *updateArchitecture {
		text = text[:begin+len(routingBegin)] + "\n" + want + text[end:]
		require.NoError(t, os.WriteFile(path, []byte(text), 0o644))
		return
	}
	require.Equal(t, want, got, "ARCHITECTURE.md's routing table differs from pipeline.RoutingTable: run go test ./pipeline -run TestArchitectureRoutingTable -update-architecture")
}

// TestArchitectureReferencesResolve: every "ARCHITECTURE.md §N" a comment
// cites names a section the page has.
func TestArchitectureReferencesResolve(t *testing.T) {
	doc, err := os.ReadFile("../ARCHITECTURE.md")
	require.NoError(t, err)
	sections := map[string]bool{}
	for _, line := range strings.Split(string(doc), "\n") {
		if n, ok := strings.CutPrefix(line, "## "); ok {
			num, _, _ := strings.Cut(n, ".")
			sections[num] = true
		}
	}
	cited := 0
	err = filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range archRefRE.FindAllStringSubmatch(string(src), -1) {
			for _, num := range sectionNumRE.FindAllString(m[1], -1) {
				cited++
				require.True(t, sections[num], "%s cites ARCHITECTURE.md §%s, which has no such section", path, num)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.NotZero(t, cited, "the code cites the page")
}

var (
	archRefRE    = regexp.MustCompile(`ARCHITECTURE\.md (§[0-9]+(?:, §[0-9]+)*)`)
	sectionNumRE = regexp.MustCompile(`[0-9]+`)
)
