package load

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The scaling table: scripts/scale.sh leaves, for each size N, a
// directory n<N> of reports (seed, list, candidates, and the claims runs:
// claims-c<C>, or its slices claims-c<C>-s<K>) and a start.txt of
// key=value lines (cold start, snapshot load and reload times, load
// averages); PrintScale reads them back and prints one row per
// measurement, one column per size, and issue 18's verdict per row.
//
// Slices: scale.sh claims in slices that alternate between the sizes
// (1,000 then 100,000 providers, then 1,000 again...), so that a change in
// the shared machine's speed during the run weighs on every size alike
// instead of on whichever ran at the time. A size's slices at one clients
// count add up to one claims run (mergeSlices).

// scaleSize is what one size's directory holds.
type scaleSize struct {
	n       int
	reports map[string]*Report
	start   map[string]string
	// slices is, per clients count, how many slices its claims run was
	// measured in (none: one run).
	slices map[int]int
}

// sliceOf reports whether name is a slice of a claims run
// (claims-c<C>-s<K>), and that run's name (claims-c<C>) and clients count.
func sliceOf(name string) (run string, clients int, ok bool) {
	run, k, ok := strings.Cut(name, "-s")
	if !ok {
		return "", 0, false
	}
	clients, err := strconv.Atoi(strings.TrimPrefix(run, "claims-c"))
	if err != nil || !strings.HasPrefix(run, "claims-c") {
		return "", 0, false
	}
	if _, err := strconv.Atoi(k); err != nil {
		return "", 0, false
	}
	return run, clients, true
}

// mergeSlices adds up the slices of one claims run: claims, timed
// claiming and the CPU counted over it (so claims/s and CPU per claim are
// over every slice); peaks are the highest slice's, and so are the
// latency percentiles, which the slices' reports hold only as
// percentiles (the worst slice's p99 is an upper bound of the whole
// run's).
func mergeSlices(rs []*Report) *Report {
	out := &Report{Command: rs[0].Command, URL: rs[0].URL, Microversion: rs[0].Microversion, Started: rs[0].Started}
	var mem, db []*MemReport
	for _, r := range rs {
		if r.Started.Before(out.Started) {
			out.Started = r.Started
		}
		if r.Error != "" && out.Error == "" {
			out.Error = r.Error
		}
		if r.Memory != nil {
			mem = append(mem, r.Memory)
		}
		if r.Database != nil {
			db = append(db, r.Database)
		}
		cl := r.Claims
		if cl == nil {
			continue
		}
		if out.Claims == nil {
			out.Claims = &ClaimsResult{Mode: cl.Mode, Clients: cl.Clients, Pick: cl.Pick}
		}
		m := out.Claims
		m.Elapsed += cl.Elapsed
		m.Claims += cl.Claims
		m.Rounds += cl.Rounds
		m.Released += cl.Released
		m.ReleaseTime += cl.ReleaseTime
		m.Wall += cl.Wall
		m.Conflicts += cl.Conflicts
		m.GaveUp += cl.GaveUp
		m.NoFit += cl.NoFit
		m.NoValidHost += cl.NoValidHost
		m.ServerAttempts += cl.ServerAttempts
		m.Errors += cl.Errors
		if m.Error == "" {
			m.Error = cl.Error
		}
		m.Latency = worstStats(m.Latency, cl.Latency)
		m.PutTime = worstStats(m.PutTime, cl.PutTime)
	}
	if m := out.Claims; m != nil && m.Elapsed > 0 {
		m.PerSecond = float64(m.Claims) / m.Elapsed.Seconds()
	}
	// CPU and peaks only when every slice measured them.
	if len(mem) == len(rs) {
		out.Memory = mergeMem(mem)
	}
	if len(db) == len(rs) {
		out.Database = mergeMem(db)
	}
	return out
}

// worstStats combines two runs' latency: the higher of each percentile,
// the mean weighted by the samples.
func worstStats(a, b Stats) Stats {
	if a.N == 0 {
		return b
	}
	if b.N == 0 {
		return a
	}
	n := a.N + b.N
	return Stats{N: n, Min: min(a.Min, b.Min), Median: max(a.Median, b.Median), P95: max(a.P95, b.P95),
		P99: max(a.P99, b.P99), Max: max(a.Max, b.Max),
		Mean: time.Duration((int64(a.Mean)*int64(a.N) + int64(b.Mean)*int64(b.N)) / int64(n))}
}

