package scheduling

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/resources"
)

// Cloud is what the scheduler's units and scriptlets ask about the cloud
// beyond Placement's data, and what its agents report: the providers'
// reported state, their placement keys and their evacuation, the
// instances, the consumer counts and the members of a group. It is safe
// for concurrent use.
type Cloud struct{ core *core.Core }

// NewCloud returns the Cloud of co.
func NewCloud(co *core.Core) *Cloud { return &Cloud{core: co} }

// The queries in this file answer what scheduling policies and scriptlets
// ask about the cloud beyond one claim's candidates: providers by name,
// the members of an aggregate, the consumers placed and where, consumer
// groups. They read committed data directly (not the snapshot), each in
// one read-only transaction.

// ProviderSummariesParams selects providers for ProviderSummaries.
type ProviderSummariesParams struct {
	// Ref, when not empty, selects the provider of that uuid or name.
	Ref string
	// Aggregate, when not empty, selects providers in that aggregate.
	Aggregate string
	// RootsOnly selects root providers only.
	RootsOnly bool
}

// ProviderSummaries describes the providers p selects, by name, with their
// inventories and usage, traits and aggregates. A malformed aggregate
// uuid selects nothing.
func (s *Cloud) ProviderSummaries(ctx context.Context, p ProviderSummariesParams) ([]engine.ProviderSummary, error) {
	refUUID := uuidOrNil(p.Ref)
	var agg *string
	if p.Aggregate != "" {
		// As member_of: the aggregate as spelled.
		if _, ok := core.CanonicalUUID(p.Aggregate); !ok {
			return []engine.ProviderSummary{}, nil
		}
		agg = &p.Aggregate
	}
	var out []engine.ProviderSummary
	// One read-only transaction, so its queries see one state; fn may run
	// more than once (WithTx).
	_, err := s.core.Txs.WithTx(ctx, core.TxReadOnly, func(tx *core.Txn) error {
		out = nil // afresh if the transaction is run again
		rows, err := tx.Query(ctx, `
			SELECT rp.id, rp.uuid::text, rp.name, rp.generation, COALESCE(parent.uuid::text, ''), root.uuid::text,
			       EXISTS (SELECT 1 FROM provider_evacuations ev WHERE ev.resource_provider_id = rp.id)
			FROM resource_providers rp
			JOIN resource_providers root ON root.id = rp.root_provider_id
			LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id
			WHERE ($1 = '' OR rp.name = $1 OR rp.uuid = $2::uuid)
			  AND (NOT $3 OR rp.parent_provider_id IS NULL)
			  AND ($4::text IS NULL OR EXISTS (
				SELECT 1 FROM resource_provider_aggregates rpa
				JOIN placement_aggregates pa ON pa.id = rpa.aggregate_id
				WHERE rpa.resource_provider_id = rp.id AND pa.uuid = $4))
			ORDER BY rp.name`, p.Ref, refUUID, p.RootsOnly, agg)
		if err != nil {
			return err
		}
		var ids []int64
		index := map[int64]int{}
		var id int64
		var ps engine.ProviderSummary
		if _, err := pgx.ForEachRow(rows, []any{&id, &ps.UUID, &ps.Name, &ps.Generation, &ps.ParentUUID, &ps.RootUUID, &ps.Evacuated}, func() error {
			index[id] = len(out)
			ids = append(ids, id)
			ps.ID = id
			out = append(out, ps)
			return nil
		}); err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `
			SELECT i.resource_provider_id, rc.name, i.total, i.reserved, i.min_unit, i.max_unit, i.step_size,
			       i.allocation_ratio, COALESCE((SELECT SUM(a.used) FROM allocations a
			           WHERE a.resource_provider_id = i.resource_provider_id AND a.resource_class_id = i.resource_class_id), 0)
			FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
			WHERE i.resource_provider_id = ANY($1) ORDER BY i.resource_provider_id, i.resource_class_id`, ids)
		if err != nil {
			return err
		}
		var r engine.InventoryUsage
		if _, err := pgx.ForEachRow(rows, []any{&id, &r.ResourceClass, &r.Total, &r.Reserved, &r.MinUnit, &r.MaxUnit, &r.StepSize,
			&r.AllocationRatio, &r.Used}, func() error {
			r.Capacity = int64(float64(r.Total-r.Reserved) * r.AllocationRatio)
			ps := &out[index[id]]
			ps.Resources = append(ps.Resources, r)
			return nil
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT rpt.resource_provider_id, t.name FROM resource_provider_traits rpt JOIN traits t ON t.id = rpt.trait_id
			WHERE rpt.resource_provider_id = ANY($1) ORDER BY t.id`, ids)
		if err != nil {
			return err
		}
		var name string
		if _, err := pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			ps := &out[index[id]]
			ps.Traits = append(ps.Traits, name)
			return nil
		}); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT rpa.resource_provider_id, pa.uuid::text FROM resource_provider_aggregates rpa
			JOIN placement_aggregates pa ON pa.id = rpa.aggregate_id
			WHERE rpa.resource_provider_id = ANY($1) ORDER BY pa.id`, ids)
		if err != nil {
			return err
		}
		_, err = pgx.ForEachRow(rows, []any{&id, &name}, func() error {
			ps := &out[index[id]]
			ps.Aggregates = append(ps.Aggregates, name)
			return nil
		})
		return err
	})
	if out == nil {
		out = []engine.ProviderSummary{}
	}
	return out, err
}

