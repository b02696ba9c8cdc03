package keystonetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/proctest"
)

// The users Shared creates, each with Password(user). Their names are also
// the names tests log in with.
const (
	// Admin is keystone-manage bootstrap's admin: admin on project
	// "admin" and on the system.
	Admin = "admin"
	// Placement is Berth's service user: role "service" on project
	// "service", as deployment guides set up Placement's own user.
	Placement = "placement"
	// Member has role "member" (so "reader" too, implied) on project "demo".
	Member = "member"
	// Reader has role "reader" on project "demo".
	Reader = "reader"
	// SystemReader has role "reader" on the system and no project.
	SystemReader = "sysreader"
)

// Projects and the domain the users live in.
const (
	AdminProject   = "admin"
	ServiceProject = "service"
	DemoProject    = "demo"
	Domain         = "Default"
)

// Password returns user's password.
func Password(user string) string { return "pw-" + user + "-Berth1" }

// startTimeout bounds one server's start; only a broken installation
// reaches it.
const startTimeout = 5 * time.Minute

// Options configure a server started by New.
type Options struct {
	// TokenExpiration is the lifetime of the tokens this server issues
	// ([token] expiration). 0 means one hour.
	TokenExpiration time.Duration
}

// Keystone is a running Keystone server.
type Keystone struct {
	// URL is the Identity v3 endpoint, http://127.0.0.1:PORT/v3.
	URL string
	// IDs of the users and projects by name.
	UserIDs, ProjectIDs map[string]string

	base *setup
	dir  string // this server's config and logs
	addr string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// setup is the database, keys and users every server of the process shares.
type setup struct {
	dir     string
	userIDs map[string]string
	projIDs map[string]string
}

var shared struct {
	once   sync.Once
	err    error
	ks     *Keystone
	mu     sync.Mutex
	all    []*Keystone
	dirs   []string
	inMain bool
}

// Main runs the tests, stops every server started and removes their files,
// then exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) { os.Exit(Run(m, nil)) }

// Run is Main without the exit, for a package whose TestMain has another
// helper's run to wrap (run, such as ledgertest.Run, runs the tests; nil
// means m.Run). It returns the tests' status.
func Run(m *testing.M, run func(*testing.M) int) int {
	shared.inMain = true
	if run == nil {
		run = func(m *testing.M) int { return m.Run() }
	}
	code := run(m)
	shared.mu.Lock()
	all := shared.all
	shared.mu.Unlock()
	for _, k := range all {
		k.Stop()
	}
	shared.mu.Lock()
	for _, d := range shared.dirs {
		_ = os.RemoveAll(d)
	}
	shared.mu.Unlock()
	return code
}

// unavailable fails t when CI is set, else skips it.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("keystonetest: a real Keystone is needed and could not be started: %v", err)
	}
	t.Skipf("keystonetest: no Keystone (%v); CI would fail here", err)
}

// Shared returns the process's Keystone, setting it up on first use: its
// database, keys and users are those of every server New starts.
func Shared(t testing.TB) *Keystone {
	t.Helper()
	if !shared.inMain {
		t.Fatal("keystonetest: add `func TestMain(m *testing.M) { keystonetest.Main(m) }` to this package's tests")
	}
	shared.once.Do(func() { shared.ks, shared.err = bootstrap() })
	if shared.err != nil {
		unavailable(t, shared.err)
	}
	return shared.ks
}

// New starts another Keystone over the shared database and keys, with its
// own port and opts, and stops it when t ends.
func New(t testing.TB, opts Options) *Keystone {
	t.Helper()
	base := Shared(t).base
	dir, err := tempDir()
	if err != nil {
		t.Fatal(err)
	}
	k, err := start(base, dir, opts)
	if err != nil {
		t.Fatalf("keystonetest: %v", err)
	}
	t.Cleanup(k.Stop)
	return k
}

