package testcmd

import (
	"fmt"
	"path"
	"strings"

	"github.com/bazinga-bot/bazinga/config"
)

// shellWords are the words a command may start with that sh itself
// understands (keywords and the common built-ins): nothing to look up.
var shellWords = map[string]bool{
	"!": true, "{": true, "(": true, "[": true, "[[": true, ".": true, ":": true,
	"if": true, "for": true, "while": true, "until": true, "case": true,
	"cd": true, "echo": true, "exec": true, "exit": true, "export": true, "false": true, "printf": true,
	"set": true, "source": true, "test": true, "true": true, "ulimit": true, "umask": true, "unset": true,
}

// Program returns the program a shell command line starts (after any
// VAR=value assignments), or "" when the shell itself runs the first word,
// or the line cannot be split.
func Program(command string) string {
	words, err := config.SplitCommand(command)
	if err != nil {
		return ""
	}
	for _, w := range words {
		if i := strings.IndexByte(w, '='); i > 0 && !strings.ContainsAny(w[:i], "/$`\"'") {
			continue // an assignment
		}
		// The shell's own syntax glued to the word ("(cd", "make;").
		w = strings.TrimRight(w, ";&|)")
		if shellWords[w] || strings.ContainsAny(w, "$`(){}<>|;&*?") {
			return ""
		}
		return w
	}
	return ""
}

// CanRun says why command (what: "test command", "build command") cannot
// start here, or nil. It checks the program
// the command starts: a name must be found by lookPath (exec.LookPath on the
// test gate's PATH), a path relative to the repository must be one of its
// files (repoHas). Anything the shell itself runs is left to the shell.
func CanRun(what, command string, lookPath func(string) (string, error), repoHas func(string) bool) error {
	prog := Program(command)
	switch {
	case prog == "":
		return nil
	case strings.HasPrefix(prog, "/"):
		if _, err := lookPath(prog); err != nil {
			return fmt.Errorf("the %s %q cannot run: %s is not an executable file", what, command, prog)
		}
	case strings.Contains(prog, "/"):
		rel := path.Clean(prog)
		if repoHas != nil && !repoHas(rel) {
			return fmt.Errorf("the %s %q cannot run: %s is not in the repository", what, command, prog)
		}
	default:
		if _, err := lookPath(prog); err != nil {
			return fmt.Errorf("the %s %q cannot run: %s is not installed (not found on PATH)", what, command, prog)
		}
	}
	return nil
}
