package gitops

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// finalEntry is what one path holds after the merge.
type finalEntry struct {
	result   *entry
	content  []byte
	conflict bool
}

// finish places every merged path, moves files out of the way of
// directories and of entries of a different type (path~label, as git
// does), and writes the tree when the merge is clean — or always, for a
// virtual merge base, whose conflicts stay in it as git leaves them.
func (m *treeMerger) finish(virtualBase bool) (*MergeResult, error) {
	final := make(map[string]*finalEntry, len(m.infos))
	conflicts := map[string]bool{}
	for _, p := range m.extras {
		conflicts[p] = true
	}
	paths := make([]string, 0, len(m.infos))
	for p := range m.infos {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	exists := func(p string) bool {
		if _, ok := final[p]; ok {
			return true
		}
		if _, ok := m.infos[p]; ok {
			return true
		}
		for _, t := range m.trees {
			e, isDir, err := m.r.lookup(t, p)
			if err == nil && (e != nil || isDir) {
				return true
			}
		}
		return false
	}
	unique := func(p, label string) string {
		candidate := p + "~" + strings.ReplaceAll(label, "/", "_")
		base := candidate
		for i := 0; exists(candidate); i++ {
			candidate = fmt.Sprintf("%s_%d", base, i)
		}
		return candidate
	}
	for _, p := range paths {
		pi := m.infos[p]
		o, t := pi.stages[1], pi.stages[2]
		if !pi.resolved && o != nil && t != nil && !o.same(t) && kind(o.Mode) != kind(t.Mode) &&
			!pi.stages[0].same(o) && !pi.stages[0].same(t) {
			// Distinct types: a regular file moves aside; if neither is
			// a regular file, both do.
			renameOurs, renameTheirs := isRegular(o.Mode), false
			if !renameOurs {
				renameTheirs = isRegular(t.Mode)
				if !renameTheirs {
					renameOurs, renameTheirs = true, true
				}
			}
			op, tp := p, p
			if renameOurs {
				op = unique(p, m.opts.OursLabel)
			}
			if renameTheirs {
				tp = unique(p, m.opts.TheirsLabel)
			}
			final[op] = &finalEntry{result: o, conflict: true}
			final[tp] = &finalEntry{result: t, conflict: true}
			conflicts[op], conflicts[tp] = true, true
			if op != p && tp != p {
				final[p] = &finalEntry{}
			}
			continue
		}
		final[p] = &finalEntry{result: pi.result, content: pi.content, conflict: !pi.clean}
	}
	// Directory/file clashes.
	for _, p := range paths {
		fe := final[p]
		if fe == nil || fe.result == nil {
			continue
		}
		nonEmpty, err := m.dirSurvives(p, final)
		if err != nil {
			return nil, err
		}
		if !nonEmpty {
			continue
		}
		label := m.opts.OursLabel
		if _, isDir, _ := m.r.lookup(m.trees[1], p); isDir {
			label = m.opts.TheirsLabel
		}
		np := unique(p, label)
		final[np] = &finalEntry{result: fe.result, content: fe.content, conflict: true}
		final[p] = &finalEntry{}
	}
	res := &MergeResult{Clean: true}
	all := make([]string, 0, len(final))
	for p := range final {
		all = append(all, p)
	}
	sort.Strings(all)
	for _, p := range all {
		fe := final[p]
		if fe.conflict {
			conflicts[p] = true
		}
		oe, _, err := m.r.lookup(m.trees[1], p)
		if err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if fe.content == nil && oe.same(fe.result) && !conflicts[p] {
			continue
		}
		mf := MergedFile{Path: p, Conflict: conflicts[p]}
		if fe.result != nil {
			mf.Mode, mf.Hash, mf.Content = fe.result.Mode, fe.result.Hash, fe.content
		}
		res.Files = append(res.Files, mf)
	}
	for p := range conflicts {
		res.Conflicts = append(res.Conflicts, p)
	}
	sort.Strings(res.Conflicts)
	if len(res.Conflicts) > 0 || m.unclean {
		res.Clean = false
		if !virtualBase {
			return res, nil
		}
	}
	tree, err := m.writeTree(res.Files)
	if err != nil {
		return nil, err
	}
	res.Tree = tree
	return res, nil
}

// dirSurvives tells whether the merged result keeps anything under p/.
func (m *treeMerger) dirSurvives(p string, final map[string]*finalEntry) (bool, error) {
	prefix := p + "/"
	for q, fe := range final {
		if strings.HasPrefix(q, prefix) && fe.result != nil {
			return true, nil
		}
	}
	// Untouched files under p in ours survive.
	_, isDir, err := m.r.lookup(m.trees[1], p)
	if err != nil || !isDir {
		return false, err
	}
	found := false
	err = m.walkFiles(m.trees[1], p, func(q string) bool {
		if _, touched := final[q]; !touched {
			found = true
			return false
		}
		return true
	})
	return found, err
}

// walkFiles calls fn for every file below directory dir of tree root
// until fn returns false.
func (m *treeMerger) walkFiles(root plumbing.Hash, dir string, fn func(string) bool) error {
	h := root
	for _, part := range strings.Split(dir, "/") {
		t, err := m.r.tree(h)
		if err != nil {
			return err
		}
		e, err := t.FindEntry(part)
		if err != nil {
			return nil
		}
		h = e.Hash
	}
	var walk func(h plumbing.Hash, prefix string) (bool, error)
	walk = func(h plumbing.Hash, prefix string) (bool, error) {
		t, err := m.r.tree(h)
		if err != nil {
			return false, err
		}
		for _, e := range t.Entries {
			if e.Mode == filemode.Dir {
				cont, err := walk(e.Hash, prefix+e.Name+"/")
				if err != nil || !cont {
					return cont, err
				}
				continue
			}
			if !fn(prefix + e.Name) {
				return false, nil
			}
		}
		return true, nil
	}
	_, err := walk(h, dir+"/")
	return err
}

// buildNode is a directory being rewritten.
type buildNode struct {
	entries map[string]object.TreeEntry
	subs    map[string]*buildNode
	dirty   bool
}

// writeTree applies files to ours' tree and writes the changed trees,
// reusing every untouched subtree.
func (m *treeMerger) writeTree(files []MergedFile) (plumbing.Hash, error) {
	root := &buildNode{}
	if err := m.loadNode(root, m.trees[1]); err != nil {
		return plumbing.ZeroHash, err
	}
	// Removals first, so that a directory can replace a file and back.
	for pass := 0; pass < 2; pass++ {
		for _, f := range files {
			if (pass == 0) != (f.Mode == 0) {
				continue
			}
			h := f.Hash
			if f.Mode != 0 && f.Content != nil {
				var err error
				if h, err = m.writeBlob(f.Content); err != nil {
					return plumbing.ZeroHash, err
				}
			}
			if err := m.setPath(root, strings.Split(f.Path, "/"), f.Mode, h); err != nil {
				return plumbing.ZeroHash, err
			}
		}
	}
	h, _, err := m.storeNode(root)
	return h, err
}

func (m *treeMerger) loadNode(n *buildNode, h plumbing.Hash) error {
	n.entries = map[string]object.TreeEntry{}
	n.subs = map[string]*buildNode{}
	if h.IsZero() {
		return nil
	}
	t, err := m.r.tree(h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		n.entries[e.Name] = e
	}
	return nil
}

func (m *treeMerger) setPath(n *buildNode, parts []string, mode filemode.FileMode, h plumbing.Hash) error {
	n.dirty = true
	name := parts[0]
	if len(parts) == 1 {
		if mode == 0 {
			delete(n.entries, name)
			delete(n.subs, name)
			return nil
		}
		delete(n.subs, name)
		n.entries[name] = object.TreeEntry{Name: name, Mode: mode, Hash: h}
		return nil
	}
	sub, ok := n.subs[name]
	if !ok {
		sub = &buildNode{}
		var subHash plumbing.Hash
		if e, ok := n.entries[name]; ok && e.Mode == filemode.Dir {
			subHash = e.Hash
		} else if mode == 0 {
			return nil // removing below a directory that is not there
		}
		if err := m.loadNode(sub, subHash); err != nil {
			return err
		}
		n.subs[name] = sub
		n.entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir}
	}
	return m.setPath(sub, parts[1:], mode, h)
}