// Instance is a consumer holding allocations, as scriptlets and the
// balancer see it.
type Instance struct {
	UUID      string
	Name      string
	ProjectID string
	UserID    string
	Type      string
	// RootUUID and RootName are the consumer's location: the root of the
	// tree it holds allocations in (the first by name when it holds
	// allocations in several, as with shared storage).
	RootUUID, RootName string
	// Resources is what the consumer holds in all, per class.
	Resources map[string]int64
	// Document is the "instance" member of the consumer's stored claim
	// (claim_state.request: LXD's instance placement request that the
	// claim carried), nil when it has none.
	Document []byte
	// CreatedAt and UpdatedAt are the consumer's.
	CreatedAt, UpdatedAt time.Time
}

// InstancesParams selects consumers for Instances and InstancesCount.
type InstancesParams struct {
	// Location, when not empty, selects consumers holding allocations in
	// the tree of the root provider of that name or uuid.
	Location string
	// Project, when not empty, selects the consumers of that project.
	Project string
	// Documents reads each consumer's Document (Instances only).
	Documents bool
	// Max, when positive, stops Instances after Max+1 consumers: a
	// caller that gets more than Max knows there are more, and memory
	// stays bounded whatever the cloud's size.
	Max int
}

// instancesWhere selects the consumers of $1 (project) and $2/$3
// (location, its uuid or NULL) among allocations a of consumers c.
const instancesWhere = `
		WHERE ($1 = '' OR pr.external_id = $1)
		  AND ($2 = '' OR EXISTS (
			SELECT 1 FROM allocations a2
			JOIN resource_providers rp2 ON rp2.id = a2.resource_provider_id
			JOIN resource_providers root2 ON root2.id = rp2.root_provider_id
			WHERE a2.consumer_id = c.id AND (root2.name = $2 OR root2.uuid = $3::uuid)))`

// Instances lists the consumers holding allocations that p selects, by
// uuid.
func (s *Cloud) Instances(ctx context.Context, p InstancesParams) ([]Instance, error) {
	rows, err := s.core.DB.Query(ctx, `
		SELECT c.uuid::text, COALESCE(c.name, ''), pr.external_id, us.external_id, COALESCE(ct.name, $4),
		       root.uuid::text, root.name, rc.name, SUM(a.used),
		       cs.request->'instance', c.created_at, c.updated_at
		FROM allocations a
		JOIN consumers c ON c.id = a.consumer_id
		LEFT JOIN claim_state cs ON $5 AND cs.consumer_uuid = c.uuid
		JOIN projects pr ON pr.id = c.project_id
		JOIN users us ON us.id = c.user_id
		LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
		JOIN resource_providers rp ON rp.id = a.resource_provider_id
		JOIN resource_providers root ON root.id = rp.root_provider_id
		JOIN resource_classes rc ON rc.id = a.resource_class_id`+instancesWhere+`
		GROUP BY c.id, cs.consumer_uuid, pr.external_id, us.external_id, ct.name, root.uuid, root.name, rc.name
		ORDER BY c.uuid, root.name, rc.name`, p.Project, p.Location, uuidOrNil(p.Location), resources.UnknownConsumerType, p.Documents)
	if err != nil {
		return nil, err
	}
	out := []Instance{}
	var in Instance
	var class string
	var used int64
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&in.UUID, &in.Name, &in.ProjectID, &in.UserID, &in.Type,
		&in.RootUUID, &in.RootName, &class, &used, &doc, &in.CreatedAt, &in.UpdatedAt}, func() error {
		if n := len(out); n == 0 || out[n-1].UUID != in.UUID {
			if p.Max > 0 && n > p.Max {
				return errEnough
			}
			in.Resources = map[string]int64{}
			in.Document = nil
			if len(doc) > 0 && string(doc) != "null" {
				in.Document = slices.Clone(doc)
			}
			out = append(out, in)
		}
		out[len(out)-1].Resources[class] += used
		return nil
	})
	if errors.Is(err, errEnough) {
		// The last consumer may miss classes: it is only there to say
		// that there are more.
		return out, nil
	}
	return out, err
}

