package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/berthd/berth/ledger/placementdb"
)

// api is a Placement API client for the tests, admin through noauth2.
type api struct {
	t    *testing.T
	base string
}

// do sends one request at microversion version and returns the status and body.
func (a api) do(method, path, version string, body any) (int, []byte) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.base+path, r)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement "+version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// must sends a request at 1.39 and fails the test unless the status is
// want; out, if not nil, receives the decoded answer.
func (a api) must(want int, method, path string, body, out any) {
	a.t.Helper()
	a.mustV(want, method, path, "1.39", body, out)
}

func (a api) mustV(want int, method, path, version string, body, out any) {
	a.t.Helper()
	st, b := a.do(method, path, version, body)
	if st != want {
		a.t.Fatalf("%s %s at %s: status %d, want %d: %s", method, path, version, st, want, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			a.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// generation reads a provider's generation.
func (a api) generation(uuid string) int {
	a.t.Helper()
	var p struct {
		Generation int `json:"generation"`
	}
	a.must(200, "GET", "/resource_providers/"+uuid, nil, &p)
	return p.Generation
}

func uuidN(kind, n int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", kind, n)
}

// readBerth reads the Berth database at dbURL as export would.
func readBerth(t *testing.T, dbURL string) *placementdb.Dump {
	t.Helper()
	d, _, err := placementdb.ReadBerth(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
