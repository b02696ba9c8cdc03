package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MemReport is the memory of a server process and its descendants (uwsgi
// workers, for Placement) around a run, from /proc/PID/status. Sizes are
// in KiB.
type MemReport struct {
	PID       int `json:"pid"`
	Processes int `json:"processes"` // in the tree at the last sample
	// PeakRSS is the highest sum of VmRSS over the tree seen in one sample.
	PeakRSS int `json:"peak_rss_kib"`
	// HWM is the sum over the tree of each process's VmHWM (its own peak
	// RSS) at the end: an upper bound of the tree's true peak that misses
	// nothing between samples. It covers the process's whole life unless
	// the peak was reset at the start (ResetPeak).
	HWM      int  `json:"hwm_kib"`
	StartRSS int  `json:"start_rss_kib"`
	EndRSS   int  `json:"end_rss_kib"`
	Samples  int  `json:"samples"`
	Reset    bool `json:"peak_reset"` // VmHWM was reset at the start
	// CPU is the CPU time (user and system) the tree used between start
	// and stop, in seconds: the process itself (CPURoot) and in all
	// (CPUTree, which counts descendants that exited meanwhile through
	// their parents' reaped-children times).
	CPURoot float64 `json:"cpu_root_s"`
	CPUTree float64 `json:"cpu_tree_s"`
	// CPUCounted and CPUExcluded are set when the run paused the CPU
	// count (Pause, Resume): the wall-clock seconds over which CPU was
	// counted, and those left out. Both zero: CPU covers start to stop.
	CPUCounted  float64 `json:"cpu_counted_s,omitempty"`
	CPUExcluded float64 `json:"cpu_excluded_s,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// MemSampler samples a process tree's memory until stopped.
type MemSampler struct {
	proc     string // /proc, replaced in tests
	pid      int
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}
	mu       sync.Mutex
	rep      MemReport
	// root0 and tree0 are the CPU ticks at the start of the current
	// counting window (see cpu, Pause); rootSum and treeSum add up the
	// windows already closed, counted and excluded their wall time.
	root0, tree0     int64
	rootSum, treeSum int64
	windowAt         time.Time
	counted          time.Duration
	excluded         time.Duration
	everPaused       bool
	paused           bool
	// procMu serialises the reads of the process tree (tree, sample, cpu),
	// which the sampling loop and Pause or Resume may do at once.
	procMu sync.Mutex
	// pids is the tree as last listed, at treeAt (see sample).
	pids   []int
	treeAt time.Time
	// noChildren is set once the kernel was found without children
	// files (see tree).
	noChildren bool
}

// treeEvery is how often sampling lists the tree again; in between, only
// the known processes' status is read. Listing it by reading every
// process's stat cost the load tool about a tenth of its CPU when done at
// every sample (two trees, ten times a second, on a machine of a few
// hundred processes). A process younger than this may miss a few samples;
// the first and last samples always list the tree.
const treeEvery = time.Second

// StartMemSampler starts sampling pid and its descendants every interval
// (default 100ms). With resetPeak it first writes "5" to each process's
// clear_refs, which resets VmHWM to the current RSS (Linux 4.0+, needs
// permission over the process), so HWM covers only the run.
func StartMemSampler(pid int, interval time.Duration, resetPeak bool) (*MemSampler, error) {
	return startMemSampler("/proc", pid, interval, resetPeak)
}

func startMemSampler(proc string, pid int, interval time.Duration, resetPeak bool) (*MemSampler, error) {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if pid <= 1 {
		return nil, fmt.Errorf("memory: pid %d is not a server process", pid)
	}
	s := &MemSampler{proc: proc, pid: pid, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	s.rep.PID = pid
	if _, err := os.Stat(filepath.Join(proc, strconv.Itoa(pid), "status")); err != nil {
		return nil, fmt.Errorf("memory: no process %d: %w", pid, err)
	}
	if resetPeak {
		s.rep.Reset = true
		for _, p := range s.tree() {
			if err := os.WriteFile(filepath.Join(proc, strconv.Itoa(p), "clear_refs"), []byte("5"), 0); err != nil {
				s.rep.Reset = false
				s.rep.Error = "resetting peak: " + err.Error()
			}
		}
	}
	rss, _, n := s.sample(true)
	s.rep.StartRSS, s.rep.PeakRSS, s.rep.Processes, s.rep.Samples = rss, rss, n, 1
	s.root0, s.tree0 = s.cpu()
	s.windowAt = time.Now()
	go s.loop()
	return s, nil
}

func (s *MemSampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			rss, _, n := s.sample(false)
			s.mu.Lock()
			if n > 0 {
				s.rep.Samples++
				s.rep.PeakRSS = max(s.rep.PeakRSS, rss)
			}
			s.mu.Unlock()
		}
	}
}

// Pause stops counting CPU time until Resume; memory sampling goes on.
// It lets a run count only its measured phases (claims in rounds: not the
// releases between rounds, nor the checks). Pausing a paused sampler, or
// a nil one, does nothing. Safe to call while sampling.
func (s *MemSampler) Pause() {
	if s == nil {
		return
	}
	root, tree := s.cpu()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paused {
		return
	}
	s.paused, s.everPaused = true, true
	s.rootSum += root - s.root0
	s.treeSum += tree - s.tree0
	s.counted += now.Sub(s.windowAt)
	s.windowAt = now
}

// Resume counts CPU time again after Pause; resuming a sampler that is
// not paused, or a nil one, does nothing.
func (s *MemSampler) Resume() {
	if s == nil {
		return
	}
	root, tree := s.cpu()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.paused {
		return
	}
	s.paused = false
	s.root0, s.tree0 = root, tree
	s.excluded += now.Sub(s.windowAt)
	s.windowAt = now
}

// Stop ends sampling and returns the report.
func (s *MemSampler) Stop() *MemReport {
	close(s.stop)
	<-s.done
	rss, hwm, n := s.sample(true)
	root, tree := s.cpu()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rep
	rootSum, treeSum := s.rootSum, s.treeSum
	counted, excluded := s.counted, s.excluded
	if s.paused {
		excluded += now.Sub(s.windowAt)
	} else {
		rootSum += root - s.root0
		treeSum += tree - s.tree0
		counted += now.Sub(s.windowAt)
	}
	r.CPURoot = float64(rootSum) / clockTicks
	r.CPUTree = float64(treeSum) / clockTicks
	if s.everPaused {
		r.CPUCounted, r.CPUExcluded = counted.Seconds(), excluded.Seconds()
	}
	if n > 0 {
		r.EndRSS, r.HWM, r.Processes = rss, hwm, n
		r.PeakRSS = max(r.PeakRSS, rss)
	} else if r.Error == "" {
		r.Error = "process gone before the end"
	}
	return &r
}

// sample sums VmRSS and VmHWM over the tree, listed afresh when list is
// set or the last listing is older than treeEvery.
func (s *MemSampler) sample(list bool) (rss, hwm, n int) {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	if list || s.pids == nil || time.Since(s.treeAt) >= treeEvery {
		s.pids, s.treeAt = s.tree(), time.Now()
	}
	for _, p := range s.pids {
		b, err := os.ReadFile(filepath.Join(s.proc, strconv.Itoa(p), "status"))
		if err != nil {
			continue // exited between listing and reading
		}
		r, h := statusKiB(b, "VmRSS:"), statusKiB(b, "VmHWM:")
		rss += r
		hwm += h
		n++
	}
	return rss, hwm, n
}

// clockTicks is the unit of the times in /proc/PID/stat (USER_HZ), 100
// on every Linux architecture Berth runs on.
const clockTicks = 100

// cpu returns the CPU ticks (user and system) of the process and of its
// tree, where the tree also counts the children each process reaped
// (cutime, cstime), so that descendants that exit stay counted.
func (s *MemSampler) cpu() (root, tree int64) {
	s.procMu.Lock()
	defer s.procMu.Unlock()
	for _, p := range s.tree() {
		b, err := os.ReadFile(filepath.Join(s.proc, strconv.Itoa(p), "stat"))
		if err != nil {
			continue
		}
		t, ok := statTimes(b)
		if !ok {
			continue
		}
		if p == s.pid {
			root = t[0] + t[1]
		}
		tree += t[0] + t[1] + t[2] + t[3]
	}
	return root, tree
}

// statTimes parses utime, stime, cutime and cstime (fields 14 to 17) out
// of /proc/PID/stat.
func statTimes(stat []byte) (t [4]int64, ok bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return t, false
	}
	f := strings.Fields(string(stat[i+1:]))
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 15 {
		return t, false
	}
	for k := range t {
		v, err := strconv.ParseInt(f[11+k], 10, 64)
		if err != nil {
			return t, false
		}
		t[k] = v
	}
	return t, true
}

// statusKiB reads a "Key:   123 kB" line of /proc/PID/status.
func statusKiB(status []byte, key string) int {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				v, _ := strconv.Atoi(f[0])
				return v
			}
		}
	}
	return 0
}

// tree lists s.pid and its descendants: from the kernel's lists of each
// thread's children (/proc/PID/task/TID/children, Linux 3.5+ with
// CONFIG_PROC_CHILDREN), which costs reads in proportion to the tree, or,
// where those lists do not exist, by reading every process's parent from
// /proc/*/stat.
func (s *MemSampler) tree() []int {
	if !s.noChildren {
		out, ok := s.treeByChildren()
		if ok {
			return out
		}
		s.noChildren = true
	}
	return s.treeByScan()
}

// treeByChildren walks the tree down from s.pid through the children
// files; ok is false when the kernel has none.
func (s *MemSampler) treeByChildren() (out []int, ok bool) {
	out = []int{s.pid}
	for i := 0; i < len(out); i++ {
		dir := filepath.Join(s.proc, strconv.Itoa(out[i]), "task")
		tasks, err := os.ReadDir(dir)
		if err != nil {
			if i == 0 {
				if _, serr := os.Stat(filepath.Join(s.proc, strconv.Itoa(s.pid))); serr != nil {
					return nil, true // the process is gone
				}
				return nil, false
			}
			continue // exited since its parent listed it
		}
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join(dir, task.Name(), "children"))
			if errors.Is(err, fs.ErrNotExist) && i == 0 {
				if _, serr := os.Stat(filepath.Join(dir, task.Name())); serr == nil {
					return nil, false // the task is there, its children file is not
				}
			}
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					out = append(out, pid)
				}
			}
		}
	}
	return out, true
}

// treeByScan lists the tree from every process's parent in /proc/*/stat.
func (s *MemSampler) treeByScan() []int {
	entries, err := os.ReadDir(s.proc)
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.proc, e.Name(), "stat"))
		if err != nil {
			continue
		}
		if ppid, ok := statPPID(b); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	if _, err := os.Stat(filepath.Join(s.proc, strconv.Itoa(s.pid))); err != nil {
		return nil
	}
	out := []int{s.pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// statPPID parses the parent pid out of /proc/PID/stat ("pid (comm) state
// ppid ..."; comm may contain spaces and parentheses, so parse after the
// last ')').
func statPPID(stat []byte) (int, bool) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
