//go:build !linux

package proc

import "syscall"

// supervisorArg0 is unused where there is no supervisor.
const supervisorArg0 = ""

// Without PR_SET_CHILD_SUBREAPER commands run directly in their own session
// and only their process group is ended.
func supervisorExecutable() (string, bool) { return "", false }

func setParentDeathSignal(*syscall.SysProcAttr) {}

func groupSize(int) int { return 0 }
