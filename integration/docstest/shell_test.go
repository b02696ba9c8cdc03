package docstest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/proctest"
)

// unitTimeout bounds one command of a document; only a hung command
// reaches it.
const unitTimeout = 2 * time.Minute

// A shell is one bash process that runs a document's commands in order,
// so that what one sets (variables, functions, aliases, the directory) is
// there for the next, as in a reader's terminal. Each command is sourced
// from a file of its own with its output (stdout and stderr together)
// sent to another; bash answers on its stdout when it is done.
type shell struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	done   chan string // the lines bash writes on its stdout
	stderr *proctest.Buffer
	units  string // directory of the command and output files
	n      int
}

// startShell starts bash in dir with env, and stops it when the test
// ends. Failed commands of a unit (the ERR trap) are appended to the file
// err in the units directory.
func startShell(t *testing.T, dir string, env []string) *shell {
	t.Helper()
	units := t.TempDir()
	s := &shell{units: units, done: make(chan string, 16), stderr: &proctest.Buffer{}}
	s.cmd = exec.Command("bash", "--noprofile", "--norc")
	s.cmd.Dir, s.cmd.Env, s.cmd.Stderr = dir, env, s.stderr
	// Its own process group, so that what a command leaves running in
	// the background is stopped with it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var err error
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("bash: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.done <- sc.Text()
		}
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.stdin.Close()
		s.kill()
		_ = s.cmd.Wait()
	})
	// Aliases as in an interactive shell; a command of a unit file that
	// fails is recorded (not those of the runner's own lines).
	setup := fmt.Sprintf(`shopt -s expand_aliases
trap '__doc_s=$?; case "${BASH_SOURCE[0]:-}" in %[1]s/unit-*) printf "line %%s: exit %%s: %%s\n" "$LINENO" "$__doc_s" "$BASH_COMMAND" >> %[1]s/err;; esac' ERR
`, units)
	if _, err := io.WriteString(s.stdin, setup); err != nil {
		t.Fatal(err)
	}
	return s
}

// result is what one unit did.
type result struct {
	output   string   // stdout and stderr, interleaved
	failures []string // commands that exited non-zero
	status   int      // the unit's exit status
}

// run runs script as the next unit and waits for it.
func (s *shell) run(script string) (result, error) {
	s.n++
	unit := filepath.Join(s.units, fmt.Sprintf("unit-%d.sh", s.n))
	out := filepath.Join(s.units, fmt.Sprintf("out-%d", s.n))
	errFile := filepath.Join(s.units, "err")
	if err := os.WriteFile(unit, []byte(script), 0o600); err != nil {
		return result{}, err
	}
	if err := os.WriteFile(errFile, nil, 0o600); err != nil {
		return result{}, err
	}
	// $? is given back after the marker, for a document's `echo $?`.
	line := fmt.Sprintf(". %s > %s 2>&1 < /dev/null; __doc_rc=$?; echo \"__doc_done__ %d $__doc_rc\"; (exit $__doc_rc)\n", unit, out, s.n)
	if _, err := io.WriteString(s.stdin, line); err != nil {
		return result{}, fmt.Errorf("bash is gone: %v\n%s", err, s.stderr.String())
	}
	var r result
	timer := time.NewTimer(unitTimeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-s.done:
			if !ok {
				return result{}, fmt.Errorf("bash exited (a command ran exit?)\n%s", s.stderr.String())
			}
			rest, found := strings.CutPrefix(l, fmt.Sprintf("__doc_done__ %d ", s.n))
			if !found {
				continue
			}
			_, _ = fmt.Sscan(rest, &r.status)
			b, err := os.ReadFile(out)
			if err != nil {
				return result{}, err
			}
			r.output = string(b)
			failed, err := os.ReadFile(errFile)
			if err != nil {
				return result{}, err
			}
			r.failures = splitLines(string(failed))
			return r, nil
		case <-timer.C:
			s.kill()
			return result{}, fmt.Errorf("still running after %v", unitTimeout)
		}
	}
}

// kill stops bash and every process of its group.
func (s *shell) kill() { _ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) }
