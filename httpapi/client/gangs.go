package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// GangRequest is a gang claim (docs/gangs.md): every member placed, or
// none, in one transaction.
type GangRequest struct {
	ProjectID string       `json:"project_id"`
	UserID    string       `json:"user_id"`
	Members   []GangMember `json:"members"`
	// Spread "hosts": each member on a different root provider; "":
	// members may share one.
	Spread string `json:"spread,omitempty"`
	// Domain, if set, puts every member inside one of these aggregates,
	// the same one.
	Domain *GangDomainRequest `json:"domain,omitempty"`
	// MinCount, when no domain holds the whole gang, places as many
	// members as one domain holds, at least MinCount (0: all or none).
	MinCount     int    `json:"min_count,omitempty"`
	DryRun       bool   `json:"dry_run,omitempty"`
	LeaseSeconds *int64 `json:"lease_seconds,omitempty"`
	MaxAttempts  int    `json:"max_attempts,omitempty"`
}

// GangMember is one member of a gang: its consumer and what it asks for,
// read as a single claim's request group.
type GangMember struct {
	ConsumerUUID string                  `json:"consumer_uuid"`
	Name         string                  `json:"name,omitempty"`
	Resources    map[string]int64        `json:"resources,omitempty"`
	Required     []string                `json:"required,omitempty"`
	MemberOf     []string                `json:"member_of,omitempty"`
	Groups       map[string]RequestGroup `json:"groups,omitempty"`
}

// GangDomainRequest names the aggregates a gang may be placed in, and
// the levels tried in order when none of them holds the whole gang
// (e.g. racks, then blocks).
type GangDomainRequest struct {
	MemberOf []string          `json:"member_of"`
	Fallback []GangDomainLevel `json:"fallback,omitempty"`
}

// GangDomainLevel is one fallback level of a gang's domain.
type GangDomainLevel struct {
	MemberOf []string `json:"member_of"`
}

// GangDomain is the aggregate a gang was placed in.
type GangDomain struct {
	MemberOf string `json:"member_of"`
}

// GangClaim is the answer of a gang claim.
type GangClaim struct {
	GangID   string          `json:"gang_id"`
	Domain   *GangDomain     `json:"domain"`
	Domains  []DomainOutcome `json:"domains"`
	Members  []GangPlacement `json:"members"`
	Attempts int             `json:"attempts"`
	DryRun   bool            `json:"dry_run"`
}

// GangPlacement is where a gang's member was placed.
type GangPlacement struct {
	ConsumerUUID       string               `json:"consumer_uuid"`
	ConsumerGeneration int64                `json:"consumer_generation"`
	Allocations        map[string]Resources `json:"allocations"`
	Mappings           map[string][]string  `json:"mappings"`
	RootProviderUUID   string               `json:"root_provider_uuid"`
	RootProviderName   string               `json:"root_provider_name"`
}

// DomainOutcome is what one domain could hold of a gang: how many
// members fit, the first that did not (nil: all fit) and why, root by
// root. A refused gang's *Error carries them too (ErrorItem.Domains).
type DomainOutcome struct {
	MemberOf  *string        `json:"member_of"`
	Roots     int            `json:"roots"`
	Fits      int            `json:"fits"`
	StoppedAt *string        `json:"stopped_at"`
	Reasons   map[string]int `json:"reasons"`
}

// ClaimGang sends POST /claims with members: every member placed in one
// domain, or none (a 409 *Error with code berth.no_valid_host).
func (c *Client) ClaimGang(ctx context.Context, req GangRequest) (*GangClaim, error) {
	var out GangClaim
	if _, err := c.JSON(ctx, http.MethodPost, "/claims", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Preemption is one consumer a claim displaced (GET /preemptions).
type Preemption struct {
	ID                int64                `json:"id"`
	ConsumerUUID      string               `json:"consumer_uuid"`
	PreemptedBy       string               `json:"preempted_by"`
	PreemptedAt       string               `json:"preempted_at"`
	RootProviderUUID  string               `json:"root_provider_uuid"`
	Priority          int64                `json:"priority"`
	PreemptorPriority int64                `json:"preemptor_priority"`
	ProjectID         string               `json:"project_id"`
	UserID            string               `json:"user_id"`
	Allocations       map[string]Resources `json:"allocations"`
}

// PreemptionPage is a page of GET /preemptions; Next is the link to the
// next page, nil on the last.
type PreemptionPage struct {
	Preemptions []Preemption `json:"preemptions"`
	Next        *string      `json:"next"`
}

// Preemptions sends GET /preemptions: the displacements at or after
// since (zero: all), after the id marker (0: from the first), at most
// limit (0: the server's default).
func (c *Client) Preemptions(ctx context.Context, since time.Time, marker int64, limit int) (*PreemptionPage, error) {
	q := url.Values{}
	if !since.IsZero() {
		q.Set("since", since.UTC().Format(time.RFC3339Nano))
	}
	if marker > 0 {
		q.Set("marker", strconv.FormatInt(marker, 10))
	}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	path := "/preemptions"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out PreemptionPage
	if _, err := c.JSON(ctx, http.MethodGet, path, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
