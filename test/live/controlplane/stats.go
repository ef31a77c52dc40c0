package controlplane

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// withArgs appends a process's extra flags (APIServerArgs, CrossplaneArgs)
// to the harness's own: the last of a flag given twice wins.
func withArgs(extra []string, args ...string) []string {
	return append(args, extra...)
}

// PIDs returns the process ID of every running process of the control
// plane, by process name (etcd, kube-apiserver, kube-controller-manager,
// crossplane, function), for ProcessStatsOf. A process's changes when it is
// restarted.
func (e *Environment) PIDs() map[string]int {
	out := map[string]int{}
	e.mu.Lock()
	procs := e.procs
	e.mu.Unlock()
	for _, p := range procs {
		if p.exited() == nil && p.cmd.Process != nil {
			out[p.name] = p.cmd.Process.Pid
		}
	}
	if e.function != nil {
		e.function.mu.Lock()
		p := e.function.proc
		e.function.mu.Unlock()
		if p != nil && p.exited() == nil && p.cmd.Process != nil {
			out["function"] = p.cmd.Process.Pid
		}
	}
	return out
}

// ProcessStats is what Linux accounts to a process.
type ProcessStats struct {
	// CPU is the user and system time the process has used since it
	// started (its threads included, its children not).
	CPU time.Duration
	// RSS is its resident set now (VmRSS), PeakRSS the largest it has been
	// (VmHWM), in bytes.
	RSS, PeakRSS int64
}

// ProcessStatsOf reads a process's CPU time from /proc/<pid>/stat and its
// resident set from /proc/<pid>/status.
func ProcessStatsOf(pid int) (ProcessStats, error) {
	var s ProcessStats
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat") //nolint:gosec // A path under /proc.
	if err != nil {
		return s, errors.Wrapf(err, "cannot read the CPU time of process %d", pid)
	}
	// The command, field 2, is in parentheses and may hold spaces: the
	// fields are counted from the last ')'. utime and stime are fields 14
	// and 15, so the 12th and 13th after it.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, errors.Errorf("process %d: cannot parse %s/stat", pid, dir)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 13 {
		return s, errors.Errorf("process %d: cannot parse %s/stat", pid, dir)
	}
	for _, f := range fields[11:13] {
		ticks, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return s, errors.Wrapf(err, "process %d: cannot parse %s/stat", pid, dir)
		}
		s.CPU += time.Duration(ticks) * clockTick
	}
	status, err := os.ReadFile(dir + "/status") //nolint:gosec // A path under /proc.
	if err != nil {
		return s, errors.Wrapf(err, "cannot read the memory of process %d", pid)
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		f := strings.Fields(v) // "12345 kB"
		if len(f) == 0 {
			continue
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return s, errors.Wrapf(err, "process %d: cannot parse %s in %s/status", pid, k, dir)
		}
		if k == "VmRSS" {
			s.RSS = kb << 10
		} else {
			s.PeakRSS = kb << 10
		}
	}
	return s, nil
}
