package server

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSpentTokensFile is the spent job-token store's name, next to the
// credentials file.
const DefaultSpentTokensFile = "bazinga-spent-tokens"

// spentFile keeps the spent job tokens (their issuer and jti, hashed) on
// disk until they expire, so a job token exchanged once buys nothing after
// a restart either. One line per token, "<exp unix> <sha256 hex>",
// appended and synced before the App token is asked for; rewritten without
// the expired lines at start and whenever it has grown to twice what is
// live.
type spentFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	live map[string]time.Time // hash → exp
	// lines is the number of lines in the file.
	lines int
}

// spentKey is what the store keeps of a token: no jti in clear.
func spentKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// openSpentFile reads path (creating it, mode 0600), drops what expired
// before now, and returns the store with the live entries.
func openSpentFile(path string, now time.Time) (*spentFile, error) {
	s := &spentFile{path: path, live: map[string]time.Time{}}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("spent tokens %s: %w", path, err)
	}
	text := string(b)
	if i := strings.LastIndexByte(text, '\n'); i != len(text)-1 {
		// A torn last line (a crash mid-append): that exchange never got
		// its App token, since the line is synced before it is asked for.
		text = text[:i+1]
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		exp, hash, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		sec, err := strconv.ParseInt(exp, 10, 64)
		if !ok || err != nil || len(hash) != sha256.Size*2 {
			return nil, fmt.Errorf("spent tokens %s:%d: not \"<exp> <sha256>\"", path, n)
		}
		if t := time.Unix(sec, 0); t.After(now) {
			s.live[hash] = t
		}
	}
	if err := s.rewrite(); err != nil {
		return nil, err
	}
	return s, nil
}

// rewrite replaces the file with the live entries (temp file and rename)
// and reopens it for appending. Caller holds s.mu or owns s.
func (s *spentFile) rewrite() error {
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".bazinga-spent-*")
	if err != nil {
		return fmt.Errorf("spent tokens: %w", err)
	}
	w := bufio.NewWriter(tmp)
	for h, t := range s.live {
		fmt.Fprintf(w, "%d %s\n", t.Unix(), h)
	}
	err = w.Flush()
	if err == nil {
		err = tmp.Chmod(0o600)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("spent tokens %s: %w", s.path, err)
	}
	if s.f != nil {
		_ = s.f.Close()
	}
	s.f, err = os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("spent tokens %s: %w", s.path, err)
	}
	s.lines = len(s.live)
	return nil
}

// spent reports whether key was recorded and has not expired at now.
func (s *spentFile) spent(key string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.live[spentKey(key)]
	return ok && t.After(now)
}

// add records key until exp, on disk before it returns.
func (s *spentFile) add(key string, exp, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := spentKey(key)
	if _, err := fmt.Fprintf(s.f, "%d %s\n", exp.Unix(), h); err != nil {
		return fmt.Errorf("spent tokens %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("spent tokens %s: %w", s.path, err)
	}
	s.live[h] = exp
	s.lines++
	if s.lines > 2*len(s.live)+1000 {
		for k, t := range s.live {
			if !t.After(now) {
				delete(s.live, k)
			}
		}
		if err := s.rewrite(); err != nil {
			return err
		}
	}
	return nil
}

func (s *spentFile) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}
