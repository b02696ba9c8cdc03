package load

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestStatPPID(t *testing.T) {
	for stat, want := range map[string]int{
		"42 (uwsgi) S 7 42 42 0 -1":      7,
		"43 (a b) c (d)) R 1 43 43 0 -1": 1,
		"44 (x) S":                       -1,
		"garbage":                        -1,
	} {
		got, ok := statPPID([]byte(stat))
		if (want == -1) == ok || (ok && got != want) {
			t.Errorf("statPPID(%q) = %d, %v; want %d", stat, got, ok, want)
		}
	}
}

// fakeProc writes a /proc-like tree: pid -> (ppid, rss KiB, hwm KiB).
func fakeProc(t *testing.T, procs map[int][3]int) string {
	dir := t.TempDir()
	for pid, p := range procs {
		d := filepath.Join(dir, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := strconv.Itoa(pid) + " (proc " + strconv.Itoa(pid) + ") S " + strconv.Itoa(p[0]) + " 1 1 0\n"
		status := "Name:\tx\nVmPeak:\t 999 kB\nVmHWM:\t " + strconv.Itoa(p[2]) + " kB\nVmRSS:\t " + strconv.Itoa(p[1]) + " kB\n"
		os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644)
		os.WriteFile(filepath.Join(d, "status"), []byte(status), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "self"), 0o755) // non-numeric entries are skipped
	return dir
}

func TestMemSamplerSumsTheTree(t *testing.T) {
	proc := fakeProc(t, map[int][3]int{
		100: {1, 1000, 1500}, // the server
		101: {100, 200, 300}, // its workers
		102: {100, 300, 400},
		103: {101, 50, 60},   // a grandchild
		200: {1, 9999, 9999}, // unrelated
	})
	s, err := startMemSampler(proc, 100, 10*time.Millisecond, true)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(30 * time.Millisecond)
	r := s.Stop()
	if r.Processes != 4 || r.StartRSS != 1550 || r.EndRSS != 1550 || r.PeakRSS != 1550 || r.HWM != 2260 || r.Samples < 2 {
		t.Errorf("report %+v", r)
	}
	if !r.Reset { // clear_refs is a plain file here, so the write succeeds
		t.Errorf("peak not reset: %s", r.Error)
	}
	if _, err := startMemSampler(proc, 999, 0, false); err == nil {
		t.Error("sampling a missing process succeeded")
	}
}

func TestMemSamplerSelf(t *testing.T) {
	s, err := StartMemSampler(os.Getpid(), 5*time.Millisecond, false)
	if err != nil {
		t.Fatal(err)
	}
	r := s.Stop()
	if r.PeakRSS <= 0 || r.HWM < r.EndRSS || r.Processes < 1 {
		t.Errorf("own memory %+v", r)
	}
}

func TestStatTimes(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime cutime cstime ...
	stat := "7 (post gres) S 1 7 7 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 1 0 99"
	got, ok := statTimes([]byte(stat))
	if !ok || got != [4]int64{250, 50, 30, 20} {
		t.Errorf("statTimes = %v, %v; want [250 50 30 20]", got, ok)
	}
	if _, ok := statTimes([]byte("7 (x) S 1 7")); ok {
		t.Error("statTimes of a short line succeeded")
	}
}

// TestMemSamplerCPU checks the CPU of a tree between start and stop: the
// root's own time, and the tree's, which keeps counting a child that
// exited (its time moves into its parent's reaped-children fields).
func TestMemSamplerCPU(t *testing.T) {
	dir := t.TempDir()
	write := func(pid, ppid int, utime, stime, cutime, cstime int) {
		d := filepath.Join(dir, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := fmt.Sprintf("%d (p) S %d 1 1 0 -1 0 0 0 0 0 %d %d %d %d 20 0 1 0", pid, ppid, utime, stime, cutime, cstime)
		os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644)
		os.WriteFile(filepath.Join(d, "status"), []byte("VmRSS:\t 1 kB\nVmHWM:\t 1 kB\n"), 0o644)
	}
	write(100, 1, 1000, 100, 0, 0) // the server
	write(101, 100, 500, 50, 0, 0) // its database
	write(102, 101, 40, 10, 0, 0)  // a backend
	s, err := startMemSampler(dir, 100, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	write(100, 1, 1100, 150, 0, 0)   // +150 ticks
	write(101, 100, 600, 60, 70, 30) // +110 own; the backend (+50 more before it exited) reaped: +100
	os.RemoveAll(filepath.Join(dir, "102"))
	r := s.Stop()
	if r.CPURoot != 1.5 || r.CPUTree != 1.5+1.1+1.0-0.5 {
		t.Errorf("CPU root %v s, tree %v s; want 1.5 and 3.1", r.CPURoot, r.CPUTree)
	}
}

// TestMemSamplerListsTheTreeAgain: between listings only the known
// processes are read; a process born after the start is counted once the
// tree is listed again, and always by the last sample.
func TestMemSamplerListsTheTreeAgain(t *testing.T) {
	proc := fakeProc(t, map[int][3]int{100: {1, 1000, 1000}})
	s, err := startMemSampler(proc, 100, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	fakeChild := func(pid, rss int) {
		d := filepath.Join(proc, strconv.Itoa(pid))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, "stat"), []byte(fmt.Sprintf("%d (w) S 100 1 1 0\n", pid)), 0o644)
		os.WriteFile(filepath.Join(d, "status"), []byte(fmt.Sprintf("VmHWM:\t %d kB\nVmRSS:\t %d kB\n", rss, rss)), 0o644)
	}
	fakeChild(101, 500)
	if rss, _, n := s.sample(false); n != 1 || rss != 1000 {
		t.Errorf("sample between listings: %d processes, %d KiB; want the known 1, 1000", n, rss)
	}
	s.treeAt = time.Now().Add(-treeEvery)
	if rss, _, n := s.sample(false); n != 2 || rss != 1500 {
		t.Errorf("sample after treeEvery: %d processes, %d KiB; want 2, 1500", n, rss)
	}
	fakeChild(102, 100)
	if r := s.Stop(); r.Processes != 3 || r.EndRSS != 1600 || r.PeakRSS != 1600 {
		t.Errorf("last sample: %+v", r)
	}
}

