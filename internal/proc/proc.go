// Package proc runs the commands bazinga does not trust: the agent and the
// test gate (both run code an agent wrote). It is the one place that decides
// how such a process is started, bounded and ended:
//
//   - the environment is exactly what the caller builds (Environ), nothing is
//     inherited;
//   - the command gets its own session and process group;
//   - at its timeout (or when the caller cancels) every process it started
//     gets SIGTERM, then SIGKILL after a grace period;
//   - when the command ends, everything it left running ends too, including
//     children that called setsid or double-forked to leave its group.
//
// The last point is what a process group alone cannot give. On Linux the
// command runs under a small supervisor (this binary, re-executed) that marks
// itself a child subreaper (PR_SET_CHILD_SUBREAPER): an orphan anywhere below
// it is re-parented to it instead of to init, so whatever the agent starts
// stays its descendant and is found in /proc and killed when the agent exits.
// That needs no privilege and no cgroup, and ties each step's processes to
// that step even when several steps run in one harness process. It is not a
// sandbox: a process that kills its own supervisor first, or that asks
// another service (systemd, a container daemon) to start something, is out
// of its reach. Elsewhere (no /proc/self/exe, other systems) the command runs
// directly in its own session and only its process group is ended.
package proc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for Cmd fields left zero.
const (
	DefaultGrace     = 5 * time.Second
	DefaultWaitDelay = 2 * time.Second
)

// supervisorMargin is how long past the grace the harness waits for the
// supervisor to finish its own SIGKILL sweep before it kills the supervisor
// and the command's group itself.
const supervisorMargin = 5 * time.Second

// Cmd is one command to run.
type Cmd struct {
	// Path is the program to run; callers resolve it (exec.LookPath).
	Path string
	// Args is the argument list, Args[0] being the name the program sees.
	Args []string
	// Dir is the working directory.
	Dir string
	// Env is the whole environment of the command; nil means an empty one,
	// never the harness's own.
	Env []string
	// Stdin is read by the command; nil means /dev/null.
	Stdin io.Reader
	// Stdout and Stderr receive the output; nil discards it. The same
	// writer may be given for both.
	Stdout, Stderr io.Writer
	// Timeout bounds the run; zero means only ctx does.
	Timeout time.Duration
	// Grace is how long the command has between SIGTERM and SIGKILL at its
	// timeout or cancellation (default DefaultGrace).
	Grace time.Duration
	// WaitDelay bounds how long Run waits for the output to close once the
	// command has exited and its processes were killed (default
	// DefaultWaitDelay).
	WaitDelay time.Duration
}

// Result is how a command ended. A non-zero exit, a signal or a timeout are
// results, not errors.
type Result struct {
	// ExitCode is the command's exit status, -1 when a signal ended it.
	ExitCode int
	// Signal is the signal that ended the command, 0 if it exited.
	Signal syscall.Signal
	// TimedOut is true when Timeout fired; Cancelled when ctx ended first.
	TimedOut  bool
	Cancelled bool
	// Killed is true when SIGKILL was needed: the grace ran out.
	Killed bool
	// Strays is how many processes the command left running when it exited
	// (on its own or after SIGTERM); they were killed.
	Strays   int
	Duration time.Duration
	// Supervised tells whether the subreaper supervisor ran the command (so
	// setsid'd descendants were ended too).
	Supervised bool
	// Notes are what the runner noticed on the way (output held open, a
	// supervisor that failed); for logs and reports.
	Notes []string
}

