package proctest

import (
	"bytes"
	"net"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FreePorts returns n distinct loopback ports that are free right now.
func FreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// StopGroup stops the process group pgid (a server started with Setpgid,
// whose leader's Wait delivers on done): SIGTERM, then SIGKILL if the
// leader has not exited after grace. Then it kills what is left of the
// group, as workers may outlive their leader for a moment.
func StopGroup[T any](pgid int, done <-chan T, grace time.Duration) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(grace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// ProcessCPU is this process's CPU time so far (user and system), for
// benchmarks that report CPU per operation.
func ProcessCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Proc is a started process whose exit is watched.
type Proc struct {
	Cmd *exec.Cmd
	// Exited is closed when the process has exited; Err is then what
	// its Wait returned.
	Exited chan struct{}
	Err    error
}

// Start starts cmd and watches for its exit.
func Start(cmd *exec.Cmd) (*Proc, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Proc{Cmd: cmd, Exited: make(chan struct{})}
	go func() {
		p.Err = cmd.Wait()
		close(p.Exited)
	}()
	return p, nil
}

// Stop sends the process SIGTERM and waits for it to exit; after grace it
// kills it, waits, and reports that it had to.
func (p *Proc) Stop(grace time.Duration) (killed bool) {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited:
		return false
	case <-time.After(grace):
		_ = p.Cmd.Process.Kill()
		<-p.Exited
		return true
	}
}

// Buffer is a bytes.Buffer safe for concurrent writes (a process's
// output, a logger's handler) and reads (the test).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
