package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bazinga-bot/bazinga"
	"github.com/bazinga-bot/bazinga/config"
	"github.com/bazinga-bot/bazinga/local"
	"github.com/bazinga-bot/bazinga/pipeline"
	"github.com/bazinga-bot/bazinga/testcmd"
)

// agentCLIs are the agent CLIs `bazinga init` looks for on PATH, in the
// README's order, with the command each is written as (the driver adds
// what a headless run needs) and how it is installed.
var agentCLIs = []struct {
	program, command, install string
	// key is the model key written to agent.env ("" for the CLIs that
	// take any provider's: the person names theirs).
	key string
}{
	{"claude", "claude -p --model {model}", "npm i -g @anthropic-ai/claude-code", "ANTHROPIC_API_KEY"},
	{"codex", "codex exec", "npm i -g @openai/codex", "CODEX_API_KEY"},
	{"gemini", "gemini", "npm i -g @google/gemini-cli", "GEMINI_API_KEY"},
	{"aider", "aider --message-file {prompt_file}", "pipx install aider-chat", ""},
	{"opencode", "opencode run", "npm i -g opencode-ai", ""},
}

// initChoice is what `bazinga init` decided, with why.
type initChoice struct {
	cfg pipeline.Config
	// set holds the keys the file sets, each with its note.
	set map[string]string
	// warnings are said after the file is written.
	warnings []string
	tests    testcmd.Detection
}

// chooseInit decides the configuration of a repository from its files and
// the CLIs lookPath finds. agentFlag and testFlag override (nil: not given).
func chooseInit(files testcmd.Files, lookPath func(string) (string, error), agentFlag, testFlag *string) initChoice {
	c := initChoice{cfg: pipeline.DefaultConfig(), set: map[string]string{}}
	switch {
	case agentFlag != nil:
		c.cfg = config.WithAgentCommand(c.cfg, *agentFlag)
		c.set["agent.command"] = "--agent"
	default:
		found := false
		for _, a := range agentCLIs {
			if p, err := lookPath(a.program); err == nil {
				c.cfg = config.WithAgentCommand(c.cfg, a.command)
				c.set["agent.command"] = "found on PATH: " + p
				found = true
				break
			}
		}
		if !found {
			c.set["agent.command"] = "no agent CLI found on PATH: install one (" + agentCLIs[0].install + "), or name yours here"
			c.warnings = append(c.warnings, "no agent CLI (claude, codex, gemini, aider, opencode) is on PATH; the file names claude: install it with `"+
				agentCLIs[0].install+"` or set agent.command")
		}
	}
	// The model key the CLI reads, passed to the agent (nothing else is).
	for _, a := range agentCLIs {
		if string(config.AgentCLI(c.cfg)) == a.program && a.key != "" {
			c.cfg.Agent.Env = []string{a.key}
			c.set["agent.env"] = "the model key " + a.program + " reads; nothing else from your environment reaches the agent"
		}
	}
	switch {
	case testFlag != nil:
		c.cfg.Tests.Command = *testFlag
		c.set["tests.command"] = "--test-command"
	default:
		c.tests = testcmd.Detect(files)
		if !c.tests.Found() {
			c.warnings = append(c.warnings, "no test command found (looked for "+testcmd.Looked+
				"); set tests.command in the file before a run: the test gate, READY checks and validation run it")
			break
		}
		d := c.tests
		c.cfg.Tests.Command = d.Command
		c.set["tests.command"] = "detected: " + d.Reason
		if d.Build != "" {
			c.cfg.Build.Command = d.Build
			c.set["build.command"] = "each step tests a fresh clone: install the dependencies first"
		}
		if d.JUnit != "" {
			c.cfg.Tests.JUnit = d.JUnit
			c.set["tests.junit"] = "where " + d.Ecosystem + " writes its test reports: failing tests are named from them"
		}
		for _, o := range d.Others {
			c.warnings = append(c.warnings, "also found: "+o+"; the file uses "+d.Command)
		}
	}
	return c
}

