package audit_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/ledgertest"
)

// BenchmarkAudit times a whole audit (every page of every kind, or of
// one kind) of a cloud of 100,000 root providers and 1,000,000
// allocations, seeded with SQL: 333,333 consumers with VCPU, MEMORY_MB
// and DISK_GB on one provider each, every provider reporting its state
// (one in ten more than an hour ago), and a few of each finding: 1,000
// split consumers, 1,000 migrations (half of them a day old), 1,000
// empty consumers, 100 providers over capacity, 10,000 stored claims of
// which 1,000 hold a lease that ran out two hours ago. docs/performance.md
// records its figures. BERTH_AUDIT_BENCH_PROVIDERS scales it down.
func BenchmarkAudit(b *testing.B) {
	providers := 100_000
	if n, err := strconv.Atoi(os.Getenv("BERTH_AUDIT_BENCH_PROVIDERS")); err == nil && n >= 1000 {
		providers = n
	}
	consumers := providers * 10 / 3
	url := ledgertest.NewDB(b)
	ctx := context.Background()
	// Opened first: it writes the standard resource classes.
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: url, SnapshotRefresh: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	seedAuditCloud(b, url, providers, consumers)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	var allocs int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM allocations`).Scan(&allocs)
	conn.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d providers, %d consumers, %d allocations", providers, consumers, allocs)
	// berthd holds its snapshot already; so does the store before timing.
	if _, err := store.Snapshots.Snapshot(ctx, nil, nil); err != nil {
		b.Fatal(err)
	}
	dbCPU := clusterCPU(b, url)
	kinds := append(audit.AuditKinds(), "") // each kind, then all of them
	for _, kind := range kinds {
		name := kind
		if name == "" {
			name = "all"
		}
		b.Run(name, func(b *testing.B) {
			p := audit.AuditParams{Limit: audit.MaxAuditLimit, Thresholds: audit.DefaultAuditThresholds()}
			if kind != "" {
				p.Kinds = []string{kind}
			}
			var findings, pages int
			db0, self0 := dbCPU(), selfCPU()
			for range b.N {
				findings, pages = 0, 0
				p.Marker = ""
				for {
					page, err := store.Auditor.Audit(ctx, p)
					if err != nil {
						b.Fatal(err)
					}
					findings += len(page.Findings)
					pages++
					if page.NextMarker == "" {
						break
					}
					p.Marker = page.NextMarker
				}
			}
			b.StopTimer()
			dbSecs, goSecs := (dbCPU() - db0).Seconds(), (selfCPU() - self0).Seconds()
			b.ReportMetric(auditPageHeap(b, store, p), "page-heap-MB")
			b.ReportMetric(float64(findings), "findings")
			b.ReportMetric(float64(pages), "pages")
			// CPU seconds, which a loaded machine inflates far less than
			// wall time: PostgreSQL's (every process of the test's
			// cluster) and this process's.
			b.ReportMetric(dbSecs/float64(b.N), "db-cpu-s/op")
			b.ReportMetric(goSecs/float64(b.N), "go-cpu-s/op")
		})
	}
}

// seedAuditCloud writes the cloud of BenchmarkAudit.
func seedAuditCloud(b *testing.B, url string, providers, consumers int) {
	stmts := []string{
		fmt.Sprintf(`WITH ids AS (SELECT nextval('resource_providers_id_seq') AS id, i FROM generate_series(1, %d) i)
			INSERT INTO resource_providers (id, uuid, name, root_provider_id)
			SELECT id, gen_random_uuid(), 'cn' || i, id FROM ids`, providers),
		`INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
			SELECT rp.id, rc.id, rc.total, 0, 1, rc.total, 1, 1.0 FROM resource_providers rp
			CROSS JOIN (SELECT id, CASE name WHEN 'VCPU' THEN 64 WHEN 'MEMORY_MB' THEN 262144 ELSE 4000 END AS total
			            FROM resource_classes WHERE name IN ('VCPU', 'MEMORY_MB', 'DISK_GB')) rc`,
		`INSERT INTO provider_state
			SELECT id, 1, 1, 1, 1024, 0.5, now() - CASE WHEN id % 10 = 0 THEN interval '2 hours' ELSE interval '1 minute' END
			FROM resource_providers`,
		`INSERT INTO projects (external_id) VALUES ('p')`,
		`INSERT INTO users (external_id) VALUES ('u')`,
		`INSERT INTO consumer_types (name) VALUES ('INSTANCE'), ('MIGRATION')`,
		fmt.Sprintf(`INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id, generation, created_at)
			SELECT gen_random_uuid(), 1, 1, CASE WHEN i <= 1000 THEN 2 ELSE 1 END, 1,
			       now() - CASE WHEN i <= 500 THEN interval '2 days' ELSE interval '1 minute' END
			FROM generate_series(1, %d) i`, consumers+1000),
		// Each consumer on one provider (consumer i on provider i mod n),
		// but the last 1,000, which stay empty.
		fmt.Sprintf(`INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
			SELECT (c.id - 1) %% %d + 1, c.id, rc.id, rc.used FROM consumers c
			CROSS JOIN (SELECT id, CASE name WHEN 'VCPU' THEN 2 WHEN 'MEMORY_MB' THEN 4096 ELSE 20 END AS used
			            FROM resource_classes WHERE name IN ('VCPU', 'MEMORY_MB', 'DISK_GB')) rc
			WHERE c.id <= %d`, providers, consumers),
		// 1,000 consumers also on the next provider: split.
		fmt.Sprintf(`INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used)
			SELECT c.id %% %d + 1, c.id, rc.id, 1 FROM consumers c, resource_classes rc
			WHERE c.id BETWEEN 2001 AND 3000 AND rc.name = 'VCPU'`, providers),
		// 10,000 stored claims: 9,000 permanent, 1,000 whose lease ran
		// out (expired_lease).
		`INSERT INTO claim_state (consumer_uuid, op, request, state, lease_seconds, lease_expires_at)
			SELECT c.uuid, 'claim', '{}', CASE WHEN c.id <= 13000 THEN 'permanent' ELSE 'provisional' END,
			       CASE WHEN c.id <= 13000 THEN NULL ELSE 60 END,
			       CASE WHEN c.id <= 13000 THEN NULL ELSE now() - interval '2 hours' END
			FROM consumers c WHERE c.id BETWEEN 4001 AND 14000`,
		// 100 providers lowered below their usage.
		`UPDATE inventories SET total = 1, max_unit = 1 WHERE resource_provider_id <= 100
			AND resource_class_id = (SELECT id FROM resource_classes WHERE name = 'VCPU')`,
		`VACUUM ANALYZE`,
	}
	for _, s := range stmts {
		ledgertest.Exec(b, url, s)
	}
}

// auditPageHeap runs the audit p once more, untimed, and answers the
// most heap one page holds (MiB): live bytes after a collection with the
// page still referenced, beyond those live before the audit (the store
// and its snapshot). Pages are bounded; the audit's whole is never held.
func auditPageHeap(b *testing.B, store *ledger.Store, p audit.AuditParams) float64 {
	ctx := context.Background()
	live := func() uint64 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	base, peak := live(), uint64(0)
	p.Marker = ""
	for {
		page, err := store.Auditor.Audit(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		l := live()
		peak = max(peak, l-min(l, base))
		runtime.KeepAlive(page)
		if page.NextMarker == "" {
			return float64(peak) / (1 << 20)
		}
		p.Marker = page.NextMarker
	}
}

// clusterCPU returns a function that reads the CPU time the PostgreSQL
// cluster serving url has used: its postmaster's, with the children it
// reaped (parallel workers), and its live children's, from /proc.
func clusterCPU(b *testing.B, url string) func() time.Duration {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	var backend int
	err = conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&backend)
	conn.Close(ctx)
	if err != nil {
		b.Fatal(err)
	}
	st, ok := procStat(backend)
	if !ok {
		b.Fatalf("no /proc/%d/stat", backend)
	}
	postmaster := int(st[1]) // ppid
	return func() time.Duration {
		var ticks int64
		if pm, ok := procStat(postmaster); ok {
			ticks += pm[11] + pm[12] + pm[13] + pm[14] // utime stime cutime cstime
		}
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			if f, ok := procStat(pid); ok && f[1] == int64(postmaster) {
				ticks += f[11] + f[12]
			}
		}
		return time.Duration(ticks) * time.Second / 100 // USER_HZ
	}
}

// procStat reads the numeric fields of /proc/pid/stat after the command
// name: [0] state (0), [1] ppid, ..., [11] utime, [12] stime, [13]
// cutime, [14] cstime.
func procStat(pid int) ([]int64, bool) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	s := string(raw)
	s = s[strings.LastIndexByte(s, ')')+2:]
	var out []int64
	for _, f := range strings.Fields(s) {
		n, _ := strconv.ParseInt(f, 10, 64)
		out = append(out, n)
	}
	return out, len(out) > 14
}

// selfCPU is the CPU time this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
