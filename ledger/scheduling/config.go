package scheduling

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// Config returns the stored server-wide settings (GET /config): key ->
// JSON value. Keys never set are absent. The ledger does not know what
// the keys mean; berthd validates them before ConfigPatch.
func (s *Catalogue) Config(ctx context.Context) (map[string]json.RawMessage, error) {
	rows, err := s.core.DB.Query(ctx, `SELECT key, value FROM config`)
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	var k string
	var v json.RawMessage
	_, err = pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		out[k] = v
		return nil
	})
	return out, err
}

// ConfigPatch sets and removes settings in one transaction: a nil value
// removes its key (back to the default), any other value replaces it.
// Every replica learns of the change through a notification sent when the
// transaction commits.
func (s *Catalogue) ConfigPatch(ctx context.Context, changes map[string]json.RawMessage) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		// Keys in order, so concurrent patches lock rows in one order.
		for _, k := range slices.Sorted(maps.Keys(changes)) {
			v := changes[k]
			var err error
			if v == nil {
				_, err = t.Exec(ctx, `DELETE FROM config WHERE key = $1`, k)
			} else {
				_, err = t.Exec(ctx, `INSERT INTO config (key, value) VALUES ($1, $2)
					ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, k, v)
			}
			if err != nil {
				return err
			}
		}
		return notifyScheduling(ctx, t, "config", "")
	})
}

// schedulingChannel is the PostgreSQL channel on which writes of
// scheduling policies, scriptlets and config are announced, so every
// berthd replica reloads what it compiled from them.
const schedulingChannel = "berth_scheduling"

// notifyScheduling announces a change of kind ("policy", "scriptlet",
// "config") to name; PostgreSQL delivers it only if t commits.
func notifyScheduling(ctx context.Context, t *core.Txn, kind, name string) error {
	_, err := t.Exec(ctx, `SELECT pg_notify($1, $2)`, schedulingChannel, kind+":"+name)
	return err
}

// ListenScheduling calls changed after every committed write of a
// scheduling policy, scriptlet or config key made by any process on this
// database (this one included), usually within milliseconds, and also
// each time its listening connection is (re)established, since changes
// may have been missed while it was down. changed must not block for
// long: notifications queue behind it. ListenScheduling returns when ctx
// is done.
//
// It holds one connection of its own rather than sharing the snapshot
// cache's listener: the two have different consumers and failure modes,
// and one more idle connection per process is cheap.
func (s *Catalogue) ListenScheduling(ctx context.Context, changed func()) {
	cfg := s.core.Pool.Config().ConnConfig
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+schedulingChannel)
		}
		if err == nil {
			backoff = 100 * time.Millisecond
			changed()
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				changed()
			}
		}
		if conn != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return
		}
		s.core.Log.LogAttrs(ctx, slog.LevelWarn, "ledger: scheduling listener disconnected; retrying",
			slog.Any("error", err), slog.Duration("backoff", backoff))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 10*time.Second)
	}
}
