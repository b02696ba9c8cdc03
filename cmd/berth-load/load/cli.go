package load

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

const usage = `berth-load drives the OpenStack Placement HTTP API of any endpoint.

Usage: berth-load COMMAND [flags]

Commands:
  seed        create N flat compute nodes (--nodes), 1 in 10 with CUSTOM_BENCH_TRAIT, 10 aggregates
  candidates  time the flat query suite (--iterations K each, after warm-up)
  nested      seed Placement's perfload nested trees (--trees) and time granular same_subtree queries
  perfload    Placement's nested-perfload gate job: its trees (--trees), its query timed around
              --allocations written, then --requests of it from --concurrency clients (ab): requests/s
  wide        seed one root with --children one-unit children and time a --groups granular query
  claims      concurrent claims (--clients, --duration or --claims), then an overcommit check:
              --mode two-step (GET candidates, PUT allocations, retry on 409; any Placement)
              or --mode claims (Berth's POST /claims); --rounds repeats rounds of --claims,
              releasing each, for --duration of timed claiming; --release empties the cloud after
  verify      only the overcommit check, over every provider
  flood       --clients repeat an expensive GET (--path, default unlimited candidates) for
              --duration while one client times small requests (GET /, one provider)
  memory      sample a server's memory (--pid) for --duration
  wait        wait until the endpoint answers GET / or --path (up to --timeout, default 120s)
  scale       print the scaling table of a scripts/scale.sh output directory against issue 18's targets
  compare     print report files or directories side by side: compare LABEL=PATH ...

Every command but compare and scale takes --url, --token, --microversion, --timeout, --json FILE,
--label, and --pid PID (--reset-peak) to report the server's memory around the run.
Run "berth-load COMMAND -h" for a command's flags.
`

// common are the flags every command that talks to a server takes.
type common struct {
	url, token, microversion, jsonPath, label string
	timeout                                   time.Duration
	pid, dbPid                                int
	resetPeak                                 bool
	quiet                                     bool
	keepAlive                                 string
}

func (c *common) register(fs *flag.FlagSet, timeout time.Duration) {
	fs.StringVar(&c.url, "url", envOr("BERTH_LOAD_URL", "http://127.0.0.1:8778"), "Placement endpoint (loopback only is sensible)")
	fs.StringVar(&c.token, "token", envOr("BERTH_LOAD_TOKEN", "admin"), "X-Auth-Token value")
	fs.StringVar(&c.microversion, "microversion", DefaultMicroversion, "placement microversion sent with every request")
	fs.DurationVar(&c.timeout, "timeout", timeout, "client timeout per request")
	fs.StringVar(&c.jsonPath, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&c.label, "label", "", "label stored in the JSON report (e.g. berth, reference)")
	fs.IntVar(&c.pid, "pid", 0, "server process to sample /proc/PID/status of (with its children) around the run")
	fs.IntVar(&c.dbPid, "db-pid", 0, "database server process (e.g. PostgreSQL's postmaster) whose tree's CPU and memory to sample around the run too")
	fs.BoolVar(&c.resetPeak, "reset-peak", false, "with --pid: reset the processes' VmHWM first (writes /proc/PID/clear_refs)")
	fs.BoolVar(&c.quiet, "q", false, "no progress lines on stderr")
	fs.StringVar(&c.keepAlive, "keepalive", "auto", "reuse connections: on, off, or auto (on for sequential timing, off for concurrent\n"+
		"seeding, claims and checks, because a synchronous server such as uwsgi serves one kept-alive\n"+
		"connection per process until it idles and starves the other clients)")
}