// mergeMem adds up the slices' CPU and keeps their highest peaks.
func mergeMem(ms []*MemReport) *MemReport {
	out := &MemReport{PID: ms[0].PID, StartRSS: ms[0].StartRSS, EndRSS: ms[len(ms)-1].EndRSS, Reset: true}
	for _, m := range ms {
		out.Processes = max(out.Processes, m.Processes)
		out.PeakRSS = max(out.PeakRSS, m.PeakRSS)
		out.HWM = max(out.HWM, m.HWM)
		out.Samples += m.Samples
		out.Reset = out.Reset && m.Reset
		out.CPURoot += m.CPURoot
		out.CPUTree += m.CPUTree
		out.CPUCounted += m.CPUCounted
		out.CPUExcluded += m.CPUExcluded
		if out.Error == "" {
			out.Error = m.Error
		}
	}
	return out
}

func loadScale(dir string) ([]scaleSize, error) {
	dirs, _ := filepath.Glob(filepath.Join(dir, "n*"))
	var sizes []scaleSize
	for _, d := range dirs {
		n, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "n"))
		if err != nil {
			continue
		}
		sz := scaleSize{n: n, reports: map[string]*Report{}, start: map[string]string{}, slices: map[int]int{}}
		files, _ := filepath.Glob(filepath.Join(d, "*.json"))
		sliced := map[string][]*Report{}
		for _, f := range files {
			r, err := ReadReport(f)
			if err != nil {
				return nil, err
			}
			name := strings.TrimSuffix(filepath.Base(f), ".json")
			if run, c, ok := sliceOf(name); ok {
				sliced[run] = append(sliced[run], r)
				sz.slices[c]++
				continue
			}
			sz.reports[name] = r
		}
		for run, rs := range sliced {
			sz.reports[run] = mergeSlices(rs)
		}
		if f, err := os.Open(filepath.Join(d, "start.txt")); err == nil {
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				if k, v, ok := strings.Cut(sc.Text(), "="); ok {
					sz.start[strings.TrimSpace(k)] = strings.TrimSpace(v)
				}
			}
			f.Close()
		}
		sizes = append(sizes, sz)
	}
	if len(sizes) == 0 {
		return nil, fmt.Errorf("%s: no n<SIZE> directories", dir)
	}
	slices.SortFunc(sizes, func(a, b scaleSize) int { return a.n - b.n })
	return sizes, nil
}

// scaleRow is one measurement: its value per size (ok false: not
// measured), how to print it, and the target, if any, judged on
// the largest size.
type scaleRow struct {
	name   string
	value  func(s scaleSize) (float64, bool)
	format func(float64) string
	// target, when set, describes the target and judges it given every
	// size's value (by size) and the largest size measured.
	target string
	judge  func(vals map[int]float64, largest int) (met, known bool)
}

func (s scaleSize) claims(c int) *ClaimsResult {
	if r := s.reports[fmt.Sprintf("claims-c%d", c)]; r != nil && r.Claims != nil && r.Claims.Claims > 0 {
		return r.Claims
	}
	return nil
}

func (s scaleSize) result(report, query string) *Result {
	if r := s.reports[report]; r != nil {
		for i := range r.Results {
			if r.Results[i].Name == query && !r.Results[i].Failed() {
				return &r.Results[i]
			}
		}
	}
	return nil
}

func durMs(d time.Duration) float64 { return float64(d) / 1e6 }

func fmtMs(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.2f s", v/1000)
	}
	return fmt.Sprintf("%.1f ms", v)
}

func fmtMiB(v float64) string { return fmt.Sprintf("%.0f MiB", v) }

// below judges "value at the largest size under limit"; at is the size
// the target is about (100,000), judged only when measured.
func below(at int, limit float64) func(map[int]float64, int) (bool, bool) {
	return func(vals map[int]float64, _ int) (bool, bool) {
		v, ok := vals[at]
		return v < limit, ok
	}
}

