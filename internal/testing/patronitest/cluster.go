package patronitest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/internal/pgcluster"

	"github.com/berthd/berth/internal/testing/proctest"
)

// Options configure a cluster.
type Options struct {
	// Strict sets synchronous_mode_strict: with no synchronous standby,
	// the primary's commits wait (for ever) instead of going
	// asynchronous.
	Strict bool
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

// Member is one Patroni node as the REST API's /cluster reports it.
type Member struct {
	Name  string `json:"name"`
	Role  string `json:"role"` // "leader", "sync_standby" or "replica"
	State string `json:"state"`
	Host  string `json:"host"`
	Port  int    `json:"port"`
}

// node is one Patroni-managed PostgreSQL.
type node struct {
	name     string
	dir      string // its own directory: config, data, socket, log
	pgPort   int
	restPort int
	cmd      *exec.Cmd
	exited   chan struct{}
}

// Cluster is a running etcd member and two Patroni nodes.
type Cluster struct {
	Scope string
	dir   string
	bin   string // PostgreSQL's server binaries
	opts  Options
	etcd  *exec.Cmd
	// etcdPort is etcd's client port.
	etcdPort int
	etcdDone chan struct{}
	mu       sync.Mutex
	nodes    []*node
	http     *http.Client
	// stalled are the WAL senders StallReplication stopped, which
	// KillPrimary kills.
	stalled []int
}

// Timeouts; only a broken setup reaches them.
const (
	startTimeout    = 3 * time.Minute
	failoverTimeout = 90 * time.Second
	stopTimeout     = 30 * time.Second
)

// New starts a cluster for t and stops it when t ends. A cluster that
// cannot start fails t when the CI environment variable is set and
// skips it otherwise.
func New(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil && ctx.Err() == nil {
		// Ports are picked free and then bound by etcd and Patroni: one
		// may have been taken in between by another test. Once more.
		opts.Logf("patronitest: starting again after: %v", firstLine(err))
		c, err = Start(ctx, opts)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("patronitest: %v", err)
		}
		t.Skipf("patronitest: no Patroni cluster here (set CI to make this fail): %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("patronitest: logs:\n%s", c.Logs())
		}
		c.Stop()
	})
	return c
}

