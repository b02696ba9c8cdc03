package resources_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/berthd/berth/ledger/internal/dbwork"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// BenchmarkQuotaCost measures what the quota check costs PostgreSQL per
// claim (the backend's CPU, from /proc/<pid>/stat, in clock ticks of 10
// ms), on 2,000 seeded providers, for claims written alone (sendFast) and
// in batches of 16 (sendBatchWrite), in rounds that take turns:
//
//   - unchecked: no quota (a Placement API write, or no limits given);
//   - unlimited: the stored limits, none of them for the claims' project
//     (--limits-source berth, the default, with no limits set);
//   - stored: the project held to a stored limit;
//   - given: the same limit given with the write (Keystone's).
//
// Every claim counts its project's usage (quota_check.go), checked or not.
//
//	go test -run '^$' -bench QuotaCost -benchtime 10x -count 3 ./ledger/
func BenchmarkQuotaCost(b *testing.B) {
	ctx := context.Background()
	c := dbwork.StartCluster(b, ctx, false)
	plain := newBenchEnv(b, ctx, c, 2000)
	limited := newBenchEnv(b, ctx, c, 2001)
	if err := limited.store.Quotas.LimitsSet(ctx, "claim-project", quotas.Limits{"VCPU": 1 << 40, quotas.ResourceConsumers: 1 << 40}); err != nil {
		b.Fatal(err)
	}
	for _, e := range []*benchEnv{plain, limited} {
		// The project, the user and the project's usage counters exist,
		// as after its first claim (which takes the general path, as the
		// first claim of every new project or user does).
		if _, err := e.admin.Exec(ctx, `INSERT INTO projects (external_id) VALUES ('claim-project') ON CONFLICT DO NOTHING`); err != nil {
			b.Fatal(err)
		}
		if _, err := e.admin.Exec(ctx, `INSERT INTO users (external_id) VALUES ('claim-user') ON CONFLICT DO NOTHING`); err != nil {
			b.Fatal(err)
		}
		if _, err := e.admin.Exec(ctx, `
			INSERT INTO project_usages (project_id, resource, used)
			SELECT p.id, r, 0 FROM projects p, unnest(ARRAY['DISK_GB', 'MEMORY_MB', 'VCPU', 'consumers']) r
			WHERE p.external_id = 'claim-project' ON CONFLICT DO NOTHING`); err != nil {
			b.Fatal(err)
		}
	}
	given := &quotas.Quota{Given: map[string]quotas.Limits{"claim-project": {"VCPU": 1 << 40, quotas.ResourceConsumers: 1 << 40}}}
	type mode struct {
		name string
		env  *benchEnv
		q    *quotas.Quota
	}
	modes := []mode{{"unchecked", plain, nil}, {"unlimited", plain, &quotas.Quota{}}, {"stored", limited, &quotas.Quota{}}, {"given", limited, given}}
	pids := map[*benchEnv]int{}
	for _, e := range []*benchEnv{plain, limited} {
		pids[e] = e.pid
	}
	const batch, rounds = 16, 10
	seq := 0
	claims := func(e *benchEnv, q *quotas.Quota, n int) []resources.FastClaim {
		fcs := make([]resources.FastClaim, n)
		for j := range fcs {
			seq++
			_, rp := e.seededProvider(seq)
			fc, ok := resources.FastClaimOf(dbwork.ClaimAt(dbwork.MD5UUID(fmt.Sprint("quota-bench", seq)), rp, 1).Consumers)
			if !ok {
				b.Fatal("not a fast claim")
			}
			fc = resources.WithQuota(fc, q)
			fcs[j] = fc
		}
		return fcs
	}
	run := func(m mode, lone bool) {
		for range rounds {
			if lone {
				for _, fc := range claims(m.env, m.q, batch) {
					if w, err := resources.SendFast(ctx, m.env.store.Allocations, fc); err != nil || w == nil {
						b.Fatalf("%s: a lone claim refused: %v", m.name, err)
					}
				}
				continue
			}
			if _, first, err := resources.SendBatchWrite(ctx, m.env.store.Allocations, claims(m.env, m.q, batch)); err != nil || first != batch {
				b.Fatalf("%s: the batch refused claim %d: %v", m.name, first, err)
			}
		}
	}
	for _, lone := range []bool{true, false} {
		for _, m := range modes { // warm the plans up
			run(m, lone)
		}
	}
	cpu := make([][2]int64, len(modes))
	b.ResetTimer()
	for i := range b.N {
		for k := range modes {
			m := modes[(i+k)%len(modes)]
			for l, lone := range []bool{true, false} {
				before := backendCPU(b, pids[m.env])
				run(m, lone)
				cpu[(i+k)%len(modes)][l] += backendCPU(b, pids[m.env]) - before
			}
		}
	}
	n := float64(b.N * rounds * batch)
	for k, m := range modes {
		b.ReportMetric(float64(cpu[k][0])*10/n, "pg-ms/lone-"+m.name)
		b.ReportMetric(float64(cpu[k][1])*10/n, "pg-ms/batched-"+m.name)
	}
}