// client returns a client for conns concurrent users; with --keepalive
// auto, connections are reused only when conns is 1.
func (c *common) client(conns int) *Client {
	noKeepAlive := conns > 1
	switch c.keepAlive {
	case "on":
		noKeepAlive = false
	case "off":
		noKeepAlive = true
	}
	return NewClient(ClientConfig{URL: c.url, Token: c.token, Microversion: c.microversion, Timeout: c.timeout, Conns: conns, NoKeepAlive: noKeepAlive})
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// Main runs the command line args (without the program name) and returns
// the process exit code: 0 on success, 1 when the run failed or a check
// (overcommit) failed, 2 on bad usage.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, args := args[0], args[1:]
	fs := flag.NewFlagSet("berth-load "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	var run func(context.Context, *Report, io.Writer) error
	var timed samplers // told a claims run's timed phases
	waitPath := "/"
	timeout := 60 * time.Second
	switch cmd {
	case "seed":
		var p SeedParams
		fs.IntVar(&p.Nodes, "nodes", 1000, "compute nodes to create")
		fs.IntVar(&p.Workers, "workers", 16, "concurrent HTTP workers")
		fs.IntVar(&p.Aggregates, "aggregates", 10, "aggregates; node i joins aggregate i % this")
		fs.IntVar(&p.TraitEvery, "trait-every", 10, "node i gets CUSTOM_BENCH_TRAIT when i % this == 0")
		run = func(ctx context.Context, r *Report, log io.Writer) (err error) {
			r.Params = p
			r.Seed, err = Seed(ctx, c.client(p.Workers), p, log)
			return err
		}
	case "candidates":
		var p QueryParams
		fs.IntVar(&p.Iterations, "iterations", 10, "timed runs of each query")
		fs.IntVar(&p.Warmup, "warmup", 1, "untimed runs of each query first")
		only := fs.String("only", "", "comma-separated query names (a-flavor, b-flavor-limit1000, c-required-trait, d-member-of, e-providers, f-provider-uuid)")
		run = func(ctx context.Context, r *Report, log io.Writer) error {
			p.NoWarmup = p.Warmup == 0
			p.StopAfterTimeout = true
			qs, err := selectQueries(CandidateQueries(), *only)
			if err != nil {
				return err
			}
			r.Params = p
			r.Results = RunQueries(ctx, c.client(1), qs, p, log)
			return failedErr(r.Results)
		}
	case "nested":
		var p NestedParams
		var q QueryParams
		fs.IntVar(&p.Trees, "trees", 1000, "trees of 7 providers")
		fs.IntVar(&p.Workers, "workers", 8, "concurrent HTTP workers while seeding")
		noSeed := fs.Bool("no-seed", false, "do not seed; the trees exist")
		fs.IntVar(&q.Iterations, "iterations", 10, "timed runs of each query")
		fs.IntVar(&q.Warmup, "warmup", 1, "untimed runs of each query first")
		run = func(ctx context.Context, r *Report, log io.Writer) (err error) {
			q.NoWarmup = q.Warmup == 0
			q.StopAfterTimeout = true
			r.Params = map[string]any{"trees": p.Trees, "iterations": q.Iterations, "warmup": q.Warmup}
			if !*noSeed {
				if r.Seed, err = SeedNested(ctx, c.client(p.Workers), p, log); err != nil {
					return err
				}
			}
			r.Results = RunQueries(ctx, c.client(1), NestedQueries(), q, log)
			return failedErr(r.Results)
		}
	case "perfload":
		var p PerfloadParams
		fs.IntVar(&p.Trees, "trees", 1000, "trees of the gate job's 7 providers")
		fs.IntVar(&p.Workers, "workers", 8, "concurrent HTTP workers while seeding")
		fs.BoolVar(&p.NoSeed, "no-seed", false, "do not seed; the trees exist")
		fs.IntVar(&p.Allocations, "allocations", 10, "allocations written, each followed by two timed queries")
		fs.IntVar(&p.Concurrency, "concurrency", 10, "concurrent clients of the throughput phase (ab -c)")
		fs.IntVar(&p.Requests, "requests", 500, "requests of the throughput phase (ab -n)")
		run = func(ctx context.Context, r *Report, log io.Writer) (err error) {
			r.Params = p
			if !p.NoSeed {
				if r.Seed, err = SeedPerfload(ctx, c.client(p.Workers), p, log); err != nil {
					return err
				}
			}
			r.Perfload = RunPerfload(ctx, c.client(1), c.client(p.Concurrency), p, log)
			if r.Perfload.Error != "" {
				return errors.New(r.Perfload.Error)
			}
			return nil
		}
	case "wide":
		var p WideParams
		var q QueryParams
		fs.IntVar(&p.Children, "children", 21, "children of the root, one unit each")
		fs.IntVar(&p.Groups, "groups", 8, "granular request groups, one unit each")
		fs.IntVar(&p.Classes, "classes", 1, "custom resource classes spread over children and groups")
		fs.StringVar(&p.GroupPolicy, "group-policy", "none", "none or isolate")
		fs.IntVar(&p.Limit, "limit", 0, "limit parameter (0: none)")
		fs.IntVar(&q.Iterations, "iterations", 1, "timed runs of the query")
		fs.IntVar(&q.Warmup, "warmup", 0, "untimed runs first")
		run = func(ctx context.Context, r *Report, log io.Writer) error {
			q.NoWarmup = q.Warmup == 0
			q.StopAfterTimeout = true
			r.Params = p
			_, seed, err := SeedWide(ctx, c.client(8), p)
			if err != nil {
				return err
			}
			r.Seed = seed
			// A timeout is this benchmark's expected outcome on Placement:
			// it is reported, not treated as a failure of the run.
			r.Results = RunQueries(ctx, c.client(1), []Query{WideQuery(p)}, q, log)
			if res := r.Results[0]; res.Failed() && res.Timeouts == 0 {
				return errors.New(res.Error)
			}
			return nil
		}
	case "claims":
		var p ClaimsParams
		fs.StringVar(&p.Mode, "mode", ModeTwoStep, "two-step (GET /allocation_candidates, PUT /allocations, retry on 409) or claims (POST /claims)")
		fs.IntVar(&p.Alternates, "alternates", -1, "claims mode: \"alternates\" in the body (negative: left out, the server's default)")
		fs.IntVar(&p.Clients, "clients", 16, "concurrent scheduler clients")
		fs.DurationVar(&p.Duration, "duration", 60*time.Second, "no claim starts after this")
		fs.IntVar(&p.Claims, "claims", 0, "stop after this many claims attempted (0: duration only)")
		fs.StringVar(&p.Resources, "resources", "VCPU:4,MEMORY_MB:16384,DISK_GB:100", "flavor")
		fs.IntVar(&p.Limit, "limit", 20, "limit parameter of the candidates GET")
		fs.StringVar(&p.Pick, "pick", "first", "first, or random (among the --limit candidates)")
		fs.IntVar(&p.Retries, "retries", 10, "retries of a claim after a 409")
		fs.Uint64Var(&p.Seed, "seed", 0, "random seed for --pick random (0: from the clock)")
		verify := fs.Bool("verify", true, "check usages against capacity on every provider afterwards")
		fs.BoolVar(&p.Rounds, "rounds", false, "with --claims and --duration: a round that reaches --claims claims before --duration of claiming\n"+
			"has passed is followed by the release of its consumers (DELETE /allocations, concurrently, untimed,\n"+
			"each answered 204) and another round, until the rounds' timed claiming adds up to --duration;\n"+
			"claims/s is over that time only, and the CPU of --pid and --db-pid too")
		fs.BoolVar(&p.Release, "release", false, "at the end (after --verify's check) release every consumer the run left claimed,\n"+
			"so that the next run starts on the cloud this one found (untimed)")
		run = func(ctx context.Context, r *Report, log io.Writer) (err error) {
			p.Verify = *verify
			p.Phases = &timed
			r.Params = p
			r.Claims, err = RunClaims(ctx, c.client(p.Clients), p, log)
			if err == nil && r.Claims.Verify != nil && !r.Claims.Verify.OK {
				err = errors.New("overcommit check failed")
			}
			return err
		}
	case "flood":
		var p FloodParams
		fs.IntVar(&p.Clients, "clients", 500, "concurrent clients repeating the expensive GET")
		fs.DurationVar(&p.Duration, "duration", 30*time.Second, "how long the flood lasts")
		fs.StringVar(&p.Path, "path", DefaultFloodPath, "the expensive GET")
		fs.DurationVar(&p.ProbeInterval, "probe-interval", 50*time.Millisecond, "pause between two small requests")
		run = func(ctx context.Context, r *Report, log io.Writer) error {
			r.Params = p
			probe := NewClient(ClientConfig{URL: c.url, Token: c.token, Microversion: c.microversion, Timeout: c.timeout, Conns: 1})
			r.Results = RunFlood(ctx, c.client(p.Clients), probe, p, log)
			return nil
		}
	case "verify":
		run = func(ctx context.Context, r *Report, log io.Writer) error {
			r.Verify = Verify(ctx, c.client(8), 8, nil)
			if !r.Verify.OK {
				return errors.New("overcommit check failed")
			}
			return nil
		}
	case "wait":
		timeout = 120 * time.Second
		fs.StringVar(&waitPath, "path", "/", "the GET that must answer 2xx (e.g. a candidates query: the first answer after a cold start)")
		run = func(ctx context.Context, r *Report, log io.Writer) error { return nil }
	case "memory":
		d := fs.Duration("duration", 10*time.Second, "how long to sample")
		run = func(ctx context.Context, r *Report, log io.Writer) error {
			if c.pid == 0 {
				return errors.New("memory: --pid is required")
			}
			select {
			case <-time.After(*d):
			case <-ctx.Done():
			}
			return nil
		}
	case "scale":
		if err := fs.Parse(args); err != nil {
			return 2
		}
		if fs.NArg() != 1 {
			fmt.Fprintln(stderr, "scale: give the output directory of scripts/scale.sh")
			return 2
		}
		if err := PrintScale(stdout, fs.Arg(0)); err != nil {
			fmt.Fprintln(stderr, "scale:", err)
			return 1
		}
		return 0
	case "compare":
		stat := fs.String("stat", "median", "statistic of query latency: median, p95, p99, min, max, mean")
		if err := fs.Parse(args); err != nil {
			return 2
		}
		var cols []*Column
		for _, a := range fs.Args() {
			label, path, ok := strings.Cut(a, "=")
			if !ok {
				label, path = a, a
			}
			col, err := LoadColumn(label, path)
			if err != nil {
				fmt.Fprintln(stderr, "compare:", err)
				return 1
			}
			cols = append(cols, col)
		}
		if len(cols) == 0 {
			fmt.Fprintln(stderr, "compare: give LABEL=PATH arguments (a report file or a directory of them)")
			return 2
		}
		if err := Compare(stdout, cols, *stat); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		return 0
	default:
		fmt.Fprintf(stderr, "berth-load: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	c.register(fs, timeout)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "berth-load %s: unexpected arguments %q\n", cmd, fs.Args())
		return 2
	}
	log := stderr
	if c.quiet {
		log = io.Discard
	}
	r := &Report{Command: cmd, Label: c.label, URL: c.url, Microversion: c.microversion, Started: time.Now().UTC(), Timeout: c.timeout}
	if cmd == "wait" {
		// The one command whose --timeout bounds the whole wait, not a request.
		if err := waitUp(ctx, c.client(1), waitPath, c.timeout); err != nil {
			fmt.Fprintf(stderr, "berth-load wait: %v\n", err)
			return 1
		}
		return 0
	}
	if c.keepAlive != "auto" && c.keepAlive != "on" && c.keepAlive != "off" {
		fmt.Fprintf(stderr, "berth-load %s: --keepalive must be on, off or auto\n", cmd)
		return 2
	}
	if cmd != "memory" {
		if err := checkUp(ctx, c.client(1)); err != nil {
			fmt.Fprintf(stderr, "berth-load %s: %v\n", cmd, err)
			return 1
		}
	}
	var sampler *MemSampler
	if c.pid != 0 {
		var err error
		if sampler, err = StartMemSampler(c.pid, 100*time.Millisecond, c.resetPeak); err != nil {
			fmt.Fprintf(stderr, "berth-load %s: %v\n", cmd, err)
			return 1
		}
	}
	var dbSampler *MemSampler
	if c.dbPid != 0 {
		var err error
		if dbSampler, err = StartMemSampler(c.dbPid, time.Second, false); err != nil {
			fmt.Fprintf(stderr, "berth-load %s: %v\n", cmd, err)
			return 1
		}
	}
	timed = samplers{sampler, dbSampler}
	runErr := run(ctx, r, log)
	if sampler != nil {
		r.Memory = sampler.Stop()
	}
	if dbSampler != nil {
		r.Database = dbSampler.Stop()
	}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	r.Print(stdout)
	if c.jsonPath != "" {
		if err := r.WriteJSON(c.jsonPath); err != nil {
			fmt.Fprintf(stderr, "berth-load %s: %v\n", cmd, err)
			return 1
		}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "berth-load %s: %v\n", cmd, runErr)
		return 1
	}
	return 0
}

// samplers are the memory samplers of a run (either may be nil), told a
// claims run's timed phases so that they count only those phases' CPU.
type samplers []*MemSampler

func (s *samplers) Pause() {
	for _, m := range *s {
		m.Pause()
	}
}

func (s *samplers) Resume() {
	for _, m := range *s {
		m.Resume()
	}
}

func selectQueries(all []Query, only string) ([]Query, error) {
	if only == "" {
		return all, nil
	}
	var out []Query
	for _, name := range strings.Split(only, ",") {
		found := false
		for _, q := range all {
			if q.Name == strings.TrimSpace(name) {
				out = append(out, q)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no query named %q", name)
		}
	}
	return out, nil
}

// failedErr reports queries that never answered; their rows still print.
func failedErr(results []Result) error {
	var bad []string
	for _, r := range results {
		if r.Failed() {
			bad = append(bad, r.Name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("no successful answer to %s", strings.Join(bad, ", "))
	}
	return nil
}
