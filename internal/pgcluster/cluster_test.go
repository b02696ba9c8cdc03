package pgcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startTest starts a NoSync cluster in dir and stops it when the test ends.
func startTest(t *testing.T, opts Options) *Cluster {
	t.Helper()
	if _, err := FindBinaries(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	opts.NoSync = true
	opts.LoosenParents = true // the test's temporary directory
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

func TestStartStopRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "pg")
	c := startTest(t, Options{DataDir: dataDir, Port: 5433})
	ctx := context.Background()

	want := "postgres://postgres@/postgres?host=" + dataDir + "&port=5433"
	if got := c.URL("postgres"); got != want {
		t.Errorf("URL = %q, want %q", got, want)
	}
	for range 2 { // the second call finds the database exists
		if err := c.CreateDatabase(ctx, "berth"); err != nil {
			t.Fatalf("CreateDatabase: %v", err)
		}
	}
	w, err := dialWire(ctx, c.SocketPath(), Superuser, "berth")
	if err != nil {
		t.Fatalf("connect to new database: %v", err)
	}
	if err := w.exec("CREATE TABLE t (id int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatalf("exec: %v", err)
	}
	var pgErr *Error
	if err := w.exec("SELECT * FROM missing"); !errors.As(err, &pgErr) || pgErr.Code != "42P01" {
		t.Errorf("query on a missing table: err = %v, want SQLSTATE 42P01", err)
	}
	w.close()

	if err := c.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	select {
	case <-c.Exited():
	default:
		t.Fatal("Exited not closed after Stop")
	}
	if _, err := os.Stat(c.SocketPath()); !os.IsNotExist(err) {
		t.Errorf("socket still there after Stop: %v", err)
	}

	// A postmaster.pid naming a live process that is not postgres (a
	// reused pid) must not keep the cluster from starting again.
	pidFile := filepath.Join(dataDir, "postmaster.pid")
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"+dataDir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c2 := startTest(t, Options{DataDir: dataDir, Port: 5433})
	w, err = dialWire(ctx, c2.SocketPath(), Superuser, "berth")
	if err != nil {
		t.Fatalf("reconnect after restart: %v", err)
	}
	if err := w.exec("SELECT * FROM t"); err != nil {
		t.Errorf("data lost across restart: %v", err)
	}
	w.close()
}

func TestStartAfterCrash(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "pg")
	c := startTest(t, Options{DataDir: dataDir})
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Exited()
	if _, err := os.Stat(filepath.Join(dataDir, "postmaster.pid")); err != nil {
		t.Fatalf("expected a stale postmaster.pid after SIGKILL: %v", err)
	}
	c2 := startTest(t, Options{DataDir: dataDir})
	if err := c2.CreateDatabase(context.Background(), "after_crash"); err != nil {
		t.Fatalf("CreateDatabase after crash recovery: %v", err)
	}
}

func TestStartRefusesRunningDataDir(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "pg")
	startTest(t, Options{DataDir: dataDir})
	_, err := Start(context.Background(), Options{DataDir: dataDir, SocketDir: filepath.Join(dir, "other")})
	if !errors.Is(err, ErrRunning) {
		t.Fatalf("second Start on a live data dir: err = %v, want ErrRunning", err)
	}
}

func TestStartRefusesForeignDir(t *testing.T) {
	if _, err := FindBinaries(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{DataDir: dir, LoosenParents: true})
	if err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("Start on a non-empty non-cluster dir: err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); err != nil {
		t.Fatalf("foreign file touched: %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	long := "/" + strings.Repeat("d", 100)
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no data dir", Options{}, "DataDir is required"},
		{"long socket path", Options{DataDir: "/x", SocketDir: long, BinDir: "/bin"}, "longer than 107"},
		{"bad port", Options{DataDir: "/x", Port: 70000, BinDir: "/bin"}, "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.setDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestSocketDirFits(t *testing.T) {
	if !SocketDirFits("/tmp/berth", 5432) {
		t.Error("short dir does not fit")
	}
	// 107 bytes exactly fits; 108 does not.
	dir := "/" + strings.Repeat("a", MaxSocketPath-len("/.s.PGSQL.5432")-1)
	if !SocketDirFits(dir, 5432) || SocketDirFits(dir+"a", 5432) {
		t.Errorf("boundary wrong: len %d", len(socketPath(dir, 5432)))
	}
}

func TestDebianBinDirs(t *testing.T) {
	root := t.TempDir()
	for _, v := range []string{"9.6", "15", "13", "notaversion"} {
		if err := os.MkdirAll(filepath.Join(root, v, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got := debianBinDirs(root)
	want := []string{"15", "13", "9.6"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i, v := range want {
		if got[i] != filepath.Join(root, v, "bin") {
			t.Errorf("dirs[%d] = %s, want version %s", i, got[i], v)
		}
	}
}

func TestParseError(t *testing.T) {
	msg := []byte("SERROR\x00C42P04\x00Mdatabase \"x\" already exists\x00\x00")
	e := parseError(msg)
	if e.Code != "42P04" || e.Message != `database "x" already exists` {
		t.Errorf("parseError = %+v", e)
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"", 3, ""},
	} {
		if got := string(tail([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("tail(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func TestStartReplacesInterruptedInitdb(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "pg")
	// What an initdb killed halfway leaves behind.
	if err := os.MkdirAll(dataDir+".initdb/base", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dataDir+".initdb/PG_VERSION", []byte("15\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startTest(t, Options{DataDir: dataDir})
	if err := c.CreateDatabase(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dataDir + ".initdb"); !os.IsNotExist(err) {
		t.Errorf("leftover initdb directory still there: %v", err)
	}
}

// TestStartLoosensNoParent: as root, without LoosenParents, Start refuses
// a data directory behind one the postgres user cannot pass
// (ErrUnreachable, naming it) and changes its mode in no way; in a home
// made by MakeHome it starts, with no other directory changed.
func TestStartLoosensNoParent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the server runs as another account only when the caller is root")
	}
	if _, err := FindBinaries(); err != nil {
		t.Skipf("no PostgreSQL server binaries: %v", err)
	}
	closed := filepath.Join(t.TempDir(), "closed")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), Options{DataDir: filepath.Join(closed, "pg"), NoSync: true})
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), closed) {
		t.Fatalf("Start behind a closed directory: %v", err)
	}
	if fi, err := os.Stat(closed); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the closed directory: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(closed, "pg")); !os.IsNotExist(err) {
		t.Errorf("the data directory was created behind it: %v", err)
	}
	if _, err := MakeHome(filepath.Join(closed, "home")); !errors.Is(err, ErrUnreachable) {
		t.Errorf("MakeHome behind a closed directory: %v", err)
	}

	open := t.TempDir()
	for _, d := range []string{open, filepath.Dir(open)} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Join(open, "home")
	if created, err := MakeHome(home); err != nil || !created {
		t.Fatalf("MakeHome: %v %v", created, err)
	}
	c, err := Start(context.Background(), Options{DataDir: filepath.Join(home, "pg"), NoSync: true})
	if err != nil {
		t.Fatalf("Start in a home of its own: %v", err)
	}
	defer c.Stop(context.Background())
	fi, err := os.Stat(home)
	st, _ := fi.Sys().(*syscall.Stat_t)
	if err != nil || fi.Mode().Perm() != 0o700 || st == nil || st.Uid == 0 {
		t.Errorf("the home: %v, owner %v, %v", fi.Mode(), st, err)
	}
	if fi, err := os.Stat(open); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("the home's parent changed: %v %v", fi.Mode(), err)
	}
}
