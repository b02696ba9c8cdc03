package scheduling

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// Catalogue is what the scheduling catalogue stores: the scheduling
// policies, the scriptlets, the scheduling config and the active shadows,
// and the notifications that tell every process of a change to them. It
// is safe for concurrent use.
type Catalogue struct{ core *core.Core }

// NewCatalogue returns the Catalogue of co.
func NewCatalogue(co *core.Core) *Catalogue { return &Catalogue{core: co} }

// SchedulingPolicy is a stored scheduling policy. The ledger keeps Spec
// (filters, weighers, balancer, scriptlet) as the JSON it is given;
// berthd validates it before writing and names the stored scriptlets it
// uses in Scriptlets, which the ledger keeps from being deleted.
type SchedulingPolicy struct {
	Name        string
	Description string
	// Default marks the policy claims use when they name none; at most
	// one policy is the default.
	Default bool
	Spec    json.RawMessage
	// Scriptlets are the stored scriptlets the policy uses.
	Scriptlets []string
	// Generation counts the policy's writes, from 1.
	Generation int64
	UpdatedAt  time.Time
}

const selectPolicies = `SELECT name, description, is_default, spec, scriptlets, generation, updated_at FROM scheduling_policies `

func scanPolicies(rows pgx.Rows) ([]SchedulingPolicy, error) {
	var out []SchedulingPolicy
	var p SchedulingPolicy
	_, err := pgx.ForEachRow(rows, []any{&p.Name, &p.Description, &p.Default, &p.Spec, &p.Scriptlets, &p.Generation, &p.UpdatedAt}, func() error {
		out = append(out, p)
		p = SchedulingPolicy{}
		return nil
	})
	return out, err
}

// SchedulingPolicies lists every stored policy, by name.
func (s *Catalogue) SchedulingPolicies(ctx context.Context) ([]SchedulingPolicy, error) {
	rows, err := s.core.DB.Query(ctx, selectPolicies+`ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return scanPolicies(rows)
}

// SchedulingPolicyGet returns one policy; fault.ErrNotFound if there is none of
// that name.
func (s *Catalogue) SchedulingPolicyGet(ctx context.Context, name string) (SchedulingPolicy, error) {
	rows, err := s.core.DB.Query(ctx, selectPolicies+`WHERE name = $1`, name)
	if err != nil {
		return SchedulingPolicy{}, err
	}
	ps, err := scanPolicies(rows)
	if err != nil {
		return SchedulingPolicy{}, err
	}
	if len(ps) == 0 {
		return SchedulingPolicy{}, fault.NotFound("No scheduling policy named %s.", name)
	}
	return ps[0], nil
}

// SchedulingPolicyPutParams says how SchedulingPolicyPut treats an
// existing policy of the same name.
type SchedulingPolicyPutParams struct {
	// Create refuses to replace an existing policy (fault.ErrConflict,
	// placement.duplicate_name); otherwise one is replaced and its
	// generation incremented.
	Create bool
}

// SchedulingPolicyPut creates or replaces p and returns what is stored
// (created reports which). Making p the default takes the default mark
// from whichever policy had it, in the same transaction. Naming a
// scriptlet (in p.Scriptlets) that is not stored is fault.ErrInvalid. Every replica learns of the
// change through a notification sent when the transaction commits.
func (s *Catalogue) SchedulingPolicyPut(ctx context.Context, p SchedulingPolicy, params SchedulingPolicyPutParams) (out SchedulingPolicy, created bool, err error) {
	scriptlets := p.Scriptlets
	if scriptlets == nil {
		scriptlets = []string{}
	}
	err = s.core.WithTx(ctx, func(t *core.Txn) error {
		if err := lockScriptlets(ctx, t, p.Scriptlets); err != nil {
			return err
		}
		if p.Default {
			if _, err := t.Exec(ctx, `UPDATE scheduling_policies SET is_default = false, updated_at = now()
				WHERE is_default AND name <> $1`, p.Name); err != nil {
				return err
			}
		}
		var exists bool
		if err := t.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM scheduling_policies WHERE name = $1)`, p.Name).Scan(&exists); err != nil {
			return err
		}
		if exists && params.Create {
			return fault.Conflict(fault.CodeDuplicateName, "Scheduling policy %s already exists.", p.Name)
		}
		rows, err := t.Query(ctx, `
			INSERT INTO scheduling_policies (name, description, is_default, spec, scriptlets) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description, is_default = EXCLUDED.is_default,
				spec = EXCLUDED.spec, scriptlets = EXCLUDED.scriptlets,
				generation = scheduling_policies.generation + 1, updated_at = now()
			RETURNING name, description, is_default, spec, scriptlets, generation, updated_at`,
			p.Name, p.Description, p.Default, p.Spec, scriptlets)
		// A violation comes from Query itself when PostgreSQL reports it
		// before any row (default_query_exec_mode simple_protocol), from
		// the rows otherwise.
		var ps []SchedulingPolicy
		if err == nil {
			ps, err = scanPolicies(rows)
		}
		if err != nil {
			switch c, _ := core.UniqueViolation(err); c {
			case "scheduling_policies_one_default":
				return fault.Conflict(fault.CodeConcurrentUpdate, "Another scheduling policy was made the default at the same time; try again.")
			case "scheduling_policies_pkey":
				return fault.Conflict(fault.CodeDuplicateName, "Scheduling policy %s already exists.", p.Name)
			}
			return err
		}
		out, created = ps[0], !exists
		return notifyScheduling(ctx, t, "policy", p.Name)
	})
	return out, created, err
}

// SchedulingPolicyDelete deletes a policy; fault.ErrNotFound if there is none.
// Deleting the default leaves no default (claims then use the built-in
// policy).
func (s *Catalogue) SchedulingPolicyDelete(ctx context.Context, name string) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		tag, err := t.Exec(ctx, `DELETE FROM scheduling_policies WHERE name = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fault.NotFound("No scheduling policy named %s.", name)
		}
		return notifyScheduling(ctx, t, "policy", name)
	})
}

// lockScriptlets checks that the scriptlets named are stored and locks
// their rows against deletion until the transaction ends.
func lockScriptlets(ctx context.Context, t *core.Txn, names []string) error {
	for _, name := range names {
		var one int
		err := t.QueryRow(ctx, `SELECT 1 FROM scriptlets WHERE name = $1 FOR KEY SHARE`, name).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.Invalid("", "Scheduling policy names scriptlet %s, which does not exist.", name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
