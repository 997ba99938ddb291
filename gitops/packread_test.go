package gitops

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPackReaderReadsEveryObject repacks a repository whose files change
// a little in every commit (so most objects are deltas, chained deep) and
// checks that every object read back hashes to its name, with git's type
// and size.
func TestPackReaderReadsEveryObject(t *testing.T) {
	requireGit(t)
	dir := initRepo(t)
	// One fast-import run builds the history: far quicker than a git
	// process per commit.
	var stream strings.Builder
	for rev := 0; rev < 30; rev++ {
		fmt.Fprintf(&stream, "commit refs/heads/main\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata 4\nrev\n", rev+1, 1700000000+rev)
		if rev > 0 {
			fmt.Fprintf(&stream, "from :%d\n", rev)
		}
		for f := 0; f < 5; f++ {
			var b strings.Builder
			for l := 0; l < 200; l++ {
				if l == (rev*7+f)%200 {
					fmt.Fprintf(&b, "file %d rev %d\n", f, rev)
					continue
				}
				fmt.Fprintf(&b, "file %d line %d\n", f, l)
			}
			fmt.Fprintf(&stream, "M 100644 inline d%d/f%d.txt\ndata %d\n%s\n", f%2, f, b.Len(), b.String())
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Env = gitEnv(dir)
	cmd.Stdin = strings.NewReader(stream.String())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "fast-import: %s", out)
	runGit(t, dir, "reset", "-q", "--hard", "main")
	runGit(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
	// A second pack with one more commit, and a loose object, which the
	// reader must leave to go-git.
	writeFiles(t, dir, map[string]string{"late.txt": "late\n"})
	commitAll(t, dir, "late")
	runGit(t, dir, "repack", "-dq")
	loose := hashObject(t, dir, "only loose\n")

	r, err := openPackReader(osfs.New(filepath.Join(dir, ".git")))
	require.NoError(t, err)
	require.NotNil(t, r)
	defer r.Close()
	require.Len(t, r.packs, 2)

	out = []byte(runGit(t, dir, "cat-file", "--batch-all-objects", "--batch-check"))
	n, deltas := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l) // hash type size
		h := plumbing.NewHash(f[0])
		if f[0] == loose {
			_, ok, err := r.object(h)
			require.NoError(t, err)
			assert.False(t, ok, "a loose object is not in a pack")
			continue
		}
		obj, ok, err := r.object(h)
		require.NoError(t, err, f[0])
		require.True(t, ok, f[0])
		assert.Equal(t, f[1], obj.Type().String(), f[0])
		assert.Equal(t, f[2], fmt.Sprint(obj.Size()), f[0])
		assert.Equal(t, h, plumbing.ComputeHash(obj.Type(), obj.data), "content of %s", f[0])
		size, ok, err := r.size(h)
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, obj.Size(), size)
		pos, _ := r.locate(h)
		if typ, _, _, _, err := r.header(pos); err == nil && (typ == plumbing.OFSDeltaObject || typ == plumbing.REFDeltaObject) {
			deltas++
		}
		n++
	}
	assert.Greater(t, n, 150)
	assert.Greater(t, deltas, 50, "the pack must hold deltas for the test to mean anything")
}

// TestPackReaderBadIndex: a damaged index is an error naming the file,
// never a panic; the merge then reads through go-git.
func TestPackReaderBadIndex(t *testing.T) {
	dir := t.TempDir()
	pack := filepath.Join(dir, "objects", "pack")
	require.NoError(t, os.MkdirAll(pack, 0o755))
	for name, content := range map[string]string{
		"pack-a.idx":  "not an index",
		"pack-a.pack": "PACK",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(pack, name), []byte(content), 0o644))
	}
	_, err := openPackReader(osfs.New(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "pack-a.idx")

	truncated := append([]byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}, make([]byte, 256*4)...)
	truncated[8+255*4+3] = 9 // claims 9 objects, holds none
	require.NoError(t, os.WriteFile(filepath.Join(pack, "pack-a.idx"), append(truncated, make([]byte, 40)...), 0o644))
	_, err = openPackReader(osfs.New(dir))
	require.ErrorContains(t, err, "truncated")

	r, err := openPackReader(osfs.New(t.TempDir()))
	require.NoError(t, err)
	assert.Nil(t, r, "no packs: nothing to read")
}

// TestApplyDeltaRejectsBadDeltas checks the delta decoder's bounds.
func TestApplyDeltaRejectsBadDeltas(t *testing.T) {
	base := []byte("hello world")
	for name, delta := range map[string][]byte{
		"empty":               {},
		"wrong base size":     {5, 5, 0x91, 0, 5},
		"copy past the base":  {11, 5, 0x91, 8, 5},
		"insert past the end": {11, 2, 3, 'a', 'b', 'c'},
		"reserved opcode":     {11, 1, 0},
		"short result":        {11, 6, 0x91, 0, 5},
		"truncated copy":      {11, 5, 0x91},
	} {
		_, err := applyDelta(base, delta)
		assert.Error(t, err, name)
	}
	out, err := applyDelta(base, []byte{11, 8, 0x91, 6, 5, 3, '!', '!', '!'})
	require.NoError(t, err)
	assert.Equal(t, "world!!!", string(out))
}

// TestPackReaderCorruptPack: a damaged object header is an error naming
// the pack, not a panic or a huge allocation.
func TestPackReaderCorruptPack(t *testing.T) {
	requireGit(t)
	dir := initRepo(t)
	content := strings.Repeat("content\n", 100)
	writeFiles(t, dir, map[string]string{"f.txt": content})
	commitAll(t, dir, "one")
	blob := hashObject(t, dir, content)
	runGit(t, dir, "repack", "-adq")
	packs, err := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	require.NoError(t, err)
	require.Len(t, packs, 1)
	data, err := os.ReadFile(packs[0])
	require.NoError(t, err)
	// Make the blob's header claim an enormous size.
	r0, err := openPackReader(osfs.New(filepath.Join(dir, ".git")))
	require.NoError(t, err)
	pos, ok := r0.locate(plumbing.NewHash(blob))
	r0.Close()
	require.True(t, ok)
	copy(data[pos.off:], []byte{0xbf, 0xff, 0xff, 0xff, 0xff, 0x7f})
	require.NoError(t, os.Chmod(packs[0], 0o644))
	require.NoError(t, os.WriteFile(packs[0], data, 0o644))

	r, err := openPackReader(osfs.New(filepath.Join(dir, ".git")))
	require.NoError(t, err)
	defer r.Close()
	_, ok, err = r.object(plumbing.NewHash(blob))
	assert.True(t, ok)
	require.Error(t, err)
	assert.Contains(t, err.Error(), ".idx")
}
