// Package fault is Berth's vocabulary of refusals: the error kinds every
// package returns for a request it refuses, and the error codes of
// Placement's error format (plus Berth's own, under "berth."). It imports
// nothing of Berth's, so every package may import it. The ledger translates
// the database driver's errors into these kinds at its boundary; httpapi
// maps the kinds to HTTP statuses in one table. Nothing else looks at a
// driver's error.
package fault

import (
	"errors"
	"fmt"
	"strings"
)

// Error kinds. A refusal wraps exactly one of them; an error that wraps none
// is an outage of something other than the database, or a bug.
var (
	// ErrNotFound: a named entity (provider, class, trait, consumer,
	// policy, scriptlet) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request is well formed but the current state
	// refuses it (duplicate name, stale generation, capacity, in use).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request is semantically invalid (a bad value found
	// past the request's schema, a name that does not exist where one is
	// required).
	ErrInvalid = errors.New("invalid")
	// ErrUnavailable: the database could not be reached or went away
	// during the request (connection refused or reset, server shutting
	// down or starting up, no pooled connection within the acquire
	// timeout). A write that failed this way may or may not have
	// committed, if the connection broke during COMMIT; the caller should
	// retry later and, for writes, read back what it wrote.
	ErrUnavailable = errors.New("database unavailable")
	// ErrForbidden: the request is well formed and the state allows it,
	// but a limit the caller is held to refuses it (a project's quota).
	ErrForbidden = errors.New("forbidden")

	// ErrProviderNotFound and ErrClassNotFound are the ErrNotFound of
	// looking up the provider or resource class a request names by uuid
	// or name: Placement's ResourceProvider.get_by_uuid and
	// ResourceClass.get_by_name raising NotFound. Placement's handlers
	// let some of these escape and catch others, which a client can tell
	// apart (httpapi's error table); errors.Is(err, ErrNotFound) holds
	// for both.
	ErrProviderNotFound = fmt.Errorf("resource provider %w", ErrNotFound)
	ErrClassNotFound    = fmt.Errorf("resource class %w", ErrNotFound)

	// ErrUnknownProvider is the ErrInvalid of an allocation write that
	// names a provider that does not exist (Placement answers 400): for a
	// claim, a candidate whose provider was deleted since the snapshot,
	// so another candidate may still fit.
	ErrUnknownProvider = fmt.Errorf("%w: unknown resource provider", ErrInvalid)
)

// Error is a refusal with a kind, an error code and a message meant for the
// API's user.
type Error struct {
	Kind error  // one of the kinds above
	Code string // an error code below; empty means CodeUndefined
	Msg  string
	// Cause, when set, is the error behind the refusal (a driver's error
	// behind ErrUnavailable), for logs. errors.Is and errors.As see it,
	// but no package above the one that made the Error looks into it.
	Cause error
}

func (e *Error) Error() string { return e.Msg }

// Unwrap gives the kind, then the cause if there is one.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// Detail is err's message for a log line: an *Error's message followed by
// its cause's, on one line.
func Detail(err error) string {
	s := err.Error()
	if e, ok := As(err); ok && e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return strings.Join(strings.Fields(s), " ")
}

// New returns an *Error of kind with code, its message formatted.
func New(kind error, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// NotFound returns an ErrNotFound *Error without a code.
func NotFound(format string, args ...any) *Error { return New(ErrNotFound, "", format, args...) }

// Conflict returns an ErrConflict *Error with code.
func Conflict(code, format string, args ...any) *Error {
	return New(ErrConflict, code, format, args...)
}

// Invalid returns an ErrInvalid *Error with code.
func Invalid(code, format string, args ...any) *Error { return New(ErrInvalid, code, format, args...) }

// As returns the *Error that err is or wraps.
func As(err error) (*Error, bool) {
	return errors.AsType[*Error](err)
}

// HasCode reports whether err is or wraps an *Error of kind with code.
func HasCode(err error, kind error, code string) bool {
	e, ok := As(err)
	return ok && errors.Is(e, kind) && e.Code == code
}

// Placement's error codes (the API reference, errors.inc).
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
)