// Available reports why Keystone cannot run here, or nil.
func Available() error {
	for _, bin := range []string{"keystone-manage", "uwsgi", "/usr/bin/python3"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s not found (apt-get install python3-keystone uwsgi uwsgi-plugin-python3)", bin)
		}
	}
	if _, err := os.Stat("/usr/lib/uwsgi/plugins/python3_plugin.so"); err != nil {
		return errors.New("uwsgi's python3 plugin not found (apt-get install uwsgi-plugin-python3)")
	}
	if _, err := os.Stat("/usr/bin/keystone-wsgi-public"); err != nil {
		return errors.New("/usr/bin/keystone-wsgi-public not found (apt-get install python3-keystone)")
	}
	return nil
}

func tempDir() (string, error) {
	dir, err := os.MkdirTemp("", "keystonetest-")
	if err != nil {
		return "", err
	}
	shared.mu.Lock()
	shared.dirs = append(shared.dirs, dir)
	shared.mu.Unlock()
	return dir, nil
}

// bootstrap builds the shared database and keys, starts the first server
// and creates the projects, roles, users and role assignments.
func bootstrap() (*Keystone, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := tempDir()
	if err != nil {
		return nil, err
	}
	base := &setup{dir: dir}
	for _, sub := range []string{"fernet-keys", "credential-keys"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "keystone.conf")
	if err := writeConf(conf, base, dir, 0); err != nil {
		return nil, err
	}
	owner, err := currentOwner()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The schema and the two key repositories are independent: build them
	// at once (each keystone-manage run is seconds of Python start-up).
	steps := [][]string{
		{"db_sync"},
		{"fernet_setup", "--keystone-user", owner.user, "--keystone-group", owner.group},
		{"credential_setup", "--keystone-user", owner.user, "--keystone-group", owner.group},
	}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = manage(ctx, conf, s...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// WAL lets several servers (and their threads) read while one writes.
	if out, err := exec.CommandContext(ctx, "/usr/bin/python3", "-c",
		"import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode=WAL')",
		filepath.Join(dir, "keystone.db")).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sqlite WAL: %v: %s", err, out)
	}
	if err := manage(ctx, conf, "bootstrap", "--bootstrap-password", Password(Admin),
		"--bootstrap-admin-url", "http://"+addr+"/v3", "--bootstrap-public-url", "http://"+addr+"/v3",
		"--bootstrap-internal-url", "http://"+addr+"/v3", "--bootstrap-region-id", "RegionOne"); err != nil {
		return nil, err
	}
	k, err := startAt(base, dir, addr, Options{})
	if err != nil {
		return nil, err
	}
	if err := k.populate(ctx); err != nil {
		k.Stop()
		return nil, fmt.Errorf("create users: %w\n%s", err, k.logTail())
	}
	return k, nil
}

// owner names the account keystone-manage gives the key repositories to.
type ownerNames struct{ user, group string }

func currentOwner() (ownerNames, error) {
	u, err := user.Current()
	if err != nil {
		return ownerNames{}, err
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		return ownerNames{}, err
	}
	return ownerNames{u.Username, g.Name}, nil
}

