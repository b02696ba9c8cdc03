package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for Options.
const (
	DefaultPort         = 5432
	DefaultStartTimeout = 60 * time.Second
	// DefaultStopTimeout is how long Stop waits after a fast shutdown
	// request (SIGINT) before it asks for an immediate one (SIGQUIT).
	DefaultStopTimeout = 30 * time.Second
)

// Superuser is the cluster's superuser role; it authenticates without a
// password over the unix socket.
const Superuser = "postgres"

// MaxSocketPath is the longest unix socket path PostgreSQL accepts
// (sizeof(sun_path) - 1 on Linux).
const MaxSocketPath = 107

// ErrRunning means a live server already uses the data directory.
var ErrRunning = errors.New("pgcluster: a server is already running on this data directory")

// logFileName is the server's log, kept in the data directory.
const logFileName = "postgres.log"

// maxLogSize is the size past which Start truncates the log file.
const maxLogSize = 16 << 20

// Options configures Start.
type Options struct {
	// DataDir is the cluster's data directory. Start creates it (mode
	// 0700) if missing and runs initdb in it if it holds no cluster yet; a
	// non-empty directory without a cluster is an error. Required. The
	// server's log is DataDir/postgres.log.
	DataDir string
	// SocketDir is where the server creates its unix socket; created if
	// missing. Default: DataDir. The socket path, SocketDir/.s.PGSQL.<Port>,
	// must be at most MaxSocketPath bytes long (see SocketDirFits).
	SocketDir string
	// Port only names the socket: the server listens on no TCP address.
	// Default: DefaultPort.
	Port int
	// BinDir holds initdb and postgres. Default: FindBinaries().
	BinDir string
	// NoSync turns fsync, synchronous_commit and full_page_writes off,
	// lowers wal_level to minimal and runs initdb with --no-sync. Faster,
	// but a crash of the machine can corrupt the cluster: for tests and
	// throwaway clusters only.
	NoSync bool
	// Settings are extra server settings (postgresql.conf names), applied
	// with -c and overriding Start's own.
	Settings map[string]string
	// StartTimeout bounds how long Start waits for the server to accept
	// connections. Default: DefaultStartTimeout.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits for a fast shutdown before it
	// escalates. Default: DefaultStopTimeout.
	StopTimeout time.Duration
	// Logger receives progress and warnings. Default: slog.Default().
	Logger *slog.Logger
	// LoosenParents lets Start, when the server runs as another account
	// (the caller is root), add search permission for others (o+x, never
	// read) to the ancestors of DataDir and SocketDir that the account
	// cannot traverse, logging each. For throwaway clusters under
	// temporary directories (tests) only: without it Start changes no
	// directory but the ones it creates, and fails naming the directory in
	// the way (ErrUnreachable). berthd never sets it.
	LoosenParents bool
}

func (o *Options) setDefaults() error {
	if o.DataDir == "" {
		return errors.New("pgcluster: Options.DataDir is required")
	}
	var err error
	if o.DataDir, err = filepath.Abs(o.DataDir); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if o.SocketDir == "" {
		o.SocketDir = o.DataDir
	}
	if o.SocketDir, err = filepath.Abs(o.SocketDir); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Port < 1 || o.Port > 65535 {
		return fmt.Errorf("pgcluster: port %d out of range", o.Port)
	}
	if !SocketDirFits(o.SocketDir, o.Port) {
		return fmt.Errorf("pgcluster: socket path %s is longer than %d bytes; use a shorter socket directory",
			socketPath(o.SocketDir, o.Port), MaxSocketPath)
	}
	if o.BinDir == "" {
		if o.BinDir, err = FindBinaries(); err != nil {
			return err
		}
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// SocketDirFits reports whether the server's socket in dir for port has a
// path short enough for PostgreSQL (MaxSocketPath).
func SocketDirFits(dir string, port int) bool {
	return len(socketPath(dir, port)) <= MaxSocketPath
}

func socketPath(dir string, port int) string {
	return filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))
}

// Cluster is a running PostgreSQL server started by Start. Its methods are
// safe for concurrent use.
type Cluster struct {
	opts   Options
	cmd    *exec.Cmd
	exited chan struct{} // closed when the postmaster has exited
	err    error         // the postmaster's exit status; read after exited

	// logStart is the size of the log file when this server started.
	logStart int64

	stopOnce sync.Once
	stopErr  error
}