// Run runs the command and waits for it and every process it started to end.
// The error is for a command that could not be started at all (or whose
// output could not be read); everything else is in the Result.
func Run(ctx context.Context, c Cmd) (Result, error) {
	var res Result
	if len(c.Args) == 0 || c.Path == "" {
		return res, errors.New("proc: no program to run")
	}
	if c.Timeout < 0 || c.Grace < 0 || c.WaitDelay < 0 {
		return res, errors.New("proc: negative timeout, grace or wait delay")
	}
	grace := c.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	env := c.Env
	if env == nil {
		env = []string{} // exec.Cmd would inherit the harness's environment for nil
	}
	cmd := &exec.Cmd{Dir: c.Dir, Env: env, Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr}
	// Its own session (hence its own process group, no controlling terminal).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = DefaultWaitDelay
	}

	var (
		status    *supervisorStatus
		statusR   *os.File
		statusEOF chan struct{}
	)
	if exe, ok := supervisorExecutable(); ok {
		r, w, err := os.Pipe()
		if err != nil {
			return res, fmt.Errorf("proc: status pipe: %w", err)
		}
		statusR = r
		defer statusR.Close()
		cmd.Path = exe
		cmd.Args = append([]string{supervisorArg0, strconv.FormatInt(int64(grace), 10), strconv.Itoa(os.Getpid()), c.Path}, c.Args...)
		cmd.ExtraFiles = []*os.File{w}
		// If the harness dies, the supervisor stops the command gracefully.
		setParentDeathSignal(cmd.SysProcAttr)
		res.Supervised = true
		status = &supervisorStatus{}
		defer w.Close()
	} else {
		cmd.Path = c.Path
		cmd.Args = c.Args
	}

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start %q: %w", c.Args[0], err)
	}
	if status != nil {
		cmd.ExtraFiles[0].Close() // only the supervisor holds the write end
		statusEOF = make(chan struct{})
		go func() {
			defer close(statusEOF)
			status.read(statusR)
		}()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var timeout <-chan time.Time
	if c.Timeout > 0 {
		t := time.NewTimer(c.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	var waitErr error
	select {
	case waitErr = <-done:
	case <-timeout:
		res.TimedOut = true
		waitErr = stop(cmd, status, grace, done, &res)
	case <-ctx.Done():
		res.Cancelled = true
		waitErr = stop(cmd, status, grace, done, &res)
	}
	res.Duration = time.Since(start)
	pid := cmd.Process.Pid

	if status != nil {
		<-statusEOF
		st := status.snapshot()
		if st.startErr != "" {
			return res, fmt.Errorf("start %q: %s", c.Args[0], st.startErr)
		}
		res.Notes = append(res.Notes, st.notes...)
		res.Strays += st.strays
		res.Killed = res.Killed || st.killed
		switch {
		case st.exited:
			res.ExitCode, res.Signal = st.code, st.signal
			if st.signal != 0 {
				res.ExitCode = -1
			}
		default:
			// The supervisor itself was killed (by the harness's fallback or
			// by the command): end what it may have left, as a plain group.
			res.ExitCode, res.Signal = exitOf(cmd.ProcessState)
			if st.agentPid > 0 {
				_ = killGroup(st.agentPid, syscall.SIGKILL)
			}
			_ = killGroup(pid, syscall.SIGKILL)
			res.Notes = append(res.Notes, "the supervisor ended before reporting; killed the command's process group")
		}
	} else {
		res.ExitCode, res.Signal = exitOf(cmd.ProcessState)
		// Whatever the command left behind in its group (servers, watchers)
		// goes too; counted only when there is something (a /proc scan).
		if syscall.Kill(-pid, 0) == nil {
			res.Strays += groupSize(pid)
			_ = killGroup(pid, syscall.SIGKILL)
		}
	}

	var exitErr *exec.ExitError
	switch {
	case waitErr == nil, errors.As(waitErr, &exitErr):
	case errors.Is(waitErr, exec.ErrWaitDelay):
		res.Notes = append(res.Notes, fmt.Sprintf("output still open %s after the command ended; stopped reading", cmd.WaitDelay))
	default:
		return res, fmt.Errorf("wait for %q: %w", c.Args[0], waitErr)
	}
	return res, nil
}

// stop ends a command that ran too long: SIGTERM to all of it, SIGKILL after
// the grace. Under the supervisor the supervisor does both (it knows every
// descendant); the harness only steps in if the supervisor does not finish.
func stop(cmd *exec.Cmd, status *supervisorStatus, grace time.Duration, done <-chan error, res *Result) error {
	pid := cmd.Process.Pid
	if status != nil {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		t := time.NewTimer(grace + supervisorMargin)
		defer t.Stop()
		select {
		case err := <-done:
			return err
		case <-t.C:
		}
		res.Killed = true
		if p := status.snapshot().agentPid; p > 0 {
			_ = killGroup(p, syscall.SIGKILL)
		}
		_ = killGroup(pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		return <-done
	}
	_ = killGroup(pid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	res.Killed = true
	_ = killGroup(pid, syscall.SIGKILL)
	return <-done
}

func exitOf(ps *os.ProcessState) (int, syscall.Signal) {
	if ps == nil {
		return -1, 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return -1, ws.Signal()
	}
	return ps.ExitCode(), 0
}

// killGroup signals the whole process group led by pid. A group that is
// already gone is not an error.
func killGroup(pid int, sig syscall.Signal) error {
	if pid <= 0 {
		return nil
	}
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal process group %d: %w", pid, err)
	}
	return nil
}

// supervisorStatus is what the supervisor reports on its status pipe, one
// fact a line: "pid N" (the command started), "start-error MSG", "note MSG",
// "strays N", "killed", and last "exit N" or "signal N".
type supervisorStatus struct {
	mu       sync.Mutex
	agentPid int
	startErr string
	notes    []string
	strays   int
	killed   bool
	exited   bool
	code     int
	signal   syscall.Signal
}

func (s *supervisorStatus) read(r io.Reader) {
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	for sc.Scan() {
		word, rest, _ := strings.Cut(sc.Text(), " ")
		n, _ := strconv.Atoi(rest)
		s.mu.Lock()
		switch word {
		case "pid":
			s.agentPid = n
		case "start-error":
			s.startErr = rest
		case "note":
			s.notes = append(s.notes, rest)
		case "strays":
			s.strays = n
		case "killed":
			s.killed = true
		case "exit":
			s.exited, s.code = true, n
		case "signal":
			s.exited, s.code, s.signal = true, -1, syscall.Signal(n)
		}
		s.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

func (s *supervisorStatus) snapshot() supervisorStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return supervisorStatus{agentPid: s.agentPid, startErr: s.startErr, notes: append([]string(nil), s.notes...),
		strays: s.strays, killed: s.killed, exited: s.exited, code: s.code, signal: s.signal}
}
