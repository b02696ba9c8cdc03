package berthapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/audit"
)

// Berth's allocation audit (docs/operations.md): GET /audit lists
// findings page by page, POST /audit/fix fixes one, re-checked in one
// transaction. Both exist at every microversion (Placement has no
// equivalent); every refusal carries a berth.audit.* code.

// Audit serves the allocation audit.
type Audit struct {
	Store  AuditStore
	Bodies *wire.Bodies
	// Thresholds are the ages a request that names none uses.
	Thresholds audit.AuditThresholds
}

// AuditStore is what the audit routes ask of the ledger (an
// *audit.Auditor).
type AuditStore interface {
	Audit(ctx context.Context, p audit.AuditParams) (audit.AuditPage, error)
	AuditFix(ctx context.Context, p audit.AuditFixParams) (audit.AuditFinding, error)
}

var auditQuerySchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"kind": {"type": "string", "minLength": 1},
		"limit": {"type": "string", "minLength": 1},
		"marker": {"type": "string", "minLength": 1},
		"migration_age": {"type": "string", "minLength": 1},
		"state_age": {"type": "string", "minLength": 1}
	},
	"additionalProperties": false
}`)

var auditFixSchema = jsonschema.Must(`{
	"type": "object",
	"properties": {
		"kind": {"type": "string", "minLength": 1},
		"consumer_uuid": {"type": "string", "format": "uuid"},
		"consumer_generation": {"type": "integer", "minimum": 0},
		"migration_age": {"type": "string", "minLength": 1},
		"state_age": {"type": "string", "minLength": 1}
	},
	"required": ["kind", "consumer_uuid", "consumer_generation"],
	"additionalProperties": false
}`)

// List serves GET /audit?kind=&limit=&marker=&migration_age=&state_age=.
// kind may repeat and hold a comma-separated list; the thresholds are Go
// durations ("90m", "2h"), defaulting to the server's.
func (h *Audit) List(c echo.Context) error {
	if err := wire.ValidateQuery(c, auditQuerySchema); err != nil {
		return auditRefusal(err)
	}
	q := c.QueryParams()
	p := audit.AuditParams{}
	for _, v := range q["kind"] {
		for _, k := range strings.Split(v, ",") {
			if k = strings.TrimSpace(k); k != "" {
				p.Kinds = append(p.Kinds, k)
			}
		}
	}
	if v, ok := wire.QueryLast(c, "limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > audit.MaxAuditLimit {
			return auditInvalid("Invalid limit %q: want an integer from 1 to %d.", v, audit.MaxAuditLimit)
		}
		p.Limit = n
	}
	p.Marker, _ = wire.QueryLast(c, "marker")
	var err error
	if p.Thresholds, err = h.thresholds(func(name string) (string, bool) { return wire.QueryLast(c, name) }); err != nil {
		return err
	}
	page, err := h.Store.Audit(c.Request().Context(), p)
	if err != nil {
		return err
	}
	out := auditPageJSON{Findings: make([]auditFindingJSON, len(page.Findings)),
		Thresholds: auditThresholdsJSON{MigrationAge: p.Thresholds.MigrationAge.String(), StateAge: p.Thresholds.StateAge.String()}}
	for i := range page.Findings {
		out.Findings[i] = auditFindingOf(&page.Findings[i])
	}
	if page.NextMarker != "" {
		out.NextMarker = &page.NextMarker
	}
	return wire.WriteJSON(c, http.StatusOK, out)
}

// auditFixBody is POST /audit/fix's body: the finding as listed.
type auditFixBody struct {
	Kind               string `json:"kind"`
	ConsumerUUID       string `json:"consumer_uuid"`
	ConsumerGeneration int64  `json:"consumer_generation"`
	MigrationAge       string `json:"migration_age"`
	StateAge           string `json:"state_age"`
}

// Fix serves POST /audit/fix: the fix of one finding, named by its
// kind, consumer and the consumer's generation as listed (and the
// thresholds it was listed with), applied in one transaction after the
// finding is found again. 200 with the finding as fixed; 409 when the
// consumer changed or the finding no longer holds or has no fix.
func (h *Audit) Fix(c echo.Context) error {
	var body auditFixBody
	if err := h.Bodies.Decode(c, auditFixSchema, &body); err != nil {
		return auditRefusal(err)
	}
	th, err := h.thresholds(func(name string) (string, bool) {
		v := map[string]string{"migration_age": body.MigrationAge, "state_age": body.StateAge}[name]
		return v, v != ""
	})
	if err != nil {
		return err
	}
	f, err := h.Store.AuditFix(c.Request().Context(), audit.AuditFixParams{Kind: body.Kind,
		ConsumerUUID: body.ConsumerUUID, ConsumerGeneration: body.ConsumerGeneration, Thresholds: th})
	if err != nil {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, map[string]any{"fixed": auditFindingOf(&f)})
}

// thresholds reads the thresholds a request names (value returns a
// parameter's value), the server's for those it does not.
func (h *Audit) thresholds(value func(name string) (string, bool)) (audit.AuditThresholds, error) {
	th := h.Thresholds
	for _, t := range []struct {
		name string
		dst  *time.Duration
	}{{"migration_age", &th.MigrationAge}, {"state_age", &th.StateAge}} {
		v, ok := value(t.name)
		if !ok {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return th, auditInvalid("Invalid %s %q: want a duration such as 90m or 24h, not negative.", t.name, v)
		}
		*t.dst = d
	}
	return th, nil
}

// auditInvalid is a 400 of the audit.
func auditInvalid(format string, args ...any) *wire.Error {
	return wire.NewError(http.StatusBadRequest, fault.CodeAuditInvalid, format, args...)
}

// auditRefusal gives a 400 of the shared query and body checks the
// audit's code.
func auditRefusal(err error) error {
	var e *wire.Error
	if errors.As(err, &e) && e.Status == http.StatusBadRequest && e.Code == "" {
		return auditInvalid("%s", e.Msg)
	}
	return err
}

// The answers' shapes.
type (
	auditPageJSON struct {
		Findings []auditFindingJSON `json:"findings"`
		// NextMarker continues the audit; null when it is complete.
		NextMarker *string             `json:"next_marker"`
		Thresholds auditThresholdsJSON `json:"thresholds"`
	}
	auditThresholdsJSON struct {
		MigrationAge string `json:"migration_age"`
		StateAge     string `json:"state_age"`
	}
	auditFindingJSON struct {
		Kind      string              `json:"kind"`
		Consumer  *auditConsumerJSON  `json:"consumer"`
		Provider  *auditProviderJSON  `json:"provider"`
		Providers []auditProviderJSON `json:"providers"`
		// The provider kinds' consumers, the first 100, and how many.
		Consumers     []string       `json:"consumers,omitempty"`
		ConsumerCount *int           `json:"consumer_count,omitempty"`
		Move          *auditMoveJSON `json:"move,omitempty"`
		// Preemption is preempted_consumer's latest preemption.
		Preemption *auditPreemptionJSON `json:"preemption,omitempty"`
		Since      string               `json:"since"`
		AgeSeconds int64                `json:"age_seconds"`
		Detail     string               `json:"detail"`
		Fix        auditFixJSON         `json:"fix"`
	}
	auditConsumerJSON struct {
		UUID         string `json:"uuid"`
		Generation   int64  `json:"generation"`
		ConsumerType string `json:"consumer_type"`
		ProjectID    string `json:"project_id"`
		UserID       string `json:"user_id"`
	}
	auditProviderJSON struct {
		UUID      string                    `json:"uuid"`
		Name      string                    `json:"name"`
		RootUUID  string                    `json:"root_provider_uuid"`
		Resources map[string]int64          `json:"resources,omitempty"`
		Capacity  map[string]wire.PyFloat64 `json:"capacity,omitempty"`
	}
	auditMoveJSON struct {
		ConsumerUUID string `json:"consumer_uuid"`
		Reason       string `json:"reason"`
		SourceRoot   string `json:"source_root_provider_uuid,omitempty"`
		CreatedAt    string `json:"created_at"`
	}
	auditPreemptionJSON struct {
		PreemptedBy string `json:"preempted_by"`
		PreemptedAt string `json:"preempted_at"`
		RootUUID    string `json:"root_provider_uuid"`
	}
	auditFixJSON struct {
		Action string `json:"action"`
		Detail string `json:"detail"`
	}
)

func auditFindingOf(f *audit.AuditFinding) auditFindingJSON {
	out := auditFindingJSON{Kind: f.Kind, Providers: make([]auditProviderJSON, len(f.Providers)),
		Since: f.Since.UTC().Format(time.RFC3339), AgeSeconds: int64(f.Age / time.Second), Detail: f.Detail,
		Fix: auditFixJSON{Action: f.Fix.Action, Detail: f.Fix.Detail}}
	if cs := f.Consumer; cs != nil {
		out.Consumer = &auditConsumerJSON{UUID: cs.UUID, Generation: cs.Generation, ConsumerType: cs.Type,
			ProjectID: cs.ProjectID, UserID: cs.UserID}
	}
	if f.Provider != nil {
		pv := auditProviderOf(f.Provider)
		out.Provider = &pv
		n := f.ConsumerCount
		out.ConsumerCount, out.Consumers = &n, f.Consumers
		if out.Consumers == nil {
			out.Consumers = []string{}
		}
	}
	for i := range f.Providers {
		out.Providers[i] = auditProviderOf(&f.Providers[i])
	}
	if m := f.Move; m != nil {
		out.Move = &auditMoveJSON{ConsumerUUID: m.ConsumerUUID, Reason: m.Reason, SourceRoot: m.SourceRoot,
			CreatedAt: m.CreatedAt.UTC().Format(time.RFC3339)}
	}
	if pr := f.Preemption; pr != nil {
		out.Preemption = &auditPreemptionJSON{PreemptedBy: pr.PreemptedBy, RootUUID: pr.RootUUID,
			PreemptedAt: pr.PreemptedAt.UTC().Format(time.RFC3339)}
	}
	return out
}

func auditProviderOf(p *audit.AuditProvider) auditProviderJSON {
	out := auditProviderJSON{UUID: p.UUID, Name: p.Name, RootUUID: p.RootUUID}
	if len(p.Resources) > 0 {
		out.Resources = make(map[string]int64, len(p.Resources))
	}
	for i, r := range p.Resources {
		out.Resources[r.Class] = r.Amount
		if i < len(p.Capacity) {
			if out.Capacity == nil {
				out.Capacity = map[string]wire.PyFloat64{}
			}
			out.Capacity[r.Class] = wire.PyFloat64(p.Capacity[i])
		}
	}
	return out
}