// storeNode writes n and its dirty subtrees; empty trees vanish.
func (m *treeMerger) storeNode(n *buildNode) (plumbing.Hash, int, error) {
	for name, sub := range n.subs {
		h, count, err := m.storeNode(sub)
		if err != nil {
			return plumbing.ZeroHash, 0, err
		}
		if count == 0 {
			delete(n.entries, name)
			continue
		}
		n.entries[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}
	entries := make([]object.TreeEntry, 0, len(n.entries))
	for _, e := range n.entries {
		entries = append(entries, e)
	}
	sort.Slice(entries, func(i, j int) bool { return treeEntryLess(entries[i], entries[j]) })
	t := &object.Tree{Entries: entries}
	obj := &plumbing.MemoryObject{}
	if err := t.Encode(obj); err != nil {
		return plumbing.ZeroHash, 0, fmt.Errorf("merge: encoding tree: %w", err)
	}
	h, err := m.store(obj)
	if err != nil {
		return plumbing.ZeroHash, 0, fmt.Errorf("merge: writing tree: %w", err)
	}
	return h, len(entries), nil
}

// treeEntryLess is git's tree order: directories sort as if their name
// ended in '/'.
func treeEntryLess(a, b object.TreeEntry) bool {
	an, bn := a.Name, b.Name
	if a.Mode == filemode.Dir {
		an += "/"
	}
	if b.Mode == filemode.Dir {
		bn += "/"
	}
	return an < bn
}

func (m *treeMerger) writeBlob(data []byte) (plumbing.Hash, error) {
	obj := &plumbing.MemoryObject{}
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("merge: writing blob: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return plumbing.ZeroHash, fmt.Errorf("merge: writing blob: %w", err)
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("merge: writing blob: %w", err)
	}
	h, err := m.store(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("merge: writing blob: %w", err)
	}
	return h, nil
}

// store writes an object unless the store already has it, as git does;
// writing a loose object is by far the most expensive step of a merge.
func (m *treeMerger) store(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	h := obj.Hash()
	if m.r.s.HasEncodedObject(h) == nil {
		return h, nil
	}
	return m.r.s.SetEncodedObject(obj)
}
