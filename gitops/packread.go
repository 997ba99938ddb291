package gitops

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// A read-only reader of a repository's pack files, for merges.
//
// Why not go-git's own: opened the ordinary way, go-git reopens the pack
// file for every object, builds a map of every object's offset the first
// time it resolves a delta (tens of milliseconds on a large repository,
// every time a repository is opened), and hashes each object it caches.
// A merge of a deep history reads hundreds to thousands of commits and
// then trees and blobs, so those costs made it many times slower than
// git. This reader searches the .idx files in place (they are sorted),
// keeps the packs open for the merge and reads them in cached windows,
// inflates with one reused zlib reader, resolves deltas with a small
// cache of bases, and hands out objects whose hash is already known. Anything it cannot find (loose
// objects, alternates) is read through go-git.

// packObjectCacheBytes bounds the cache of resolved objects (delta bases).
const packObjectCacheBytes = 32 << 20

// maxDeltaDepth guards against a corrupt pack whose deltas form a cycle.
const maxDeltaDepth = 10000

type packIndex struct {
	name     string
	fanout   [256]uint32
	hashes   []byte // n * 20, sorted
	offsets  []byte // n * 4
	large    []byte // 8 per large offset
	pack     billy.File
	packSize int64
	windows  packWindows
}

// packReader reads objects from every pack of one repository.
type packReader struct {
	packs []*packIndex
	zr    io.ReadCloser // reused zlib reader
	br    *packStream
	cache map[packPos]*packedObject
	order []packPos // cache insertion order, for eviction
	bytes int
}

type packPos struct {
	pack int
	off  int64
}

