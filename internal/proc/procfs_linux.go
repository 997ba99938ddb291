package proc

import (
	"bytes"
	"os"
	"strconv"
)

// procEntry is what /proc/PID/stat says about one process.
type procEntry struct {
	pid, ppid, pgid int
	zombie          bool
}

// scanProcs reads every process's parent and group from /proc. Processes
// that vanish during the scan are skipped.
func scanProcs() []procEntry {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	out := make([]procEntry, 0, len(names))
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + n + "/stat")
		if err != nil {
			continue
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 {
			continue
		}
		ppid, err1 := strconv.Atoi(string(f[1]))
		pgid, err2 := strconv.Atoi(string(f[2]))
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, procEntry{pid: pid, ppid: ppid, pgid: pgid, zombie: string(f[0]) == "Z" || string(f[0]) == "X"})
	}
	return out
}

// descendants lists the live processes below root, parents before children.
func descendants(root int) []int {
	procs := scanProcs()
	children := map[int][]procEntry{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p)
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !c.zombie {
				out = append(out, c.pid)
			}
			queue = append(queue, c.pid)
		}
	}
	return out
}

// groupSize counts the live processes in process group pgid.
func groupSize(pgid int) int {
	n := 0
	for _, p := range scanProcs() {
		if p.pgid == pgid && !p.zombie {
			n++
		}
	}
	return n
}
