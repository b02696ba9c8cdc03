package load

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi/client"
	"github.com/berthd/berth/internal/testing/proctest"
)

// cannedServer answers every HTTP/1.1 request on a kept-alive connection
// with the same answer, reading the request with no allocation of its
// own, so that a benchmark's allocations and time are the client's.
func cannedServer(b *testing.B, status int, body string) string {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	answer := []byte("HTTP/1.1 " + strconv.Itoa(status) + " " + http.StatusText(status) + "\r\n" +
		"Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go serveCanned(nc, answer)
		}
	}()
	return "http://" + l.Addr().String()
}

func serveCanned(nc net.Conn, answer []byte) {
	defer nc.Close()
	br := bufio.NewReader(nc)
	for {
		length := 0
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
			if k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
				length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
			}
		}
		if _, err := br.Discard(length); err != nil {
			return
		}
		if _, err := nc.Write(answer); err != nil {
			return
		}
	}
}

// reportCPU reports the process's CPU time per operation since before
// (the client's and the canned server's: wall time on a shared machine
// says little).
func reportCPU(b *testing.B, before time.Duration) {
	b.ReportMetric(float64(proctest.ProcessCPU(b)-before)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// BenchmarkClientRequest is the load tool's client-side cost of one
// request over its kept-alive transport (encoding the body, the request,
// reading and checking the answer): a claim (POST /claims with a JSON
// body) and a candidates query (GET). Run with -benchmem; the server is a
// canned answer on loopback.
func BenchmarkClientRequest(b *testing.B) {
	ctx := context.Background()
	b.Run("post", func(b *testing.B) {
		url := cannedServer(b, http.StatusOK, `{"allocations":{},"attempts":1}`)
		c := NewClient(ClientConfig{URL: url, Token: "admin", Conns: 1, Timeout: time.Minute})
		body := ClaimRequest{ConsumerUUID: "5d6e1b3a-0000-4000-8000-000000000001", ProjectID: "p", UserID: "u",
			ConsumerType: "INSTANCE", Resources: map[string]int{"VCPU": 1, "MEMORY_MB": 512}}
		b.ReportAllocs()
		defer reportCPU(b, proctest.ProcessCPU(b))
		for b.Loop() {
			if _, err := c.Do(ctx, http.MethodPost, "/claims", body, http.StatusOK); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get", func(b *testing.B) {
		url := cannedServer(b, http.StatusOK, `{"allocation_requests":[],"provider_summaries":{}}`)
		c := NewClient(ClientConfig{URL: url, Token: "admin", Conns: 1, Timeout: time.Minute})
		b.ReportAllocs()
		defer reportCPU(b, proctest.ProcessCPU(b))
		for b.Loop() {
			if _, err := c.Do(ctx, http.MethodGet, "/allocation_candidates?resources=VCPU:1", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	// A two-step claim's write that lost to another: a 409 in Placement's
	// error format, which the caller tells apart from other failures.
	b.Run("conflict", func(b *testing.B) {
		url := cannedServer(b, http.StatusConflict, `{"errors": [{"status": 409, "title": "Conflict", `+
			`"detail": "There was a conflict when trying to complete your request.\n\n Unable to allocate inventory: `+
			`Unable to create allocation for 'VCPU' on resource provider '5d6e1b3a-0000-4000-8000-000000000002'. `+
			`The requested amount would exceed the capacity.  ", "code": "placement.undefined_code", `+
			`"request_id": "req-5d6e1b3a-0000-4000-8000-000000000003"}]}`)
		c := NewClient(ClientConfig{URL: url, Token: "admin", Conns: 1, Timeout: time.Minute})
		body := map[string]any{"allocations": map[string]any{}, "project_id": "p", "user_id": "u"}
		b.ReportAllocs()
		defer reportCPU(b, proctest.ProcessCPU(b))
		for b.Loop() {
			if _, err := c.Do(ctx, http.MethodPut, "/allocations/5d6e1b3a-0000-4000-8000-000000000001", body, http.StatusNoContent); !client.IsStatus(err, http.StatusConflict) {
				b.Fatal(err)
			}
		}
	})
}