// Berth's own error codes, for what Placement has no word for.
const (
	// CodeDatabaseUnavailable goes with ErrUnavailable.
	CodeDatabaseUnavailable = "berth.database_unavailable"
	// CodeNoValidHost: a claim placed nothing.
	CodeNoValidHost = "berth.no_valid_host"
	// CodeClaimConflict: every write attempt of a claim lost to
	// concurrent claims: candidates fit, but each one tried was taken
	// first. Retrying may succeed.
	CodeClaimConflict = "berth.claim_conflict"
	// CodeClaimMismatch: a claim for a consumer that an earlier claim
	// with a different request placed: not a retry of it.
	CodeClaimMismatch = "berth.claim_mismatch"
	// CodeMoveEnded: a move's confirm or revert for a move that an
	// earlier confirm or revert already ended.
	CodeMoveEnded = "berth.move_ended"
	// CodeInvalidLease: a claim's lease_seconds that is not an integer
	// from 1 to the configured maximum (--claim-lease-max).
	CodeInvalidLease = "berth.invalid_lease"
	// CodeLeaseOnPermanent: a lease on a consumer whose allocations are
	// not provisional (permanent, moving, or written through the
	// Placement API): a lease would make them releasable.
	CodeLeaseOnPermanent = "berth.lease_on_permanent"
	// CodeNoClaim: GET or PATCH /claims/{consumer} of a consumer that no
	// claim placed (none, or its allocations written through the
	// Placement API).
	CodeNoClaim = "berth.no_claim"
	// CodeLeaseExpired: a renewal or confirmation of a claim whose lease
	// has run out; its allocations are being released (or its move
	// reverted).
	CodeLeaseExpired = "berth.lease_expired"
	// CodeLeaseNotExpired: the lease reaper's release of a claim that was
	// renewed or confirmed meanwhile (never answered to a client).
	CodeLeaseNotExpired = "berth.lease_not_expired"
	// CodeScriptletInvalid: Starlark source that does not compile.
	CodeScriptletInvalid = "berth.scriptlet.invalid"
	// CodeOverloaded: the server refused a request to stay within its
	// admission limits.
	CodeOverloaded = "berth.overloaded"
	// CodeIdentityUnavailable: Keystone could not be asked who the
	// caller is.
	CodeIdentityUnavailable = "berth.identity_unavailable"
	// CodeOverQuota: a write would take a project past one of its limits
	// (docs/quotas.md); nothing was written.
	CodeOverQuota = "berth.over_quota"
	// CodeLimitsUnavailable: the limits of a project that were never read
	// could not be read from Keystone.
	CodeLimitsUnavailable = "berth.limits_unavailable"
	// CodeLimitsReadOnly: a change of limits that Berth does not keep
	// (they are Keystone's).
	CodeLimitsReadOnly = "berth.limits_read_only"
	// CodeNotRootProvider: an operation on a whole host (evacuate) named
	// a provider that is not the root of its tree.
	CodeNotRootProvider = "berth.not_root_provider"
	// CodeNotEvacuated: a restore of a provider that is not evacuated.
	CodeNotEvacuated = "berth.not_evacuated"
	// CodeAuditUnknownKind: an audit kind that does not exist.
	CodeAuditUnknownKind = "berth.audit.unknown_kind"
	// CodeAuditInvalid: a bad audit request (limit, marker, threshold,
	// fix body).
	CodeAuditInvalid = "berth.audit.invalid"
	// CodeAuditFindingGone: the fix of a finding that no longer holds
	// (something changed it since it was listed); nothing was changed.
	CodeAuditFindingGone = "berth.audit.finding_gone"
	// CodeAuditNotFixable: the fix of a finding that is reported only.
	CodeAuditNotFixable = "berth.audit.not_fixable"
	// CodeShadowNotFound: a shadow of a scriptlet or scheduling policy
	// that does not exist, or the report or stop of a shadow not running.
	CodeShadowNotFound = "berth.shadow.not_found"
	// CodeShadowInvalid: a shadow that cannot run: its scriptlet does not
	// compile or defines no instance_placement, its policy does not
	// build, or it is the default policy it would be compared with.
	CodeShadowInvalid = "berth.shadow.invalid"
	// CodeShadowRunning: a second start of a shadow already running.
	CodeShadowRunning = "berth.shadow.running"
	// CodePreemptionConflict: a claim's write found a consumer it was to
	// displace changed since it was chosen (its allocations, its priority,
	// no longer preemptible, gone); the claim tries its next option.
	CodePreemptionConflict = "berth.preemption_conflict"
)
