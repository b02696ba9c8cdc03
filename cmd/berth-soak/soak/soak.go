package soak

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/berthd/berth/httpapi/client"
	"github.com/berthd/berth/internal/testing/patronitest"
	"github.com/berthd/berth/ledger"
)

// Config sizes a run.
type Config struct {
	Berthd    string        // path of the berthd binary
	Claims    int           // claims to attempt in all
	Clients   int           // concurrent clients
	Procs     int           // berthd processes
	Providers int           // providers, each of VCPU Capacity
	Capacity  int64         // VCPU per provider (a claim takes 1)
	Hold      int           // live claims per client before it frees its oldest
	KillEvery time.Duration // a berthd is killed and restarted this often
	Down      time.Duration // how long a killed berthd stays down
	Interval  time.Duration // report bucket
}

// Main runs the soak from the command line.
func Main(ctx context.Context, args []string, out, errOut io.Writer) int {
	fs := flag.NewFlagSet("berth-soak", flag.ContinueOnError)
	fs.SetOutput(errOut)
	cfg := Config{}
	fs.StringVar(&cfg.Berthd, "berthd", "bin/berthd", "berthd binary")
	fs.IntVar(&cfg.Claims, "claims", 100000, "claims to attempt")
	fs.IntVar(&cfg.Clients, "clients", 16, "concurrent clients")
	fs.IntVar(&cfg.Procs, "procs", 3, "berthd processes")
	fs.IntVar(&cfg.Providers, "providers", 20, "providers")
	fs.Int64Var(&cfg.Capacity, "capacity", 4, "VCPU per provider (a claim takes 1)")
	fs.IntVar(&cfg.Hold, "hold", 4, "live claims per client")
	fs.DurationVar(&cfg.KillEvery, "kill-every", 20*time.Second, "kill and restart a berthd this often")
	fs.DurationVar(&cfg.Down, "down", 2*time.Second, "how long a killed berthd stays down")
	fs.DurationVar(&cfg.Interval, "interval", 10*time.Second, "report bucket")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	r, err := Run(ctx, cfg, func(f string, a ...any) { fmt.Fprintf(errOut, f+"\n", a...) })
	if r != nil {
		r.Write(out)
	}
	if err != nil {
		fmt.Fprintln(errOut, "berth-soak:", err)
		return 1
	}
	if !r.Clean() {
		return 1
	}
	return 0
}

// Report is a run's outcome.
type Report struct {
	Cfg        Config
	Elapsed    time.Duration
	Buckets    []int64 // successful claims per Interval
	Errors     map[string]int64
	Claimed    int64 // claims answered 200
	Retried    int64 // of which after an unknown outcome
	Refused    int64
	Freed      int64
	Kills      int
	FailoverAt time.Duration // since start
	Promotion  time.Duration // kill -9 to a writable new primary
	// NoService is the longest time without a successful claim;
	// NoServiceTotal sums the gaps longer than a second.
	NoService, NoServiceTotal time.Duration
	Unknown                   int64 // requests whose outcome stayed unknown after retries
	// Audit.
	Lost, Leaked, Overcommitted, Mismatched int
}

// Clean reports whether the audit found nothing wrong.
func (r *Report) Clean() bool {
	return r.Lost == 0 && r.Leaked == 0 && r.Overcommitted == 0 && r.Mismatched == 0 && r.Unknown == 0 &&
		r.Errors["5xx"] == 0 && r.Errors["timeout"] == 0
}

