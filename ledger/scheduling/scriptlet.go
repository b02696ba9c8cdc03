package scheduling

import (
	"context"
	"errors"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// Scriptlet is a stored Starlark scriptlet. The ledger stores the source as
// given; berthd compiles it before writing.
type Scriptlet struct {
	Name      string
	Source    string
	UpdatedAt time.Time
}

func scanScriptlets(rows pgx.Rows) ([]Scriptlet, error) {
	var out []Scriptlet
	var sc Scriptlet
	_, err := pgx.ForEachRow(rows, []any{&sc.Name, &sc.Source, &sc.UpdatedAt}, func() error {
		out = append(out, sc)
		return nil
	})
	return out, err
}

// Scriptlets lists every stored scriptlet with its source, by name.
func (s *Catalogue) Scriptlets(ctx context.Context) ([]Scriptlet, error) {
	rows, err := s.core.DB.Query(ctx, `SELECT name, source, updated_at FROM scriptlets ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return scanScriptlets(rows)
}

// ScriptletGet returns one scriptlet; fault.ErrNotFound if there is none.
func (s *Catalogue) ScriptletGet(ctx context.Context, name string) (Scriptlet, error) {
	rows, err := s.core.DB.Query(ctx, `SELECT name, source, updated_at FROM scriptlets WHERE name = $1`, name)
	if err != nil {
		return Scriptlet{}, err
	}
	out, err := scanScriptlets(rows)
	if err != nil {
		return Scriptlet{}, err
	}
	if len(out) == 0 {
		return Scriptlet{}, fault.NotFound("No scriptlet named %s.", name)
	}
	return out[0], nil
}

// ScriptletPut stores source under name, replacing any scriptlet of that
// name; created reports whether it is new. Every replica learns of the
// change through a notification sent when the transaction commits.
func (s *Catalogue) ScriptletPut(ctx context.Context, name, source string) (created bool, err error) {
	err = s.core.WithTx(ctx, func(t *core.Txn) error {
		if err := t.QueryRow(ctx, `
			INSERT INTO scriptlets (name, source) VALUES ($1, $2)
			ON CONFLICT (name) DO UPDATE SET source = EXCLUDED.source, updated_at = now()
			RETURNING xmax = 0`, name, source).Scan(&created); err != nil {
			return err
		}
		return notifyScheduling(ctx, t, "scriptlet", name)
	})
	return created, err
}

// ScriptletDelete deletes a scriptlet: fault.ErrNotFound if there is none,
// fault.ErrConflict if a scheduling policy names it.
func (s *Catalogue) ScriptletDelete(ctx context.Context, name string) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		// Lock the row first: a policy being written that names it holds
		// a key-share lock on it, so the check below runs once that
		// policy is committed and sees it.
		var one int
		err := t.QueryRow(ctx, `SELECT 1 FROM scriptlets WHERE name = $1 FOR UPDATE`, name).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("No scriptlet named %s.", name)
		}
		if err != nil {
			return err
		}
		var user string
		err = t.QueryRow(ctx, `SELECT name FROM scheduling_policies WHERE $1 = ANY(scriptlets) ORDER BY name LIMIT 1`, name).Scan(&user)
		if err == nil {
			return fault.Conflict("", "Scriptlet %s is used by scheduling policy %s.", name, user)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if _, err := t.Exec(ctx, `DELETE FROM scriptlets WHERE name = $1`, name); err != nil {
			return err
		}
		return notifyScheduling(ctx, t, "scriptlet", name)
	})
}
