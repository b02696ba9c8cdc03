package load

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is what one subcommand run measured; --json writes it and
// compare reads it back.
type Report struct {
	Command      string          `json:"command"`
	Label        string          `json:"label,omitempty"`
	URL          string          `json:"url"`
	Microversion string          `json:"microversion"`
	Started      time.Time       `json:"started"`
	Timeout      time.Duration   `json:"client_timeout_ns"`
	Params       any             `json:"params,omitempty"`
	Seed         *SeedResult     `json:"seed,omitempty"`
	Results      []Result        `json:"results,omitempty"`
	Claims       *ClaimsResult   `json:"claims,omitempty"`
	Verify       *VerifyResult   `json:"verify,omitempty"`
	Perfload     *PerfloadResult `json:"perfload,omitempty"`
	Memory       *MemReport      `json:"memory,omitempty"`
	// Database is the database server's process tree around the run
	// (--db-pid): its CPU is the database's share of the work.
	Database *MemReport `json:"database,omitempty"`
	Error    string     `json:"error,omitempty"` // why the run failed, if it did
}

// WriteJSON writes r, indented, to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadReport reads a report written by WriteJSON.
func ReadReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// Print writes r as human-readable tables.
func (r *Report) Print(w io.Writer) {
	if r.Seed != nil {
		s := r.Seed
		fmt.Fprintf(w, "seeded %s in %s (%.1f providers/s, %d requests, %.0f requests/s)\n",
			count(s.Providers, "provider", "providers"), s.Elapsed.Round(time.Millisecond), s.PerSecond, s.Requests, s.RequestRate)
	}
	if len(r.Results) > 0 {
		PrintResults(w, r.Results, r.Timeout)
	}
	if r.Claims != nil {
		PrintClaims(w, r.Claims)
	}
	if r.Verify != nil {
		PrintVerify(w, r.Verify)
	}
	if r.Perfload != nil {
		PrintPerfload(w, r.Perfload)
	}
	if r.Memory != nil {
		m := r.Memory
		fmt.Fprintf(w, "server memory (pid %d, %d processes): peak RSS %s (sampled), VmHWM sum %s%s, RSS %s -> %s\n",
			m.PID, m.Processes, mib(m.PeakRSS), mib(m.HWM), map[bool]string{true: " since reset", false: " (lifetime)"}[m.Reset],
			mib(m.StartRSS), mib(m.EndRSS))
		if r.Claims != nil && r.Claims.Claims > 0 {
			n := float64(r.Claims.Claims)
			fmt.Fprintf(w, "server CPU per claim (%s): %.3f ms in pid %d, %.3f ms in its descendants, %.3f ms in all\n",
				cpuScope(m), 1000*m.CPURoot/n, m.PID, 1000*(m.CPUTree-m.CPURoot)/n, 1000*m.CPUTree/n)
		}
		if r.Seed != nil && r.Seed.Requests > 0 {
			fmt.Fprintf(w, "server CPU per write request: %.3f ms\n", 1000*m.CPUTree/float64(r.Seed.Requests))
		}
		if m.Error != "" {
			fmt.Fprintf(w, "  memory: %s\n", m.Error)
		}
	}
	if d := r.Database; d != nil {
		fmt.Fprintf(w, "database (pid %d, %d processes): CPU %.2f s, RSS %s -> %s\n", d.PID, d.Processes, d.CPUTree, mib(d.StartRSS), mib(d.EndRSS))
		if r.Claims != nil && r.Claims.Claims > 0 {
			fmt.Fprintf(w, "database CPU per claim (%s): %.3f ms\n", cpuScope(d), 1000*d.CPUTree/float64(r.Claims.Claims))
		}
		if r.Seed != nil && r.Seed.Requests > 0 {
			fmt.Fprintf(w, "database CPU per write request: %.3f ms\n", 1000*d.CPUTree/float64(r.Seed.Requests))
		}
		if d.Error != "" {
			fmt.Fprintf(w, "  database: %s\n", d.Error)
		}
	}
}

// cpuScope says what a claims run's CPU figures cover.
func cpuScope(m *MemReport) string {
	if m.CPUCounted == 0 && m.CPUExcluded == 0 {
		return "the run and its end check"
	}
	return fmt.Sprintf("timed claiming only: %.1f s counted, %.1f s of checks and releases left out", m.CPUCounted, m.CPUExcluded)
}

func mib(kib int) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func msf(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/1e6) }

