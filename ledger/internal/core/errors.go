package core

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/berthd/berth/internal/fault"
)

// DBError is the ledger's boundary for errors: every error a method of the ledger's types
// returns has been through it (WithTx, the read helpers of db.go and the
// one-trip pipelines call it), so no package above the ledger inspects a
// driver's error. A *fault.Error passes unchanged. A PostgreSQL error that
// only a value sent by the client can cause becomes fault.ErrInvalid: a
// string holding a NUL byte or invalid UTF-8 (in a path, a query or a
// body), which PostgreSQL can neither store nor compare; the transaction
// it happened in was rolled back, so nothing changed. An error that says
// the database is out of reach (see Unavailable) becomes
// fault.ErrUnavailable. Anything else (a cancelled request, a bug) passes
// unchanged: it has no kind, and the API answers it with a 500.
func DBError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := fault.As(err); ok {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case SQLStateCharacterNotInRepertoire, SQLStateUntranslatableCharacter:
			return &fault.Error{Kind: fault.ErrInvalid, Msg: "Invalid input: " + pgErr.Message + ".", Cause: err}
		}
	}
	if Unavailable(err) {
		return &fault.Error{Kind: fault.ErrUnavailable, Code: fault.CodeDatabaseUnavailable,
			Msg: "The database is unavailable; try again later.", Cause: err}
	}
	return err
}

// Unavailable reports whether err says that the database is out of reach
// rather than that a statement was wrong: a failed connection attempt, a
// connection that broke (EOF, reset, closed), a server that is shutting
// down, starting up or out of connection slots (SQLSTATE classes 08 and
// 57, and 53300), a statement cancelled by statement_timeout, or a
// deadline that ran out while waiting for any of these. A cancelled
// context (the client went away) is not: nobody is left to answer.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || // connection exception
			strings.HasPrefix(pgErr.Code, "57") || // operator intervention: shutdown, starting up, query cancelled
			pgErr.Code == SQLStateTooManyConnections ||
			// A primary that became read-only (default_transaction_read_only,
			// or a standby reached without target_session_attrs): writes
			// come back once a primary accepts them.
			pgErr.Code == SQLStateReadOnlyTransaction
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
	SQLStateUniqueViolation      = "23505"
	SQLStateForeignKeyViolation  = "23503"
	SQLStateSerializationFailure = "40001"
	SQLStateDeadlockDetected     = "40P01"
	SQLStateNumericOutOfRange    = "22003"
	SQLStateTooManyConnections   = "53300"
	SQLStateReadOnlyTransaction  = "25006"
	SQLStateUndefinedTable       = "42P01"
	// A string PostgreSQL cannot hold: a NUL byte or invalid UTF-8.
	SQLStateCharacterNotInRepertoire = "22021"
	SQLStateUntranslatableCharacter  = "22P05"
)

// PgCode returns the SQLSTATE of a PostgreSQL error, or "".
func PgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// UniqueViolation reports whether err is a unique violation and on which constraint.
func UniqueViolation(err error) (constraint string, ok bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == SQLStateUniqueViolation {
		return pgErr.ConstraintName, true
	}
	return "", false
}

// ForeignKeyViolation reports whether err is a foreign key violation and on
// which constraint.
func ForeignKeyViolation(err error) (constraint string, ok bool) {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == SQLStateForeignKeyViolation {
		return pgErr.ConstraintName, true
	}
	return "", false
}

// Retryable reports whether a transaction failed in a way that running it
// again from the start may cure.
func Retryable(err error) bool {
	switch PgCode(err) {
	case SQLStateSerializationFailure, SQLStateDeadlockDetected:
		return true
	}
	return false
}

// OneLine is err's message on one line, for logs: pgx joins a connect
// error's per-host causes with "\n\t", which a text log quotes as such.
func OneLine(err error) string {
	if err == nil {
		return ""
	}
	return strings.Join(strings.Fields(err.Error()), " ")
}