// manage runs keystone-manage with conf.
func manage(ctx context.Context, conf string, args ...string) error {
	cmd := exec.CommandContext(ctx, "keystone-manage", append([]string{"--config-file", conf}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("keystone-manage %s: %v\n%s", args[0], err, tail(out, 3000))
	}
	return nil
}

func writeConf(path string, base *setup, dir string, expiration time.Duration) error {
	secs := 3600
	if expiration > 0 {
		secs = int(expiration / time.Second)
	}
	conf := fmt.Sprintf(`[DEFAULT]
log_file = %[2]s/keystone.log
[database]
connection = sqlite:///%[1]s/keystone.db
[fernet_tokens]
key_repository = %[1]s/fernet-keys
[credential]
key_repository = %[1]s/credential-keys
[token]
expiration = %[3]d
[cache]
enabled = false
[identity]
# bcrypt's cheapest cost: every login checks a password, and tests log in a lot.
password_hash_rounds = 4
`, base.dir, dir, secs)
	return os.WriteFile(path, []byte(conf), 0o600)
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func start(base *setup, dir string, opts Options) (*Keystone, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	return startAt(base, dir, addr, opts)
}

func startAt(base *setup, dir, addr string, opts Options) (*Keystone, error) {
	if err := writeConf(filepath.Join(dir, "keystone.conf"), base, dir, opts.TokenExpiration); err != nil {
		return nil, err
	}
	k := &Keystone{URL: "http://" + addr + "/v3", base: base, dir: dir, addr: addr,
		UserIDs: base.userIDs, ProjectIDs: base.projIDs}
	shared.mu.Lock()
	shared.all = append(shared.all, k)
	shared.mu.Unlock()
	if err := k.Start(); err != nil {
		return nil, err
	}
	return k, nil
}

// Start starts the server (again, after Stop) on its address and waits
// until it answers.
func (k *Keystone) Start() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cmd != nil {
		return nil
	}
	logf, err := os.OpenFile(filepath.Join(k.dir, "uwsgi.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	// --http11-socket pins a kept-alive connection to one worker thread
	// until it closes: hence many threads, and clients that close their
	// idle connections (this package's own keep none). --http-socket
	// closes connections without saying so, and a client reusing one
	// loses its POST.
	cmd := exec.Command("uwsgi", "--plugin", "python3", "--http11-socket", k.addr,
		"--wsgi-file", "/usr/bin/keystone-wsgi-public", "--master", "--processes", "1", "--threads", "32",
		"--die-on-term", "--need-app", "--lazy-apps",
		"--env", "OS_KEYSTONE_CONFIG_DIR="+k.dir, "--env", "OS_KEYSTONE_CONFIG_FILES=keystone.conf")
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so that Stop ends the workers too; killed
	// if the test binary dies first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("uwsgi: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	k.cmd, k.done = cmd, done
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(k.URL)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			k.cmd = nil
			return fmt.Errorf("uwsgi exited at start:\n%s", k.logTail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			k.stopLocked()
			return fmt.Errorf("keystone did not answer within %v:\n%s", startTimeout, k.logTail())
		}
	}
}

// Stop stops the server (its whole process group) and waits for it. The
// port stays reserved for Start only in the sense that the next Start uses
// it again.
func (k *Keystone) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stopLocked()
}

func (k *Keystone) stopLocked() {
	if k.cmd == nil {
		return
	}
	proctest.StopGroup(k.cmd.Process.Pid, k.done, 15*time.Second)
	k.cmd = nil
}

// logTail is the end of the server's logs, for failure messages.
func (k *Keystone) logTail() string {
	var b strings.Builder
	for _, f := range []string{"uwsgi.log", "keystone.log"} {
		data, _ := os.ReadFile(filepath.Join(k.dir, f))
		fmt.Fprintf(&b, "--- %s:\n%s\n", f, tail(data, 4000))
	}
	return b.String()
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// Token logs user in with its password, scoped as the user is set up (the
// system for SystemReader, else the user's project), and returns the token.
func (k *Keystone) Token(t testing.TB, user string) string {
	t.Helper()
	tok, _, err := k.login(context.Background(), user)
	if err != nil {
		t.Fatalf("keystonetest: log in as %s: %v", user, err)
	}
	return tok
}

// TokenExpiry is Token with the token's expiry.
func (k *Keystone) TokenExpiry(t testing.TB, user string) (string, time.Time) {
	t.Helper()
	tok, exp, err := k.login(context.Background(), user)
	if err != nil {
		t.Fatalf("keystonetest: log in as %s: %v", user, err)
	}
	return tok, exp
}

// scopes are the users' token scopes: a project name, or "system".
var scopes = map[string]string{
	Admin: AdminProject, Placement: ServiceProject, Member: DemoProject,
	Reader: DemoProject, SystemReader: "system",
}

func (k *Keystone) login(ctx context.Context, user string) (string, time.Time, error) {
	scope := map[string]any{"project": map[string]any{"name": scopes[user], "domain": map[string]any{"name": Domain}}}
	if scopes[user] == "system" {
		scope = map[string]any{"system": map[string]any{"all": true}}
	}
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": user, "domain": map[string]any{"name": Domain}, "password": Password(user)}}},
		"scope": scope,
	}}
	var out struct {
		Token struct {
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"token"`
	}
	h, err := k.call(ctx, "", http.MethodPost, "/auth/tokens?nocatalog", body, &out, http.StatusCreated)
	if err != nil {
		return "", time.Time{}, err
	}
	return h.Get("X-Subject-Token"), out.Token.ExpiresAt, nil
}

// Revoke revokes token (DELETE /v3/auth/tokens, as the admin).
func (k *Keystone) Revoke(t testing.TB, token string) {
	t.Helper()
	ctx := context.Background()
	admin, _, err := k.login(ctx, Admin)
	if err == nil {
		_, err = k.callHeaders(ctx, admin, http.MethodDelete, "/auth/tokens", nil, nil,
			map[string]string{"X-Subject-Token": token}, http.StatusNoContent)
	}
	if err != nil {
		t.Fatalf("keystonetest: revoke: %v", err)
	}
}

// RegisterPlacement makes url the public, internal and admin endpoint of a
// "placement" service in the catalog (replacing any earlier one), as an
// operator does for Berth.
func (k *Keystone) RegisterPlacement(t testing.TB, url string) {
	t.Helper()
	ctx := context.Background()
	admin, _, err := k.login(ctx, Admin)
	if err != nil {
		t.Fatalf("keystonetest: %v", err)
	}
	var svcs struct {
		Services []struct{ ID string } `json:"services"`
	}
	if _, err := k.call(ctx, admin, http.MethodGet, "/services?type=placement", nil, &svcs, http.StatusOK); err != nil {
		t.Fatalf("keystonetest: %v", err)
	}
	var svcID string
	if len(svcs.Services) > 0 {
		svcID = svcs.Services[0].ID
		var eps struct {
			Endpoints []struct{ ID string } `json:"endpoints"`
		}
		if _, err := k.call(ctx, admin, http.MethodGet, "/endpoints?service_id="+svcID, nil, &eps, http.StatusOK); err != nil {
			t.Fatalf("keystonetest: %v", err)
		}
		for _, ep := range eps.Endpoints {
			if _, err := k.call(ctx, admin, http.MethodDelete, "/endpoints/"+ep.ID, nil, nil, http.StatusNoContent); err != nil {
				t.Fatalf("keystonetest: %v", err)
			}
		}
	} else {
		var svc struct {
			Service struct{ ID string } `json:"service"`
		}
		if _, err := k.call(ctx, admin, http.MethodPost, "/services",
			map[string]any{"service": map[string]any{"type": "placement", "name": "placement"}}, &svc, http.StatusCreated); err != nil {
			t.Fatalf("keystonetest: %v", err)
		}
		svcID = svc.Service.ID
	}
	for _, iface := range []string{"public", "internal", "admin"} {
		if _, err := k.call(ctx, admin, http.MethodPost, "/endpoints", map[string]any{"endpoint": map[string]any{
			"service_id": svcID, "interface": iface, "url": url, "region_id": "RegionOne"}}, nil, http.StatusCreated); err != nil {
			t.Fatalf("keystonetest: %v", err)
		}
	}
}

// populate creates the projects, the service role, the users and their
// role assignments.
func (k *Keystone) populate(ctx context.Context) error {
	admin, _, err := k.login(ctx, Admin)
	if err != nil {
		return err
	}
	k.base.userIDs, k.base.projIDs = map[string]string{}, map[string]string{}
	k.UserIDs, k.ProjectIDs = k.base.userIDs, k.base.projIDs
	var domain struct {
		Domains []struct{ ID string } `json:"domains"`
	}
	if _, err := k.call(ctx, admin, http.MethodGet, "/domains?name="+Domain, nil, &domain, http.StatusOK); err != nil || len(domain.Domains) != 1 {
		return fmt.Errorf("domain %s: %v", Domain, err)
	}
	domainID := domain.Domains[0].ID
	roles := map[string]string{}
	var rl struct {
		Roles []struct{ ID, Name string } `json:"roles"`
	}
	if _, err := k.call(ctx, admin, http.MethodGet, "/roles", nil, &rl, http.StatusOK); err != nil {
		return err
	}
	for _, r := range rl.Roles {
		roles[r.Name] = r.ID
	}
	if roles["service"] == "" {
		var r struct {
			Role struct{ ID string } `json:"role"`
		}
		if _, err := k.call(ctx, admin, http.MethodPost, "/roles", map[string]any{"role": map[string]any{"name": "service"}}, &r, http.StatusCreated); err != nil {
			return err
		}
		roles["service"] = r.Role.ID
	}
	var pl struct {
		Projects []struct{ ID, Name string } `json:"projects"`
	}
	if _, err := k.call(ctx, admin, http.MethodGet, "/projects", nil, &pl, http.StatusOK); err != nil {
		return err
	}
	for _, p := range pl.Projects {
		k.ProjectIDs[p.Name] = p.ID
	}
	for _, name := range []string{ServiceProject, DemoProject} {
		var p struct {
			Project struct{ ID string } `json:"project"`
		}
		if _, err := k.call(ctx, admin, http.MethodPost, "/projects",
			map[string]any{"project": map[string]any{"name": name, "domain_id": domainID}}, &p, http.StatusCreated); err != nil {
			return err
		}
		k.ProjectIDs[name] = p.Project.ID
	}
	var ul struct {
		Users []struct{ ID string } `json:"users"`
	}
	if _, err := k.call(ctx, admin, http.MethodGet, "/users?name="+Admin, nil, &ul, http.StatusOK); err != nil || len(ul.Users) != 1 {
		return fmt.Errorf("admin user: %v", err)
	}
	k.UserIDs[Admin] = ul.Users[0].ID
	grants := []struct{ user, role, project string }{
		{Placement, "service", ServiceProject},
		{Member, "member", DemoProject},
		{Reader, "reader", DemoProject},
		{SystemReader, "reader", ""},
	}
	for _, g := range grants {
		var u struct {
			User struct{ ID string } `json:"user"`
		}
		if _, err := k.call(ctx, admin, http.MethodPost, "/users", map[string]any{"user": map[string]any{
			"name": g.user, "password": Password(g.user), "domain_id": domainID}}, &u, http.StatusCreated); err != nil {
			return err
		}
		k.UserIDs[g.user] = u.User.ID
		path := "/system/users/" + u.User.ID + "/roles/" + roles[g.role]
		if g.project != "" {
			path = "/projects/" + k.ProjectIDs[g.project] + "/users/" + u.User.ID + "/roles/" + roles[g.role]
		}
		if _, err := k.call(ctx, admin, http.MethodPut, path, nil, nil, http.StatusNoContent); err != nil {
			return err
		}
	}
	return nil
}

func (k *Keystone) call(ctx context.Context, token, method, path string, in, out any, want int) (http.Header, error) {
	return k.callHeaders(ctx, token, method, path, in, out, nil, want)
}

// callHeaders sends one Identity API request and decodes a want answer
// into out.
func (k *Keystone) callHeaders(ctx context.Context, token, method, path string, in, out any, hdr map[string]string, want int) (http.Header, error) {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.URL+path, body)
	if err != nil {
		return nil, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	for h, v := range hdr {
		req.Header.Set(h, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, want, tail(data, 500))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return nil, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

// client keeps no idle connection to a server (see Start).
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// Addr is the server's host:port.
func (k *Keystone) Addr() string { return k.addr }

// Port is the server's port.
func (k *Keystone) Port() int {
	_, p, _ := net.SplitHostPort(k.addr)
	n, _ := strconv.Atoi(p)
	return n
}

// ApplicationCredential creates an application credential of user (for
// the project its token is scoped to) and returns its id and secret.
func (k *Keystone) ApplicationCredential(t testing.TB, user string) (id, secret string) {
	t.Helper()
	ctx := context.Background()
	tok, _, err := k.login(ctx, user)
	if err != nil {
		t.Fatalf("keystonetest: %v", err)
	}
	var out struct {
		Cred struct{ ID, Secret string } `json:"application_credential"`
	}
	name := fmt.Sprintf("berth-test-%d", time.Now().UnixNano())
	if _, err := k.call(ctx, tok, http.MethodPost, "/users/"+k.UserIDs[user]+"/application_credentials",
		map[string]any{"application_credential": map[string]any{"name": name}}, &out, http.StatusCreated); err != nil {
		t.Fatalf("keystonetest: application credential: %v", err)
	}
	return out.Cred.ID, out.Cred.Secret
}
