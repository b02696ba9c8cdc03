package quotas

import (
	"context"
	"slices"
	"unicode"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// The limits of Berth's own source (--limits-source berth), which writes
// with a stored Quota read in their own transaction (ledger/resources/quota_check.go): a
// project's own limits, and the registered limits, each the default of
// every project without a limit of its own of that resource (Keystone's
// model: resource by resource, a project limit overrides the registered
// one).

// MaxProjectIDLen bounds a project id, as Placement's column does.
const MaxProjectIDLen = 255

// ValidProjectID reports whether id can name a project: 1 to
// MaxProjectIDLen characters, none of them a space or a control
// character.
func ValidProjectID(id string) bool {
	if id == "" || len(id) > MaxProjectIDLen {
		return false
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == unicode.ReplacementChar {
			return false
		}
	}
	return true
}

// limitsLockSQL serialises the changes of one project's limits ($1; ""
// for the registered limits).
const limitsLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('berth.limits:' || $1::text, 0))`

// LimitsSet replaces project's own limits with l (empty: it has none of
// its own). An invalid project id, or a resource that is neither
// ResourceConsumers nor an existing resource class, is ErrInvalid and
// changes nothing. Limits apply to the next write, in every process.
func (s *Quotas) LimitsSet(ctx context.Context, project string, l Limits) error {
	if !ValidProjectID(project) {
		return fault.Invalid("", "Invalid project id %q: want 1 to %d characters, none of them a space or a control character.",
			project, MaxProjectIDLen)
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error { return writeLimits(ctx, t, project, l) })
}

// RegisteredLimitsSet replaces the registered limits with l, as LimitsSet
// does a project's.
func (s *Quotas) RegisteredLimitsSet(ctx context.Context, l Limits) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error { return writeLimits(ctx, t, "", l) })
}

// writeLimits replaces the limits of project ("": the registered ones)
// with l, in t.
func writeLimits(ctx context.Context, t *core.Txn, project string, l Limits) error {
	if _, err := t.Exec(ctx, limitsLockSQL, project); err != nil {
		return err
	}
	if err := checkResources(ctx, t, l); err != nil {
		return err
	}
	names := SortedResources(l)
	values := make([]int64, len(names))
	for i, r := range names {
		if values[i] = l[r]; values[i] < 0 {
			return fault.Invalid("", "Invalid limit %d of %s: want 0 or more.", values[i], r)
		}
	}
	if project == "" {
		if _, err := t.Exec(ctx, `DELETE FROM registered_limits`); err != nil {
			return err
		}
		_, err := t.Exec(ctx, `INSERT INTO registered_limits (resource, resource_limit)
			SELECT * FROM unnest($1::text[], $2::bigint[])`, names, values)
		return err
	}
	if _, err := t.Exec(ctx, `DELETE FROM project_limits WHERE project = $1`, project); err != nil {
		return err
	}
	_, err := t.Exec(ctx, `INSERT INTO project_limits (project, resource, resource_limit)
		SELECT $1, * FROM unnest($2::text[], $3::bigint[])`, project, names, values)
	return err
}

// checkResources refuses a resource of l that is neither
// ResourceConsumers nor a resource class (ErrInvalid), naming the first
// in name order.
func checkResources(ctx context.Context, t *core.Txn, l Limits) error {
	var classes []string
	for _, r := range SortedResources(l) {
		if r != ResourceConsumers {
			classes = append(classes, r)
		}
	}
	if len(classes) == 0 {
		return nil
	}
	rows, err := t.Query(ctx, `SELECT name FROM resource_classes WHERE name = ANY($1::text[])`, classes)
	if err != nil {
		return err
	}
	known, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, c := range classes {
		if !slices.Contains(known, c) {
			return fault.Invalid("", "Unknown resource %s in limits: want %s or the name of a resource class.", c, ResourceConsumers)
		}
	}
	return nil
}

// LimitsDelete removes project's own limits (the registered ones apply to
// it again). A project without limits of its own is ErrNotFound.
func (s *Quotas) LimitsDelete(ctx context.Context, project string) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		if _, err := t.Exec(ctx, limitsLockSQL, project); err != nil {
			return err
		}
		tag, err := t.Exec(ctx, `DELETE FROM project_limits WHERE project = $1`, project)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("No limits for project %s.", project)
		}
		return nil
	})
}

// ProjectLimits returns project's own limits (empty when it has none).
func (s *Quotas) ProjectLimits(ctx context.Context, project string) (Limits, error) {
	all, err := s.readLimits(ctx, `SELECT project, resource, resource_limit FROM project_limits WHERE project = $1`, project)
	if err != nil {
		return nil, err
	}
	if l := all[project]; l != nil {
		return l, nil
	}
	return Limits{}, nil
}

// LimitsList returns every project's own limits, by project.
func (s *Quotas) LimitsList(ctx context.Context) (map[string]Limits, error) {
	return s.readLimits(ctx, `SELECT project, resource, resource_limit FROM project_limits`)
}

// RegisteredLimits returns the registered limits.
func (s *Quotas) RegisteredLimits(ctx context.Context) (Limits, error) {
	all, err := s.readLimits(ctx, `SELECT '', resource, resource_limit FROM registered_limits`)
	if err != nil {
		return nil, err
	}
	if l := all[""]; l != nil {
		return l, nil
	}
	return Limits{}, nil
}

// readLimits reads rows of (project, resource, limit) by project.
func (s *Quotas) readLimits(ctx context.Context, sql string, args ...any) (map[string]Limits, error) {
	rows, err := s.core.DB.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	out := map[string]Limits{}
	var p, r string
	var v int64
	if _, err := pgx.ForEachRow(rows, []any{&p, &r, &v}, func() error {
		if out[p] == nil {
			out[p] = Limits{}
		}
		out[p][r] = v
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}
