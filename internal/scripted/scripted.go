// Package scripted is a built-in agent that plays a scenario file instead of
// calling an LLM: for each step it edits real files in the working copy and
// reports the scripted result, so merges, conflicts and tests are real. The
// demo and the end-to-end tests use it. It reads only what any agent gets:
// the BAZINGA_* environment and its working copy.
package scripted

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Scenario is a scenario file.
type Scenario struct {
	Requirements string `json:"requirements"`
	// Steps maps "<group>/<role>" to the responses of its successive steps;
	// the last one repeats. The group of session-level steps is "_".
	Steps map[string][]Response `json:"steps"`
	// Conflict is the response of any step that finds conflict markers in
	// its working copy (a developer fixing a MERGE_CONFLICT).
	Conflict *Response `json:"conflict,omitempty"`
}

// Response is what one step does and says.
type Response struct {
	Status  string          `json:"status"`
	Summary []string        `json:"summary,omitempty"`
	Handoff json.RawMessage `json:"handoff,omitempty"`
	// Write replaces whole files.
	Write map[string]string `json:"write,omitempty"`
	// Edit replaces text in files; the text must be there.
	Edit []Edit `json:"edit,omitempty"`
	// Resolve "union" resolves conflict markers by keeping both sides.
	Resolve string `json:"resolve,omitempty"`
	// Usage is written into the result as the step's reported usage.
	Usage json.RawMessage `json:"usage,omitempty"`
	// Findings are written into the result as the step's review findings
	// (issue 26), as an agent would write them: the harness checks them.
	Findings json.RawMessage `json:"findings,omitempty"`
}

// Edit is one replacement in a file.
type Edit struct {
	File    string `json:"file"`
	Find    string `json:"find"`
	Replace string `json:"replace"`
}

// Load reads and checks a scenario file.
func Load(path string) (Scenario, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, fmt.Errorf("reading the scenario: %w", err)
	}
	var s Scenario
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", path, err)
	}
	keys := make([]string, 0, len(s.Steps))
	for k := range s.Steps {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if len(s.Steps[k]) == 0 {
			return Scenario{}, fmt.Errorf("scenario %s: %q has no responses", path, k)
		}
		if !strings.Contains(k, "/") {
			return Scenario{}, fmt.Errorf("scenario %s: key %q is not <group>/<role>", path, k)
		}
	}
	return s, nil
}

// Env is what the agent reads from its environment.
type Env struct {
	Role, Group, Step, ResultFile string
}

// EnvFromOS reads the BAZINGA_* variables.
func EnvFromOS() (Env, error) {
	e := Env{Role: os.Getenv("BAZINGA_ROLE"), Group: os.Getenv("BAZINGA_GROUP"), Step: os.Getenv("BAZINGA_STEP"), ResultFile: os.Getenv("BAZINGA_RESULT_FILE")}
	if e.Role == "" || e.Step == "" || e.ResultFile == "" {
		return e, errors.New("not run as a bazinga agent: BAZINGA_ROLE, BAZINGA_STEP and BAZINGA_RESULT_FILE must be set")
	}
	if e.Group == "" {
		e.Group = "_"
	}
	return e, nil
}