// Start starts etcd and two Patroni nodes and waits until one is the
// primary and the other is its synchronous standby, as recorded in etcd.
// Stop it with Stop.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	for _, prog := range []string{"patroni", "patronictl", "etcd"} {
		if _, err := exec.LookPath(prog); err != nil {
			return nil, fmt.Errorf("%s not installed (Debian: patroni, etcd-server, python3-etcd): %w", prog, err)
		}
	}
	bin, err := serverBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "patroni-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Scope: "berth" + strconv.Itoa(os.Getpid()) + filepath.Base(dir)[8:], dir: dir, bin: bin,
		opts: opts, http: &http.Client{Timeout: 3 * time.Second}}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.Logs())
			if os.Getenv("PATRONITEST_KEEP") == "" {
				c.Stop()
			}
		}
	}()
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
	}
	ports, err := proctest.FreePorts(6)
	if err != nil {
		return nil, err
	}
	c.etcdPort = ports[0]
	if err := c.startEtcd(ctx, ports[1]); err != nil {
		return nil, err
	}
	for i := range 2 {
		n := &node{name: fmt.Sprintf("node%d", i), pgPort: ports[2+2*i], restPort: ports[3+2*i]}
		n.dir = filepath.Join(dir, n.name)
		if err := os.Mkdir(n.dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(n.dir, "patroni.yml"), []byte(c.config(n)), 0o600); err != nil {
			return nil, err
		}
		if cred != nil {
			if err := os.Chown(n.dir, int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
			if err := os.Chown(filepath.Join(n.dir, "patroni.yml"), int(cred.Uid), int(cred.Gid)); err != nil {
				return nil, err
			}
		}
		c.nodes = append(c.nodes, n)
		if err := c.startNode(n, cred); err != nil {
			return nil, err
		}
		if i == 0 {
			// The first node bootstraps alone, so it is the first primary.
			if _, err := c.waitFor(ctx, "a primary", func(ms []Member) bool { return leader(ms) != nil }); err != nil {
				return nil, err
			}
		}
	}
	if err := c.WaitSync(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// serverBinaries is the directory of PostgreSQL's binaries with every
// program Patroni runs (pg_controldata and pg_rewind besides the server):
// pgcluster's choice if it has them all, else Debian's newest.
func serverBinaries() (string, error) {
	var dirs []string
	if dir, err := pgcluster.FindBinaries(); err == nil {
		dirs = append(dirs, dir)
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.Reverse(debian) // the newest first (enough for 10 and later)
	dirs = append(dirs, debian...)
next:
	for _, dir := range dirs {
		for _, prog := range []string{"initdb", "pg_ctl", "postgres", "pg_controldata", "pg_rewind", "psql"} {
			if _, err := os.Stat(filepath.Join(dir, prog)); err != nil {
				continue next
			}
		}
		return dir, nil
	}
	return "", fmt.Errorf("no directory with PostgreSQL's initdb, postgres, pg_controldata, pg_rewind and psql among %v", dirs)
}

// serverCredential is the postgres user's when running as root, nil
// otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs the postgres system user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func (c *Cluster) startEtcd(ctx context.Context, peerPort int) error {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.etcdPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	log, err := os.Create(filepath.Join(c.dir, "etcd.log"))
	if err != nil {
		return err
	}
	cmd := exec.Command("etcd", "--name", "e0", "--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "e0="+peer, "--initial-cluster-state", "new", "--enable-v2=true")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	c.etcd = cmd
	c.etcdDone = make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(c.etcdDone) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.http.Get(client + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.etcdDone:
			return errors.New("etcd exited at start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("etcd did not become healthy within 30s")
		}
	}
}

// config is node n's Patroni configuration. Notes:
//   - primary_start_timeout 0: a primary whose postmaster dies is not
//     restarted in place (Patroni's default waits 300 s for that); the
//     synchronous standby takes over at once.
//   - ttl 10, loop_wait 1, retry_timeout 4: failover within seconds
//     (Patroni requires loop_wait + 2*retry_timeout <= ttl).
//   - fsync off: a kill -9 of the postmaster keeps the kernel's page
//     cache, so nothing written is lost; only a machine crash would.
//     synchronous_commit stays on: the synchronous standby must have the
//     WAL before a commit returns.
func (c *Cluster) config(n *node) string {
	return fmt.Sprintf(`scope: %[1]s
name: %[2]s
log:
  level: INFO
restapi:
  listen: 127.0.0.1:%[3]d
  connect_address: 127.0.0.1:%[3]d
etcd3:
  hosts: 127.0.0.1:%[4]d
bootstrap:
  dcs:
    ttl: 10
    loop_wait: 1
    retry_timeout: 4
    maximum_lag_on_failover: 1048576
    primary_start_timeout: 0
    synchronous_mode: true
    synchronous_mode_strict: %[8]t
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        max_connections: 200
        wal_level: replica
        hot_standby: "on"
        wal_log_hints: "on"
        max_wal_senders: 10
        max_replication_slots: 10
        wal_keep_size: 128MB
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - local replication all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:%[5]d
  connect_address: 127.0.0.1:%[5]d
  data_dir: %[6]s/data
  bin_dir: %[7]s
  pgpass: %[6]s/pgpass
  authentication:
    superuser:
      username: postgres
      password: postgres
    replication:
      username: replicator
      password: replicator
    rewind:
      username: postgres
      password: postgres
  parameters:
    unix_socket_directories: %[6]s
    fsync: "off"
    full_page_writes: "on"
    synchronous_commit: "on"
    shared_buffers: 32MB
tags:
  nofailover: false
  noloadbalance: false
  clonefrom: false
  nosync: false
`, c.Scope, n.name, n.restPort, c.etcdPort, n.pgPort, n.dir, c.bin, c.opts.Strict)
}

func (c *Cluster) startNode(n *node, cred *syscall.Credential) error {
	log, err := os.OpenFile(filepath.Join(n.dir, "patroni.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command("patroni", filepath.Join(n.dir, "patroni.yml"))
	cmd.Dir = n.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin:" + c.bin, "HOME=" + n.dir, "LANG=C.UTF-8", "LC_ALL=C.UTF-8"}
	cmd.Stdout, cmd.Stderr = log, log
	// Patroni stops its PostgreSQL on SIGTERM; if the test process dies,
	// Pdeathsig sends it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Credential: cred}
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	n.cmd = cmd
	n.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(n.exited) }()
	return nil
}

// Members asks the Patroni REST API of any node that answers for the
// cluster's members.
func (c *Cluster) Members(ctx context.Context) ([]Member, error) {
	var lastErr error
	for _, n := range c.nodes {
		req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("http://127.0.0.1:%d/cluster", n.restPort), nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.http.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		var doc struct {
			Members []Member `json:"members"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil {
			lastErr = err
			continue
		}
		return doc.Members, nil
	}
	return nil, fmt.Errorf("no Patroni REST API answered: %w", lastErr)
}

func leader(ms []Member) *Member {
	for i := range ms {
		if ms[i].Role == "leader" && ms[i].State == "running" {
			return &ms[i]
		}
	}
	return nil
}

func syncStandby(ms []Member) *Member {
	for i := range ms {
		if ms[i].Role == "sync_standby" && (ms[i].State == "running" || ms[i].State == "streaming") {
			return &ms[i]
		}
	}
	return nil
}

// waitFor polls the members until ok holds, up to failoverTimeout.
func (c *Cluster) waitFor(ctx context.Context, what string, ok func([]Member) bool) ([]Member, error) {
	ctx, cancel := context.WithTimeout(ctx, failoverTimeout)
	defer cancel()
	var last []Member
	for {
		alive := false
		for _, n := range c.nodes {
			select {
			case <-n.exited:
			default:
				alive = true
			}
		}
		if !alive {
			return nil, fmt.Errorf("patronitest: waiting for %s: every Patroni exited", what)
		}
		ms, err := c.Members(ctx)
		if err == nil {
			last = ms
			if ok(ms) {
				return ms, nil
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("patronitest: waiting for %s: %w (members: %+v)", what, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// writable reports whether node i has finished its promotion: Patroni
// reports the leader role as soon as it holds the leader key, a moment
// before PostgreSQL leaves recovery.
func (c *Cluster) writable(ctx context.Context, i int) bool {
	out, err := c.Psql(ctx, i, "postgres", "SELECT pg_is_in_recovery()")
	return err == nil && out == "f"
}

// WaitSync waits until a primary runs and the other node is its
// synchronous standby as recorded in the DCS (the /service/<scope>/sync
// key, which Patroni's role "sync_standby" reports).
func (c *Cluster) WaitSync(ctx context.Context) error {
	ms, err := c.waitFor(ctx, "a primary and a synchronous standby", func(ms []Member) bool {
		return leader(ms) != nil && syncStandby(ms) != nil && c.writable(ctx, c.index(leader(ms).Name))
	})
	if err == nil {
		c.opts.Logf("patronitest: primary %s, synchronous standby %s", leader(ms).Name, syncStandby(ms).Name)
	}
	return err
}

// Primary returns the index of the node that is the running primary.
func (c *Cluster) Primary(ctx context.Context) (int, error) {
	ms, err := c.Members(ctx)
	if err != nil {
		return -1, err
	}
	l := leader(ms)
	if l == nil {
		return -1, errors.New("patronitest: no running primary")
	}
	return c.index(l.Name), nil
}

func (c *Cluster) index(name string) int {
	for i, n := range c.nodes {
		if n.name == name {
			return i
		}
	}
	return -1
}

// Name is node i's Patroni name.
func (c *Cluster) Name(i int) string { return c.nodes[i].name }

// Port is node i's PostgreSQL port.
func (c *Cluster) Port(i int) int { return c.nodes[i].pgPort }

// URL is the multi-host URL of database db: both nodes, the one that
// accepts writes chosen at connect time (target_session_attrs=read-write).
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write&sslmode=disable",
		c.nodes[0].pgPort, c.nodes[1].pgPort, db)
}

// NodeURL is node i's URL of database db, alone.
func (c *Cluster) NodeURL(i int, db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.nodes[i].pgPort, db)
}

// Psql runs sql on node i's database db with psql and returns its output.
func (c *Cluster) Psql(ctx context.Context, i int, db, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, "psql"), "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1",
		"-h", "127.0.0.1", "-p", strconv.Itoa(c.nodes[i].pgPort), "-U", "postgres", "-d", db, "-c", sql)
	if _, err := os.Stat(cmd.Path); err != nil {
		cmd = exec.CommandContext(ctx, "psql", cmd.Args[1:]...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("psql on %s: %w: %s", c.nodes[i].name, err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// CreateDatabase creates database db on the primary.
func (c *Cluster) CreateDatabase(ctx context.Context, db string) error {
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	_, err = c.Psql(ctx, p, "postgres", `CREATE DATABASE "`+db+`"`)
	return err
}

// postmasterPID reads node i's postmaster.pid.
func (c *Cluster) postmasterPID(i int) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.nodes[i].dir, "data", "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// KillPrimary kills the primary's postmaster with SIGKILL (its backends
// exit as the postmaster's death is noticed; Patroni, left running,
// hands the leadership to the synchronous standby) and returns the index
// of the node killed. It does not wait for the failover: see
// WaitPrimaryNot.
func (c *Cluster) KillPrimary(ctx context.Context) (int, error) {
	p, err := c.Primary(ctx)
	if err != nil {
		return -1, err
	}
	pid, err := c.postmasterPID(p)
	if err != nil {
		return -1, err
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return -1, fmt.Errorf("patronitest: kill postmaster %d of %s: %w", pid, c.nodes[p].name, err)
	}
	c.opts.Logf("patronitest: killed the postmaster (pid %d) of primary %s", pid, c.nodes[p].name)
	c.mu.Lock()
	stalled := c.stalled
	c.stalled = nil
	c.mu.Unlock()
	for _, sender := range stalled {
		// Stopped, it would never notice the postmaster's death.
		_ = syscall.Kill(sender, syscall.SIGKILL)
	}
	return p, nil
}

// StallReplication stops (SIGSTOP) the primary's WAL senders, so that
// the standby gets nothing more from it: every commit then waits for
// the synchronous standby until its wait is cancelled (pg_cancel_backend
// of the backends whose wait_event is SyncRep), which commits it on the
// primary alone. The next KillPrimary kills them with the postmaster,
// and the standby it promotes lacks what they held back.
func (c *Cluster) StallReplication(ctx context.Context) error {
	p, err := c.Primary(ctx)
	if err != nil {
		return err
	}
	out, err := c.Psql(ctx, p, "postgres", `SELECT pid FROM pg_stat_replication`)
	if err != nil {
		return err
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("patronitest: WAL sender pid %q: %w", f, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		return fmt.Errorf("patronitest: %s has no WAL sender", c.nodes[p].name)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			return fmt.Errorf("patronitest: stop WAL sender %d: %w", pid, err)
		}
	}
	c.mu.Lock()
	c.stalled = append(c.stalled, pids...)
	c.mu.Unlock()
	c.opts.Logf("patronitest: stopped the WAL senders %v of primary %s", pids, c.nodes[p].name)
	return nil
}

// WaitPrimaryNot waits until a node other than old is the running
// primary and returns its index.
func (c *Cluster) WaitPrimaryNot(ctx context.Context, old int) (int, error) {
	ms, err := c.waitFor(ctx, "a new primary", func(ms []Member) bool {
		l := leader(ms)
		return l != nil && c.index(l.Name) != old && c.writable(ctx, c.index(l.Name))
	})
	if err != nil {
		return -1, err
	}
	return c.index(leader(ms).Name), nil
}

// failOverWait is how long FailOver waits for another node to take over
// after a kill before it kills again; failOverKills bounds the kills.
const (
	failOverWait  = 45 * time.Second
	failOverKills = 3
)

// FailOver kills the primary's postmaster (KillPrimary) and waits until
// another node is the writable primary (WaitPrimaryNot); it returns the
// indexes of the old and the new primary. Patroni restarts a dead
// primary in place instead of failing over when it finds a failover not
// possible at that moment (the standby's REST API slow to answer on a
// loaded machine, say: seen once in CI, where node0 was leader and
// running again three minutes after the kill). So when no other node
// has taken over within failOverWait and the old one leads again, its
// new postmaster is killed too, up to failOverKills kills in all.
func (c *Cluster) FailOver(ctx context.Context) (old, primary int, err error) {
	for kill := 1; ; kill++ {
		if old, err = c.KillPrimary(ctx); err != nil {
			return -1, -1, err
		}
		wctx, cancel := context.WithTimeout(ctx, failOverWait)
		primary, err = c.WaitPrimaryNot(wctx, old)
		cancel()
		if err == nil || kill == failOverKills || ctx.Err() != nil {
			return old, primary, err
		}
		if p, perr := c.Primary(ctx); perr != nil || p != old {
			// Not a restart in place: keep waiting for the failover.
			primary, err = c.WaitPrimaryNot(ctx, old)
			return old, primary, err
		}
		c.opts.Logf("patronitest: %s leads again: Patroni restarted it in place (kill %d); killing it again", c.nodes[old].name, kill)
	}
}

// Switchover asks Patroni (patronictl switchover --force) to hand the
// primary role to the synchronous standby, and waits until it has.
// It returns the new primary's index.
func (c *Cluster) Switchover(ctx context.Context) (int, error) {
	ms, err := c.Members(ctx)
	if err != nil {
		return -1, err
	}
	l, s := leader(ms), syncStandby(ms)
	if l == nil || s == nil {
		return -1, fmt.Errorf("patronitest: switchover needs a primary and a synchronous standby: %+v", ms)
	}
	cmd := exec.CommandContext(ctx, "patronictl", "-c", filepath.Join(c.nodes[0].dir, "patroni.yml"),
		"switchover", c.Scope, "--leader", l.Name, "--candidate", s.Name, "--force")
	if out, err := cmd.CombinedOutput(); err != nil {
		return -1, fmt.Errorf("patronictl switchover: %w: %s", err, out)
	}
	return c.WaitPrimaryNot(ctx, c.index(l.Name))
}

// StopNode stops node i's Patroni, which stops its PostgreSQL.
func (c *Cluster) StopNode(i int) {
	c.stopNode(c.nodes[i])
}

// StartNode starts node i's Patroni again after StopNode.
func (c *Cluster) StartNode(i int) error {
	cred, err := serverCredential()
	if err != nil {
		return err
	}
	return c.startNode(c.nodes[i], cred)
}

func (c *Cluster) stopNode(n *node) {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	select {
	case <-n.exited:
		return
	default:
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.exited
	}
}

// Stop stops both nodes and etcd and removes the cluster's directory.
func (c *Cluster) Stop() {
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stopNode(n)
			// A postmaster Patroni no longer watched (it was killed, or
			// lost its leader lock while stopping) must not outlive the
			// test.
			if pid, err := c.postmasterPID(i); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}()
	}
	wg.Wait()
	if c.etcd != nil && c.etcd.Process != nil {
		_ = c.etcd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.etcdDone:
		case <-time.After(stopTimeout):
			_ = c.etcd.Process.Kill()
			<-c.etcdDone
		}
	}
	_ = os.RemoveAll(c.dir)
}

// Logs returns the tail of every node's Patroni log and of etcd's.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "--- %s (patroni.log, tail)\n%s\n", n.name, tail(filepath.Join(n.dir, "patroni.log"), 4000))
	}
	fmt.Fprintf(&b, "--- etcd.log (tail)\n%s\n", tail(filepath.Join(c.dir, "etcd.log"), 1500))
	return b.String()
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