// Write renders r as Markdown.
func (r *Report) Write(w io.Writer) {
	fmt.Fprintf(w, "soak: %d claims attempted by %d clients through %d berthd, %d providers x %d VCPU, "+
		"a berthd killed every %v, failover at %v\n\n", r.Cfg.Claims, r.Cfg.Clients, r.Cfg.Procs, r.Cfg.Providers,
		r.Cfg.Capacity, r.Cfg.KillEvery, r.FailoverAt.Round(time.Second))
	fmt.Fprintf(w, "| measure | value |\n| --- | --- |\n")
	fmt.Fprintf(w, "| elapsed | %v |\n", r.Elapsed.Round(time.Second))
	fmt.Fprintf(w, "| claims answered 200 | %d (%d after a retry) |\n", r.Claimed, r.Retried)
	fmt.Fprintf(w, "| claims refused (409, no room) | %d |\n", r.Refused)
	fmt.Fprintf(w, "| deletes | %d |\n", r.Freed)
	fmt.Fprintf(w, "| mean claims/s | %.0f |\n", float64(r.Claimed)/r.Elapsed.Seconds())
	fmt.Fprintf(w, "| berthd kills | %d |\n", r.Kills)
	fmt.Fprintf(w, "| primary kill -9 -> new primary writable | %v |\n", r.Promotion.Round(time.Millisecond))
	fmt.Fprintf(w, "| longest time without a successful claim | %v |\n", r.NoService.Round(time.Millisecond))
	fmt.Fprintf(w, "| time without service (gaps > 1 s, summed) | %v |\n", r.NoServiceTotal.Round(time.Millisecond))
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, r.Errors[k]))
	}
	fmt.Fprintf(w, "| errors by kind (each retried) | %s |\n", strings.Join(kinds, ", "))
	fmt.Fprintf(w, "| outcome still unknown after retries | %d |\n", r.Unknown)
	fmt.Fprintf(w, "| audit: lost / leaked or duplicated / wrong allocation / overcommitted | %d / %d / %d / %d |\n",
		r.Lost, r.Leaked, r.Mismatched, r.Overcommitted)
	fmt.Fprintf(w, "\nclaims/s per %v: ", r.Cfg.Interval)
	var rates []string
	for _, n := range r.Buckets {
		rates = append(rates, fmt.Sprintf("%.0f", float64(n)/r.Cfg.Interval.Seconds()))
	}
	fmt.Fprintln(w, strings.Join(rates, " "))
}

// proc is one berthd.
type proc struct {
	addr   string
	api    *client.Client // to addr
	cmd    *exec.Cmd
	exited chan struct{}
}

// run is a soak in progress.
type run struct {
	cfg    Config
	url    string
	logf   func(string, ...any)
	client *http.Client
	start  time.Time
	logDir string // berthd logs

	mu     sync.Mutex
	procs  []*proc
	errs   map[string]int64
	okAt   []time.Time // successful claims' times
	report Report

	attempted atomic.Int64
}

// Run runs one soak.
func Run(ctx context.Context, cfg Config, logf func(string, ...any)) (*Report, error) {
	if _, err := os.Stat(cfg.Berthd); err != nil {
		return nil, fmt.Errorf("berthd binary: %w (make build)", err)
	}
	c, err := patronitest.Start(ctx, patronitest.Options{Logf: logf})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if err := c.CreateDatabase(ctx, "berth"); err != nil {
		return nil, err
	}
	logDir, err := os.MkdirTemp("", "berth-soak-")
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, url: c.URL("berth"), logf: logf, errs: map[string]int64{}, logDir: logDir,
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients}}}
	if err := ledger.Migrate(ctx, r.url); err != nil {
		return nil, err
	}
	for range cfg.Procs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		addr := l.Addr().String()
		l.Close()
		p, err := r.startProc(ctx, addr)
		if err != nil {
			return nil, err
		}
		r.procs = append(r.procs, p)
	}
	defer func() {
		for _, p := range r.procs {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			<-p.exited
		}
	}()
	rps, err := r.seed()
	if err != nil {
		return nil, err
	}
	r.report.Cfg = cfg
	r.start = time.Now()

	stop := make(chan struct{})
	var chaos sync.WaitGroup
	chaos.Add(1)
	go func() { defer chaos.Done(); r.killer(ctx, stop) }()
	failed := make(chan struct{})
	chaos.Add(1)
	go func() {
		defer chaos.Done()
		defer close(failed)
		for r.attempted.Load() < int64(cfg.Claims/2) {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		r.report.FailoverAt = time.Since(r.start)
		logf("soak: killing the primary at %v", r.report.FailoverAt.Round(time.Second))
		t0 := time.Now()
		if _, _, err := c.FailOver(ctx); err != nil {
			logf("soak: failover: %v", err)
			return
		}
		r.report.Promotion = time.Since(t0)
		logf("soak: new primary writable after %v", r.report.Promotion.Round(time.Millisecond))
	}()

	live := make([][]held, cfg.Clients)
	var clients sync.WaitGroup
	for ci := range cfg.Clients {
		clients.Add(1)
		go func() { defer clients.Done(); live[ci] = r.client1(ci) }()
	}
	clients.Wait()
	close(stop)
	chaos.Wait()
	<-failed
	r.report.Elapsed = time.Since(r.start)
	r.summarise()
	var all []held
	for _, l := range live {
		all = append(all, l...)
	}
	if err := r.audit(rps, all); err != nil {
		logf("soak: berthd logs kept in %s", logDir)
		return &r.report, err
	}
	if !r.report.Clean() {
		logf("soak: berthd logs kept in %s", logDir)
	} else {
		_ = os.RemoveAll(logDir)
	}
	return &r.report, nil
}

