package proc

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// supervisorArg0 is the argv[0] under which this binary, re-executed, acts as
// the supervisor of one command instead of doing its usual job.
const supervisorArg0 = "bazinga-proc-supervisor"

// selfExe names the running binary even if it was replaced or deleted on disk
// since it started.
const selfExe = "/proc/self/exe"

// The supervisor must take over before main (and before a test binary's
// flag parsing), so it is entered from init: every binary that can run a
// command links this package, so every such binary can supervise one.
func init() {
	if len(os.Args) > 0 && os.Args[0] == supervisorArg0 {
		os.Exit(supervise(os.Args[1:]))
	}
}

// setParentDeathSignal makes the kernel send the supervisor SIGHUP when the
// harness dies, so a step does not outlive a killed harness.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGHUP }

func supervisorExecutable() (string, bool) {
	if os.Getenv("BAZINGA_PROC_DIRECT") == "1" {
		// For tests of the fallback and for systems where re-executing is
		// not wanted: run commands directly, ending only their group.
		return "", false
	}
	if _, err := os.Stat(selfExe); err != nil {
		return "", false
	}
	return selfExe, true
}

// supervise runs one command as a child subreaper and reports on fd 3.
// Arguments: grace (ns), the harness's pid, the program, its argv.
// Signals: SIGTERM starts a graceful stop (SIGTERM to every descendant,
// SIGKILL after the grace); SIGHUP does the same if the harness has died.
func supervise(args []string) int {
	report := os.NewFile(3, "status")
	say := func(format string, a ...any) { fmt.Fprintf(report, format+"\n", a...) }
	if len(args) < 4 {
		say("start-error supervisor: want grace, parent pid, program and argv")
		return 127
	}
	graceNs, err1 := strconv.ParseInt(args[0], 10, 64)
	parent, err2 := strconv.Atoi(args[1])
	if err1 != nil || err2 != nil || graceNs <= 0 {
		say("start-error supervisor: bad grace %q or parent %q", args[0], args[1])
		return 127
	}
	grace := time.Duration(graceNs)
	path, argv := args[2], args[3:]
	syscall.CloseOnExec(3) // the command must not hold the status pipe open

	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		say("note cannot become a child subreaper (%v): children that leave the process group may survive", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGCHLD)
	// The harness died before Pdeathsig was in place: do not start anything.
	if os.Getppid() != parent {
		say("start-error the harness (pid %d) is gone", parent)
		return 127
	}

	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   os.Environ(), // exactly what the harness gave the supervisor
		Files: []uintptr{0, 1, 2},
		// Its own group inside the supervisor's session: the group is what
		// a "kill 0" by the agent reaches, never the supervisor.
		Sys: &syscall.SysProcAttr{Setpgid: true},
	})
	if err != nil {
		say("start-error %v", err)
		return 127
	}
	say("pid %d", pid)

	var (
		cmdWS     syscall.WaitStatus
		cmdDone   bool
		stopping  bool      // SIGTERM sent, waiting for the grace
		killAt    time.Time // when the grace runs out
		killing   bool      // SIGKILL to everything left, until nothing is
		killStart time.Time
		strays    = map[int]bool{}
		killed    bool
	)
	self := os.Getpid()
	sweepKill := func() {
		live := descendants(self) // before the group kill, so strays are counted
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		for _, p := range live {
			if cmdDone {
				strays[p] = true
			}
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	startKilling := func() {
		if !killing {
			killing, killStart = true, time.Now()
		}
		sweepKill()
	}
	finish := func(code int) int {
		if len(strays) > 0 {
			say("strays %d", len(strays))
		}
		if killed {
			say("killed")
		}
		switch {
		case !cmdDone:
			say("signal %d", int(syscall.SIGKILL))
		case cmdWS.Signaled():
			say("signal %d", int(cmdWS.Signal()))
			if code < 0 {
				code = 128 + int(cmdWS.Signal())
			}
		default:
			say("exit %d", cmdWS.ExitStatus())
			if code < 0 {
				code = cmdWS.ExitStatus()
			}
		}
		return code
	}
	// reap collects every child that has exited (the command, and orphans
	// re-parented here) without blocking. It reports true once nothing at
	// all is left below the supervisor (ECHILD).
	reap := func() bool {
		for {
			var ws syscall.WaitStatus
			p, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			switch {
			case err == syscall.EINTR:
				continue
			case err != nil:
				return true
			case p <= 0:
				return false
			}
			if p == pid {
				cmdWS, cmdDone = ws, true
				// The step is over: whatever it left running goes now,
				// unless a stop is under way, whose grace is for every
				// process (a child may still be saving its work).
				if !stopping {
					startKilling()
				}
			}
		}
	}
	for {
		// A SIGCHLD may have come before Notify saw it, or two may have
		// merged: reaping on every wake-up covers both.
		if reap() {
			return finish(-1)
		}
		var tick <-chan time.Time
		if stopping || killing {
			tick = time.After(20 * time.Millisecond)
		}
		select {
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGCHLD:
			case sig == syscall.SIGHUP && os.Getppid() == parent:
				// Pdeathsig from an exiting harness thread, not the harness.
			default:
				// One SIGTERM to each process (not also to the group, so a
				// trap does not run twice); the grace starts at the first.
				for _, p := range descendants(self) {
					_ = syscall.Kill(p, syscall.SIGTERM)
				}
				if !stopping {
					stopping, killAt = true, time.Now().Add(grace)
				}
			}
		case now := <-tick:
			switch {
			case stopping && !killing && now.After(killAt):
				killed = true
				startKilling()
			case killing && now.Sub(killStart) > 10*time.Second:
				// Something will not die (uninterruptible sleep); report
				// rather than hang the harness.
				say("note processes still alive 10s after SIGKILL: %v", descendants(self))
				return finish(1)
			case killing:
				sweepKill()
			}
		}
	}
}
