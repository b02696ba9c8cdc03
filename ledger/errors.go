package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/berthd/berth/ledger/engine"
)

// Error kinds. Every error returned by this package for a rejected request
// wraps exactly one of them; anything else is an outage or a bug.
var (
	// ErrNotFound: a named entity (provider, class, trait, consumer) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request is well formed but the ledger's current state
	// refuses it (duplicate name, stale generation, capacity, in use).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request is semantically invalid (bad value detected
	// by the ledger or its engine). It is engine.ErrInvalid, so the
	// engine's rejections are of this kind too.
	ErrInvalid = engine.ErrInvalid
	// ErrUnavailable: the database could not be reached or went away
	// during the request (connection refused or reset, server shutting
	// down or starting up, no pooled connection within the acquire
	// timeout). A write that failed this way may or may not have
	// committed, if the connection broke during COMMIT; the caller should
	// retry later and, for writes, read back what it wrote.
	ErrUnavailable = errors.New("database unavailable")

	// ErrProviderNotFound and ErrClassNotFound are the ErrNotFound of
	// looking up the provider or resource class a request names by uuid
	// or name: Placement's ResourceProvider.get_by_uuid and
	// ResourceClass.get_by_name raising NotFound. Placement's handlers
	// let some of these escape and catch others, which a client can tell
	// apart (httpapi's error table); errors.Is(err, ErrNotFound) holds
	// for both.
	ErrProviderNotFound = fmt.Errorf("resource provider %w", ErrNotFound)
	ErrClassNotFound    = fmt.Errorf("resource class %w", ErrNotFound)
)

// Placement error codes carried in Error.Code (see the API reference, errors.inc).
const (
	CodeUndefined            = "placement.undefined_code"
	CodeInventoryInUse       = "placement.inventory.inuse"
	CodeConcurrentUpdate     = "placement.concurrent_update"
	CodeDuplicateName        = "placement.duplicate_name"
	CodeProviderInUse        = "placement.resource_provider.inuse"
	CodeProviderCannotDelete = "placement.resource_provider.cannot_delete_parent"
	CodeProviderNotFound     = "placement.resource_provider.not_found"
	CodeQueryDuplicateKey    = "placement.query.duplicate_key"
	CodeQueryBadValue        = "placement.query.bad_value"
	CodeQueryMissingValue    = "placement.query.missing_value"

	// CodeDatabaseUnavailable is Berth's code for ErrUnavailable.
	CodeDatabaseUnavailable = "berth.database_unavailable"
)

// Error is a rejection with a kind, a Placement error code and a message
// meant for the API user.
type Error struct {
	Kind error  // ErrNotFound, ErrConflict, ErrInvalid or ErrUnavailable
	Code string // Placement error code; empty means CodeUndefined
	Msg  string
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Kind }

func notFound(format string, args ...any) error {
	return &Error{Kind: ErrNotFound, Msg: fmt.Sprintf(format, args...)}
}

// providerNotFound is the ErrProviderNotFound of the provider with this
// uuid, in the object layer's words.
func providerNotFound(uuid string) error {
	return &Error{Kind: ErrProviderNotFound, Msg: fmt.Sprintf("No resource provider with uuid %s found", uuid)}
}

// resourceClassNotFound is the ErrClassNotFound of the class with this
// name, in the object layer's words.
func resourceClassNotFound(name string) error {
	return &Error{Kind: ErrClassNotFound, Msg: fmt.Sprintf("No such resource class %s.", name)}
}

func conflict(code, format string, args ...any) error {
	return &Error{Kind: ErrConflict, Code: code, Msg: fmt.Sprintf(format, args...)}
}

func invalid(code, format string, args ...any) error {
	return &Error{Kind: ErrInvalid, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// AsError returns the *Error that err is or wraps. A PostgreSQL error
// that only a value sent by the client can cause becomes an ErrInvalid
// *Error as well: a string holding a NUL byte or invalid UTF-8 (in a path,
// a query or a body), which PostgreSQL can neither store nor compare. The
// transaction it happened in was rolled back, so nothing changed. An
// error that says the database is out of reach (see unavailable) becomes
// an ErrUnavailable *Error. Any other error gives ok false: a bug.
func AsError(err error) (e *Error, ok bool) {
	if errors.As(err, &e) {
		return e, true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case sqlstateCharacterNotInRepertoire, sqlstateUntranslatableCharacter:
			return &Error{Kind: ErrInvalid, Msg: "Invalid input: " + pgErr.Message + "."}, true
		}
	}
	if unavailable(err) {
		return &Error{
			Kind: ErrUnavailable,
			Code: CodeDatabaseUnavailable,
			Msg:  "The database is unavailable; try again later.",
		}, true
	}
	return nil, false
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
