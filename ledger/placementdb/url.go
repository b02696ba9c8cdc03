package placementdb

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Dialect is the kind of database a Placement URL names.
type Dialect string

const (
	MySQL    Dialect = "mysql"    // MySQL or MariaDB
	Postgres Dialect = "postgres" // PostgreSQL
)

// Source is a parsed Placement database URL.
type Source struct {
	Dialect Dialect
	// mysqlConfig is set for MySQL; pgURL (a postgres:// URL pgx reads)
	// for PostgreSQL.
	mysqlConfig *mysql.Config
	pgURL       string
	redacted    string
}

// String is the URL with its password replaced by "xxxxx": the only form
// of a URL this package prints.
func (s Source) String() string { return s.redacted }

// ConnectTimeout bounds dialing a database.
const ConnectTimeout = 10 * time.Second

// ParseURL accepts the forms operators have in placement.conf's
// [placement_database] connection: mysql+pymysql://user:pass@host:port/db?charset=utf8,
// mysql://..., mysql+mysqldb://... (a unix_socket=/path parameter selects a
// socket), and postgresql://, postgresql+psycopg2://, postgres://. Errors
// never contain the password.
func ParseURL(raw string) (Source, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the input; say only what is wrong.
		return Source{}, fmt.Errorf("database url is not a URL (expected mysql+pymysql://user:password@host:port/database or postgresql://...)")
	}
	scheme, _, _ := strings.Cut(u.Scheme, "+") // mysql+pymysql, postgresql+psycopg2
	red := Redact(raw)
	switch scheme {
	case "mysql", "mariadb":
		c := mysql.NewConfig()
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
		c.DBName = strings.TrimPrefix(u.Path, "/")
		c.ParseTime = true
		c.Loc = time.UTC
		c.Timeout = ConnectTimeout
		c.MultiStatements = false
		c.Params = map[string]string{"time_zone": "'+00:00'"}
		q := u.Query()
		if sock := q.Get("unix_socket"); sock != "" {
			c.Net, c.Addr = "unix", sock
		} else {
			host, port := u.Hostname(), u.Port()
			if host == "" {
				host = "localhost"
			}
			if port == "" {
				port = "3306"
			}
			c.Net, c.Addr = "tcp", net.JoinHostPort(host, port)
		}
		if c.DBName == "" {
			return Source{}, fmt.Errorf("database url %s names no database", red)
		}
		return Source{Dialect: MySQL, mysqlConfig: c, redacted: red}, nil
	case "postgres", "postgresql":
		v := *u
		v.Scheme = "postgres"
		q := v.Query()
		if q.Get("connect_timeout") == "" {
			q.Set("connect_timeout", fmt.Sprint(int(ConnectTimeout.Seconds())))
		}
		v.RawQuery = q.Encode()
		if strings.TrimPrefix(v.Path, "/") == "" {
			return Source{}, fmt.Errorf("database url %s names no database", red)
		}
		return Source{Dialect: Postgres, pgURL: v.String(), redacted: red}, nil
	}
	return Source{}, fmt.Errorf("database url %s: scheme %q is neither mysql (mysql+pymysql://, mysql://) nor postgresql (postgresql://, postgres://)", red, u.Scheme)
}

// Redact replaces the password of a URL by "xxxxx". A string that does not
// parse as a URL is replaced entirely, since it may hold one.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparseable url)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
