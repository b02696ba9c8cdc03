package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// ClaimRequest is the body of POST /claims, and of a reschedule or move
// (docs/claims.md, "Body"). Zero fields are left out, so the server's
// defaults apply; a reschedule and a move take what they leave out from
// the consumer's stored claim.
type ClaimRequest struct {
	ConsumerUUID string `json:"consumer_uuid,omitempty"`
	ProjectID    string `json:"project_id,omitempty"`
	UserID       string `json:"user_id,omitempty"`
	Name         string `json:"name,omitempty"`
	ConsumerType string `json:"consumer_type,omitempty"`
	// ConsumerGeneration nil: the consumer must be new; else replace that
	// generation's allocations.
	ConsumerGeneration *int64 `json:"consumer_generation,omitempty"`

	// The unnumbered request group, as GET /allocation_candidates reads
	// resources, required (each value one required parameter), member_of
	// and in_tree.
	Resources    map[string]int64        `json:"resources,omitempty"`
	Required     []string                `json:"required,omitempty"`
	MemberOf     []string                `json:"member_of,omitempty"`
	InTree       string                  `json:"in_tree,omitempty"`
	RootRequired []string                `json:"root_required,omitempty"`
	SameSubtree  []string                `json:"same_subtree,omitempty"`
	GroupPolicy  string                  `json:"group_policy,omitempty"`
	Groups       map[string]RequestGroup `json:"groups,omitempty"`

	ExcludeProviders []string       `json:"exclude_providers,omitempty"`
	Target           string         `json:"target,omitempty"`
	Policy           string         `json:"policy,omitempty"`
	Reason           string         `json:"reason,omitempty"`
	Properties       map[string]any `json:"properties,omitempty"`
	Instance         map[string]any `json:"instance,omitempty"`
	Keys             []PlacementKey `json:"keys,omitempty"`
	// Alternates nil: the server's default (2).
	Alternates  *int `json:"alternates,omitempty"`
	MaxAttempts int  `json:"max_attempts,omitempty"`
	DryRun      bool `json:"dry_run,omitempty"`
	// LeaseSeconds nil: no lease.
	LeaseSeconds *int64 `json:"lease_seconds,omitempty"`
	// Priority (default 0) and Preemptible (default false): a claim that
	// finds no room may displace preemptible consumers of strictly lower
	// priority (docs/preemption.md).
	Priority    int64 `json:"priority,omitempty"`
	Preemptible bool  `json:"preemptible,omitempty"`

	// FailedProvider is a reschedule's: the root it failed on.
	FailedProvider string `json:"failed_provider,omitempty"`
	// MigrationUUID is a move's: the consumer that holds the source's
	// allocations while it moves.
	MigrationUUID string `json:"migration_uuid,omitempty"`
}

// RequestGroup is a granular request group of a claim.
type RequestGroup struct {
	Resources map[string]int64 `json:"resources,omitempty"`
	Required  []string         `json:"required,omitempty"`
	MemberOf  []string         `json:"member_of,omitempty"`
	InTree    string           `json:"in_tree,omitempty"`
}

// PlacementKey is an affinity placement key of a claim.
type PlacementKey struct {
	Name   string   `json:"name"`
	Value  float64  `json:"value"`
	Weight *float64 `json:"weight,omitempty"`
	System bool     `json:"system,omitempty"`
}

// Resources is an allocation on one provider: class -> amount.
type Resources struct {
	Resources map[string]int64 `json:"resources"`
}

