package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// ProviderState is what a provider's agent last reported: load averages,
// free memory in MiB, CPU utilisation (0 to 1) and when it was measured.
type ProviderState struct {
	Load1, Load5, Load15 float64
	MemoryFreeMB         int64
	CPUUtilization       float64
	ReportedAt           time.Time
}

// ProviderStatePut records a provider's state, replacing the previous
// report. It changes neither the provider nor its generation. An unknown
// provider is fault.ErrNotFound.
func (s *Store) ProviderStatePut(ctx context.Context, providerUUID string, st ProviderState) error {
	return s.withTx(ctx, func(t *txn) error {
		ref, err := lookupProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		_, err = t.Exec(ctx, `
			INSERT INTO provider_state (resource_provider_id, load_1, load_5, load_15, memory_free_mb, cpu_utilization, reported_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (resource_provider_id) DO UPDATE SET load_1 = EXCLUDED.load_1, load_5 = EXCLUDED.load_5,
				load_15 = EXCLUDED.load_15, memory_free_mb = EXCLUDED.memory_free_mb,
				cpu_utilization = EXCLUDED.cpu_utilization, reported_at = EXCLUDED.reported_at`,
			ref.ID, st.Load1, st.Load5, st.Load15, st.MemoryFreeMB, st.CPUUtilization, st.ReportedAt)
		if _, ok := foreignKeyViolation(err); ok {
			return providerNotFound(providerUUID)
		}
		return err
	})
}

// ProviderStateGet returns a provider's last report: fault.ErrNotFound if the
// provider does not exist or has not reported.
func (s *Store) ProviderStateGet(ctx context.Context, providerUUID string) (ProviderState, error) {
	var st ProviderState
	ref, err := lookupProvider(ctx, s.db, providerUUID)
	if err != nil {
		return st, err
	}
	err = s.db.QueryRow(ctx, `
		SELECT load_1, load_5, load_15, memory_free_mb, cpu_utilization, reported_at
		FROM provider_state WHERE resource_provider_id = $1`, ref.ID).
		Scan(&st.Load1, &st.Load5, &st.Load15, &st.MemoryFreeMB, &st.CPUUtilization, &st.ReportedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, notFound("Resource provider %s has not reported its state.", providerUUID)
	}
	return st, err
}

// ProviderStates returns the last report of each of the providers named
// (uuids) that has one, in one query. Unknown and malformed uuids are
// skipped.
func (s *Store) ProviderStates(ctx context.Context, providerUUIDs []string) (map[string]ProviderState, error) {
	rows, err := s.db.Query(ctx, `
		SELECT rp.uuid::text, st.load_1, st.load_5, st.load_15, st.memory_free_mb, st.cpu_utilization, st.reported_at
		FROM provider_state st JOIN resource_providers rp ON rp.id = st.resource_provider_id
		WHERE rp.uuid = ANY($1::text[]::uuid[])`, validUUIDs(providerUUIDs))
	if err != nil {
		return nil, err
	}
	out := map[string]ProviderState{}
	var u string
	var st ProviderState
	_, err = pgx.ForEachRow(rows, []any{&u, &st.Load1, &st.Load5, &st.Load15, &st.MemoryFreeMB, &st.CPUUtilization, &st.ReportedAt}, func() error {
		out[u] = st
		return nil
	})
	return out, err
}

// validUUIDs returns the canonical form of the elements of in that are
// UUIDs, dropping the others.
func validUUIDs(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if c, ok := canonicalUUID(s); ok {
			out = append(out, c)
		}
	}
	return out
}