func scaleRows() []scaleRow {
	var rows []scaleRow
	rows = append(rows,
		scaleRow{name: "seeding through the API", format: func(v float64) string { return fmt.Sprintf("%.1f s", v) },
			value: func(s scaleSize) (float64, bool) {
				if r := s.reports["seed"]; r != nil && r.Seed != nil {
					return r.Seed.Elapsed.Seconds(), true
				}
				return 0, false
			},
			target: "100k: < 2 min", judge: below(100000, 120)},
		scaleRow{name: "  write requests/s", format: func(v float64) string { return fmt.Sprintf("%.0f/s", v) },
			value: func(s scaleSize) (float64, bool) {
				if r := s.reports["seed"]; r != nil && r.Seed != nil {
					return r.Seed.RequestRate, true
				}
				return 0, false
			}},
		scaleRow{name: "  berthd CPU per write", format: fmtMs,
			value: func(s scaleSize) (float64, bool) {
				if r := s.reports["seed"]; r != nil && r.Seed != nil && r.Memory != nil && r.Seed.Requests > 0 {
					return 1000 * r.Memory.CPUTree / float64(r.Seed.Requests), true
				}
				return 0, false
			}},
		scaleRow{name: "  PostgreSQL CPU per write", format: fmtMs,
			value: func(s scaleSize) (float64, bool) {
				if r := s.reports["seed"]; r != nil && r.Seed != nil && r.Database != nil && r.Seed.Requests > 0 {
					return 1000 * r.Database.CPUTree / float64(r.Seed.Requests), true
				}
				return 0, false
			}},
	)
	for _, c := range []int{16, 64} {
		rows = append(rows,
			scaleRow{name: fmt.Sprintf("POST /claims, %d clients: claims/s", c), format: func(v float64) string { return fmt.Sprintf("%.0f/s", v) },
				value: func(s scaleSize) (float64, bool) {
					if cl := s.claims(c); cl != nil {
						return cl.PerSecond, true
					}
					return 0, false
				},
				target: "100k >= 90% of 1k",
				judge: func(vals map[int]float64, _ int) (bool, bool) {
					big, ok1 := vals[100000]
					small, ok2 := vals[1000]
					return big >= 0.9*small, ok1 && ok2
				}},
			scaleRow{name: "  slices (sizes alternating)", format: func(v float64) string { return fmt.Sprintf("%.0f", v) },
				value: func(s scaleSize) (float64, bool) {
					k, ok := s.slices[c]
					return float64(k), ok
				}},
			scaleRow{name: "  rounds (released between)", format: func(v float64) string { return fmt.Sprintf("%.0f", v) },
				value: func(s scaleSize) (float64, bool) {
					if cl := s.claims(c); cl != nil && cl.Rounds > 0 {
						return float64(cl.Rounds), true
					}
					return 0, false
				}},
			scaleRow{name: "  p50 (sliced: the worst slice's)", format: fmtMs,
				value: func(s scaleSize) (float64, bool) {
					if cl := s.claims(c); cl != nil {
						return durMs(cl.Latency.Median), true
					}
					return 0, false
				}},
			scaleRow{name: "  p99 (sliced: the worst slice's)", format: fmtMs,
				value: func(s scaleSize) (float64, bool) {
					if cl := s.claims(c); cl != nil {
						return durMs(cl.Latency.P99), true
					}
					return 0, false
				}},
			scaleRow{name: "  berthd CPU per claim", format: fmtMs,
				value: func(s scaleSize) (float64, bool) {
					if r := s.reports[fmt.Sprintf("claims-c%d", c)]; r != nil && r.Memory != nil && s.claims(c) != nil {
						return 1000 * r.Memory.CPUTree / float64(r.Claims.Claims), true
					}
					return 0, false
				}},
			scaleRow{name: "  PostgreSQL CPU per claim", format: fmtMs,
				value: func(s scaleSize) (float64, bool) {
					if r := s.reports[fmt.Sprintf("claims-c%d", c)]; r != nil && r.Database != nil && s.claims(c) != nil {
						return 1000 * r.Database.CPUTree / float64(r.Claims.Claims), true
					}
					return 0, false
				}},
		)
		if c == 16 {
			rows[len(rows)-3].target, rows[len(rows)-3].judge = "100k: < 50 ms", below(100000, 50)
		}
	}
	rows = append(rows,
		scaleRow{name: "berthd peak RSS during claims", format: fmtMiB,
			value: func(s scaleSize) (float64, bool) {
				peak, ok := 0, false
				for _, c := range []int{16, 64} {
					if r := s.reports[fmt.Sprintf("claims-c%d", c)]; r != nil && r.Memory != nil {
						peak, ok = max(peak, r.Memory.PeakRSS, r.Memory.HWM), true
					}
				}
				return float64(peak) / 1024, ok
			},
			target: "100k: < 500 MiB", judge: below(100000, 500)},
		scaleRow{name: "GET /resource_providers (all), median", format: fmtMs,
			value: func(s scaleSize) (float64, bool) {
				if r := s.result("list", "e-providers"); r != nil {
					return durMs(r.Stats.Median), true
				}
				return 0, false
			},
			target: "100k: < 1 s", judge: below(100000, 1000)},
		scaleRow{name: "  berthd RSS growth while listing", format: fmtMiB,
			value: func(s scaleSize) (float64, bool) {
				if r := s.reports["list"]; r != nil && r.Memory != nil {
					return float64(max(r.Memory.PeakRSS, r.Memory.HWM)-r.Memory.StartRSS) / 1024, true
				}
				return 0, false
			},
			target: "100k: < 100 MiB", judge: below(100000, 100)},
		scaleRow{name: "GET /allocation_candidates, no limit, median", format: fmtMs,
			value: func(s scaleSize) (float64, bool) {
				if r := s.result("candidates", "a-flavor"); r != nil {
					return durMs(r.Stats.Median), true
				}
				return 0, false
			}},
		scaleRow{name: "  answers (allocation requests)", format: func(v float64) string { return fmt.Sprintf("%.0f", v) },
			value: func(s scaleSize) (float64, bool) {
				if r := s.result("candidates", "a-flavor"); r != nil {
					return float64(r.Count), true
				}
				return 0, false
			}},
		scaleRow{name: "GET /allocation_candidates, limit 1000, median", format: fmtMs,
			value: func(s scaleSize) (float64, bool) {
				if r := s.result("candidates", "b-flavor-limit1000"); r != nil {
					return durMs(r.Stats.Median), true
				}
				return 0, false
			}},
	)
	startRow := func(name, key string) scaleRow {
		return scaleRow{name: name, format: fmtMs, value: func(s scaleSize) (float64, bool) {
			v, err := strconv.ParseFloat(s.start[key], 64)
			return v * 1000, err == nil
		}}
	}
	rows = append(rows,
		startRow("VACUUM (ANALYZE) after seeding", "vacuum_s"),
		startRow("cold start to first candidates answer", "cold_start_s"),
		startRow("  of which the snapshot's first load", "first_load_s"),
		startRow("full snapshot reload (periodic refresh)", "reload_s"),
	)
	return rows
}