// Claim is the answer of a claim, a reschedule, a move and a move's
// confirm or revert (docs/claims.md, "Answer").
type Claim struct {
	ConsumerUUID       string `json:"consumer_uuid"`
	ConsumerGeneration int64  `json:"consumer_generation"`
	// Allocations is provider uuid -> what the claim holds there.
	Allocations      map[string]Resources `json:"allocations"`
	Mappings         map[string][]string  `json:"mappings"`
	RootProviderUUID string               `json:"root_provider_uuid"`
	RootProviderName string               `json:"root_provider_name"`
	Score            float64              `json:"score"`
	Alternates       []Alternate          `json:"alternates"`
	Attempts         int                  `json:"attempts"`
	DryRun           bool                 `json:"dry_run"`
	Steps            []Step               `json:"steps"`
	// Migration is a move's: the migration consumer and what it holds.
	Migration *Migration `json:"migration,omitempty"`
	// Reused says what a reschedule or move took from the stored claim.
	Reused *Reused `json:"reused,omitempty"`
	// Ranking, ScriptletLog and Quota are a dry run's.
	Ranking      []Ranked        `json:"ranking,omitempty"`
	ScriptletLog []LogLine       `json:"scriptlet_log,omitempty"`
	Quota        json.RawMessage `json:"quota,omitempty"`
	// Preempted lists the consumers the claim displaced (a dry run's:
	// would displace).
	Preempted []Preempted `json:"preempted,omitempty"`
}

// Preempted is a consumer a claim displaced, with what it held.
type Preempted struct {
	ConsumerUUID     string               `json:"consumer_uuid"`
	RootProviderUUID string               `json:"root_provider_uuid"`
	Priority         int64                `json:"priority"`
	ProjectID        string               `json:"project_id"`
	UserID           string               `json:"user_id"`
	Allocations      map[string]Resources `json:"allocations"`
}

// Alternate is a further candidate a claim returns unclaimed.
type Alternate struct {
	Allocations      map[string]Resources `json:"allocations"`
	Mappings         map[string][]string  `json:"mappings"`
	RootProviderUUID string               `json:"root_provider_uuid"`
	RootProviderName string               `json:"root_provider_name"`
	Score            float64              `json:"score"`
}

// Ranked is one candidate of a dry run's ranking.
type Ranked struct {
	Rank             int                  `json:"rank"`
	Allocations      map[string]Resources `json:"allocations"`
	RootProviderUUID string               `json:"root_provider_uuid"`
	RootProviderName string               `json:"root_provider_name"`
	Score            float64              `json:"score"`
	Weights          map[string]float64   `json:"weights"`
}

// LogLine is a line a scriptlet logged during a dry run.
type LogLine struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Step is one selection step of a claim: how many candidates a unit
// removed, and why.
type Step struct {
	Kind      string         `json:"kind"`
	Unit      string         `json:"unit"`
	Removed   int            `json:"removed"`
	Remaining int            `json:"remaining"`
	Reasons   map[string]int `json:"reasons"`
}

// Migration is the migration consumer of a move.
type Migration struct {
	ConsumerUUID string               `json:"consumer_uuid"`
	Allocations  map[string]Resources `json:"allocations"`
}

// Reused is what a reschedule or move took from the stored claim.
type Reused struct {
	From   string   `json:"from"`
	Fields []string `json:"fields"`
}

// StoredClaim is GET /claims/{consumer_uuid}: the consumer's stored
// claim, its state and lease.
type StoredClaim struct {
	ConsumerUUID       string               `json:"consumer_uuid"`
	ConsumerGeneration int64                `json:"consumer_generation"`
	Allocations        map[string]Resources `json:"allocations"`
	Op                 string               `json:"op"`
	State              string               `json:"state"`
	Request            json.RawMessage      `json:"request"`
	RootProviderUUID   *string              `json:"root_provider_uuid"`
	MigrationUUID      *string              `json:"migration_uuid"`
	LeaseSeconds       *int64               `json:"lease_seconds"`
	LeaseExpiresAt     *string              `json:"lease_expires_at"`
	Expired            bool                 `json:"expired"`
	CreatedAt          string               `json:"created_at"`
	UpdatedAt          string               `json:"updated_at"`
	Priority           int64                `json:"priority"`
	Preemptible        bool                 `json:"preemptible"`
	// PreemptedBy and PreemptedAt are set in state "preempted": the
	// consumer whose claim displaced this one, and when.
	PreemptedBy          *string              `json:"preempted_by,omitempty"`
	PreemptedAt          *string              `json:"preempted_at,omitempty"`
	PreemptedAllocations map[string]Resources `json:"preempted_allocations,omitempty"`
	// Gang is a gang member's gang.
	Gang *StoredGang `json:"gang,omitempty"`
}

