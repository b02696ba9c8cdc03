package mariadbtest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/berthd/berth/internal/testing/proctest"
)

// Server is a running MariaDB.
type Server struct {
	Port   int
	Socket string
	dir    string
	cmd    *exec.Cmd
	done   chan error
	log    string
}

// find returns the first of names found on PATH or in /usr/sbin and /usr/bin.
func find(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, d := range []string{"/usr/sbin", "/usr/bin"} {
			if _, err := os.Stat(filepath.Join(d, n)); err == nil {
				return filepath.Join(d, n), nil
			}
		}
	}
	return "", fmt.Errorf("mariadbtest: none of %s found (apt-get install mariadb-server)", strings.Join(names, ", "))
}

// Start initialises a data directory and starts the server; Stop ends it
// and removes the directory.
func Start(ctx context.Context) (_ *Server, err error) {
	server, err := find("mariadbd", "mysqld")
	if err != nil {
		return nil, err
	}
	install, err := find("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "berth-mariadb-")
	if err != nil {
		return nil, fmt.Errorf("mariadbtest: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	var cred *syscall.Credential
	var userArg []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("mysql")
		if err != nil {
			return nil, fmt.Errorf("mariadbtest: running as root needs the mysql system user (mariadb-server creates it): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		userArg = []string{"--user=mysql"}
		// The directory and every ancestor must be reachable by mysql.
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, fmt.Errorf("mariadbtest: %w", err)
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, fmt.Errorf("mariadbtest: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	common := []string{"--no-defaults", "--datadir=" + data}
	args := append(append(common[:len(common):len(common)], userArg...),
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve")
	ic := exec.CommandContext(ctx, install, args...)
	if out, err := ic.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mariadbtest: %s: %v: %s", install, err, lastLines(string(out), 5))
	}
	ports, err := proctest.FreePorts(1)
	if err != nil {
		return nil, fmt.Errorf("mariadbtest: %w", err)
	}
	port := ports[0]
	s := &Server{Port: port, Socket: filepath.Join(dir, "mysqld.sock"), dir: dir, done: make(chan error, 1), log: filepath.Join(dir, "server.log")}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, fmt.Errorf("mariadbtest: %w", err)
	}
	defer logf.Close()
	s.cmd = exec.Command(server, append(common,
		"--socket="+s.Socket, "--port="+strconv.Itoa(port), "--bind-address=127.0.0.1",
		"--pid-file="+filepath.Join(dir, "mysqld.pid"), "--skip-log-bin", "--skip-name-resolve",
		"--character-set-server=utf8mb3", "--collation-server=utf8mb3_general_ci",
		"--innodb-buffer-pool-size=256M", "--innodb-log-file-size=256M",
		"--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0", "--max-connections=200")...)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM, Credential: cred}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("mariadbtest: start %s: %w", server, err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, err := s.open("")
		if err == nil {
			err = db.PingContext(ctx)
			db.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case werr := <-s.done:
			s.done <- werr
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("mariadbtest: server exited (%v): %s", werr, lastLines(string(b), 8))
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("mariadbtest: server not ready after 60s: %s", lastLines(string(b), 8))
		}
	}
}

// open connects as root over the unix socket to database db ("" for none).
func (s *Server) open(db string) (*sql.DB, error) {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = "root", "unix", s.Socket, db
	c.ParseTime = true
	c.MultiStatements = true
	conn, err := mysql.NewConnector(c)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(conn), nil
}

// Exec runs statements (several, separated by semicolons, are allowed) as
// root in database db ("" for none).
func (s *Server) Exec(ctx context.Context, db, stmts string) error {
	d, err := s.open(db)
	if err != nil {
		return err
	}
	defer d.Close()
	if _, err := d.ExecContext(ctx, stmts); err != nil {
		return fmt.Errorf("mariadbtest: %w", err)
	}
	return nil
}

// CreateDB creates database name (utf8mb3, as OpenStack's installers do)
// and a user of the same name with password that may use it from
// 127.0.0.1, and returns the SQLAlchemy URL placement.conf takes:
// mysql+pymysql://name:password@127.0.0.1:port/name?charset=utf8.
func (s *Server) CreateDB(ctx context.Context, name, password string) (string, error) {
	err := s.Exec(ctx, "", fmt.Sprintf(
		"CREATE DATABASE `%s` CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci; "+
			"CREATE USER '%s'@'127.0.0.1' IDENTIFIED BY '%s'; "+
			"GRANT ALL ON `%s`.* TO '%s'@'127.0.0.1'", name, name, password, name, name))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("mysql+pymysql://%s:%s@127.0.0.1:%d/%s?charset=utf8", name, password, s.Port, name), nil
}

// Stop ends the server and removes its files.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		proctest.StopGroup(s.cmd.Process.Pid, s.done, 30*time.Second)
	}
	os.RemoveAll(s.dir)
}

func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return strings.Join(ls, " | ")
}