// PrintScale prints the scaling table of the scale.sh output in dir.
func PrintScale(w io.Writer, dir string) error {
	sizes, err := loadScale(dir)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "measurement")
	for _, s := range sizes {
		fmt.Fprintf(tw, "\t%d providers", s.n)
	}
	fmt.Fprintln(tw, "\ttarget\tverdict")
	largest := sizes[len(sizes)-1].n
	for _, row := range scaleRows() {
		fmt.Fprint(tw, row.name)
		vals := map[int]float64{}
		for _, s := range sizes {
			if v, ok := row.value(s); ok {
				vals[s.n] = v
				fmt.Fprintf(tw, "\t%s", row.format(v))
			} else {
				fmt.Fprint(tw, "\t-")
			}
		}
		verdict := ""
		if row.judge != nil {
			switch met, known := row.judge(vals, largest); {
			case !known:
				verdict = "not measured"
			case met:
				verdict = "target met"
			default:
				verdict = "target NOT met"
			}
		}
		fmt.Fprintf(tw, "\t%s\t%s\n", row.target, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range sizes {
		if la := s.start["loadavg"]; la != "" {
			fmt.Fprintf(w, "load average (1, 5, 15 min) at %d providers: %s\n", s.n, la)
		}
		if ml := s.start["gomemlimit"]; ml != "" {
			fmt.Fprintf(w, "berthd's GOMEMLIMIT at %d providers: %s\n", s.n, ml)
		}
	}
	return nil
}
