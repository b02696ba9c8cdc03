package docstest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger/ledgertest"
)

// Bounds that only a hung berthd reaches; nothing asserts on time.
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = 30 * time.Second
)

// startBerthd runs the berthd binary with its defaults, as a reader
// would, on a fresh database and a free loopback port, waits until it
// answers, and returns its base URL. It is stopped (SIGTERM) when the
// test ends.
func startBerthd(t *testing.T, bin string) string {
	t.Helper()
	dbURL := ledgertest.NewDB(t)
	for attempt := 1; ; attempt++ {
		base, err := tryStartBerthd(t, bin, dbURL)
		if err == nil {
			return base
		}
		// Another process may have taken the port between the probe and
		// berthd's bind; try another one.
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatal(err)
		}
	}
}

func tryStartBerthd(t *testing.T, bin, dbURL string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--listen", addr, "--database-url", dbURL, "--log-level", "warn")
	// The test's environment must not configure berthd.
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "BERTH_") && k != "DATABASE_URL" && k != "PORT" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	log := &proctest.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	proc, err := proctest.Start(cmd)
	if err != nil {
		return "", err
	}
	exited := proc.Exited
	stop := func() {
		if proc.Stop(stopTimeout) {
			t.Errorf("berthd did not stop within %v of SIGTERM; killed\n%s", stopTimeout, log)
		}
	}
	base := "http://" + addr
	deadline := time.After(startTimeout)
	for {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			return "", fmt.Errorf("berthd exited before serving:\n%s", log)
		case <-deadline:
			stop()
			return "", fmt.Errorf("berthd did not answer within %v:\n%s", startTimeout, log)
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("berthd's log:\n%s", log)
		}
	})
	return base, nil
}
