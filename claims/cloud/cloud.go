package cloud

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/scheduling"
	"github.com/berthd/berth/scheduler"
)

// View answers what policies and scriptlets ask about the cloud from the
// ledger: it is the Claimer's claims.Cloud (Enrich: provider state, placement
// keys, consumer counts and preemptible usage for one claim's candidates, one query per kind
// asked for) and the scheduler's CloudData (instances, members, consumer
// groups, consumer keys). Every answer reads committed data at the time of
// the call. It is safe for concurrent use.
type View struct {
	store *ledger.Store
}

// New returns a View over store.
func New(store *ledger.Store) *View { return &View{store: store} }

var _ scheduler.CloudData = (*View)(nil)

// Enrich fills the fields needs asks for on every provider of provs.
func (d *View) Enrich(ctx context.Context, needs scheduler.Needs, provs map[string]*scheduler.ProviderView) error {
	if len(provs) == 0 || (!needs.State && !needs.Keys && !needs.Consumers && !needs.Preemptible) {
		return nil
	}
	uuids := make([]string, 0, len(provs))
	for u := range provs {
		uuids = append(uuids, u)
	}
	if needs.State {
		states, err := d.store.Cloud.ProviderStates(ctx, uuids)
		if err != nil {
			return err
		}
		for u, st := range states {
			provs[u].State = &st
		}
	}
	if needs.Keys {
		keys, err := d.store.Cloud.PlacementKeysOf(ctx, uuids)
		if err != nil {
			return err
		}
		for u, ks := range keys {
			provs[u].Keys = keysOf(ks)
		}
	}
	if needs.Consumers {
		counts, err := d.store.Cloud.ConsumerCounts(ctx, uuids)
		if err != nil {
			return err
		}
		for u, n := range counts {
			provs[u].Consumers = n
		}
	}
	if needs.Preemptible {
		usage, err := d.store.Cloud.PreemptibleUsage(ctx, uuids)
		if err != nil {
			return err
		}
		for u, pu := range usage {
			provs[u].Preemptible = pu
		}
	}
	return nil
}

// PreemptibleUsage implements scheduler.CloudData.
func (d *View) PreemptibleUsage(ctx context.Context, uuids []string) (map[string][]engine.PreemptibleUsage, error) {
	return d.store.Cloud.PreemptibleUsage(ctx, uuids)
}

// Instances implements scheduler.CloudData.
func (d *View) Instances(ctx context.Context, q scheduler.InstancesQuery) ([]scheduler.Instance, error) {
	ins, err := d.store.Cloud.Instances(ctx, scheduling.InstancesParams{Location: q.Location, Project: q.Project, Documents: q.Documents, Max: q.Max})
	if err != nil {
		return nil, err
	}
	out := make([]scheduler.Instance, len(ins))
	for i, in := range ins {
		out[i] = scheduler.Instance{UUID: in.UUID, Name: in.Name, ProjectID: in.ProjectID, UserID: in.UserID,
			Type: in.Type, Location: in.RootName, Resources: in.Resources, CreatedAt: in.CreatedAt, UpdatedAt: in.UpdatedAt}
		if in.Document != nil {
			// Stored by a claim that decoded it as an object: an error
			// here is a document another writer left, which is skipped.
			_ = json.Unmarshal(in.Document, &out[i].Instance)
		}
	}
	return out, nil
}

// InstancesCount implements scheduler.CloudData.
func (d *View) InstancesCount(ctx context.Context, q scheduler.InstancesQuery) (int, error) {
	return d.store.Cloud.InstancesCount(ctx, scheduling.InstancesParams{Location: q.Location, Project: q.Project})
}

// Member implements scheduler.CloudData: the provider of that name or
// uuid with its state, keys, consumer count and preemptible usage; nil
// if there is none.
func (d *View) Member(ctx context.Context, nameOrUUID string) (*scheduler.ProviderView, error) {
	if nameOrUUID == "" {
		return nil, nil
	}
	ps, err := d.members(ctx, scheduling.ProviderSummariesParams{Ref: nameOrUUID})
	if err != nil || len(ps) == 0 {
		return nil, err
	}
	// A name that is another provider's uuid: prefer the uuid.
	for _, p := range ps {
		if p.UUID == nameOrUUID {
			return p, nil
		}
	}
	return ps[0], nil
}

// Members implements scheduler.CloudData: the root providers, those in
// aggregate only when it is not empty, by name, with state, keys,
// consumer counts and preemptible usage.
func (d *View) Members(ctx context.Context, aggregate string) ([]*scheduler.ProviderView, error) {
	return d.members(ctx, scheduling.ProviderSummariesParams{Aggregate: aggregate, RootsOnly: true})
}

func (d *View) members(ctx context.Context, p scheduling.ProviderSummariesParams) ([]*scheduler.ProviderView, error) {
	sums, err := d.store.Cloud.ProviderSummaries(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]*scheduler.ProviderView, len(sums))
	byUUID := make(map[string]*scheduler.ProviderView, len(sums))
	for i, s := range sums {
		out[i] = providerOf(s)
		byUUID[s.UUID] = out[i]
	}
	if err := d.Enrich(ctx, scheduler.Needs{State: true, Keys: true, Consumers: true, Preemptible: true}, byUUID); err != nil {
		return nil, err
	}
	return out, nil
}

// GroupMembers counts, per root provider uuid, the consumers with
// allocations whose properties hold key with the string value.
func (d *View) GroupMembers(ctx context.Context, key, value string) (map[string]int, error) {
	return d.store.Cloud.GroupMembers(ctx, key, value)
}

// States implements scheduler.CloudData: the last report of each of the
// providers named that has one, in one query.
func (d *View) States(ctx context.Context, uuids []string) (map[string]*engine.ProviderState, error) {
	states, err := d.store.Cloud.ProviderStates(ctx, uuids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*engine.ProviderState, len(states))
	for u, st := range states {
		out[u] = &st
	}
	return out, nil
}

// ConsumerKeys returns the keys a consumer kept from sticky provider
// keys (each Sticky).
func (d *View) ConsumerKeys(ctx context.Context, consumerUUID string) ([]scheduler.PlacementKey, error) {
	ks, err := d.store.Cloud.ConsumerKeys(ctx, consumerUUID)
	if err != nil {
		return nil, err
	}
	return keysOf(ks), nil
}

func providerOf(s engine.ProviderSummary) *scheduler.ProviderView {
	p := &scheduler.ProviderView{Provider: s.Provider, Evacuated: s.Evacuated,
		Traits: slices.Clone(s.Traits), Aggregates: slices.Clone(s.Aggregates),
		Resources: slices.Clone(scheduler.Resources(s.Resources))}
	scheduler.SortResources(p.Resources)
	return p
}

func keysOf(ks []scheduling.PlacementKey) []scheduler.PlacementKey {
	out := make([]scheduler.PlacementKey, len(ks))
	for i, k := range ks {
		out[i] = scheduler.PlacementKey{Name: k.Name, Value: k.Value, Sticky: k.Sticky}
	}
	return out
}
