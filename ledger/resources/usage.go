package resources

import (
	"context"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// ProviderUsages is what is allocated from a provider, class by class.
type ProviderUsages struct {
	Generation int64
	// Usages has an entry, possibly 0, for every class the provider has
	// inventory of.
	Usages map[string]int64
	// Classes are the keys of Usages in Placement's class order (standard
	// classes by their os-resource-classes id, then custom ones by
	// creation), the order Placement lists them in.
	Classes []string
}

// ProviderUsagesGet returns a provider's usages.
func (s *Providers) ProviderUsagesGet(ctx context.Context, providerUUID string) (ProviderUsages, error) {
	var out ProviderUsages
	err := s.core.ReadTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		rows, err := t.Query(ctx, `
			SELECT rc.name,
			       COALESCE((SELECT sum(a.used) FROM allocations a
			                 WHERE a.resource_provider_id = i.resource_provider_id
			                   AND a.resource_class_id = i.resource_class_id), 0)::bigint
			FROM inventories i JOIN resource_classes rc ON rc.id = i.resource_class_id
			WHERE i.resource_provider_id = $1
			ORDER BY rc.id`, ref.ID)
		if err != nil {
			return err
		}
		out = ProviderUsages{Generation: ref.Generation, Usages: map[string]int64{}}
		var name string
		var used int64
		_, err = pgx.ForEachRow(rows, []any{&name, &used}, func() error {
			out.Usages[name] = used
			out.Classes = append(out.Classes, name)
			return nil
		})
		return err
	})
	return out, err
}

// UsagesParams selects the consumers whose allocations GET /usages sums.
type UsagesParams struct {
	ProjectID string
	// UserID, when not empty, narrows to one user of the project.
	UserID string
	// ByType groups the sums by consumer type (microversion 1.38 on).
	ByType bool
	// ConsumerType, with ByType, keeps one group: a type name,
	// UnknownConsumerType for consumers without a type, or AllConsumerTypes
	// for a single group of every consumer.
	ConsumerType string
}

// AllConsumerTypes asks GET /usages for one group of all consumers.
const AllConsumerTypes = "all"

// UsageGroup is the total of one group of consumers' allocations.
type UsageGroup struct {
	// ConsumerType names the group; empty when not grouping by type.
	// ConsumerCount is the number of consumers in the group.
	ConsumerType  string
	ConsumerCount int64
	Usages        map[string]int64
	// Classes are the keys of Usages in Placement's class order.
	Classes []string
}

// Usages sums the allocations of a project's (or a user's) consumers, by
// resource class, and by consumer type when p.ByType. Without ByType the
// result is one group, possibly with no usages.
func (s *Providers) Usages(ctx context.Context, p UsagesParams) ([]UsageGroup, error) {
	var out []UsageGroup
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		out = nil
		group := `''`
		if p.ByType {
			group = `COALESCE(ct.name, '` + UnknownConsumerType + `')`
			if p.ConsumerType == AllConsumerTypes {
				group = `'` + AllConsumerTypes + `'`
			}
		}
		// $3: the group to keep, or '' for all of them.
		keep := ""
		if p.ByType && p.ConsumerType != "" && p.ConsumerType != AllConsumerTypes {
			keep = p.ConsumerType
		}
		rows, err := t.Query(ctx, `
			WITH picked AS (
				SELECT `+group+` AS grp, a.consumer_id, a.resource_class_id, a.used
				FROM allocations a
				JOIN consumers c ON c.id = a.consumer_id
				JOIN projects p ON p.id = c.project_id
				JOIN users u ON u.id = c.user_id
				LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
				WHERE p.external_id = $1 AND ($2 = '' OR u.external_id = $2)
			)
			SELECT grp, rc.name, sum(used)::bigint,
			       (SELECT count(DISTINCT consumer_id) FROM picked p2 WHERE p2.grp = picked.grp)
			FROM picked JOIN resource_classes rc ON rc.id = picked.resource_class_id
			WHERE $3 = '' OR grp = $3
			GROUP BY grp, rc.id, rc.name
			ORDER BY grp, rc.id`, p.ProjectID, p.UserID, keep)
		if err != nil {
			return err
		}
		byGroup := map[string]int{}
		var grp, class string
		var used, count int64
		_, err = pgx.ForEachRow(rows, []any{&grp, &class, &used, &count}, func() error {
			i, ok := byGroup[grp]
			if !ok {
				i = len(out)
				byGroup[grp] = i
				out = append(out, UsageGroup{ConsumerType: grp, ConsumerCount: count, Usages: map[string]int64{}})
			}
			out[i].Usages[class] = used
			out[i].Classes = append(out[i].Classes, class)
			return nil
		})
		if err == nil && !p.ByType && len(out) == 0 {
			out = []UsageGroup{{Usages: map[string]int64{}}}
		}
		return err
	})
	return out, err
}
