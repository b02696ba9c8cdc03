package scheduling

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
)

// Shadows: a stored scriptlet or scheduling policy that every replica runs
// beside real claims (claims/shadow), with what it counted since it
// started. The ledger keeps the active shadows (loaded by the catalogue
// with the rest of the scheduling data: their writes notify as the others
// do) and their counts, to which every replica adds its own in batches
// (ShadowFlush).

// What a shadow runs.
const (
	ShadowScriptlet = "scriptlet"
	ShadowPolicy    = "policy"
)

// Bounds of what a shadow keeps.
const (
	// ShadowMaxRefusals is how many distinct refusal messages a shadow
	// counts; the others are counted under ShadowOtherRefusals.
	ShadowMaxRefusals = 50
	// ShadowOtherRefusals counts the refusals whose message came after
	// ShadowMaxRefusals others.
	ShadowOtherRefusals = "(other messages)"
	// ShadowMaxDisagreements is how many of its last disagreements a
	// shadow keeps.
	ShadowMaxDisagreements = 20
)

// Shadow is an active shadow: what it runs (Kind, Name), since when, and
// what it counted. Shadows answers the first three only.
type Shadow struct {
	ID        int64
	Kind      string // ShadowScriptlet or ShadowPolicy
	Name      string
	StartedAt time.Time
	Counts    ShadowCounts
	// Refusals counts what it would have refused claims with, by message.
	Refusals map[string]int64
	// Disagreements are its last ShadowMaxDisagreements disagreements,
	// oldest first.
	Disagreements []ShadowDisagreement
}

// ShadowCounts are a shadow's counters (the columns of
// scheduling_shadows, described in its migration).
type ShadowCounts struct {
	ClaimsSeen     int64 `json:"claims_seen"`
	Agreed         int64 `json:"agreed"`
	Disagreed      int64 `json:"disagreed"`
	WouldRefuse    int64 `json:"would_refuse"`
	FailedSteps    int64 `json:"failed_steps"`
	FailedMemory   int64 `json:"failed_memory"`
	FailedDeadline int64 `json:"failed_deadline"`
	FailedError    int64 `json:"failed_error"`
	Dropped        int64 `json:"dropped"`
	// WouldPreempt counts the claims for which the shadow would
	// preempt, WouldPreemptVictims the consumers it would displace.
	WouldPreempt        int64 `json:"would_preempt"`
	WouldPreemptVictims int64 `json:"would_preempt_victims"`
	// Nanoseconds is the time the shadow's runs took.
	Nanoseconds int64 `json:"shadow_ns"`
}

// Add adds o to c.
func (c *ShadowCounts) Add(o ShadowCounts) {
	c.ClaimsSeen += o.ClaimsSeen
	c.Agreed += o.Agreed
	c.Disagreed += o.Disagreed
	c.WouldRefuse += o.WouldRefuse
	c.FailedSteps += o.FailedSteps
	c.FailedMemory += o.FailedMemory
	c.FailedDeadline += o.FailedDeadline
	c.FailedError += o.FailedError
	c.Dropped += o.Dropped
	c.WouldPreempt += o.WouldPreempt
	c.WouldPreemptVictims += o.WouldPreemptVictims
	c.Nanoseconds += o.Nanoseconds
}

// ShadowDisagreement is one claim on which a shadow chose otherwise: the
// claim's request (consumer, name, project) and both choices (a root
// provider's uuid and name; the claim's refusal when it placed nothing).
type ShadowDisagreement struct {
	At             time.Time `json:"seen_at"`
	ConsumerUUID   string    `json:"consumer_uuid"`
	Name           string    `json:"name"`
	ProjectID      string    `json:"project_id"`
	ClaimRoot      string    `json:"claim_root"`
	ClaimRootName  string    `json:"claim_root_name"`
	ClaimRefusal   string    `json:"claim_refusal"`
	ShadowRoot     string    `json:"shadow_root"`
	ShadowRootName string    `json:"shadow_root_name"`
}

// ShadowDelta is what one replica counted for one shadow since its last
// flush.
type ShadowDelta struct {
	ShadowID      int64                `json:"id"`
	Counts        ShadowCounts         `json:"counts"`
	Refusals      map[string]int64     `json:"-"`
	Disagreements []ShadowDisagreement `json:"-"`
}