// Start initialises the data directory if needed, starts the server and
// waits until it accepts connections (bounded by ctx and
// opts.StartTimeout). On error no server is left running.
//
// After a crash PostgreSQL recovers by itself; Start also removes a
// postmaster.pid whose pid now belongs to another program, which would
// stop PostgreSQL from starting. A live server on the same data directory
// is an error wrapping ErrRunning. The server dies with its parent: it
// gets SIGINT (fast shutdown) when the process that started it exits.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	log := opts.Logger
	own, err := clusterOwner()
	if err != nil {
		return nil, err
	}
	if err := own.prepareDir(opts.DataDir, opts.LoosenParents, log); err != nil {
		return nil, err
	}
	if opts.SocketDir != opts.DataDir {
		if err := own.prepareDir(opts.SocketDir, opts.LoosenParents, log); err != nil {
			return nil, err
		}
	}
	if err := initdb(ctx, opts, own); err != nil {
		return nil, err
	}
	for _, pidFile := range []string{
		filepath.Join(opts.DataDir, "postmaster.pid"),
		socketPath(opts.SocketDir, opts.Port) + ".lock",
	} {
		if err := removeStalePIDFile(pidFile, opts.DataDir, log); err != nil {
			return nil, err
		}
	}

	for attempt := 1; ; attempt++ {
		c, err := launch(ctx, opts, own)
		var old *oldServerError
		if err == nil || !errors.As(err, &old) || attempt == oldServerAttempts {
			return c, err
		}
		// The backends of a server killed a moment ago (SIGKILL of the
		// postmaster) still hold its shared memory until they notice
		// and exit, which takes them a moment.
		log.Warn("processes of a killed PostgreSQL server still hold its shared memory; starting again shortly",
			"data_dir", opts.DataDir, "attempt", attempt)
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// oldServerAttempts bounds how often Start launches the server while the
// processes of a killed one still hold its shared memory: 50 attempts,
// 200 ms apart.
const oldServerAttempts = 50

// oldServerError is a start that failed because processes of an earlier
// server on the data directory are still attached to its shared memory.
type oldServerError struct{ err error }

func (e *oldServerError) Error() string { return e.err.Error() }
func (e *oldServerError) Unwrap() error { return e.err }

// launch starts the server once and waits until it accepts connections.
// On error no server is left running.
func launch(ctx context.Context, opts Options, own *owner) (*Cluster, error) {
	log := opts.Logger
	logf, err := openLog(filepath.Join(opts.DataDir, logFileName))
	if err != nil {
		return nil, err
	}
	var logStart int64
	if fi, err := logf.Stat(); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(filepath.Join(opts.BinDir, "postgres"), serverArgs(opts)...)
	cmd.Dir = opts.DataDir
	cmd.Env = serverEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = own.sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("pgcluster: start postgres: %w", err)
	}
	c := &Cluster{opts: opts, cmd: cmd, exited: make(chan struct{}), logStart: logStart}
	go func() {
		c.err = cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	log.Debug("postgres started", "pid", cmd.Process.Pid, "data_dir", opts.DataDir, "socket_dir", opts.SocketDir)

	if err := c.waitReady(ctx); err != nil {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.StopTimeout)
		defer cancel()
		_ = c.Stop(stopCtx)
		return nil, err
	}
	log.Info("postgres ready", "pid", cmd.Process.Pid, "url", c.URL("postgres"))
	return c, nil
}

// initdb creates a cluster in opts.DataDir unless it holds one already.
// It initialises a sibling directory and renames it into place, so that an
// initdb cut short (a cancelled ctx, a crash) never leaves a half-made
// cluster where Start would find it.
func initdb(ctx context.Context, opts Options, own *owner) error {
	if _, err := os.Stat(filepath.Join(opts.DataDir, "PG_VERSION")); err == nil {
		return nil
	}
	entries, err := os.ReadDir(opts.DataDir)
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("pgcluster: %s is not empty and holds no PostgreSQL cluster (no PG_VERSION); "+
			"refusing to initialise it", opts.DataDir)
	}
	tmp := opts.DataDir + ".initdb"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := own.prepareDir(tmp, opts.LoosenParents, opts.Logger); err != nil {
		return err
	}
	args := []string{"-D", tmp, "-U", Superuser, "-A", "trust", "-E", "UTF8", "--locale=C"}
	if opts.NoSync {
		args = append(args, "--no-sync")
	}
	cmd := exec.CommandContext(ctx, filepath.Join(opts.BinDir, "initdb"), args...)
	cmd.Dir = tmp
	cmd.Env = serverEnv()
	cmd.SysProcAttr = own.sysProcAttr()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	opts.Logger.Info("initialising PostgreSQL data directory", "data_dir", opts.DataDir)
	if err := cmd.Run(); err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("pgcluster: initdb %s: %w\n%s", opts.DataDir, err, tail(out.Bytes(), 20))
	}
	if err := os.Remove(opts.DataDir); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	if err := os.Rename(tmp, opts.DataDir); err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