// Play performs one step in dir: it picks the response, changes the files
// and writes the result file. State (how many steps each key has had) lives
// in stateDir, so successive runs walk through the scenario.
func Play(s Scenario, env Env, dir, stateDir string) (Response, error) {
	conflicts, err := conflictFiles(dir)
	if err != nil {
		return Response{}, err
	}
	var resp Response
	if len(conflicts) > 0 && s.Conflict != nil {
		resp = *s.Conflict
	} else {
		key := env.Group + "/" + env.Role
		list := s.Steps[key]
		if list == nil {
			list = s.Steps["*/"+env.Role]
		}
		if list == nil {
			return Response{}, fmt.Errorf("the scenario has no step for %s", key)
		}
		n, err := bump(stateDir, key)
		if err != nil {
			return Response{}, err
		}
		resp = list[min(n, len(list))-1]
	}
	if resp.Resolve == "union" {
		for _, f := range conflicts {
			if err := resolveUnion(filepath.Join(dir, f)); err != nil {
				return Response{}, err
			}
		}
	}
	for _, name := range sortedKeys(resp.Write) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return Response{}, err
		}
		if err := os.WriteFile(p, []byte(resp.Write[name]), 0o644); err != nil {
			return Response{}, err
		}
	}
	for _, e := range resp.Edit {
		p := filepath.Join(dir, filepath.FromSlash(e.File))
		b, err := os.ReadFile(p)
		if err != nil {
			return Response{}, fmt.Errorf("edit %s: %w", e.File, err)
		}
		if !strings.Contains(string(b), e.Find) {
			return Response{}, fmt.Errorf("edit %s: %q not found", e.File, e.Find)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.Find, e.Replace, 1)), 0o644); err != nil {
			return Response{}, err
		}
	}
	out, err := json.Marshal(struct {
		Status   string          `json:"status"`
		Summary  []string        `json:"summary,omitempty"`
		Handoff  json.RawMessage `json:"handoff,omitempty"`
		Usage    json.RawMessage `json:"usage,omitempty"`
		Findings json.RawMessage `json:"findings,omitempty"`
	}{resp.Status, resp.Summary, resp.Handoff, resp.Usage, resp.Findings})
	if err != nil {
		return Response{}, err
	}
	if err := os.WriteFile(env.ResultFile, out, 0o644); err != nil {
		return Response{}, fmt.Errorf("writing the result: %w", err)
	}
	return resp, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// bump counts one more step for key and returns the count.
func bump(stateDir, key string) (int, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return 0, err
	}
	p := filepath.Join(stateDir, strings.NewReplacer("/", "__", "*", "any").Replace(key)+".count")
	n := 0
	if b, err := os.ReadFile(p); err == nil {
		n, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	n++
	return n, os.WriteFile(p, []byte(strconv.Itoa(n)), 0o644)
}

// conflictFiles lists the files in dir that hold conflict markers.
func conflictFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if hasMarkers(string(b)) {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out, err
}

func hasMarkers(s string) bool {
	return strings.HasPrefix(s, "<<<<<<< ") || strings.Contains(s, "\n<<<<<<< ")
}

// resolveUnion keeps both sides of every conflict block, ours first.
func resolveUnion(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out []string
	section := "" // "", "ours", "base", "theirs"
	for _, line := range strings.SplitAfter(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "<<<<<<< "):
			section = "ours"
		case strings.HasPrefix(line, "||||||| ") && section == "ours":
			section = "base"
		case strings.HasPrefix(line, "=======") && section != "":
			section = "theirs"
		case strings.HasPrefix(line, ">>>>>>> ") && section == "theirs":
			section = ""
		case section == "base":
		default:
			out = append(out, line)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(out, "")), 0o644)
}

// Main is the scripted agent as a command: `scripted-agent --scenario FILE
// --state DIR`, run in the step's working copy with the BAZINGA_* environment.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("scripted-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenario := fs.String("scenario", "", "the scenario file")
	state := fs.String("state", "", "where the agent counts its steps")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *scenario == "" || *state == "" {
		fmt.Fprintln(stderr, "scripted-agent: --scenario and --state are required")
		return 2
	}
	err := func() error {
		sc, err := Load(*scenario)
		if err != nil {
			return err
		}
		env, err := EnvFromOS()
		if err != nil {
			return err
		}
		dir, err := os.Getwd()
		if err != nil {
			return err
		}
		resp, err := Play(sc, env, dir, *state)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "scripted %s step %s: %s\n", env.Role, env.Step, resp.Status)
		return nil
	}()
	if err != nil {
		fmt.Fprintf(stderr, "scripted-agent: %v\n", err)
		return 1
	}
	return 0
}
