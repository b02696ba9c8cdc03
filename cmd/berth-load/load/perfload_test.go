package load

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestPerfloadAgainstBerthd: the gate job's trees answer its query with
// two candidates per tree (numa1 with either of its FPGAs), each of the
// job's allocations takes one FPGA (its only unit: one candidate fewer) and
// one VCPU of a numa1, and the throughput phase completes every request it
// was asked for.
func TestPerfloadAgainstBerthd(t *testing.T) {
	url := startBerthd(t, time.Minute)
	const trees = 3
	seq := NewClient(ClientConfig{URL: url, Token: "admin", Conns: 1, Timeout: time.Minute})
	ctx := context.Background()
	p := PerfloadParams{Trees: trees, Workers: 2, Allocations: 2, Concurrency: 3, Requests: 12}
	seed, err := SeedPerfload(ctx, seq, p, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if seed.Providers != 7*trees {
		t.Fatalf("seed %+v", seed)
	}
	// numa1 of tree 0 is a NUMA root with CUSTOM_FOO, under the compute node.
	tr := newPerfloadTree(0)
	var numa1 ProviderBody
	if _, err := seq.JSON(ctx, http.MethodGet, "/resource_providers/"+tr.numa1, nil, &numa1); err != nil {
		t.Fatal(err)
	}
	if numa1.ParentUUID != tr.cn || numa1.RootUUID != tr.cn {
		t.Errorf("numa1 %+v, want parent and root %s", numa1, tr.cn)
	}

	conc := NewClient(ClientConfig{URL: url, Token: "admin", Conns: p.Concurrency, Timeout: time.Minute, NoKeepAlive: true})
	r := RunPerfload(ctx, seq, conc, p, io.Discard)
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	if r.Candidates != 2*trees-2 {
		t.Errorf("%d candidates after 2 allocations, want %d", r.Candidates, 2*trees-2)
	}
	if r.Allocations != 2 || r.Timed.N != 2*(1+2) {
		t.Errorf("%d allocations written, %d timed queries; want 2 and 6", r.Allocations, r.Timed.N)
	}
	if r.Requests != 12 || r.Failed != 0 || r.PerSecond <= 0 {
		t.Errorf("throughput phase: %d requests, %d failed, %.2f/s", r.Requests, r.Failed, r.PerSecond)
	}
	var usages UsagesBody
	used := 0
	for i := range trees {
		if _, err := seq.JSON(ctx, http.MethodGet, "/resource_providers/"+newPerfloadTree(i).numa1+"/usages", nil, &usages); err != nil {
			t.Fatal(err)
		}
		used += usages.Usages["VCPU"]
	}
	if used != 2 {
		t.Errorf("numa1 nodes use %d VCPU after 2 allocations, want 2", used)
	}
}