// serverArgs returns the postgres command line: data directory, socket,
// no TCP listener, and the settings from opts.
func serverArgs(opts Options) []string {
	settings := map[string]string{
		"listen_addresses":        "",
		"unix_socket_directories": opts.SocketDir,
		"log_timezone":            "UTC",
		"timezone":                "UTC",
	}
	if opts.NoSync {
		settings["fsync"] = "off"
		settings["synchronous_commit"] = "off"
		settings["full_page_writes"] = "off"
		settings["wal_level"] = "minimal"
		settings["max_wal_senders"] = "0"
	}
	for k, v := range opts.Settings {
		settings[k] = v
	}
	args := []string{"-D", opts.DataDir, "-p", strconv.Itoa(opts.Port)}
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		args = append(args, "-c", k+"="+settings[k])
	}
	return args
}

// serverEnv is the environment for initdb and postgres: ours without the
// libpq PG* variables, which could change which cluster they act on, and
// with a plain C locale.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C")
}

func openLog(path string) (*os.File, error) {
	flags := os.O_CREATE | os.O_WRONLY | os.O_APPEND
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogSize {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: open server log: %w", err)
	}
	return f, nil
}

// removeStalePIDFile removes a postmaster.pid or socket lock file whose
// pid now belongs to a process that is not PostgreSQL (a pid reused after
// a crash or in a new container), which would keep PostgreSQL from
// starting. A file whose process is gone is left alone: PostgreSQL then
// checks that no old backend still uses the shared memory before it
// replaces the file. A live postgres process, or any process still working
// in dataDir, is an ErrRunning.
func removeStalePIDFile(path, dataDir string, log *slog.Logger) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if pid < 0 {
		pid = -pid // PostgreSQL writes a negative pid in single-user mode.
	}
	if err != nil || pid == 0 || !alive(pid) {
		return nil
	}
	if isPostgres(pid) {
		return fmt.Errorf("%w (pid %d, %s)", ErrRunning, pid, path)
	}
	if busy := processIn(dataDir); busy > 0 {
		return fmt.Errorf("%w: process %d still works in %s", ErrRunning, busy, dataDir)
	}
	log.Warn("removing stale PostgreSQL lock file: its pid now belongs to another program", "path", path, "pid", pid)
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pgcluster: remove stale %s: %w", path, err)
	}
	return nil
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// isPostgres reports whether the live process pid looks like a PostgreSQL
// server. Without /proc it assumes it does.
func isPostgres(pid int) bool {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || !procMounted()
	}
	return bytes.Contains(cmdline, []byte("postgres"))
}

// processIn returns the pid of a process whose working directory is dir
// (PostgreSQL's processes work in their data directory), or 0 if none is
// found or /proc cannot tell.
func processIn(dir string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd")); err == nil && cwd == dir {
			return pid
		}
	}
	return 0
}

func procMounted() bool {
	_, err := os.Stat("/proc/self")
	return err == nil
}