// shadowTarget is the column of what a shadow of kind runs.
func shadowTarget(kind string) (string, error) {
	switch kind {
	case ShadowScriptlet:
		return "scriptlet", nil
	case ShadowPolicy:
		return "policy", nil
	}
	return "", fault.Invalid(fault.CodeShadowInvalid, "Unknown shadow kind %q.", kind)
}

// shadowNotRunning is the refusal of a shadow that is not running.
func shadowNotRunning(kind, name string) error {
	return &fault.Error{Kind: fault.ErrNotFound, Code: fault.CodeShadowNotFound,
		Msg: fmt.Sprintf("No shadow of %s %s is running.", kindWords(kind), name)}
}

func kindWords(kind string) string {
	if kind == ShadowPolicy {
		return "scheduling policy"
	}
	return kind
}

// ShadowStart starts the shadow of the stored scriptlet or policy name
// (kind ShadowScriptlet or ShadowPolicy), with counts at zero, and
// returns it. What it runs must exist (fault.ErrNotFound,
// CodeShadowNotFound) and not be shadowed already (fault.ErrConflict,
// CodeShadowRunning). Every replica learns of it through a notification.
func (s *Catalogue) ShadowStart(ctx context.Context, kind, name string) (Shadow, error) {
	col, err := shadowTarget(kind)
	if err != nil {
		return Shadow{}, err
	}
	sh := Shadow{Kind: kind, Name: name, Refusals: map[string]int64{}}
	err = s.core.WithTx(ctx, func(t *core.Txn) error {
		// The target's row, key-share locked so that it cannot be deleted
		// before the shadow that references it commits.
		table := map[string]string{ShadowScriptlet: "scriptlets", ShadowPolicy: "scheduling_policies"}[kind]
		var one int
		err := t.QueryRow(ctx, `SELECT 1 FROM `+table+` WHERE name = $1 FOR KEY SHARE`, name).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return &fault.Error{Kind: fault.ErrNotFound, Code: fault.CodeShadowNotFound,
				Msg: fmt.Sprintf("No %s named %s.", kindWords(kind), name)}
		}
		if err != nil {
			return err
		}
		err = t.QueryRow(ctx, `INSERT INTO scheduling_shadows (`+col+`) VALUES ($1)
			ON CONFLICT DO NOTHING RETURNING id, started_at`, name).Scan(&sh.ID, &sh.StartedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.Conflict(fault.CodeShadowRunning, "A shadow of %s %s is already running.", kindWords(kind), name)
		}
		if err != nil {
			return err
		}
		return notifyScheduling(ctx, t, "shadow", kind+":"+name)
	})
	return sh, err
}

// ShadowStop stops the shadow of kind and name and forgets its counts:
// fault.ErrNotFound (CodeShadowNotFound) when none is running.
func (s *Catalogue) ShadowStop(ctx context.Context, kind, name string) error {
	col, err := shadowTarget(kind)
	if err != nil {
		return err
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		tag, err := t.Exec(ctx, `DELETE FROM scheduling_shadows WHERE `+col+` = $1`, name)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return shadowNotRunning(kind, name)
		}
		return notifyScheduling(ctx, t, "shadow", kind+":"+name)
	})
}

// Shadows lists the active shadows (ID, Kind, Name, StartedAt), by id.
func (s *Catalogue) Shadows(ctx context.Context) ([]Shadow, error) {
	rows, err := s.core.DB.Query(ctx, `SELECT id, CASE WHEN scriptlet IS NULL THEN 'policy' ELSE 'scriptlet' END,
		coalesce(scriptlet, policy), started_at FROM scheduling_shadows ORDER BY id`)
	if err != nil {
		return nil, err
	}
	var out []Shadow
	var sh Shadow
	_, err = pgx.ForEachRow(rows, []any{&sh.ID, &sh.Kind, &sh.Name, &sh.StartedAt}, func() error {
		out = append(out, sh)
		return nil
	})
	return out, err
}