// held is a claim a client holds: its consumer and where.
type held struct {
	consumer, provider string
}

func (r *run) startProc(ctx context.Context, addr string) (*proc, error) {
	cmd := exec.Command(r.cfg.Berthd, "serve", "--listen", addr, "--database-url", r.url, "--log-level", "warn")
	log, err := os.CreateTemp(r.logDir, "berthd-*.log")
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{addr: addr, cmd: cmd, exited: make(chan struct{}),
		api: client.New(client.Config{URL: addr, Token: "admin", Microversion: "1.39", HTTP: r.client,
			ClaimRetries: -1})} // the soak sees and retries each 503 itself
	go func() { _ = cmd.Wait(); log.Close(); close(p.exited) }()
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := p.api.Do(ctx, http.MethodGet, "/", nil, ""); err == nil && resp.Status == http.StatusOK {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("berthd exited at start; log in %s", log.Name())
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("berthd did not start; log in %s", log.Name())
		}
	}
}

// killer kills a berthd every KillEvery, round robin, and restarts it
// on its address after Down.
func (r *run) killer(ctx context.Context, stop <-chan struct{}) {
	for i := 0; ; i = (i + 1) % r.cfg.Procs {
		select {
		case <-stop:
			return
		case <-time.After(r.cfg.KillEvery):
		}
		r.mu.Lock()
		p := r.procs[i]
		r.mu.Unlock()
		_ = p.cmd.Process.Kill()
		<-p.exited
		r.report.Kills++
		select {
		case <-stop:
		case <-time.After(r.cfg.Down):
		}
		for attempt := 0; attempt < 20; attempt++ {
			np, err := r.startProc(ctx, p.addr)
			if err == nil {
				r.mu.Lock()
				r.procs[i] = np
				r.mu.Unlock()
				break
			}
			r.logf("soak: restart berthd %d: %v", i, err)
			time.Sleep(time.Second)
		}
	}
}

// api is the client of berthd i (modulo their number).
func (r *run) api(i int) *client.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[i%len(r.procs)].api
}

// do sends one request; kind is "" for a definite answer, else the kind
// of failure.
func (r *run) do(i int, method, path string, body any) (status int, out []byte, kind string) {
	resp, err := r.api(i).Send(context.Background(), method, path, body)
	var ne net.Error
	switch {
	case err != nil && errors.As(err, &ne) && ne.Timeout():
		return 0, nil, "timeout"
	case err != nil:
		return 0, nil, "conn_error"
	case resp.Status == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
		return resp.Status, resp.Body, "503"
	case resp.Status >= 500:
		return resp.Status, resp.Body, "5xx"
	}
	return resp.Status, resp.Body, ""
}

func (r *run) countErr(kind string) {
	r.mu.Lock()
	r.errs[kind]++
	r.mu.Unlock()
}

// client1 claims and frees until the run has attempted cfg.Claims, and
// returns what it still holds.
func (r *run) client1(ci int) []held {
	var live []held
	next := ci
	for n := 0; ; n++ {
		if r.attempted.Add(1) > int64(r.cfg.Claims) {
			return live
		}
		if len(live) >= r.cfg.Hold {
			if r.free(&next, live[0].consumer) {
				live = live[1:]
			}
		}
		consumer := fmt.Sprintf("5%07x-0000-4000-8000-%012d", ci, n)
		body := map[string]any{"consumer_uuid": consumer, "project_id": "soak", "user_id": "soak",
			"consumer_generation": nil, "consumer_type": "INSTANCE", "resources": map[string]int{"VCPU": 1}}
		for attempt := 0; ; attempt++ {
			if attempt == 100 {
				r.mu.Lock()
				r.report.Unknown++
				r.mu.Unlock()
				break
			}
			next++
			status, out, kind := r.do(next, "POST", "/claims", body)
			if kind != "" {
				r.countErr(kind)
				time.Sleep(300 * time.Millisecond)
				continue
			}
			if status == http.StatusOK {
				var doc struct {
					Allocations map[string]any `json:"allocations"`
				}
				_ = json.Unmarshal(out, &doc)
				for rp := range doc.Allocations {
					live = append(live, held{consumer: consumer, provider: rp})
				}
				r.mu.Lock()
				r.report.Claimed++
				if attempt > 0 {
					r.report.Retried++
				}
				r.okAt = append(r.okAt, time.Now())
				r.mu.Unlock()
			} else {
				r.mu.Lock()
				r.report.Refused++
				r.mu.Unlock()
				if len(live) > 0 && r.free(&next, live[0].consumer) {
					live = live[1:]
				}
			}
			break
		}
	}
}

