package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bazinga-bot/bazinga/config"
)

// Placeholders that may appear in the agent command; each is filled in per
// argument after splitting, so a value with spaces stays one argument.
const (
	PlaceholderModel      = "{model}"
	PlaceholderRole       = "{role}"
	PlaceholderPromptFile = "{prompt_file}"
)

var knownPlaceholders = map[string]bool{
	PlaceholderModel:      true,
	PlaceholderRole:       true,
	PlaceholderPromptFile: true,
}

// placeholderRe matches anything that looks like a placeholder. Other braces
// (a jq filter such as '{a: .b}', or '{}') are left alone.
var placeholderRe = regexp.MustCompile(`\{[a-z][a-z0-9_]*\}`)

// parseCommand splits an agent command template and checks its placeholders.
func parseCommand(command string) ([]string, error) {
	if strings.TrimSpace(command) == "" {
		return nil, errors.New("agent command is empty")
	}
	// Split like a shell, as the configuration documents; never run by one.
	args, err := config.SplitCommand(command)
	if err != nil {
		return nil, fmt.Errorf("agent command %q: %w", command, err)
	}
	if len(args) == 0 {
		return nil, errors.New("agent command is empty")
	}
	for _, a := range args {
		for _, p := range placeholderRe.FindAllString(a, -1) {
			if !knownPlaceholders[p] {
				return nil, fmt.Errorf("agent command %q: unknown placeholder %s (known: {model}, {role}, {prompt_file})", command, p)
			}
		}
	}
	return args, nil
}

// fillPlaceholders replaces the placeholders in every argument.
func fillPlaceholders(args []string, model, role, promptFile string) []string {
	r := strings.NewReplacer(PlaceholderModel, model, PlaceholderRole, role, PlaceholderPromptFile, promptFile)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// resolveProgram finds the program to run. A relative path with a slash is
// taken relative to the harness's working directory, not the step's working
// copy: that is what a user typing --agent ./my-agent.sh means.
func resolveProgram(prog string) (string, error) {
	if !strings.ContainsRune(prog, filepath.Separator) {
		p, err := exec.LookPath(prog)
		if err != nil {
			if errors.Is(err, exec.ErrNotFound) {
				return "", fmt.Errorf("agent command %q: %w", prog, exec.ErrNotFound)
			}
			return "", fmt.Errorf("agent command %q: %w", prog, err)
		}
		return p, nil
	}
	abs, err := filepath.Abs(prog)
	if err != nil {
		return "", fmt.Errorf("agent command %q: %w", prog, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("agent command %q: %w", prog, err)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("agent command %q: is a directory", prog)
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("agent command %q: not executable (mode %v)", prog, fi.Mode().Perm())
	}
	return abs, nil
}