// ShadowGet returns the shadow of kind and name with everything it
// counted, as flushed by every replica: fault.ErrNotFound
// (CodeShadowNotFound) when none is running.
func (s *Catalogue) ShadowGet(ctx context.Context, kind, name string) (Shadow, error) {
	col, err := shadowTarget(kind)
	if err != nil {
		return Shadow{}, err
	}
	sh := Shadow{Kind: kind, Name: name, Refusals: map[string]int64{}}
	// One read: the row, its refusals and its disagreements as JSON.
	var refusals, disagreements []byte
	c := &sh.Counts
	err = s.core.DB.QueryRow(ctx, `SELECT s.id, s.started_at, s.claims_seen, s.agreed, s.disagreed, s.would_refuse,
			s.failed_steps, s.failed_memory, s.failed_deadline, s.failed_error, s.dropped, s.shadow_ns,
			s.would_preempt, s.would_preempt_victims,
			(SELECT coalesce(jsonb_object_agg(message, count), '{}') FROM scheduling_shadow_refusals WHERE shadow_id = s.id),
			(SELECT coalesce(jsonb_agg(to_jsonb(d) - 'id' - 'shadow_id' ORDER BY d.id), '[]')
			 FROM scheduling_shadow_disagreements d WHERE d.shadow_id = s.id)
		FROM scheduling_shadows s WHERE s.`+col+` = $1`, name).Scan(&sh.ID, &sh.StartedAt,
		&c.ClaimsSeen, &c.Agreed, &c.Disagreed, &c.WouldRefuse, &c.FailedSteps, &c.FailedMemory, &c.FailedDeadline,
		&c.FailedError, &c.Dropped, &c.Nanoseconds, &c.WouldPreempt, &c.WouldPreemptVictims, &refusals, &disagreements)
	if errors.Is(err, pgx.ErrNoRows) {
		return Shadow{}, shadowNotRunning(kind, name)
	}
	if err != nil {
		return Shadow{}, err
	}
	if err := json.Unmarshal(refusals, &sh.Refusals); err != nil {
		return Shadow{}, err
	}
	if err := json.Unmarshal(disagreements, &sh.Disagreements); err != nil {
		return Shadow{}, err
	}
	return sh, nil
}

// Statements of ShadowFlush: each takes the deltas as one JSON array.
const (
	// shadowCountsSQL adds the counters of every delta whose shadow is
	// still running (a stopped shadow's counts are lost with it).
	shadowCountsSQL = `
		UPDATE scheduling_shadows s SET claims_seen = s.claims_seen + d.claims_seen, agreed = s.agreed + d.agreed,
			disagreed = s.disagreed + d.disagreed, would_refuse = s.would_refuse + d.would_refuse,
			failed_steps = s.failed_steps + d.failed_steps, failed_memory = s.failed_memory + d.failed_memory,
			failed_deadline = s.failed_deadline + d.failed_deadline, failed_error = s.failed_error + d.failed_error,
			dropped = s.dropped + d.dropped, shadow_ns = s.shadow_ns + d.shadow_ns,
			would_preempt = s.would_preempt + d.would_preempt,
			would_preempt_victims = s.would_preempt_victims + d.would_preempt_victims
		FROM (SELECT (e->>'id')::bigint AS id, c.* FROM jsonb_array_elements($1::jsonb) e,
			jsonb_to_record(e->'counts') AS c(claims_seen bigint, agreed bigint, disagreed bigint, would_refuse bigint,
				failed_steps bigint, failed_memory bigint, failed_deadline bigint, failed_error bigint,
				dropped bigint, shadow_ns bigint, would_preempt bigint, would_preempt_victims bigint)) d
		WHERE s.id = d.id`
	// shadowRefusalsSQL adds refusal counts by message; the messages new
	// to a shadow past its first ShadowMaxRefusals (the most frequent of a
	// flush first) are counted as ShadowOtherRefusals.
	shadowRefusalsSQL = `
		INSERT INTO scheduling_shadow_refusals (shadow_id, message, count)
		SELECT shadow_id, message, sum(count) FROM (
			SELECT shadow_id, count, CASE WHEN known OR existing + row_number() OVER (
					PARTITION BY shadow_id, known ORDER BY count DESC, message) <= $2
				THEN message ELSE $3 END AS message
			FROM (SELECT r.shadow_id, r.message, r.count,
					EXISTS (SELECT 1 FROM scheduling_shadow_refusals x
						WHERE x.shadow_id = r.shadow_id AND x.message = r.message) AS known,
					(SELECT count(*) FROM scheduling_shadow_refusals x
						WHERE x.shadow_id = r.shadow_id AND x.message <> $3) AS existing
				FROM jsonb_to_recordset($1::jsonb) AS r(shadow_id bigint, message text, count bigint)
				JOIN scheduling_shadows s ON s.id = r.shadow_id) k) m
		GROUP BY shadow_id, message
		ON CONFLICT (shadow_id, message) DO UPDATE SET count = scheduling_shadow_refusals.count + EXCLUDED.count`
	// shadowDisagreementsSQL appends disagreements of running shadows.
	shadowDisagreementsSQL = `
		INSERT INTO scheduling_shadow_disagreements (shadow_id, seen_at, consumer_uuid, name, project_id,
			claim_root, claim_root_name, claim_refusal, shadow_root, shadow_root_name)
		SELECT d.shadow_id, d.seen_at, d.consumer_uuid, d.name, d.project_id, d.claim_root, d.claim_root_name,
			d.claim_refusal, d.shadow_root, d.shadow_root_name
		FROM jsonb_to_recordset($1::jsonb) AS d(shadow_id bigint, seen_at timestamptz,
			consumer_uuid text, name text, project_id text, claim_root text, claim_root_name text,
			claim_refusal text, shadow_root text, shadow_root_name text)
		JOIN scheduling_shadows s ON s.id = d.shadow_id
		ORDER BY d.seen_at`
	// shadowTrimSQL keeps the last ShadowMaxDisagreements of the shadows
	// given.
	shadowTrimSQL = `
		DELETE FROM scheduling_shadow_disagreements WHERE id IN (
			SELECT id FROM (SELECT id, row_number() OVER (PARTITION BY shadow_id ORDER BY id DESC) AS n
				FROM scheduling_shadow_disagreements WHERE shadow_id = ANY($1::bigint[])) k
			WHERE n > $2)`
)

