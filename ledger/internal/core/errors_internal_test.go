package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestDBErrorKinds: at the ledger's boundary, errors that say the
// database is out of reach become fault.ErrUnavailable with Berth's code
// (keeping the driver's error as the cause, for logs); errors that say a
// statement was wrong, and a client that went away, pass unchanged.
func TestDBErrorKinds(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name string
		err  error
		kind error // nil: DBError passes it unchanged
	}{
		{"connection refused", fmt.Errorf("ledger: begin: %w", refused), fault.ErrUnavailable},
		{"connection reset", fmt.Errorf("ledger: query: %w", reset), fault.ErrUnavailable},
		{"unexpected EOF", fmt.Errorf("failed to receive message: %w", io.ErrUnexpectedEOF), fault.ErrUnavailable},
		{"EOF", fmt.Errorf("read: %w", io.EOF), fault.ErrUnavailable},
		{"conn closed", fmt.Errorf("ledger: %w", pgconn.ErrConnClosed), fault.ErrUnavailable},
		{"admin shutdown", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, fault.ErrUnavailable},
		{"crash shutdown", &pgconn.PgError{Code: "57P02"}, fault.ErrUnavailable},
		{"starting up", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, fault.ErrUnavailable},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, fault.ErrUnavailable},
		{"connection failure", &pgconn.PgError{Code: "08006"}, fault.ErrUnavailable},
		{"too many connections", &pgconn.PgError{Code: "53300"}, fault.ErrUnavailable},
		{"acquire timeout", fmt.Errorf("ledger: begin: %w", context.DeadlineExceeded), fault.ErrUnavailable},
		{"bad string", &pgconn.PgError{Code: "22021"}, fault.ErrInvalid},
		{"unique violation", &pgconn.PgError{Code: "23505"}, nil},
		{"syntax error", &pgconn.PgError{Code: "42601"}, nil},
		{"client went away", fmt.Errorf("ledger: begin: %w", context.Canceled), nil},
		{"a bug", errors.New("index out of range"), nil},
		{"already a fault", &fault.Error{Kind: fault.ErrConflict, Msg: "x"}, fault.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DBError(tc.err)
			e, ok := fault.As(got)
			if tc.kind == nil {
				if got != tc.err {
					t.Fatalf("DBError(%v) = %v, want it unchanged", tc.err, got)
				}
				return
			}
			if !ok || !errors.Is(e, tc.kind) {
				t.Fatalf("DBError(%v) = %+v; want kind %v", tc.err, got, tc.kind)
			}
			if tc.kind == fault.ErrUnavailable && (e.Code != fault.CodeDatabaseUnavailable || e.Msg == "" || !errors.Is(got, tc.err)) {
				t.Errorf("unavailable error %+v: want code %s, a message and the cause", e, fault.CodeDatabaseUnavailable)
			}
		})
	}
}
