package placementdb

import (
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		in      string
		dialect Dialect
		addr    string // MySQL: net:addr/db
	}{
		{"mysql+pymysql://placement:s3cret@db.example.org:3307/placement?charset=utf8", MySQL, "tcp:db.example.org:3307/placement"},
		{"mysql://placement:s3cret@10.0.0.5/placement", MySQL, "tcp:10.0.0.5:3306/placement"},
		{"mysql+pymysql://placement:s3cret@/placement?unix_socket=/run/mysqld/mysqld.sock", MySQL, "unix:/run/mysqld/mysqld.sock/placement"},
		{"postgresql+psycopg2://placement:s3cret@pg/placement", Postgres, ""},
		{"postgresql://placement:s3cret@pg:5433/placement?sslmode=disable", Postgres, ""},
		{"postgres://placement:s3cret@pg/placement", Postgres, ""},
	} {
		s, err := ParseURL(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if s.Dialect != c.dialect {
			t.Errorf("%s: dialect %s", c.in, s.Dialect)
		}
		if c.dialect == MySQL {
			got := s.mysqlConfig.Net + ":" + s.mysqlConfig.Addr + "/" + s.mysqlConfig.DBName
			if got != c.addr || s.mysqlConfig.Passwd != "s3cret" || s.mysqlConfig.User != "placement" {
				t.Errorf("%s: %s", c.in, got)
			}
		} else if !strings.HasPrefix(s.pgURL, "postgres://placement:s3cret@") {
			t.Errorf("%s: %s", c.in, s.pgURL)
		}
		if strings.Contains(s.String(), "s3cret") {
			t.Errorf("%s: printed as %s", c.in, s)
		}
	}
	for _, bad := range []string{"sqlite:///p.db", "mysql://u:s3cret@host/", "::not a url s3cret"} {
		_, err := ParseURL(bad)
		if err == nil {
			t.Errorf("%s: accepted", bad)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: error shows the password: %v", bad, err)
		}
	}
}

func TestFloat32Shortest(t *testing.T) {
	for in, want := range map[float64]float64{
		1.100000023841858: 1.1, 16: 16, 1.5: 1.5, 0.8999999761581421: 0.9, 3.299999952316284: 3.3,
	} {
		if got := float32Shortest(in); got != want {
			t.Errorf("float32Shortest(%v) = %v, want %v", in, got, want)
		}
	}
}

func TestCheckBerthConstraints(t *testing.T) {
	d := &Dump{Providers: []ProviderRow{{ID: 1, UUID: "a", Name: "n"}, {ID: 2, UUID: "b", Name: "n"}}}
	err := checkBerthConstraints(d)
	re, ok := err.(*RowsError)
	if !ok || len(re.Rows) != 1 || !strings.Contains(re.Rows[0], `provider name "n"`) {
		t.Fatalf("got %v", err)
	}
}
