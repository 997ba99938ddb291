package local

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/bazinga-bot/bazinga/gitops"
	"github.com/bazinga-bot/bazinga/pipeline"
)

// A session lives in <repo>/.bazinga/sessions/<id>/:
//
//	state.json    the session after the last reconcile, and the log entry it includes
//	events.jsonl  every reconcile's input (events and time), appended before it runs
//	config.json   the effective configuration the session started with
//
// The log is written first, then the state, so a kill at any moment loses
// nothing: on resume, the entries past the state's are replayed.

// StoreDir is where sessions live inside a repository.
const StoreDir = ".bazinga"

// Store is one session's directory.
type Store struct {
	Dir string
	ID  string
}

// LogEntry is one reconcile's input.
type LogEntry struct {
	Seq    int              `json:"seq"`
	At     time.Time        `json:"at"`
	Events []pipeline.Event `json:"events"`
}

type stateFile struct {
	Applied int             `json:"applied"`
	Session json.RawMessage `json:"session"`
}

func sessionsDir(repo string) string { return filepath.Join(repo, StoreDir, "sessions") }

// CreateStore makes a new session directory and keeps .bazinga/ out of git.
func CreateStore(repo, id string) (*Store, error) {
	if !pipeline.ValidSessionID(id) {
		return nil, fmt.Errorf("invalid session id %q", id)
	}
	dir := filepath.Join(sessionsDir(repo), id)
	if _, err := os.Stat(dir); err == nil {
		return nil, fmt.Errorf("session %s already exists in %s", id, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the session directory: %w", err)
	}
	if err := excludeFromGit(repo); err != nil {
		return nil, err
	}
	return &Store{Dir: dir, ID: id}, nil
}

// OpenStore opens an existing session directory.
func OpenStore(repo, id string) (*Store, error) {
	if !pipeline.ValidSessionID(id) {
		return nil, fmt.Errorf("invalid session id %q", id)
	}
	dir := filepath.Join(sessionsDir(repo), id)
	if _, err := os.Stat(filepath.Join(dir, "events.jsonl")); err != nil {
		return nil, fmt.Errorf("no session %s in %s (see `bazinga status --repo %s`)", id, repo, repo)
	}
	return &Store{Dir: dir, ID: id}, nil
}

// ListSessions returns the session ids of a repository, oldest first.
func ListSessions(repo string) ([]string, error) {
	entries, err := os.ReadDir(sessionsDir(repo))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && pipeline.ValidSessionID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids) // ids start with their creation time
	return ids, nil
}

// excludeFromGit adds .bazinga/ to .git/info/exclude so session files never
// show up as changes or get committed.
func excludeFromGit(repo string) error {
	gitDir := filepath.Join(repo, ".git")
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return nil // a worktree or bare layout: nothing we can safely edit
	}
	path := filepath.Join(gitDir, "info", "exclude")
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if t := strings.TrimSpace(line); t == "/"+StoreDir+"/" || t == StoreDir+"/" || t == "/"+StoreDir {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	b = append(b, []byte("/"+StoreDir+"/\n")...)
	return writeFileAtomic(path, b)
}

// Append adds one entry to the event log and syncs it to disk.
func (st *Store) Append(e LogEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding log entry %d: %w", e.Seq, err)
	}
	f, err := os.OpenFile(filepath.Join(st.Dir, "events.jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("opening the event log: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("appending to the event log: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing the event log: %w", err)
	}
	return f.Close()
}

// Log reads the event log. A torn last line (a kill mid-write) is dropped:
// its reconcile never ran.
func (st *Store) Log() ([]LogEntry, error) {
	f, err := os.Open(filepath.Join(st.Dir, "events.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the event log: %w", err)
	}
	defer f.Close()
	var out []LogEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	line := 0
	var pending error
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, pending // a bad line that was not the last one
		}
		var e LogEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			pending = fmt.Errorf("event log line %d is corrupt: %w", line, err)
			continue
		}
		if len(out) > 0 && e.Seq != out[len(out)-1].Seq+1 {
			return nil, fmt.Errorf("event log line %d: entry %d follows %d", line, e.Seq, out[len(out)-1].Seq)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the event log: %w", err)
	}
	return out, nil
}