// waitReady polls the socket until the server completes a startup
// handshake, the server exits, ctx ends or StartTimeout passes.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	delay := 10 * time.Millisecond
	var last error
	for {
		pingCtx, pingCancel := context.WithTimeout(ctx, 5*time.Second)
		last = c.ping(pingCtx)
		pingCancel()
		if last == nil {
			return nil
		}
		select {
		case <-c.exited:
			tail := c.logTail(20)
			err := fmt.Errorf("pgcluster: postgres exited during startup (%v); log %s:\n%s",
				c.err, c.LogFile(), tail)
			if bytes.Contains(c.logSinceStart(), []byte("pre-existing shared memory block")) {
				err = &oldServerError{err}
			}
			return err
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: postgres not ready (%v): %w; log %s:\n%s",
				last, ctx.Err(), c.LogFile(), c.logTail(20))
		case <-time.After(delay):
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// ping completes a startup handshake with the postgres database.
func (c *Cluster) ping(ctx context.Context) error {
	w, err := dialWire(ctx, c.SocketPath(), Superuser, "postgres")
	if err != nil {
		return err
	}
	w.close()
	return nil
}

// logSinceStart is what this server wrote to the log file.
func (c *Cluster) logSinceStart() []byte {
	b, err := os.ReadFile(c.LogFile())
	if err != nil || int64(len(b)) < c.logStart {
		return nil
	}
	return b[c.logStart:]
}

func (c *Cluster) logTail(n int) []byte {
	b, err := os.ReadFile(c.LogFile())
	if err != nil {
		return []byte(err.Error())
	}
	return tail(b, n)
}

// URL returns a libpq/pgx URL for database dbname as the superuser over
// the unix socket, e.g.
// postgres://postgres@/berth?host=/var/lib/berth/run&port=5432.
func (c *Cluster) URL(dbname string) string {
	u := url.URL{
		Scheme:   "postgres",
		User:     url.User(Superuser),
		Path:     "/" + dbname,
		RawQuery: "host=" + queryEscapePath(c.opts.SocketDir) + "&port=" + strconv.Itoa(c.opts.Port),
	}
	return u.String()
}

// queryEscapePath escapes a path for a query value but keeps its slashes
// readable.
func queryEscapePath(p string) string {
	return strings.ReplaceAll(url.QueryEscape(p), "%2F", "/")
}

// SocketDir returns the directory holding the server's socket.
func (c *Cluster) SocketDir() string { return c.opts.SocketDir }

// SocketPath returns the server's socket file.
func (c *Cluster) SocketPath() string { return socketPath(c.opts.SocketDir, c.opts.Port) }

// Port returns the port number in the socket's name.
func (c *Cluster) Port() int { return c.opts.Port }

// DataDir returns the cluster's data directory.
func (c *Cluster) DataDir() string { return c.opts.DataDir }

// LogFile returns the server's log file.
func (c *Cluster) LogFile() string { return filepath.Join(c.opts.DataDir, logFileName) }

// Exited is closed when the server process has exited, whether through
// Stop or not; callers select on it to notice a server that died.
func (c *Cluster) Exited() <-chan struct{} { return c.exited }

// CreateDatabase creates database name owned by the superuser, unless it
// exists already.
func (c *Cluster) CreateDatabase(ctx context.Context, name string) error {
	w, err := dialWire(ctx, c.SocketPath(), Superuser, "postgres")
	if err != nil {
		return fmt.Errorf("pgcluster: connect: %w", err)
	}
	defer w.close()
	err = w.exec("CREATE DATABASE " + quoteIdent(name))
	var pgErr *Error
	if errors.As(err, &pgErr) && pgErr.Code == codeDuplicateDatabase {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgcluster: create database %s: %w", name, err)
	}
	return nil
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// Stop shuts the server down: a fast shutdown (SIGINT: disconnect
// clients, checkpoint, exit), then after StopTimeout or when ctx ends an
// immediate shutdown (SIGQUIT), then five seconds later SIGKILL. It
// returns once the server has exited, with an error if it did not exit
// cleanly. Calling Stop again returns the first call's result.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() { c.stopErr = c.stop(ctx) })
	return c.stopErr
}

func (c *Cluster) stop(ctx context.Context) error {
	log := c.opts.Logger
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, c.opts.StopTimeout},
		{syscall.SIGQUIT, 5 * time.Second},
		{syscall.SIGKILL, 5 * time.Second},
	}
	for i, step := range steps {
		if err := c.cmd.Process.Signal(step.sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			log.Warn("signal postgres", "signal", step.sig, "error", err)
		}
		timer := time.NewTimer(step.wait)
		var done <-chan struct{}
		if i == 0 {
			done = ctx.Done() // only the polite step may be cut short
		}
		select {
		case <-c.exited:
			timer.Stop()
			if i > 0 {
				return fmt.Errorf("pgcluster: postgres needed %s to stop: %v", step.sig, c.err)
			}
			if c.err != nil {
				return fmt.Errorf("pgcluster: postgres exited: %w", c.err)
			}
			log.Info("postgres stopped", "data_dir", c.opts.DataDir)
			return nil
		case <-timer.C:
		case <-done:
			timer.Stop()
		}
		log.Warn("postgres did not stop in time", "signal", step.sig)
	}
	return fmt.Errorf("pgcluster: postgres (pid %d) did not exit after SIGKILL", c.cmd.Process.Pid)
}