// openPackReader indexes the packs below fs (a .git directory). It
// returns nil and no error when there is nothing it can read.
func openPackReader(fs billy.Filesystem) (*packReader, error) {
	dir := path.Join("objects", "pack")
	infos, err := fs.ReadDir(dir)
	if err != nil {
		return nil, nil // no pack directory: everything is loose
	}
	r := &packReader{cache: map[packPos]*packedObject{}, br: &packStream{}}
	var names []string
	for _, fi := range infos {
		if strings.HasSuffix(fi.Name(), ".idx") {
			names = append(names, fi.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		base := strings.TrimSuffix(n, ".idx")
		idx, err := readPackIndex(fs, path.Join(dir, n))
		if err != nil {
			r.Close()
			return nil, err
		}
		f, err := fs.Open(path.Join(dir, base+".pack"))
		if err != nil {
			continue // an index without its pack is being written or removed
		}
		st, err := fs.Stat(path.Join(dir, base+".pack"))
		if err != nil {
			f.Close()
			continue
		}
		idx.pack, idx.packSize = f, st.Size()
		r.packs = append(r.packs, idx)
	}
	if len(r.packs) == 0 {
		return nil, nil
	}
	return r, nil
}

func readPackIndex(fs billy.Filesystem, name string) (*packIndex, error) {
	st, err := fs.Stat(name)
	if err != nil {
		return nil, fmt.Errorf("pack index %s: %w", name, err)
	}
	f, err := fs.Open(name)
	if err != nil {
		return nil, fmt.Errorf("pack index %s: %w", name, err)
	}
	// Read in one piece: an index of a large repository is megabytes.
	data := make([]byte, st.Size())
	_, err = io.ReadFull(f, data)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("pack index %s: %w", name, err)
	}
	bad := func(why string) error { return fmt.Errorf("pack index %s: %s", name, why) }
	if len(data) < 8+256*4+40 || !bytes.Equal(data[:4], []byte{0xff, 't', 'O', 'c'}) || binary.BigEndian.Uint32(data[4:]) != 2 {
		return nil, bad("not a version 2 index")
	}
	idx := &packIndex{name: name}
	for i := range idx.fanout {
		idx.fanout[i] = binary.BigEndian.Uint32(data[8+4*i:])
	}
	n := int(idx.fanout[255])
	p := 8 + 256*4
	if len(data) < p+n*(20+4+4)+40 {
		return nil, bad("truncated")
	}
	idx.hashes = data[p : p+n*20]
	p += n * 20
	p += n * 4 // CRCs
	idx.offsets = data[p : p+n*4]
	p += n * 4
	idx.large = data[p : len(data)-40]
	return idx, nil
}

// find returns the offset of h in this pack.
func (x *packIndex) find(h plumbing.Hash) (int64, bool) {
	lo := 0
	if h[0] > 0 {
		lo = int(x.fanout[h[0]-1])
	}
	hi := int(x.fanout[h[0]])
	for lo < hi {
		mid := (lo + hi) / 2
		switch c := bytes.Compare(x.hashes[mid*20:mid*20+20], h[:]); {
		case c == 0:
			v := binary.BigEndian.Uint32(x.offsets[mid*4:])
			if v&0x80000000 == 0 {
				return int64(v), true
			}
			k := int(v&0x7fffffff) * 8
			if k+8 > len(x.large) {
				return 0, false
			}
			return int64(binary.BigEndian.Uint64(x.large[k:])), true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false
}

func (r *packReader) locate(h plumbing.Hash) (packPos, bool) {
	for i, p := range r.packs {
		if off, ok := p.find(h); ok {
			return packPos{pack: i, off: off}, true
		}
	}
	return packPos{}, false
}

// Close releases the pack files.
func (r *packReader) Close() {
	if r == nil {
		return
	}
	for _, p := range r.packs {
		if p.pack != nil {
			p.pack.Close()
		}
	}
	r.packs = nil
}

// object reads object h, or returns ok=false when no pack has it.
func (r *packReader) object(h plumbing.Hash) (*packedObject, bool, error) {
	pos, ok := r.locate(h)
	if !ok {
		return nil, false, nil
	}
	o, err := r.at(pos, 0)
	if err != nil {
		return nil, true, fmt.Errorf("reading %s from %s: %w", h, r.packs[pos.pack].name, err)
	}
	return &packedObject{h: h, t: o.t, data: o.data}, true, nil
}

// header reads the object header at pos: type, size, and for deltas the
// base (an offset in the same pack, or a hash).
func (r *packReader) header(pos packPos) (t plumbing.ObjectType, size int64, base packPos, baseHash plumbing.Hash, err error) {
	p := r.packs[pos.pack]
	if pos.off < 12 || pos.off >= p.packSize {
		return 0, 0, base, baseHash, fmt.Errorf("offset %d outside the pack", pos.off)
	}
	r.br.reset(p, pos.off)
	c, err := r.br.ReadByte()
	if err != nil {
		return 0, 0, base, baseHash, err
	}
	t = plumbing.ObjectType((c >> 4) & 7)
	size = int64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if c, err = r.br.ReadByte(); err != nil {
			return 0, 0, base, baseHash, err
		}
		if shift > 56 {
			return 0, 0, base, baseHash, errors.New("object size overflows")
		}
		size |= int64(c&0x7f) << shift
	}
	switch t {
	case plumbing.OFSDeltaObject:
		if c, err = r.br.ReadByte(); err != nil {
			return 0, 0, base, baseHash, err
		}
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if c, err = r.br.ReadByte(); err != nil {
				return 0, 0, base, baseHash, err
			}
			rel = ((rel + 1) << 7) | int64(c&0x7f)
		}
		if rel <= 0 || rel > pos.off {
			return 0, 0, base, baseHash, fmt.Errorf("delta base offset %d out of range", rel)
		}
		base = packPos{pack: pos.pack, off: pos.off - rel}
	case plumbing.REFDeltaObject:
		if _, err = io.ReadFull(r.br, baseHash[:]); err != nil {
			return 0, 0, base, baseHash, err
		}
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		return 0, 0, base, baseHash, fmt.Errorf("unknown object type %d", t)
	}
	return t, size, base, baseHash, nil
}

// inflate reads size bytes of zlib data from the reader's current place.
func (r *packReader) inflate(size int64) ([]byte, error) {
	var err error
	if r.zr == nil {
		r.zr, err = zlib.NewReader(r.br)
	} else {
		err = r.zr.(zlib.Resetter).Reset(r.br, nil)
	}
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(r.zr, out); err != nil {
		return nil, fmt.Errorf("inflating: %w", err)
	}
	return out, nil
}

type resolved struct {
	t    plumbing.ObjectType
	data []byte
}

// at reads and resolves the object at pos.
func (r *packReader) at(pos packPos, depth int) (resolved, error) {
	if o, ok := r.cache[pos]; ok {
		return resolved{t: o.t, data: o.data}, nil
	}
	if depth > maxDeltaDepth {
		return resolved{}, errors.New("delta chain too deep")
	}
	t, size, base, baseHash, err := r.header(pos)
	if err != nil {
		return resolved{}, err
	}
	// Deflate expands at most 1032:1; a larger claimed size is a corrupt
	// pack, not a reason to allocate it.
	if rest := r.packs[pos.pack].packSize - pos.off; size > rest*1032+64 {
		return resolved{}, fmt.Errorf("object at %d claims %d bytes", pos.off, size)
	}
	data, err := r.inflate(size)
	if err != nil {
		return resolved{}, err
	}
	if t == plumbing.OFSDeltaObject || t == plumbing.REFDeltaObject {
		if t == plumbing.REFDeltaObject {
			var ok bool
			if base, ok = r.locate(baseHash); !ok {
				return resolved{}, fmt.Errorf("delta base %s not in any pack", baseHash)
			}
		}
		b, err := r.at(base, depth+1)
		if err != nil {
			return resolved{}, err
		}
		out, err := applyDelta(b.data, data)
		if err != nil {
			return resolved{}, err
		}
		t, data = b.t, out
	}
	if t != plumbing.CommitObject {
		// Commits are seldom delta bases, and the merge keeps what it
		// needs of them; trees and blobs often are.
		r.remember(pos, resolved{t: t, data: data})
	}
	return resolved{t: t, data: data}, nil
}

func (r *packReader) remember(pos packPos, o resolved) {
	if len(o.data) > packObjectCacheBytes/8 {
		return
	}
	for r.bytes+len(o.data) > packObjectCacheBytes && len(r.order) > 0 {
		old := r.order[0]
		r.order = r.order[1:]
		if c, ok := r.cache[old]; ok {
			r.bytes -= len(c.data)
			delete(r.cache, old)
		}
	}
	r.cache[pos] = &packedObject{t: o.t, data: o.data}
	r.order = append(r.order, pos)
	r.bytes += len(o.data)
}

// size returns the size of object h without resolving it when it is not
// a delta; ok=false when no pack has it.
func (r *packReader) size(h plumbing.Hash) (int64, bool, error) {
	pos, ok := r.locate(h)
	if !ok {
		return 0, false, nil
	}
	t, size, _, _, err := r.header(pos)
	if err != nil {
		return 0, true, err
	}
	if t != plumbing.OFSDeltaObject && t != plumbing.REFDeltaObject {
		return size, true, nil
	}
	o, err := r.at(pos, 0)
	if err != nil {
		return 0, true, err
	}
	return int64(len(o.data)), true, nil
}

// deltaVarint reads a size from a delta's header.
func deltaVarint(d []byte) (int, []byte, error) {
	v, shift := 0, 0
	for i, c := range d {
		v |= int(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, d[i+1:], nil
		}
		if shift += 7; shift > 56 {
			break
		}
	}
	return 0, nil, errors.New("malformed delta header")
}

// applyDelta rebuilds an object from its base and a git delta.
func applyDelta(base, delta []byte) ([]byte, error) {
	srcSize, d, err := deltaVarint(delta)
	if err != nil {
		return nil, err
	}
	dstSize, d, err := deltaVarint(d)
	if err != nil {
		return nil, err
	}
	if srcSize != len(base) {
		return nil, fmt.Errorf("delta expects a base of %d bytes, got %d", srcSize, len(base))
	}
	out := make([]byte, 0, dstSize)
	for len(d) > 0 {
		op := d[0]
		d = d[1:]
		switch {
		case op&0x80 != 0:
			var off, n int
			for i := 0; i < 4; i++ {
				if op&(1<<i) != 0 {
					if len(d) == 0 {
						return nil, errors.New("truncated delta")
					}
					off |= int(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			for i := 0; i < 3; i++ {
				if op&(0x10<<i) != 0 {
					if len(d) == 0 {
						return nil, errors.New("truncated delta")
					}
					n |= int(d[0]) << (8 * i)
					d = d[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > len(base) || len(out)+n > dstSize {
				return nil, errors.New("delta copies out of range")
			}
			out = append(out, base[off:off+n]...)
		case op != 0:
			n := int(op)
			if n > len(d) || len(out)+n > dstSize {
				return nil, errors.New("delta inserts out of range")
			}
			out = append(out, d[:n]...)
			d = d[n:]
		default:
			return nil, errors.New("reserved delta opcode")
		}
	}
	if len(out) != dstSize {
		return nil, fmt.Errorf("delta produced %d bytes, expected %d", len(out), dstSize)
	}
	return out, nil
}

// packedObject is a resolved object whose hash is known, so go-git's
// decoders do not hash it again.
type packedObject struct {
	h    plumbing.Hash
	t    plumbing.ObjectType
	data []byte
}

func (o *packedObject) Hash() plumbing.Hash           { return o.h }
func (o *packedObject) Type() plumbing.ObjectType     { return o.t }
func (o *packedObject) SetType(t plumbing.ObjectType) { o.t = t }
func (o *packedObject) Size() int64                   { return int64(len(o.data)) }
func (o *packedObject) SetSize(int64)                 {}
func (o *packedObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.data)), nil
}
func (o *packedObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("packed objects are read-only")
}

// Pack data is read in fixed windows that stay cached for the merge, as
// git maps its packs: the commits of a history walk sit next to each
// other in a pack, so one read serves many of them, where a read per
// object made system calls a large share of a deep merge.
const (
	packWindowSize = 64 << 10
	packMaxWindows = 128 // per pack: 8 MiB
)

type packWindows struct {
	wins  map[int64][]byte
	order []int64
}

// window returns the cached window number i of pack p.
func (p *packIndex) window(i int64) ([]byte, error) {
	w := &p.windows
	if b, ok := w.wins[i]; ok {
		return b, nil
	}
	if w.wins == nil {
		w.wins = map[int64][]byte{}
	}
	start := i * packWindowSize
	n := min(int64(packWindowSize), p.packSize-start)
	if n <= 0 {
		return nil, io.ErrUnexpectedEOF
	}
	b := make([]byte, n)
	if k, err := p.pack.ReadAt(b, start); k < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading %s: %w", p.name, err)
	}
	if len(w.order) >= packMaxWindows {
		delete(w.wins, w.order[0])
		w.order = w.order[1:]
	}
	w.wins[i] = b
	w.order = append(w.order, i)
	return b, nil
}

// packStream reads a pack from an offset on, through its windows. It is
// an io.ByteReader, so the inflater reads it without another buffer.
type packStream struct {
	p   *packIndex
	off int64  // offset of cur[0]
	cur []byte // rest of the current window
}

func (s *packStream) reset(p *packIndex, off int64) {
	s.p, s.off, s.cur = p, off, nil
}

func (s *packStream) fill() error {
	if len(s.cur) > 0 {
		return nil
	}
	if s.off >= s.p.packSize {
		return io.EOF
	}
	b, err := s.p.window(s.off / packWindowSize)
	if err != nil {
		return err
	}
	s.cur = b[s.off%packWindowSize:]
	return nil
}

func (s *packStream) ReadByte() (byte, error) {
	if err := s.fill(); err != nil {
		return 0, err
	}
	c := s.cur[0]
	s.cur = s.cur[1:]
	s.off++
	return c, nil
}

func (s *packStream) Read(b []byte) (int, error) {
	if err := s.fill(); err != nil {
		return 0, err
	}
	n := copy(b, s.cur)
	s.cur = s.cur[n:]
	s.off += int64(n)
	return n, nil
}