// ShadowFlush adds what a replica counted to the shadows' stored counts,
// in one transaction: the counters, the refusal messages (bounded by
// ShadowMaxRefusals per shadow) and the disagreements (of which each
// shadow keeps its last ShadowMaxDisagreements). Deltas of shadows no
// longer running are dropped. The shadows' rows are locked in id order
// first, so concurrent flushes of replicas queue rather than deadlock.
func (s *Catalogue) ShadowFlush(ctx context.Context, deltas []ShadowDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	type refusal struct {
		ShadowID int64  `json:"shadow_id"`
		Message  string `json:"message"`
		Count    int64  `json:"count"`
	}
	type disagreement struct {
		ShadowID int64 `json:"shadow_id"`
		ShadowDisagreement
	}
	var refusals []refusal
	var disagreements []disagreement
	var withDisagreements []int64
	for _, d := range deltas {
		for m, n := range d.Refusals {
			refusals = append(refusals, refusal{d.ShadowID, m, n})
		}
		for _, x := range d.Disagreements {
			disagreements = append(disagreements, disagreement{d.ShadowID, x})
		}
		if len(d.Disagreements) > 0 {
			withDisagreements = append(withDisagreements, d.ShadowID)
		}
	}
	ids := make([]int64, len(deltas))
	for i, d := range deltas {
		ids[i] = d.ShadowID
	}
	slices.Sort(ids)
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		if _, err := t.Exec(ctx, `SELECT FROM scheduling_shadows WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE`, ids); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, shadowCountsSQL, jsonArg(deltas)); err != nil {
			return err
		}
		if len(refusals) > 0 {
			if _, err := t.Exec(ctx, shadowRefusalsSQL, jsonArg(refusals), ShadowMaxRefusals, ShadowOtherRefusals); err != nil {
				return err
			}
		}
		if len(disagreements) > 0 {
			if _, err := t.Exec(ctx, shadowDisagreementsSQL, jsonArg(disagreements)); err != nil {
				return err
			}
			if _, err := t.Exec(ctx, shadowTrimSQL, withDisagreements, ShadowMaxDisagreements); err != nil {
				return err
			}
		}
		return nil
	})
}

// jsonArg is v as a JSON argument (v is built here of plain types: its
// encoding cannot fail). A json.RawMessage, not a []byte: pgx sends a
// []byte whose type it does not know (default_query_exec_mode exec or
// simple_protocol) as bytea.
func jsonArg(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