// errEnough stops a listing that has read what it needs.
var errEnough = errors.New("enough rows")

// InstancesCount counts the consumers holding allocations that p
// selects (its Documents and Max aside).
func (s *Cloud) InstancesCount(ctx context.Context, p InstancesParams) (int, error) {
	var n int
	err := s.core.DB.QueryRow(ctx, `
		SELECT COUNT(DISTINCT c.id)
		FROM allocations a
		JOIN consumers c ON c.id = a.consumer_id
		JOIN projects pr ON pr.id = c.project_id`+instancesWhere,
		p.Project, p.Location, uuidOrNil(p.Location)).Scan(&n)
	return n, err
}

// ConsumerCounts returns how many consumers hold allocations on each of
// the providers named (uuids) that has any, in one query.
func (s *Cloud) ConsumerCounts(ctx context.Context, providerUUIDs []string) (map[string]int, error) {
	rows, err := s.core.DB.Query(ctx, `
		SELECT rp.uuid::text, COUNT(DISTINCT a.consumer_id)
		FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
		WHERE rp.uuid = ANY($1::text[]::uuid[]) GROUP BY rp.uuid`, validUUIDs(providerUUIDs))
	if err != nil {
		return nil, err
	}
	return collectCounts(rows)
}

// PreemptibleUsage returns, for each of the providers named (uuids)
// on which preemptible consumers hold allocations, what they hold per
// resource class (in class name order) and the lowest priority among
// them, in one query: the room a claim of higher priority could take
// back. A consumer counts when its stored claim says it is preemptible
// and is not moving (as resources.Allocations.PreemptibleBelow reads
// victims); its priority is its stored claim's, 0 when absent.
func (s *Cloud) PreemptibleUsage(ctx context.Context, providerUUIDs []string) (map[string][]engine.PreemptibleUsage, error) {
	rows, err := s.core.DB.Query(ctx, `
		SELECT rp.uuid::text, rc.name, SUM(a.used)::bigint,
		       MIN(COALESCE((cs.request->>'priority')::numeric::bigint, 0))
		FROM claim_state cs
		JOIN consumers c ON c.uuid = cs.consumer_uuid
		JOIN allocations a ON a.consumer_id = c.id
		JOIN resource_providers rp ON rp.id = a.resource_provider_id
		JOIN resource_classes rc ON rc.id = a.resource_class_id
		WHERE cs.request @> '{"preemptible": true}' AND cs.state <> 'moving' AND rp.uuid = ANY($1::text[]::uuid[])
		GROUP BY rp.uuid, rc.name ORDER BY rp.uuid, rc.name`, validUUIDs(providerUUIDs))
	if err != nil {
		return nil, err
	}
	out := map[string][]engine.PreemptibleUsage{}
	var u string
	var pu engine.PreemptibleUsage
	_, err = pgx.ForEachRow(rows, []any{&u, &pu.ResourceClass, &pu.Used, &pu.LowestPriority}, func() error {
		out[u] = append(out[u], pu)
		return nil
	})
	return out, err
}

// GroupMembers counts, per root provider (uuid), the consumers whose
// properties hold key with the string value, among the consumers with
// allocations: the members of a consumer group, for affinity.
func (s *Cloud) GroupMembers(ctx context.Context, key, value string) (map[string]int, error) {
	rows, err := s.core.DB.Query(ctx, `
		SELECT root.uuid::text, COUNT(DISTINCT c.id)
		FROM consumers c
		JOIN allocations a ON a.consumer_id = c.id
		JOIN resource_providers rp ON rp.id = a.resource_provider_id
		JOIN resource_providers root ON root.id = rp.root_provider_id
		WHERE c.properties @> jsonb_build_object($1::text, $2::text)
		GROUP BY root.uuid`, key, value)
	if err != nil {
		return nil, err
	}
	return collectCounts(rows)
}

func collectCounts(rows pgx.Rows) (map[string]int, error) {
	out := map[string]int{}
	var u string
	var n int
	_, err := pgx.ForEachRow(rows, []any{&u, &n}, func() error {
		out[u] = n
		return nil
	})
	return out, err
}

// uuidOrNil returns the canonical form of s, or nil (SQL NULL, which
// matches nothing) when s is not a UUID.
func uuidOrNil(s string) *string {
	if c, ok := core.CanonicalUUID(s); ok {
		return &c
	}
	return nil
}