// runInit is `bazinga init`.
func runInit(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("init")
	repo := fs.String("repo", ".", "the repository (any directory inside it)")
	agentCmd := fs.String("agent", "", "the agent command to write (default: the first agent CLI found on PATH)")
	testCmd := fs.String("test-command", "", "the test command to write (default: detected from the repository's files)")
	action := fs.Bool("action", false, "also write the workflows of Action-only mode into .github/workflows/")
	force := fs.Bool("force", false, "overwrite files that exist")
	usage := flagUsage(fs, `Usage: bazinga init [flags]

Writes .github/bazinga.yml for this repository: the test command detected from
its files, the agent CLI found on PATH and its model key; every other key is
a comment showing its default. With --action, also the workflows that run
bazinga in GitHub Actions without a server. Existing files are kept unless
--force is given.
`)
	pos, code, ok := parseFlags(fs, args, usage, stdout, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "bazinga init: unexpected arguments %q\n", pos)
		usage(stderr)
		return exitUsage
	}
	root, err := local.RepoRoot(*repo)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga init: %v\n", err)
		return exitUsage
	}
	files, err := local.WorktreeFiles(root)
	if err != nil {
		fmt.Fprintf(stderr, "bazinga init: %v\n", err)
		return exitUsage
	}
	var agentFlag, testFlag *string
	if fs.Changed("agent") {
		agentFlag = agentCmd
	}
	if fs.Changed("test-command") {
		testFlag = testCmd
	}
	c := chooseInit(files, exec.LookPath, agentFlag, testFlag)
	if err := config.Validate(c.cfg); err != nil {
		fmt.Fprintf(stderr, "bazinga init: %v\n", err)
		return exitUsage
	}
	head := `bazinga's configuration for this repository, written by ` + "`bazinga init`" + `.
Every key is optional: a key left out, or commented out as most are below, takes the default shown.
` + "`bazinga config`" + ` prints what a run will use and where each value comes from.
Local runs read this file from the base branch's last commit: commit it.`
	out := map[string][]byte{local.ConfigPath: config.CommentedFile(c.cfg, head, c.set)}
	if *action {
		tpl, err := workflowTemplates()
		if err != nil {
			fmt.Fprintf(stderr, "bazinga init: %v\n", err)
			return 1
		}
		for name, body := range tpl {
			out[".github/workflows/"+name] = body
		}
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	if !*force {
		var exist []string
		for _, n := range names {
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(n))); err == nil {
				exist = append(exist, n)
			}
		}
		if len(exist) > 0 {
			fmt.Fprintf(stderr, "bazinga init: already in %[2]s: %[1]s; nothing written (--force overwrites)\n", strings.Join(exist, ", "), root)
			return 1
		}
	}
	for _, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintf(stderr, "bazinga init: %v\n", err)
			return 1
		}
		if err := os.WriteFile(p, out[n], 0o644); err != nil {
			fmt.Fprintf(stderr, "bazinga init: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s\n", n)
	}
	fmt.Fprintf(stdout, "  agent: %s (%s)\n", c.cfg.Agent.Command, c.set["agent.command"])
	if t := c.cfg.Tests.Command; t != "" {
		fmt.Fprintf(stdout, "  tests: %s (%s)\n", t, c.set["tests.command"])
	}
	if b := c.cfg.Build.Command; b != "" {
		fmt.Fprintf(stdout, "  build: %s\n", b)
	}
	for _, w := range c.warnings {
		fmt.Fprintf(stdout, "note: %s\n", w)
	}
	fmt.Fprintf(stdout, "\nNext: commit it (git add .github && git commit -m \"Add bazinga\"), then\n"+
		"  bazinga config                      # what a run will use, and where each value comes from\n"+
		"  bazinga run \"what to build\"         # a session (see the README for a scripted one without any model)\n")
	if *action {
		fmt.Fprintf(stdout, "For Action-only mode (see the comments at the top of each workflow):\n"+
			"  - a repository secret BAZINGA_STATE_KEY (openssl rand -hex 32 | gh secret set BAZINGA_STATE_KEY), and the public key\n"+
			"    the orchestrator's first run prints as the repository variable BAZINGA_STATE_PUBLIC_KEY;\n"+
			"  - the model key as a secret (%s);\n"+
			"  - in .github/workflows/bazinga-agent.yml, the setup steps your tests need (it sets up Go and Node).\n",
			strings.Join(c.cfg.Agent.Env, ", "))
	}
	return exitOK
}

// workflowTemplates returns the workflow files the binary carries, by name.
func workflowTemplates() (map[string][]byte, error) {
	out := map[string][]byte{}
	err := fs.WalkDir(bazinga.WorkflowTemplates, bazinga.WorkflowTemplateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := bazinga.WorkflowTemplates.ReadFile(p)
		if err != nil {
			return err
		}
		out[path.Base(p)] = b
		return nil
	})
	if err == nil && len(out) == 0 {
		err = errors.New("this binary carries no workflow templates")
	}
	return out, err
}