// Repair cuts a torn last line (a kill mid-append) off the event log, so the
// next entry starts on a line of its own.
func (st *Store) Repair() error {
	path := filepath.Join(st.Dir, "events.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the event log: %w", err)
	}
	if len(b) == 0 || b[len(b)-1] == '\n' {
		return nil
	}
	cut := bytes.LastIndexByte(b, '\n') + 1
	if err := os.Truncate(path, int64(cut)); err != nil {
		return fmt.Errorf("repairing the event log: %w", err)
	}
	return nil
}

// SaveConfig records the effective configuration the session runs with,
// before its first event, so a resume runs with the same.
func (st *Store) SaveConfig(cfg pipeline.Config) error {
	b, err := json.MarshalIndent(cfg, "", " ")
	if err != nil {
		return fmt.Errorf("encoding the configuration: %w", err)
	}
	return writeFileAtomic(filepath.Join(st.Dir, "config.json"), b)
}

// Config reads the configuration saved by SaveConfig.
func (st *Store) Config() (pipeline.Config, error) {
	b, err := os.ReadFile(filepath.Join(st.Dir, "config.json"))
	if err != nil {
		return pipeline.Config{}, fmt.Errorf("reading the session's configuration: %w", err)
	}
	var cfg pipeline.Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return pipeline.Config{}, fmt.Errorf("the session's configuration is corrupt: %w", err)
	}
	return cfg, nil
}

// SaveBase records the base commit the repository's checkout matches, so a
// resume can bring a checkout left behind by a kill up to date.
func (st *Store) SaveBase(h plumbing.Hash) error {
	return writeFileAtomic(filepath.Join(st.Dir, "checkout"), []byte(h.String()+"\n"))
}

// Base reads what SaveBase recorded (zero when nothing was).
func (st *Store) Base() plumbing.Hash {
	b, err := os.ReadFile(filepath.Join(st.Dir, "checkout"))
	if err != nil {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(strings.TrimSpace(string(b)))
}

// Save writes the session and the last log entry it includes.
func (st *Store) Save(s pipeline.Session, applied int) error {
	// Referenced tasks are not kept (issue 27): the log holds them (FillTexts).
	b, err := s.WithoutTexts().Marshal()
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(stateFile{Applied: applied, Session: b}, "", " ")
	if err != nil {
		return fmt.Errorf("encoding the state: %w", err)
	}
	return writeFileAtomic(filepath.Join(st.Dir, "state.json"), out)
}

// Load reads the saved state. A session killed before its first reconcile
// finished has no state yet: zero session, applied 0.
func (st *Store) Load() (s pipeline.Session, applied int, err error) {
	b, err := os.ReadFile(filepath.Join(st.Dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		return pipeline.Session{}, 0, nil
	}
	if err != nil {
		return s, 0, fmt.Errorf("reading the session state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return s, 0, fmt.Errorf("session state %s is corrupt: %w", filepath.Join(st.Dir, "state.json"), err)
	}
	s, err = pipeline.UnmarshalSession(f.Session)
	if err != nil {
		return s, 0, err
	}
	return s, f.Applied, nil
}

// Replay returns the session as of the last logged entry: the saved state
// with the entries it had not applied yet reconciled again (Reconcile is
// deterministic, so this is the state the interrupted run had reached).
func (st *Store) Replay(cfg pipeline.Config) (pipeline.Session, int, error) {
	s, applied, err := st.Load()
	if err != nil {
		return s, 0, err
	}
	log, err := st.Log()
	if err != nil {
		return s, 0, err
	}
	for _, e := range log {
		if e.Seq <= applied {
			continue
		}
		s, _ = pipeline.Reconcile(s, e.Events, e.At, cfg)
		applied = e.Seq
	}
	return s, applied, nil
}

// writeFileAtomic replaces a session file (the old one or the new one is
// there after a kill, never half).
func writeFileAtomic(path string, b []byte) error {
	return gitops.WriteFileAtomic(filepath.Dir(path), path, b, 0o644)
}
