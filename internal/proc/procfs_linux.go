package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"sync"
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
// It reads the kernel's per-thread children lists, so it costs in proportion
// to the subtree, not to every process on the machine; without them
// (CONFIG_PROC_CHILDREN off) it scans all of /proc.
func descendants(root int) []int {
	if !haveChildrenFiles() {
		return descendantsByScan(root)
	}
	var out []int
	seen := map[int]bool{root: true}
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range childrenOf(p) {
			if seen[c] {
				continue
			}
			seen[c] = true
			queue = append(queue, c)
			if !isZombie(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

var childrenFiles = sync.OnceValue(func() bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d/children", os.Getpid()))
	return err == nil
})

func haveChildrenFiles() bool { return childrenFiles() }

// childrenOf lists pid's children from the children file of each of its
// threads (a child belongs to the thread that forked it, or to any thread of
// a subreaper it was re-parented to). A process that is gone has none.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // gone
	}
	i := bytes.LastIndexByte(b, ')')
	f := bytes.Fields(b[i+1:])
	return i < 0 || len(f) == 0 || string(f[0]) == "Z" || string(f[0]) == "X"
}

// descendantsByScan is descendants from a scan of every process.
func descendantsByScan(root int) []int {
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