// StoredGang is the gang a stored claim belongs to.
type StoredGang struct {
	GangID  string      `json:"gang_id"`
	Domain  *GangDomain `json:"domain"`
	Members []string    `json:"members"`
}

// Claim sends POST /claims: rank the candidates and claim the best one
// that still fits. A refusal is an *Error: 409 with code
// berth.no_valid_host when nothing was placed (see Refusal), or
// placement.concurrent_update for a stale consumer generation. The claim
// is retried as Config.ClaimRetries says.
func (c *Client) Claim(ctx context.Context, req ClaimRequest) (*Claim, error) {
	return c.claim(ctx, "/claims", req)
}

// Reschedule sends POST /claims/{consumer}/reschedule: claim the
// consumer again elsewhere (req may be empty: the stored claim is
// reused).
func (c *Client) Reschedule(ctx context.Context, consumer string, req ClaimRequest) (*Claim, error) {
	return c.claim(ctx, "/claims/"+url.PathEscape(consumer)+"/reschedule", req)
}

// Move sends POST /claims/{consumer}/move: claim a destination while
// req.MigrationUUID holds the source's allocations.
func (c *Client) Move(ctx context.Context, consumer string, req ClaimRequest) (*Claim, error) {
	return c.claim(ctx, "/claims/"+url.PathEscape(consumer)+"/move", req)
}

// Holding is what a consumer holds after its move ended.
type Holding struct {
	ConsumerUUID       string               `json:"consumer_uuid"`
	ConsumerGeneration int64                `json:"consumer_generation"`
	Allocations        map[string]Resources `json:"allocations"`
}

// ConfirmMove sends POST /claims/{consumer}/move/confirm: the source's
// allocations go; migration may be "" (the consumer's move in progress).
// It is retried as a claim is.
func (c *Client) ConfirmMove(ctx context.Context, consumer, migration string) (*Holding, error) {
	return c.moveEnd(ctx, consumer, "confirm", migration)
}

// RevertMove sends POST /claims/{consumer}/move/revert: the consumer
// gets its source's allocations back.
func (c *Client) RevertMove(ctx context.Context, consumer, migration string) (*Holding, error) {
	return c.moveEnd(ctx, consumer, "revert", migration)
}

func (c *Client) moveEnd(ctx context.Context, consumer, op, migration string) (*Holding, error) {
	var body any = struct{}{}
	if migration != "" {
		body = map[string]string{"migration_uuid": migration}
	}
	var out Holding
	if _, err := c.JSON(ctx, http.MethodPost, "/claims/"+url.PathEscape(consumer)+"/move/"+op, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

func (c *Client) claim(ctx context.Context, path string, req ClaimRequest) (*Claim, error) {
	var out Claim
	if _, err := c.JSON(ctx, http.MethodPost, path, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// StoredClaim sends GET /claims/{consumer}.
func (c *Client) StoredClaim(ctx context.Context, consumer string) (*StoredClaim, error) {
	var out StoredClaim
	if _, err := c.JSON(ctx, http.MethodGet, "/claims/"+url.PathEscape(consumer), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// RenewLease sends PATCH /claims/{consumer} with lease_seconds: the
// claim's lease expires that many seconds from now.
func (c *Client) RenewLease(ctx context.Context, consumer string, seconds int64) (*StoredClaim, error) {
	return c.lease(ctx, consumer, &seconds)
}

// ConfirmLease sends PATCH /claims/{consumer} with lease_seconds null:
// the claim is kept for good (a claim whose lease expires is released).
func (c *Client) ConfirmLease(ctx context.Context, consumer string) (*StoredClaim, error) {
	return c.lease(ctx, consumer, nil)
}

func (c *Client) lease(ctx context.Context, consumer string, seconds *int64) (*StoredClaim, error) {
	body := map[string]*int64{"lease_seconds": seconds}
	var out StoredClaim
	if _, err := c.JSON(ctx, http.MethodPatch, "/claims/"+url.PathEscape(consumer), body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
