package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger/ledgertest"
)

// Bounds that only a hung process reaches; nothing asserts on time.
const (
	startTimeout   = 2 * time.Minute
	stopTimeout    = 30 * time.Second
	requestTimeout = 2 * time.Minute
)

// buildBerthd builds cmd/berthd into the test's temporary directory (the
// build cache makes every build after the first a link).
func buildBerthd(t *testing.T) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		goTool = "go"
	}
	bin := filepath.Join(t.TempDir(), "berthd")
	cmd := exec.Command(goTool, "build", "-o", bin, "github.com/berthd/berth/cmd/berthd")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build berthd: %v\n%s", err, out)
	}
	return bin
}

// berthd is a running berthd process.
type berthd struct {
	url    string
	client *http.Client
	stderr *proctest.Buffer
	proc   *os.Process
	exited chan struct{} // closed when the process has exited
	// stop sends SIGTERM and waits for the exit (as the test's end
	// does); nil for a process started elsewhere.
	stop func()

	dumpOnce sync.Once
}

// dumpGoroutines makes berthd print its goroutines and exit (SIGQUIT), so
// that the log of a test that hung shows where. It waits for the exit.
func (b *berthd) dumpGoroutines() {
	if b.proc == nil {
		return // started elsewhere (remoteBerthd)
	}
	b.dumpOnce.Do(func() {
		_ = b.proc.Signal(syscall.SIGQUIT)
		select {
		case <-b.exited:
		case <-time.After(stopTimeout):
		}
	})
}

// startBerthd runs the berthd binary on a fresh ledgertest database and a
// free loopback port, waits until GET / answers, and stops it (SIGTERM)
// when the test ends.
func startBerthd(t *testing.T) *berthd {
	t.Helper()
	bin := buildBerthd(t)
	dbURL := ledgertest.NewDB(t)
	for attempt := 1; ; attempt++ {
		b, err := tryStartBerthd(t, bin, dbURL)
		if err == nil {
			return b
		}
		// Another process may have taken the port between our probe and
		// berthd's bind; try another one.
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
}

// tryStartBerthd runs the berthd binary on dbURL and a free loopback
// port, as startBerthdAt does; args are further flags of berthd serve
// (a repeated flag's last value counts).
func tryStartBerthd(t *testing.T, bin, dbURL string, args ...string) (*berthd, error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	return startBerthdAt(t, bin, dbURL, addr, args...)
}

// startBerthdAt runs the berthd binary on dbURL listening on addr, with
// args as further flags, waits until GET / answers, and stops it
// (SIGTERM) when the test ends.
func startBerthdAt(t *testing.T, bin, dbURL, addr string, args ...string) (*berthd, error) {
	cmd := exec.Command(bin, append([]string{"serve", "--listen", addr, "--database-url", dbURL, "--log-level", "warn"}, args...)...)
	// The test's environment must not configure berthd.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "BERTH_") && k != "DATABASE_URL" && k != "PORT" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	stderr := &proctest.Buffer{}
	cmd.Stderr = stderr
	cmd.Stdout = stderr
	proc, err := proctest.Start(cmd)
	if err != nil {
		return nil, err
	}
	exited := proc.Exited
	stop := func() {
		if proc.Stop(stopTimeout) {
			t.Errorf("berthd did not stop within %v of SIGTERM; killed\n%s", stopTimeout, stderr)
		}
	}
	b := &berthd{url: "http://" + addr, client: &http.Client{Timeout: requestTimeout}, stderr: stderr, proc: cmd.Process,
		exited: exited, stop: stop}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := b.client.Get(b.url + "/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("berthd exited before serving (%v):\n%s", proc.Err, stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("berthd did not answer GET / within %v:\n%s", startTimeout, stderr)
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("berthd's log:\n%s", stderr)
		}
	})
	return b, nil
}

// freeLoopbackAddr returns a 127.0.0.1 address with a port free right now.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// call sends one request to berthd as the admin at microversion version
// (latest if empty) with body marshalled as JSON unless nil, and returns
// the status and the body; status 0 when the request failed (reported
// with t.Errorf, so call is safe from any goroutine).
func (b *berthd) call(t *testing.T, method, path, version string, body any) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, ok := body.(string)
		if !ok {
			buf, err := json.Marshal(body)
			if err != nil {
				t.Errorf("%s %s: %v", method, path, err)
				return 0, nil
			}
			raw = string(buf)
		}
		rd = strings.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.url+path, rd)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Accept", "application/json")
	if version == "" {
		version = "1.39"
	}
	req.Header.Set("OpenStack-API-Version", "placement "+version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		if ne := net.Error(nil); errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			b.dumpGoroutines()
		}
		t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("%s %s: read body: %v", method, path, err)
		return 0, nil
	}
	if resp.StatusCode >= 500 {
		t.Errorf("%s %s: %d %s", method, path, resp.StatusCode, out)
	}
	return resp.StatusCode, out
}

// must sends a request that must answer want, and decodes a JSON answer
// into out unless out is nil. It stops the test otherwise, so only the
// test's goroutine may call it.
func (b *berthd) must(t *testing.T, want int, method, path, version string, body, out any) {
	t.Helper()
	status, raw := b.call(t, method, path, version, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, want, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}
