package realcli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bazinga-bot/bazinga/internal/modelfake"
)

// updateFixtures rewrites testdata/<cli>/<case>.* from the runs: REALCLI_UPDATE=1 go test ./internal/realcli/
var updateFixtures = os.Getenv("REALCLI_UPDATE") != ""

// TestMain lets the CLI runs overlap: they mostly wait (on the fake, on retries, on a hang), so the default of
// GOMAXPROCS parallel tests would make the package needlessly slow on a small machine. An explicit -parallel wins.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "4")
	}
	os.Exit(m.Run())
}

// extended marks a case that widens the catalogue (another status, another signal) rather than a behaviour of
// its own: -short skips it for a quicker loop; CI runs everything.
func extended(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: one of a family of cases")
	}
}

// sandbox is one test's private world: a working copy and a home the CLI may write, nothing shared.
type sandbox struct {
	root, work, home string
}

func newSandbox(t *testing.T) sandbox {
	t.Helper()
	root := t.TempDir()
	sb := sandbox{root: root, work: filepath.Join(root, "work"), home: filepath.Join(root, "home")}
	for _, d := range []string{sb.work, sb.home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return sb
}

// basePath is the PATH the CLIs get: the system's tools, Go when installed, and node (codex's launcher is a node
// script).
func basePath() string {
	dirs := []string{"/usr/local/go/bin", "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}
	if node, err := exec.LookPath("node"); err == nil {
		dirs = append([]string{filepath.Dir(node)}, dirs...)
	}
	return strings.Join(dirs, ":")
}

// invocation is one CLI run: exactly this argv and environment (nothing inherited), the prompt on stdin.
type invocation struct {
	argv    []string
	env     []string
	stdin   string
	timeout time.Duration
	// afterRequest, when set, is how long the run may go on once the fake has seen its first request: then
	// signal (when set) goes to the process and the run waits for it to exit, or else the process group is
	// killed and the outcome says killed. This measures a hang from the request, not from a start whose speed
	// depends on the machine's load.
	afterRequest time.Duration
	signal       syscall.Signal
	server       *modelfake.Server
}

// outcome is one finished (or killed) CLI run.
type outcome struct {
	stdout, stderr string
	code           int // exit code; -1 when killed at the timeout or ended by a signal
	dur            time.Duration
	killed         bool // outlived its timeout and was killed
}

// run starts inv in sb.work, in a process group of its own that is killed whole at the timeout.
func run(t *testing.T, sb sandbox, inv invocation) outcome {
	t.Helper()
	if inv.timeout == 0 {
		inv.timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), inv.timeout)
	defer cancel()
	// hung is cancelled when the run outstays afterRequest; cancelling it kills the process group.
	hung, stop := context.WithCancel(ctx)
	defer stop()
	ctx = hung
	cmd := exec.CommandContext(ctx, inv.argv[0], inv.argv[1:]...)
	cmd.Dir = sb.work
	cmd.Env = inv.env
	cmd.Stdin = strings.NewReader(inv.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", inv.argv[0], err)
	}
	// Whatever happens, nothing the CLI started outlives the test.
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	if inv.afterRequest > 0 {
		go func() {
			for ctx.Err() == nil && len(inv.server.Requests()) == 0 {
				time.Sleep(50 * time.Millisecond)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(inv.afterRequest):
			}
			if inv.signal != 0 {
				_ = cmd.Process.Signal(inv.signal)
				return
			}
			stop()
		}()
	}
	err := cmd.Wait()
	o := outcome{stdout: out.String(), stderr: errb.String(), dur: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		o.killed, o.code = true, -1
	case errors.As(err, &exit):
		o.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", inv.argv[0], err)
	}
	t.Logf("%s exited %d after %v (killed=%v); stdout %d bytes, stderr %d bytes", filepath.Base(inv.argv[0]), o.code, o.dur.Round(time.Millisecond), o.killed, len(o.stdout), len(o.stderr))
	if o.code != 0 && len(o.stderr) > 0 {
		t.Logf("stderr: %s", clip(o.stderr, 2000))
	}
	return o
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("…(%d bytes)", len(s))
}

var (
	// t.TempDir() is /tmp/<test name><random digits>/<NNN>; a subtest's name brings its own dashes.
	tmpRoot   = regexp.MustCompile(`/tmp/Test[^/"' ]+/[0-9]{3}`)
	tmpDashed = regexp.MustCompile(`-tmp-Test[A-Za-z0-9_.-]*?-[0-9]{3}-`)
	loopback  = regexp.MustCompile(`127\.0\.0\.1:[0-9]+`)
	binDir    = regexp.MustCompile(`/[^ "']*/internal/realcli/node_modules/\.bin/`)
)

// scrub makes a run stable for a fixture: the test's temp root becomes /TMP (claude also names a project
// directory after the working directory with / turned into -), the server's port PORT, the binaries' directory
// node_modules/.bin/.
func scrub(s string) string {
	s = tmpRoot.ReplaceAllString(s, "/TMP")
	s = tmpDashed.ReplaceAllString(s, "-TMP-")
	s = binDir.ReplaceAllString(s, "node_modules/.bin/")
	return loopback.ReplaceAllString(s, "127.0.0.1:PORT")
}

// fixture saves a run under testdata/<cli>/: <name>.jsonl (stdout), <name>.stderr.txt (when not empty) and
// <name>.cmd (argv, one per line, then the environment), when updating.
func fixture(t *testing.T, cli, name string, inv invocation, o outcome) {
	t.Helper()
	fixtureOut(t, cli, name, inv, o, o.stdout)
}

// fixtureOut is fixture with stdout replaced (for output too large to keep whole).
func fixtureOut(t *testing.T, cli, name string, inv invocation, o outcome, stdout string) {
	t.Helper()
	if !updateFixtures {
		return
	}
	dir := filepath.Join("testdata", cli)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(file, content string) {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(scrub(content)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(name+".jsonl", stdout)
	if strings.TrimSpace(o.stderr) == "" {
		_ = os.Remove(filepath.Join(dir, name+".stderr.txt"))
	} else {
		write(name+".stderr.txt", o.stderr)
	}
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "# argv (one per line)\n")
	for _, a := range inv.argv {
		fmt.Fprintf(&cmd, "%s\n", a)
	}
	fmt.Fprintf(&cmd, "\n# environment (exactly this, nothing inherited)\n")
	for _, e := range inv.env {
		if strings.HasPrefix(e, "PATH=") {
			e = "PATH=<node's directory>:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
		}
		fmt.Fprintf(&cmd, "%s\n", e)
	}
	fmt.Fprintf(&cmd, "\n# stdin\n%s\n\n# exit code %d (-1: killed at the timeout or by a signal)\n", inv.stdin, o.code)
	switch {
	case inv.afterRequest > 0 && inv.signal != 0:
		fmt.Fprintf(&cmd, "# signal %d (%v) sent to the process %v after the first model request\n", inv.signal, inv.signal, inv.afterRequest)
	case inv.afterRequest > 0:
		fmt.Fprintf(&cmd, "# process group killed (SIGKILL) %v after the first model request\n", inv.afterRequest)
	}
	write(name+".cmd", cmd.String())
}

// logRequests logs what the fake served and fails on paths it does not answer, so a new call by a new CLI
// version shows up.
func logRequests(t *testing.T, s *modelfake.Server) {
	t.Helper()
	for _, r := range s.Requests() {
		t.Logf("request #%d %s model=%s turns=%d results=%d tools=%d", r.Seq, r.API, r.Model, r.Turns(), r.NumToolResults(), len(r.Tools))
	}
	if u := s.Unhandled(); len(u) > 0 {
		t.Errorf("the CLI called paths the fake does not answer: %v", u)
	}
}

// lines splits JSONL output into its non-empty lines.
func lines(stdout string) []string {
	var out []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}
