package scheduling

import (
	"context"
	"errors"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger/engine"
)

// stateColumns are provider_state's columns in the order of stateDest
// (storage_pools NULL when empty: most reports have none, and their rows
// are then read without decoding JSON).
const stateColumns = `load_1, load_5, load_15, memory_free_mb, cpu_utilization, reported_at,
	uptime, total_ram, shared_ram, buffered_ram, total_swap, free_swap, processes, logical_cpus,
	NULLIF(storage_pools, '{}'::jsonb)`

// stateInsertColumns are stateColumns as written.
const stateInsertColumns = `load_1, load_5, load_15, memory_free_mb, cpu_utilization, reported_at,
	uptime, total_ram, shared_ram, buffered_ram, total_swap, free_swap, processes, logical_cpus, storage_pools`

// stateDest are the scan targets of stateColumns into st.
func stateDest(st *engine.ProviderState) []any {
	si := &st.SysInfo
	return []any{&st.Load1, &st.Load5, &st.Load15, &st.MemoryFreeMB, &st.CPUUtilization, &st.ReportedAt,
		&si.Uptime, &si.TotalRAM, &si.SharedRAM, &si.BufferedRAM, &si.TotalSwap, &si.FreeSwap, &si.Processes,
		&si.LogicalCPUs, &st.StoragePools}
}

// ProviderStatePut records a provider's state, replacing the previous
// report. It changes neither the provider nor its generation. An unknown
// provider is fault.ErrNotFound.
func (s *Cloud) ProviderStatePut(ctx context.Context, providerUUID string, st engine.ProviderState) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := resources.LookupProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		// The pools as JSON (jsonArg): pgx cannot encode a map for a
		// parameter whose type it does not know (default_query_exec_mode
		// exec or simple_protocol).
		si, pools := st.SysInfo, st.StoragePools
		if pools == nil {
			pools = map[string]engine.StoragePoolState{}
		}
		_, err = t.Exec(ctx, `
			INSERT INTO provider_state (resource_provider_id, `+stateInsertColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
			ON CONFLICT (resource_provider_id) DO UPDATE SET load_1 = EXCLUDED.load_1, load_5 = EXCLUDED.load_5,
				load_15 = EXCLUDED.load_15, memory_free_mb = EXCLUDED.memory_free_mb,
				cpu_utilization = EXCLUDED.cpu_utilization, reported_at = EXCLUDED.reported_at,
				uptime = EXCLUDED.uptime, total_ram = EXCLUDED.total_ram, shared_ram = EXCLUDED.shared_ram,
				buffered_ram = EXCLUDED.buffered_ram, total_swap = EXCLUDED.total_swap, free_swap = EXCLUDED.free_swap,
				processes = EXCLUDED.processes, logical_cpus = EXCLUDED.logical_cpus, storage_pools = EXCLUDED.storage_pools`,
			ref.ID, st.Load1, st.Load5, st.Load15, st.MemoryFreeMB, st.CPUUtilization, st.ReportedAt,
			si.Uptime, si.TotalRAM, si.SharedRAM, si.BufferedRAM, si.TotalSwap, si.FreeSwap, si.Processes, si.LogicalCPUs,
			jsonArg(pools))
		if _, ok := core.ForeignKeyViolation(err); ok {
			return resources.ProviderNotFound(providerUUID)
		}
		return err
	})
}

// ProviderStateGet returns a provider's last report: fault.ErrNotFound if the
// provider does not exist or has not reported.
func (s *Cloud) ProviderStateGet(ctx context.Context, providerUUID string) (engine.ProviderState, error) {
	var st engine.ProviderState
	ref, err := resources.LookupProvider(ctx, s.core.DB, providerUUID)
	if err != nil {
		return st, err
	}
	err = s.core.DB.QueryRow(ctx, `SELECT `+stateColumns+` FROM provider_state WHERE resource_provider_id = $1`, ref.ID).
		Scan(stateDest(&st)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, fault.NotFound("Resource provider %s has not reported its state.", providerUUID)
	}
	return st, err
}

// ProviderStates returns the last report of each of the providers named
// (uuids) that has one, in one query. Unknown and malformed uuids are
// skipped.
func (s *Cloud) ProviderStates(ctx context.Context, providerUUIDs []string) (map[string]engine.ProviderState, error) {
	rows, err := s.core.DB.Query(ctx, `
		SELECT rp.uuid::text, `+stateColumns+`
		FROM provider_state st JOIN resource_providers rp ON rp.id = st.resource_provider_id
		WHERE rp.uuid = ANY($1::text[]::uuid[])`, validUUIDs(providerUUIDs))
	if err != nil {
		return nil, err
	}
	out := map[string]engine.ProviderState{}
	var u string
	var st engine.ProviderState
	_, err = pgx.ForEachRow(rows, append([]any{&u}, stateDest(&st)...), func() error {
		out[u] = st
		st.StoragePools = nil // a fresh map for the next row
		return nil
	})
	return out, err
}

// validUUIDs returns the canonical form of the elements of in that are
// UUIDs, dropping the others.
func validUUIDs(in []string) []string {
	out := make([]string, 0, len(in))
	for _, s := range in {
		if c, ok := core.CanonicalUUID(s); ok {
			out = append(out, c)
		}
	}
	return out
}
