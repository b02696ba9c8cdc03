package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/berthd/berth/internal/fault"
)

// The ledger's refusals are fault's kinds (internal/fault), made by these.

func notFound(format string, args ...any) error { return fault.NotFound(format, args...) }

// providerNotFound is the fault.ErrProviderNotFound of the provider with this
// uuid, in the object layer's words.
func providerNotFound(uuid string) error {
	return &fault.Error{Kind: fault.ErrProviderNotFound, Msg: fmt.Sprintf("No resource provider with uuid %s found", uuid)}
}

// resourceClassNotFound is the fault.ErrClassNotFound of the class with this
// name, in the object layer's words.
func resourceClassNotFound(name string) error {
	return &fault.Error{Kind: fault.ErrClassNotFound, Msg: fmt.Sprintf("No such resource class %s.", name)}
}

func conflict(code, format string, args ...any) error { return fault.Conflict(code, format, args...) }

func invalid(code, format string, args ...any) error { return fault.Invalid(code, format, args...) }

// dbError is the ledger's boundary for errors: every error a Store method
// returns has been through it (withTx, the read helpers of db.go and the
// one-trip pipelines call it), so no package above the ledger inspects a
// driver's error. A *fault.Error passes unchanged. A PostgreSQL error that
// only a value sent by the client can cause becomes fault.ErrInvalid: a
// string holding a NUL byte or invalid UTF-8 (in a path, a query or a
// body), which PostgreSQL can neither store nor compare; the transaction
// it happened in was rolled back, so nothing changed. An error that says
// the database is out of reach (see unavailable) becomes
// fault.ErrUnavailable. Anything else (a cancelled request, a bug) passes
// unchanged: it has no kind, and the API answers it with a 500.
func dbError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := fault.As(err); ok {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case sqlstateCharacterNotInRepertoire, sqlstateUntranslatableCharacter:
			return &fault.Error{Kind: fault.ErrInvalid, Msg: "Invalid input: " + pgErr.Message + ".", Cause: err}
		}
	}
	if unavailable(err) {
		return &fault.Error{Kind: fault.ErrUnavailable, Code: fault.CodeDatabaseUnavailable,
			Msg: "The database is unavailable; try again later.", Cause: err}
	}
	return err
}

// unavailable reports whether err says that the database is out of reach
// rather than that a statement was wrong: a failed connection attempt, a
// connection that broke (EOF, reset, closed), a server that is shutting
// down, starting up or out of connection slots (SQLSTATE classes 08 and
// 57, and 53300), a statement cancelled by statement_timeout, or a
// deadline that ran out while waiting for any of these. A cancelled
// context (the client went away) is not: nobody is left to answer.
func unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || // connection exception
			strings.HasPrefix(pgErr.Code, "57") || // operator intervention: shutdown, starting up, query cancelled
			pgErr.Code == sqlstateTooManyConnections ||
			// A primary that became read-only (default_transaction_read_only,
			// or a standby reached without target_session_attrs): writes
			// come back once a primary accepts them.
			pgErr.Code == sqlstateReadOnlyTransaction
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) ||
		pgconn.Timeout(err) ||
		errors.As(err, &connectErr) ||
		errors.As(err, &netErr) ||
		errors.Is(err, pgconn.ErrConnClosed) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// PostgreSQL SQLSTATE codes this package reacts to.
const (
	sqlstateUniqueViolation      = "23505"
	sqlstateForeignKeyViolation  = "23503"
	sqlstateSerializationFailure = "40001"
	sqlstateDeadlockDetected     = "40P01"
	sqlstateNumericOutOfRange    = "22003"
	sqlstateTooManyConnections   = "53300"
	sqlstateReadOnlyTransaction  = "25006"
	sqlstateUndefinedTable       = "42P01"
	// A string PostgreSQL cannot hold: a NUL byte or invalid UTF-8.
	sqlstateCharacterNotInRepertoire = "22021"
	sqlstateUntranslatableCharacter  = "22P05"
)

// pgCode returns the SQLSTATE of a PostgreSQL error, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// uniqueViolation reports whether err is a unique violation and on which constraint.
func uniqueViolation(err error) (constraint string, ok bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateUniqueViolation {
		return pgErr.ConstraintName, true
	}
	return "", false
}

// foreignKeyViolation reports whether err is a foreign key violation and on
// which constraint.
func foreignKeyViolation(err error) (constraint string, ok bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateForeignKeyViolation {
		return pgErr.ConstraintName, true
	}
	return "", false
}

// retryable reports whether a transaction failed in a way that running it
// again from the start may cure.
func retryable(err error) bool {
	switch pgCode(err) {
	case sqlstateSerializationFailure, sqlstateDeadlockDetected:
		return true
	}
	return false
}

// oneLine is err's message on one line, for logs: pgx joins a connect
// error's per-host causes with "\n\t", which a text log quotes as such.
func oneLine(err error) string {
	if err == nil {
		return ""
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
