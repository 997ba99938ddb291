package gitops

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// genFile is one file of a generated scenario.
type genFile struct {
	lines   []string
	noEOL   bool // last line without newline
	exec    bool
	binary  bool
	symlink string // target, when the file is a symlink
}

func (f genFile) clone() genFile {
	f.lines = append([]string(nil), f.lines...)
	return f
}

func (f genFile) content() string {
	if f.symlink != "" {
		return f.symlink
	}
	s := strings.Join(f.lines, "\n")
	if !f.noEOL {
		s += "\n"
	}
	if f.binary {
		s = "\x00bin\x00" + s
	}
	return s
}

type genState map[string]genFile

func (s genState) clone() genState {
	c := make(genState, len(s))
	for p, f := range s {
		c[p] = f.clone()
	}
	return c
}

func (s genState) paths() []string {
	ps := make([]string, 0, len(s))
	for p := range s {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// dirs of a state: every parent directory of a file.
func (s genState) dirs() map[string]bool {
	d := map[string]bool{}
	for p := range s {
		for dir := path.Dir(p); dir != "."; dir = path.Dir(dir) {
			d[dir] = true
		}
	}
	return d
}

type generator struct {
	rng *rand.Rand
	seq int
}

// line draws from a mix of unique-ish lines and frequent ones, so that
// diffs meet repeated lines as real code does.
func (g *generator) line() string {
	switch r := g.rng.Intn(10); {
	case r < 6:
		return fmt.Sprintf("line %d", g.rng.Intn(400))
	case r < 8:
		return []string{"}", "", "return nil", "\t}", "end"}[g.rng.Intn(5)]
	default:
		g.seq++
		return fmt.Sprintf("unique %d %d", g.seq, g.rng.Intn(1000))
	}
}

func (g *generator) newFile() genFile {
	n := 3 + g.rng.Intn(25)
	f := genFile{}
	for i := 0; i < n; i++ {
		f.lines = append(f.lines, g.line())
	}
	// A file always starts with a unique line so that unrelated files are
	// never similar enough to be taken for renames of each other.
	g.seq++
	f.lines[0] = fmt.Sprintf("file header %d %d", g.seq, g.rng.Int63())
	f.noEOL = g.rng.Intn(15) == 0
	f.exec = g.rng.Intn(8) == 0
	f.binary = g.rng.Intn(40) == 0
	return f
}

var genDirs = []string{"", "", "src", "src/pkg", "src/pkg/deep", "docs", "lib/a", "lib/b"}

func (g *generator) newPath(tag string) string {
	dir := genDirs[g.rng.Intn(len(genDirs))]
	g.seq++
	name := fmt.Sprintf("%s%d.txt", tag, g.seq)
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (g *generator) base() genState {
	s := genState{}
	n := 3 + g.rng.Intn(10)
	for i := 0; i < n; i++ {
		s[g.newPath("f")] = g.newFile()
	}
	if g.rng.Intn(10) == 0 {
		s[g.newPath("link")] = genFile{symlink: "target-" + fmt.Sprint(g.rng.Intn(3))}
	}
	return s
}

// editLines changes, inserts and deletes lines; the file keeps at least
// one line (git does not detect renames of empty files).
func (g *generator) editLines(f *genFile) {
	if f.symlink != "" {
		f.symlink = "target-" + fmt.Sprint(g.rng.Intn(5))
		return
	}
	edits := 1 + g.rng.Intn(4)
	for i := 0; i < edits; i++ {
		pos := g.rng.Intn(len(f.lines) + 1)
		switch g.rng.Intn(3) {
		case 0: // modify
			if pos < len(f.lines) {
				f.lines[pos] = g.line()
			}
		case 1: // insert
			ins := []string{}
			for k := 0; k <= g.rng.Intn(3); k++ {
				ins = append(ins, g.line())
			}
			f.lines = append(f.lines[:pos], append(ins, f.lines[pos:]...)...)
		case 2: // delete
			if len(f.lines) > 1 && pos < len(f.lines) {
				end := min(len(f.lines), pos+1+g.rng.Intn(3))
				if end-pos >= len(f.lines) {
					end = pos + 1
				}
				f.lines = append(f.lines[:pos], f.lines[end:]...)
			}
		}
	}
	if g.rng.Intn(20) == 0 {
		f.noEOL = !f.noEOL
	}
}

// side applies random operations to a copy of base. It returns the new
// state and the renames it made (source → target).
func (g *generator) side(base genState, name string, shared *rand.Rand) (genState, map[string]string) {
	s := base.clone()
	renames := map[string]string{}
	ops := 1 + g.rng.Intn(5)
	for i := 0; i < ops; i++ {
		paths := s.paths()
		if len(paths) == 0 {
			s[g.newPath("f")] = g.newFile()
			continue
		}
		p := paths[g.rng.Intn(len(paths))]
		switch op := g.rng.Intn(100); {
		case op < 40: // edit lines
			f := s[p]
			g.editLines(&f)
			s[p] = f
		case op < 50: // add a file
			np := g.newPath("n" + name)
			if g.rng.Intn(4) == 0 {
				// Same path on both sides: add/add, with the same or
				// different content.
				np = fmt.Sprintf("src/both%d.txt", shared.Intn(3))
				if _, ok := s[np]; ok {
					continue
				}
				f := genFile{lines: []string{"shared header", "a", "b", "c"}}
				if g.rng.Intn(2) == 0 {
					f.lines = append(f.lines, "from "+name)
				}
				s[np] = f
				continue
			}
			s[np] = g.newFile()
		case op < 62: // delete
			delete(s, p)
		case op < 72: // mode change
			f := s[p]
			if f.symlink == "" {
				f.exec = !f.exec
				s[p] = f
			}
		case op < 80: // move a whole directory, as a directory rename
			g.moveDir(s, renames)
		default: // rename, with or without edits
			f := s[p]
			var np string
			switch g.rng.Intn(3) {
			case 0: // a name both sides may pick: rename/rename(1to1)
				np = path.Join(path.Dir(p), "moved-"+path.Base(p))
			case 1: // same basename, another directory
				dir := genDirs[2+g.rng.Intn(len(genDirs)-2)]
				np = path.Join(dir, path.Base(p))
			default:
				np = strings.TrimSuffix(p, ".txt") + "-" + name + ".txt"
			}
			if _, ok := s[np]; ok || np == p {
				continue
			}
			if s.dirs()[np] {
				continue
			}
			if g.rng.Intn(2) == 0 {
				g.editLines(&f)
			}
			delete(s, p)
			s[np] = f
			recordRename(renames, p, np)
		}
	}
	return s, renames
}

// recordRename notes p → np, keeping the base path as the source.
func recordRename(renames map[string]string, p, np string) {
	src := p
	for k, v := range renames {
		if v == p {
			src = k
		}
	}
	renames[src] = np
}

// moveDir moves every file below one directory to another (existing,
// new, or the root), editing some of them on the way.
func (g *generator) moveDir(s genState, renames map[string]string) {
	dirs := make([]string, 0, 8)
	for d := range s.dirs() {
		dirs = append(dirs, d)
	}
	if len(dirs) == 0 {
		return
	}
	sort.Strings(dirs)
	dir := dirs[g.rng.Intn(len(dirs))]
	var to string
	switch g.rng.Intn(4) {
	case 0:
		to = genDirs[2+g.rng.Intn(len(genDirs)-2)]
	case 1:
		to = "moved/" + path.Base(dir)
	case 2:
		to = path.Join("new", dir)
	default:
		to = "" // the root
	}
	if to == dir || strings.HasPrefix(to+"/", dir+"/") {
		return
	}
	moves := map[string]string{}
	for _, p := range s.paths() {
		if rest, ok := strings.CutPrefix(p, dir+"/"); ok {
			moves[p] = path.Join(to, rest)
		}
	}
	// No target may take an existing file's place, or a file's as a
	// directory.
	dirsNow := s.dirs()
	for _, np := range moves {
		if _, ok := s[np]; ok || dirsNow[np] {
			return
		}
		for d := path.Dir(np); d != "."; d = path.Dir(d) {
			if _, ok := s[d]; ok {
				return
			}
		}
	}
	for _, p := range sortedKeys(moves) {
		f := s[p]
		if g.rng.Intn(4) == 0 {
			g.editLines(&f)
		}
		delete(s, p)
		s[moves[p]] = f
		recordRename(renames, p, moves[p])
	}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// dirRenamed tells whether a side removed a base directory entirely while
// renaming a file out of it: a scenario where git may detect a directory
// rename (the oracle counts them).
func dirRenamed(base, side genState, renames map[string]string) bool {
	sideDirs := side.dirs()
	for src, dst := range renames {
		d := path.Dir(src)
		if d != "." && !sideDirs[d] && path.Dir(dst) != d {
			return true
		}
	}
	return false
}

// fileDirClash tells whether a file path of one state is a directory in
// another; the generator's paths never do this, this is a safety net.
func fileDirClash(states ...genState) bool {
	dirs := map[string]bool{}
	for _, s := range states {
		for d := range s.dirs() {
			dirs[d] = true
		}
	}
	for _, s := range states {
		for p := range s {
			if dirs[p] {
				return true
			}
		}
	}
	return false
}

// fastImport writes the three states as commits main (base), ours and
// theirs (both children of main) in one git process, and returns their
// hashes.
func fastImport(t testing.TB, dir string, states ...genState) []string {
	t.Helper()
	var b strings.Builder
	names := []string{"main", "ours", "theirs"}
	for i, s := range states {
		fmt.Fprintf(&b, "commit refs/heads/%s\nmark :%d\ncommitter T <t@example.com> 1700000000 +0000\ndata %d\n%s\n", names[i], i+1, len(names[i]), names[i])
		if i > 0 {
			b.WriteString("from :1\n")
		}
		b.WriteString("deleteall\n")
		for _, p := range s.paths() {
			f := s[p]
			mode := "100644"
			switch {
			case f.symlink != "":
				mode = "120000"
			case f.exec:
				mode = "100755"
			}
			c := f.content()
			fmt.Fprintf(&b, "M %s inline %s\ndata %d\n%s\n", mode, p, len(c), c)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	cmd.Stdin = strings.NewReader(b.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	repo, err := git.PlainOpen(dir)
	require.NoError(t, err)
	hashes := make([]string, len(states))
	for i := range states {
		ref, err := repo.Reference(plumbing.NewBranchReferenceName(names[i]), true)
		require.NoError(t, err)
		hashes[i] = ref.Hash().String()
	}
	return hashes
}

func writeState(t testing.TB, dir string, s genState) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Name() != ".git" {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	for p, f := range s {
		full := filepath.Join(dir, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		if f.symlink != "" {
			require.NoError(t, os.Symlink(f.symlink, full))
			continue
		}
		mode := os.FileMode(0o644)
		if f.exec {
			mode = 0o755
		}
		require.NoError(t, os.WriteFile(full, []byte(f.content()), mode))
		require.NoError(t, os.Chmod(full, mode))
	}
}

// TestThreeWayMergeAgreesWithGit generates random merge scenarios on real
// repositories and checks ThreeWayMergeWith against git merge-tree: the same
// verdict always, the same tree for clean merges, the same conflicting
// paths otherwise.
func TestThreeWayMergeAgreesWithGit(t *testing.T) {
	requireGit(t)
	n := 520
	if testing.Short() {
		n = 100
	}
	// ORACLE_N=4000 runs a longer sweep (the same seeds, then more).
	if v, err := strconv.Atoi(os.Getenv("ORACLE_N")); err == nil {
		n = v
	}
	rng := rand.New(rand.NewSource(20240601))
	var mu sync.Mutex
	var clean, conflicted, renamesSeen, dirRenames, gitDirRenames int
	// Scenarios run in parallel subtests inside this group, so their
	// (I/O bound) git processes overlap; the counts are logged after all.
	t.Run("scenarios", func(t *testing.T) {
		for i := 0; i < n; i++ {
			seed := rng.Int63()
			g := &generator{rng: rand.New(rand.NewSource(seed))}
			base := g.base()
			shared := rand.New(rand.NewSource(seed + 1))
			ours, oursRen := g.side(base, "o", shared)
			theirs, theirsRen := g.side(base, "t", shared)
			if fileDirClash(base, ours, theirs) {
				i-- // regenerate: see fileDirClash
				continue
			}
			renamesSeen += len(oursRen) + len(theirsRen)
			if dirRenamed(base, ours, oursRen) || dirRenamed(base, theirs, theirsRen) {
				dirRenames++
			}
			t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				_, err := git.PlainInit(dir, false)
				require.NoError(t, err)
				hashes := fastImport(t, dir, base, ours, theirs)
				oursHash, theirsHash := hashes[1], hashes[2]

				wantTree, wantClean, wantConflicts, msgs := gitMergeTreeMessages(t, dir, "ours", "theirs")
				if strings.Contains(msgs, "CONFLICT (file location)") || strings.Contains(msgs, "dir rename") || strings.Contains(msgs, "directory rename") {
					mu.Lock()
					gitDirRenames++
					mu.Unlock()
				}

				repo, err := git.PlainOpen(dir)
				require.NoError(t, err)
				res, err := ThreeWayMergeWith(repo, plumbing.NewHash(oursHash), plumbing.NewHash(theirsHash), MergeOptions{})
				require.NoError(t, err)
				require.Equal(t, wantClean, res.Clean, "verdict; git conflicts %v, ours %v", wantConflicts, res.Conflicts)
				mu.Lock()
				defer mu.Unlock()
				if wantClean {
					assert.Equal(t, wantTree, res.Tree.String(), "tree of a clean merge")
					clean++
				} else {
					assert.ElementsMatch(t, wantConflicts, res.Conflicts, "conflicting paths")
					conflicted++
				}
			})
		}
	})
	require.Equal(t, n, clean+conflicted, "every scenario must have run to a verdict")
	t.Logf("oracle: %d scenarios, %d clean, %d conflicted, %d generated renames, %d with a directory moved away, %d where git reports a directory rename",
		n, clean, conflicted, renamesSeen, dirRenames, gitDirRenames)
}