// TestMemSamplerTreeByChildren: the kernel's children lists give the same
// tree as the scan of every process, here a shell this test starts and
// its child. (Not this test's own process: its other children, the
// throwaway PostgreSQL's processes, come and go between two listings.)
func TestMemSamplerTreeByChildren(t *testing.T) {
	self := os.Getpid()
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", self))
	if len(tasks) == 0 {
		t.Skip("no /proc/PID/task/TID/children on this kernel (the scan is tested with a fake /proc)")
	}
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	s := &MemSampler{proc: "/proc", pid: cmd.Process.Pid}
	var byChildren []int
	waitFor(t, "the child", func() bool {
		var ok bool
		byChildren, ok = s.treeByChildren()
		if !ok {
			t.Fatal("children lists exist but were not used")
		}
		return len(byChildren) >= 2
	})
	byScan := s.treeByScan()
	slices.Sort(byChildren)
	slices.Sort(byScan)
	if !slices.Equal(byChildren, byScan) || !slices.Contains(byChildren, cmd.Process.Pid) {
		t.Errorf("tree by children %v, by scan %v (child %d)", byChildren, byScan, cmd.Process.Pid)
	}
	if got := s.tree(); len(got) != len(byChildren) || s.noChildren {
		t.Errorf("tree() = %v, noChildren %v", got, s.noChildren)
	}
	s.pid = 1 << 30 // no such process
	if out, ok := s.treeByChildren(); !ok || out != nil {
		t.Errorf("tree of a missing process: %v, %v", out, ok)
	}
}

// TestMemSamplerPause: CPU is counted only while the sampler is not
// paused; the report says over how long, and how long was left out.
func TestMemSamplerPause(t *testing.T) {
	dir := t.TempDir()
	ticks := func(root, child int) {
		for pid, v := range map[int][2]int{100: {1, root}, 101: {100, child}} {
			d := filepath.Join(dir, strconv.Itoa(pid))
			os.MkdirAll(d, 0o755)
			stat := fmt.Sprintf("%d (p) S %d 1 1 0 -1 0 0 0 0 0 %d 0 0 0 20 0 1 0", pid, v[0], v[1])
			os.WriteFile(filepath.Join(d, "stat"), []byte(stat), 0o644)
			os.WriteFile(filepath.Join(d, "status"), []byte("VmRSS:\t 1 kB\nVmHWM:\t 1 kB\n"), 0o644)
		}
	}
	ticks(1000, 500)
	s, err := startMemSampler(dir, 100, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	s.Pause() // before any measured phase
	ticks(1100, 600)
	s.Resume()
	ticks(1130, 610) // counted: 30 + 10
	time.Sleep(20 * time.Millisecond)
	s.Pause()
	s.Pause() // no-op
	ticks(1500, 900)
	time.Sleep(20 * time.Millisecond)
	s.Resume()
	s.Resume()       // no-op
	ticks(1510, 905) // counted: 10 + 5
	r := s.Stop()
	if r.CPURoot != 0.4 || r.CPUTree != 0.55 {
		t.Errorf("CPU root %v s, tree %v s; want 0.4 and 0.55 (the unpaused windows only)", r.CPURoot, r.CPUTree)
	}
	if r.CPUCounted < 0.02 || r.CPUExcluded < 0.02 {
		t.Errorf("counted %v s, excluded %v s; want each at least the 20 ms slept", r.CPUCounted, r.CPUExcluded)
	}
	var nilSampler *MemSampler
	nilSampler.Pause()
	nilSampler.Resume()

	// Never paused: the fields stay zero, as before.
	s, err = startMemSampler(dir, 100, time.Hour, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Stop(); r.CPUCounted != 0 || r.CPUExcluded != 0 {
		t.Errorf("unpaused report %+v", r)
	}
}