// PrintResults writes one row per query: latency in milliseconds, what
// the answer counted and its size, then the request paths.
func PrintResults(w io.Writer, results []Result, timeout time.Duration) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "query\tn\tmedian ms\tp95 ms\tp99 ms\tmin ms\tmax ms\tcount\tbytes\t")
	for _, r := range results {
		if r.Failed() {
			what := "error"
			if r.Timeouts > 0 {
				what = fmt.Sprintf("timeout (>%s)", timeout)
			}
			fmt.Fprintf(tw, "%s\t0\t%s\t\t\t\t\t\t\t\n", r.Name, what)
			continue
		}
		s := r.Stats
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%d %s\t%d\t\n", r.Name, s.N, msf(s.Median), msf(s.P95), msf(s.P99),
			msf(s.Min), msf(s.Max), r.Count, r.CountOf, r.Bytes)
	}
	tw.Flush()
	for _, r := range results {
		fmt.Fprintf(w, "  %s: GET %s\n", r.Name, r.Path)
		if r.Errors+r.Timeouts > 0 {
			fmt.Fprintf(w, "    %d errors, %d timeouts; first: %s\n", r.Errors, r.Timeouts, r.Error)
		}
	}
}

// PrintClaims writes a claims run's summary.
func PrintClaims(w io.Writer, c *ClaimsResult) {
	mode := c.Mode
	if mode == "" {
		mode = ModeTwoStep
	}
	fmt.Fprintf(w, "claims (%s): %d clients, pick %s, %s: %d claimed, %.2f claims/s, %d conflicts (409), %d gave up after retries, %d found no candidate, %d errors\n",
		mode, c.Clients, c.Pick, c.Elapsed.Round(time.Millisecond), c.Claims, c.PerSecond, c.Conflicts, c.GaveUp, c.NoFit, c.Errors)
	if c.Rounds > 0 {
		fmt.Fprintf(w, "  %s, %s of timed claiming, %s in all; %d consumers released (untimed, %s), each answered 204\n",
			count(c.Rounds, "round", "rounds"), c.Elapsed.Round(time.Millisecond), c.Wall.Round(time.Millisecond),
			c.Released, c.ReleaseTime.Round(time.Millisecond))
	}
	if c.NoValidHost > 0 {
		fmt.Fprintf(w, "  %d answers 409 berth.no_valid_host (retried; %d claims got only those)\n", c.NoValidHost, c.NoFit)
	}
	if c.ServerAttempts > 0 {
		fmt.Fprintf(w, "  server-side: %d writes tried for %d claims (%d moved on to another candidate)\n",
			c.ServerAttempts, c.Claims, c.ServerAttempts-c.Claims)
	}
	if len(c.FailedByStatus) > 0 {
		keys := make([]string, 0, len(c.FailedByStatus))
		for k := range c.FailedByStatus {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			keys[i] = fmt.Sprintf("%s: %d", k, c.FailedByStatus[k])
		}
		fmt.Fprintf(w, "  failures: %s\n", strings.Join(keys, ", "))
	}
	if c.Error != "" {
		fmt.Fprintf(w, "  first error: %s\n", c.Error)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency\tn\tp50 ms\tp95 ms\tp99 ms\tmin ms\tmax ms\t")
	for _, row := range []struct {
		name string
		s    Stats
	}{{"claim (whole, retries)", c.Latency}, {"GET candidates", c.GetTime}, {"write (PUT or POST /claims)", c.PutTime}} {
		if row.s.N == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", row.name, row.s.N, msf(row.s.Median), msf(row.s.P95), msf(row.s.P99), msf(row.s.Min), msf(row.s.Max))
	}
	tw.Flush()
	if c.Verify != nil {
		PrintVerify(w, c.Verify)
	}
}

// PrintVerify writes the overcommit check's verdict.
func PrintVerify(w io.Writer, v *VerifyResult) {
	switch {
	case v.Error != "":
		fmt.Fprintf(w, "overcommit check: FAILED TO RUN: %s\n", v.Error)
		return
	case v.OK:
		fmt.Fprintf(w, "overcommit check: OK, %s, none over (total-reserved)*ratio (%s)\n", count(v.Providers, "provider", "providers"), v.Elapsed.Round(time.Millisecond))
	default:
		fmt.Fprintf(w, "overcommit check: OVERCOMMITTED, %s on %s:\n",
			count(len(v.Overcommits), "class", "classes"), count(v.Providers, "provider", "providers"))
		for i, o := range v.Overcommits {
			if i == 10 {
				fmt.Fprintf(w, "  ... %d more\n", len(v.Overcommits)-10)
				break
			}
			fmt.Fprintf(w, "  %s %s used %d > capacity %g\n", o.Provider, o.Class, o.Used, o.Capacity)
		}
	}
	if v.Expected != nil {
		verdict := "matches"
		if !v.UsageMatches {
			verdict = "DIFFERS from"
		}
		fmt.Fprintf(w, "  total usage %s %s claims x flavor %s\n", classes(v.Used, v.Expected), verdict, classes(v.Expected, v.Expected))
	}
}

func classes(m, keys map[string]int) string {
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// Column is one side of a comparison: a label and the reports of a
// directory (or one file), keyed by file name.
type Column struct {
	Label   string
	Reports map[string]*Report
	Order   []string
}

// LoadColumn reads path, a report file or a directory of them (*.json).
func LoadColumn(label, path string) (*Column, error) {
	col := &Column{Label: label, Reports: map[string]*Report{}}
	files := []string{path}
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if st.IsDir() {
		files, _ = filepath.Glob(filepath.Join(path, "*.json"))
		slices.Sort(files)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.json reports", path)
	}
	for _, f := range files {
		r, err := ReadReport(f)
		if err != nil {
			return nil, err
		}
		key := strings.TrimSuffix(filepath.Base(f), ".json")
		col.Reports[key] = r
		col.Order = append(col.Order, key)
	}
	// Rows follow the order the reports were made in, not their names.
	slices.SortStableFunc(col.Order, func(a, b string) int {
		return col.Reports[a].Started.Compare(col.Reports[b].Started)
	})
	return col, nil
}

// Compare prints one row per measurement found in any column and one
// column per label, side by side: query latency (the chosen statistic,
// ms), seeding rate, claims rate and checks, server memory.
func Compare(w io.Writer, cols []*Column, stat string) error {
	pick := map[string]func(Stats) time.Duration{
		"median": func(s Stats) time.Duration { return s.Median },
		"p95":    func(s Stats) time.Duration { return s.P95 },
		"p99":    func(s Stats) time.Duration { return s.P99 },
		"min":    func(s Stats) time.Duration { return s.Min },
		"max":    func(s Stats) time.Duration { return s.Max },
		"mean":   func(s Stats) time.Duration { return s.Mean },
	}[stat]
	if pick == nil {
		return fmt.Errorf("compare: unknown statistic %q (median, p95, p99, min, max, mean)", stat)
	}
	type row struct{ key, label string }
	var rows []row
	seen := map[string]bool{}
	cells := map[string]map[string]string{} // row key -> column label -> cell
	add := func(col, key, label, cell string) {
		if !seen[key] {
			seen[key] = true
			rows = append(rows, row{key, label})
			cells[key] = map[string]string{}
		}
		cells[key][col] = cell
	}
	for _, c := range cols {
		for _, file := range c.Order {
			r := c.Reports[file]
			if r.Error != "" {
				msg := r.Error
				if len(msg) > 60 {
					msg = msg[:57] + "..."
				}
				add(c.Label, file+"/error", file+": FAILED", msg)
			}
			if s := r.Seed; s != nil {
				add(c.Label, file+"/seed", file+": seed", fmt.Sprintf("%d in %.0fs (%.0f/s)", s.Providers, s.Elapsed.Seconds(), s.PerSecond))
			}
			for _, res := range r.Results {
				cell := msf(pick(res.Stats)) + " ms"
				if res.Failed() {
					cell = "error"
					if res.Timeouts > 0 {
						cell = fmt.Sprintf("timeout >%s", r.Timeout)
					}
				} else {
					cell += fmt.Sprintf(" (%d)", res.Count)
				}
				add(c.Label, file+"/"+res.Name, file+": "+res.Name+" "+stat, cell)
			}
			if cl := r.Claims; cl != nil {
				add(c.Label, file+"/claims", file+": claims/s", fmt.Sprintf("%.2f (%d, %d conflicts)", cl.PerSecond, cl.Claims, cl.Conflicts))
				add(c.Label, file+"/claimp99", file+": claim p50/p99", fmt.Sprintf("%s/%s ms", msf(cl.Latency.Median), msf(cl.Latency.P99)))
				if v := cl.Verify; v != nil {
					add(c.Label, file+"/verify", file+": overcommit check", verdict(v))
				}
			}
			if v := r.Verify; v != nil {
				add(c.Label, file+"/verify", file+": overcommit check", verdict(v))
			}
			if pl := r.Perfload; pl != nil {
				add(c.Label, file+"/perfload-query", file+": perfload query median", fmt.Sprintf("%s ms (%d)", msf(pl.Timed.Median), pl.Candidates))
				add(c.Label, file+"/perfload-rate", file+": perfload requests/s", fmt.Sprintf("%.2f (c %d, %d failed)", pl.PerSecond, pl.Concurrency, pl.Failed))
			}
			if m := r.Memory; m != nil {
				add(c.Label, file+"/mem", file+": server peak RSS", mib(max(m.PeakRSS, m.HWM)))
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "measurement")
	for _, c := range cols {
		fmt.Fprintf(tw, "\t%s", c.Label)
	}
	fmt.Fprintln(tw, "\t")
	for _, r := range rows {
		fmt.Fprint(tw, r.label)
		for _, c := range cols {
			cell := cells[r.key][c.Label]
			if cell == "" {
				cell = "-"
			}
			fmt.Fprintf(tw, "\t%s", cell)
		}
		fmt.Fprintln(tw, "\t")
	}
	return tw.Flush()
}

func verdict(v *VerifyResult) string {
	switch {
	case v.Error != "":
		return "not run"
	case v.OK:
		return "ok"
	default:
		return fmt.Sprintf("OVERCOMMITTED (%d)", len(v.Overcommits))
	}
}

// count is "1 provider" or "N providers".
func count[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