// free deletes consumer's allocations, retrying unknown outcomes; false
// if the outcome stayed unknown.
func (r *run) free(next *int, consumer string) bool {
	for attempt := 0; attempt < 100; attempt++ {
		*next++
		status, _, kind := r.do(*next, "DELETE", "/allocations/"+consumer, nil)
		if kind != "" {
			r.countErr(kind)
			time.Sleep(300 * time.Millisecond)
			continue
		}
		if status == http.StatusNoContent || (status == http.StatusNotFound && attempt > 0) {
			r.mu.Lock()
			r.report.Freed++
			r.mu.Unlock()
			return true
		}
		r.countErr(fmt.Sprintf("delete_%d", status))
		return false
	}
	r.mu.Lock()
	r.report.Unknown++
	r.mu.Unlock()
	return false
}

func (r *run) seed() ([]string, error) {
	var rps []string
	for i := range r.cfg.Providers {
		rp := fmt.Sprintf("50000000-0000-4000-8000-%012d", i+1)
		if st, out, kind := r.do(0, "POST", "/resource_providers", map[string]any{"name": fmt.Sprintf("soak%d", i), "uuid": rp}); st != 200 {
			return nil, fmt.Errorf("create provider: %d %s %s", st, kind, out)
		}
		if st, out, kind := r.do(0, "PUT", "/resource_providers/"+rp+"/inventories", map[string]any{
			"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": r.cfg.Capacity}}}); st != 200 {
			return nil, fmt.Errorf("inventory: %d %s %s", st, kind, out)
		}
		rps = append(rps, rp)
	}
	return rps, nil
}

// summarise fills the buckets, the errors and the time without service.
func (r *run) summarise() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.report.Errors = r.errs
	sort.Slice(r.okAt, func(i, j int) bool { return r.okAt[i].Before(r.okAt[j]) })
	n := int(r.report.Elapsed/r.cfg.Interval) + 1
	r.report.Buckets = make([]int64, n)
	prev := r.start
	for _, at := range r.okAt {
		r.report.Buckets[int(at.Sub(r.start)/r.cfg.Interval)]++
		if gap := at.Sub(prev); gap > r.report.NoService {
			r.report.NoService = gap
		}
		if gap := at.Sub(prev); gap > time.Second {
			r.report.NoServiceTotal += gap
		}
		prev = at
	}
}

// audit compares what the clients hold with what every provider holds.
func (r *run) audit(rps []string, live []held) error {
	want := map[string]string{} // consumer -> provider
	for _, h := range live {
		want[h.consumer] = h.provider
	}
	seen := map[string]bool{}
	for _, rp := range rps {
		var doc struct {
			Allocations map[string]struct {
				Resources map[string]int64 `json:"resources"`
			} `json:"allocations"`
		}
		var err error
		for attempt := 0; attempt < 50; attempt++ {
			st, out, kind := r.do(attempt, "GET", "/resource_providers/"+rp+"/allocations", nil)
			if kind == "" && st == 200 {
				err = json.Unmarshal(out, &doc)
				break
			}
			err = fmt.Errorf("audit %s: %d %s", rp, st, kind)
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			return err
		}
		var used int64
		for consumer, a := range doc.Allocations {
			used += a.Resources["VCPU"]
			switch {
			case want[consumer] == "":
				r.report.Leaked++
			case want[consumer] != rp || a.Resources["VCPU"] != 1:
				r.report.Mismatched++
			}
			seen[consumer] = true
		}
		if used > r.cfg.Capacity {
			r.report.Overcommitted++
		}
	}
	for consumer := range want {
		if !seen[consumer] {
			r.report.Lost++
		}
	}
	return nil
}
