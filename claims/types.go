package claims

import (
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/scheduler"
)

// A claim's request and answer.

// Params is one claim.
type Params struct {
	ConsumerUUID string
	// ProjectID and UserID own the consumer; ConsumerType, when set,
	// becomes its type.
	ProjectID    string
	UserID       string
	ConsumerType string
	// ConsumerGeneration is the generation of an existing consumer whose
	// allocations the claim replaces, or nil for a consumer that must not
	// exist yet (microversion 1.28 semantics).
	ConsumerGeneration *int64
	// Candidates is the request, as for GET /allocation_candidates. Limit
	// is ignored: every candidate (up to the configured cap) is ranked.
	Candidates engine.CandidatesParams
	// Exclude lists root providers (uuid or name) not to place on: a
	// candidate using one of them or a provider of its tree is removed.
	Exclude []string
	// Target pins the claim to one root provider (uuid or name).
	Target string
	// MaxAttempts bounds the writes tried; 0 means the configured bound.
	MaxAttempts int
	// Name is the instance's name, handed to filters and scriptlets and
	// stored on the consumer.
	Name string
	// Reason is why the consumer is placed (Reasons); empty means new.
	// A claim with reason reschedule also avoids every provider the
	// consumer failed on before.
	Reason string
	// Properties is free-form, handed to filters and scriptlets and
	// stored on the consumer.
	Properties map[string]any
	// Instance is LXD's instance placement request (the claim's
	// "instance" object), handed to scriptlets as it is: their request
	// and get_instance_resources read it. It changes nothing of what is
	// claimed, and is not stored.
	Instance map[string]any
	// Policy names the scheduling policy; empty means the default.
	Policy string
	// Keys are the claim's placement keys.
	Keys []scheduler.KeyRequest
	// Alternates is how many further ranked candidates (on other roots)
	// to return unclaimed.
	Alternates int
	// DryRun does everything but the write and returns the full ranking.
	DryRun bool
	// PolicyOverride, when set, ranks with this policy instead of the
	// one Policy names (testing a scriptlet against live data).
	PolicyOverride *scheduler.Policy
	// LeaseSeconds, when not nil, makes the claim provisional: its
	// allocations are released after that many seconds (1 to
	// Config.LeaseMax) unless confirmed first. A move's lease bounds the
	// move: when it runs out the move is reverted (lease.go).
	LeaseSeconds *int64
	// Request is the request as the API received it (a JSON object),
	// stored with the claim for GET /claims/{consumer_uuid} and for later
	// reschedules and moves to reuse; the claims package does not read
	// it. Nil stores {}.
	Request []byte
	// Priority is the claim's priority (MinPriority to MaxPriority,
	// default 0); Preemptible lets a claim of strictly higher priority
	// displace the consumer (preempt.go). Both are stored with the claim
	// (in its Request) and reused by its reschedules and moves.
	Priority    int64
	Preemptible bool
	// Reused, for a reschedule or move, says what its request took from
	// the consumer's stored claim or allocations; answered as it is.
	Reused *Reused

	// with are other consumers written in the same transaction (a move's
	// migration consumer); move is the record written along.
	with []resources.ConsumerAllocations
	move *claimrecords.MoveRecord
	// retryKey, when set, is recorded with the write for retries
	// (idempotent.go).
	retryKey *retryKey
	// held is what the consumer holds before the claim (a reschedule or a
	// move), for a dry run's quota report.
	held []engine.Allocation
	// op and leaseMode say how the write stores the claim (Claim,
	// Reschedule, Move set them; stateWrite).
	op        string
	leaseMode claimrecords.LeaseMode
}

// Reused is what a reschedule's or move's request took from what the
// consumer had: From says from where (ReusedFromClaim: its stored claim;
// ReusedFromAllocations: it has none, its allocations were written
// through the Placement API), Fields which request fields, by their
// names in the request body.
type Reused struct {
	From   string
	Fields []string
}

// Where a reschedule's or move's request came from (Reused.From).
const (
	ReusedFromClaim       = "claim"
	ReusedFromAllocations = "allocations"
)

