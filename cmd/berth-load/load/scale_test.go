package load

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrintScale writes the reports scale.sh leaves for two sizes and
// checks the table's values and verdicts.
func TestPrintScale(t *testing.T) {
	dir := t.TempDir()
	write := func(n int, name string, r *Report) { writeScaleReport(t, dir, n, name, r) }
	claims := func(rate float64, p99 time.Duration) *Report {
		return &Report{Claims: &ClaimsResult{Claims: 1000, PerSecond: rate, Latency: Stats{N: 1000, Median: p99 / 2, P99: p99}},
			Memory: &MemReport{PeakRSS: 300 << 10, CPUTree: 1}, Database: &MemReport{CPUTree: 2}}
	}
	rounds := claims(1000, 20*time.Millisecond)
	rounds.Claims.Rounds = 8
	write(1000, "claims-c16", rounds)
	write(100000, "claims-c16", claims(950, 60*time.Millisecond))
	write(1000, "claims-c64", claims(1000, 20*time.Millisecond))
	write(100000, "claims-c64", claims(500, 60*time.Millisecond))
	write(100000, "seed", &Report{Seed: &SeedResult{Providers: 100000, Requests: 310000, Elapsed: 90 * time.Second, RequestRate: 3444}})
	write(100000, "list", &Report{Results: []Result{{Name: "e-providers", Stats: Stats{N: 5, Median: 400 * time.Millisecond}}},
		Memory: &MemReport{StartRSS: 100 << 10, PeakRSS: 150 << 10}})
	if err := os.WriteFile(filepath.Join(dir, "n100000", "start.txt"), []byte("cold_start_s=1.5\nloadavg=1 2 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := PrintScale(&out, dir); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log("\n" + got)
	for _, want := range []string{
		"seeding through the API", "90.0 s", "target met",
		"1.50 s", "load average (1, 5, 15 min) at 100000 providers: 1 2 3",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the table", want)
		}
	}
	rounds16 := ""
	for _, line := range strings.Split(got, "\n") {
		if strings.HasPrefix(line, "  rounds (released between)") {
			rounds16 = strings.Join(strings.Fields(strings.TrimPrefix(line, "  rounds (released between)")), " ")
			break
		}
	}
	if rounds16 != "8 -" {
		t.Errorf("16 clients' rounds row %q, want 8 at 1,000 and none at 100,000", rounds16)
	}
	verdict := func(row string) string {
		for _, line := range strings.Split(got, "\n") {
			if strings.HasPrefix(line, row) {
				f := strings.Fields(line)
				return strings.Join(f[len(f)-2:], " ")
			}
		}
		return ""
	}
	for row, want := range map[string]string{
		"POST /claims, 16 clients: claims/s":    "target met",
		"POST /claims, 64 clients: claims/s":    "NOT met",
		"  p99":                                 "NOT met", // the first p99 row is 16 clients'
		"GET /resource_providers (all), median": "target met",
		"  berthd RSS growth while listing":     "target met",
		"berthd peak RSS during claims":         "target met",
	} {
		if got := verdict(row); got != want {
			t.Errorf("%s: verdict %q, want %q", row, got, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// writeScaleReport writes r where scale.sh leaves size n's report name.
func writeScaleReport(t *testing.T, dir string, n int, name string, r *Report) {
	t.Helper()
	d := filepath.Join(dir, "n"+itoa(n))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(filepath.Join(d, name+".json")); err != nil {
		t.Fatal(err)
	}
}

// TestPrintScaleSlices checks that the slices of a claims run add up to
// one run: claims/s and CPU per claim over every slice, the worst slice's
// p99, the highest peak, and the slices counted.
func TestPrintScaleSlices(t *testing.T) {
	dir := t.TempDir()
	write := func(n int, name string, r *Report) { writeScaleReport(t, dir, n, name, r) }
	slice := func(claims int, elapsed, p99 time.Duration, rss int, cpu float64) *Report {
		return &Report{Claims: &ClaimsResult{Claims: claims, Elapsed: elapsed, PerSecond: float64(claims) / elapsed.Seconds(), Rounds: 2,
			Latency: Stats{N: claims, Median: p99 / 4, P99: p99, Mean: p99 / 3}},
			Memory: &MemReport{PeakRSS: rss << 10, CPUTree: cpu}, Database: &MemReport{CPUTree: cpu / 2}}
	}
	// 1,000: 12,000 claims in 10 s, then 10,000 in 10 s: 1,100/s.
	write(1000, "claims-c16-s1", slice(12000, 10*time.Second, 20*time.Millisecond, 80, 8.4))
	write(1000, "claims-c16-s2", slice(10000, 10*time.Second, 30*time.Millisecond, 90, 7))
	// 100,000: 9,000 then 12,000 in 10 s each: 1,050/s, 95% of 1,100.
	write(100000, "claims-c16-s1", slice(9000, 10*time.Second, 40*time.Millisecond, 440, 9))
	write(100000, "claims-c16-s2", slice(12000, 10*time.Second, 25*time.Millisecond, 450, 12))
	var out bytes.Buffer
	if err := PrintScale(&out, dir); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	t.Log("\n" + got)
	row := func(prefix string) string {
		for _, line := range strings.Split(got, "\n") {
			if strings.HasPrefix(line, prefix) {
				return strings.Join(strings.Fields(strings.TrimPrefix(line, prefix)), " ")
			}
		}
		return ""
	}
	for prefix, want := range map[string]string{
		"POST /claims, 16 clients: claims/s": "1100/s 1050/s 100k >= 90% of 1k target met",
		"  slices (sizes alternating)":       "2 2",
		"  rounds (released between)":        "4 4",
		"  p99 (sliced: the worst slice's)":  "30.0 ms 40.0 ms 100k: < 50 ms target met",
		"  berthd CPU per claim":             "0.7 ms 1.0 ms",
		"  PostgreSQL CPU per claim":         "0.3 ms 0.5 ms",
		"berthd peak RSS during claims":      "90 MiB 450 MiB 100k: < 500 MiB target met",
	} {
		if r := row(prefix); r != want {
			t.Errorf("%s: %q, want %q", prefix, r, want)
		}
	}
}
