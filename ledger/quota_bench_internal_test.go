package ledger

import (
	"context"
	"fmt"
	"testing"
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
// Every claim counts its project's usage (quota.go), checked or not.
//
//	go test -run '^$' -bench QuotaCost -benchtime 10x -count 3 ./ledger/
func BenchmarkQuotaCost(b *testing.B) {
	ctx := context.Background()
	c := startDBWorkClusterWith(b, ctx, false)
	plain := newDBWorkEnvProbed(b, ctx, c, 2000, false)
	limited := newDBWorkEnvProbed(b, ctx, c, 2001, false)
	if err := limited.store.LimitsSet(ctx, "claim-project", Limits{"VCPU": 1 << 40, ResourceConsumers: 1 << 40}); err != nil {
		b.Fatal(err)
	}
	for _, e := range []*dbWorkEnv{plain, limited} {
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
	given := &Quota{Given: map[string]Limits{"claim-project": {"VCPU": 1 << 40, ResourceConsumers: 1 << 40}}}
	type mode struct {
		name string
		env  *dbWorkEnv
		q    *Quota
	}
	modes := []mode{{"unchecked", plain, nil}, {"unlimited", plain, &Quota{}}, {"stored", limited, &Quota{}}, {"given", limited, given}}
	pids := map[*dbWorkEnv]int{}
	for _, e := range []*dbWorkEnv{plain, limited} {
		var pid int
		if err := e.store.pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			b.Fatal(err)
		}
		pids[e] = pid
	}
	const batch, rounds = 16, 10
	seq := 0
	claims := func(e *dbWorkEnv, q *Quota, n int) []fastClaim {
		fcs := make([]fastClaim, n)
		for j := range fcs {
			seq++
			_, rp := e.seededProvider(seq)
			fc, ok := fastClaimOf(claimAt(md5UUID(fmt.Sprint("quota-bench", seq)), rp, 1).Consumers)
			if !ok {
				b.Fatal("not a fast claim")
			}
			fc.quota = q.argsFor(fc.project)
			fcs[j] = fc
		}
		return fcs
	}
	run := func(m mode, lone bool) {
		for range rounds {
			if lone {
				for _, fc := range claims(m.env, m.q, batch) {
					if w, err := m.env.store.sendFast(ctx, fc); err != nil || w == nil {
						b.Fatalf("%s: a lone claim refused: %v", m.name, err)
					}
				}
				continue
			}
			if _, first, err := m.env.store.sendBatchWrite(ctx, claims(m.env, m.q, batch)); err != nil || first != batch {
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