// Reasons a consumer is placed (Params.Reason).
const (
	ReasonNew        = "new"
	ReasonEvacuation = "evacuation"
	ReasonRelocation = "relocation"
	// ReasonRebalance is Incus's: a move that evens out the cloud (as
	// the balancer suggests one).
	ReasonRebalance  = "rebalance"
	ReasonReschedule = "reschedule"
)

// Reasons lists the valid Params.Reason values.
var Reasons = []string{ReasonNew, ReasonEvacuation, ReasonRelocation, ReasonRebalance, ReasonReschedule}

// Result is a successful claim, or a dry run's answer.
type Result struct {
	ConsumerUUID string
	// ConsumerGeneration is the consumer's generation after the write
	// (for a dry run: what it would be).
	ConsumerGeneration int64
	// Allocations are what was written, provider by provider.
	Allocations []engine.Allocation
	// Mappings are request group suffix -> providers.
	Mappings map[string][]string
	// Root and RootName are the root provider of the chosen candidate.
	Root     string
	RootName string
	Score    float64
	// Alternates are further candidates, best first, one per root, not
	// claimed.
	Alternates []Option
	// Attempts is how many writes were tried (0 for a dry run).
	Attempts int
	DryRun   bool
	// Steps are the selection steps with what each removed.
	Steps []Step
	// Ranking is the full ranking (dry runs only).
	Ranking []Option
	// ScriptletLog are the scriptlet's log lines (dry runs only).
	ScriptletLog []scheduler.LogLine
	// Migration is the migration consumer of a move and what it holds.
	Migration *resources.ConsumerAllocations
	// Reused is Params.Reused: what a reschedule or move reused.
	Reused *Reused
	// Quota is a dry run's quota check (nil without limits, and for a
	// claim that wrote: it passed).
	Quota *QuotaReport
	// Preempted are the consumers the claim displaced (a dry run: would
	// displace) to fit (preempt.go); nil when it displaced none.
	Preempted []Victim

	// answer is the result's answer as recorded for its retries
	// (answer.go): set by the write that recorded it, and by a replay of
	// the record; nil otherwise.
	answer []byte
}

// QuotaReport is a dry run's quota check (quota.go): what the claim would
// add to its project's usage, what the project holds and its limits,
// resource by resource for the limited ones.
type QuotaReport struct {
	ProjectID string
	// Fits: the claim would pass the check (it adds to no resource more
	// than its limit leaves).
	Fits      bool
	Resources map[string]QuotaResource
}

// QuotaResource is one limited resource of a QuotaReport: what the claim
// would add (negative: free), what the project holds, and the limit.
type QuotaResource struct {
	Requested, Used, Limit int64
}

// Option is a ranked candidate.
type Option struct {
	Root     string
	RootName string
	Score    float64
	// Weights are the weighers' contributions to Score, by weigher, in a
	// dry run's Ranking (which answers them); nil elsewhere.
	Weights     map[string]float64
	Allocations []engine.Allocation
	Mappings    map[string][]string
}

// Step is one selection step: how many candidates it removed, how many
// remained, and why. The first step, StepCandidates, counts root
// providers (those with no candidate at all: removed) against candidates
// (remaining); the scheduler's filters after it count candidates. The
// scheduler's "pin" and "exclude" filters apply target and
// exclude_providers.
type Step struct {
	Unit      string
	Kind      string // "filter"
	Removed   int
	Remaining int
	Reasons   map[string]int
}

// StepCandidates names the first step: the engine's allocation
// candidates, which leave out the roots that cannot hold the request.
const StepCandidates = "allocation_candidates"

// ReasonOutsideSample counts, in a sampled claim's StepCandidates step,
// the roots that had no candidate in the sample (Config.ClaimCandidates):
// not looked at, or lacking capacity.
const ReasonOutsideSample = "outside the sample"

// Explanation is a dry run: the ranking a claim would try, nothing written.
type Explanation struct {
	Ranking *scheduler.Ranking
	// Refusal is the scriptlet's refusal, if it refused.
	Refusal string
}
