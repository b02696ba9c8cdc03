package engine

import "slices"

// WithReleased returns a snapshot that is s with the allocations of allocs
// taken out of its providers' usage: what the candidates would be if
// those allocations were removed (a claim weighing which consumers to
// preempt, claims/preempt.go). It shares s's names and indexes and the
// records it does not change (provTable.with); s is not modified.
// Providers and classes s does not know are passed over, and no usage
// goes below zero.
func (s *Snapshot) WithReleased(allocs []Allocation) *Snapshot {
	changed := map[int32]*ProviderRecord{}
	for _, a := range allocs {
		i, ok := s.providerIndex(a.ProviderUUID)
		if !ok {
			continue
		}
		rec := changed[i]
		if rec == nil {
			c := *s.provs.at(i)
			c.Inventories = slices.Clone(c.Inventories)
			rec = &c
			changed[i] = rec
		}
		for _, r := range a.Resources {
			id, ok := s.names.ClassID(r.Class)
			if !ok {
				continue
			}
			if inv := rec.Inventory(id); inv != nil {
				inv.Used = max(0, inv.Used-r.Amount)
			}
		}
	}
	at := make([]indexedRecord, 0, len(changed))
	for i, rec := range changed {
		at = append(at, indexedRecord{i, rec})
	}
	slices.SortFunc(at, cmpIndexed)
	return &Snapshot{names: s.names, provs: s.provs.with(at), idx: s.idx}
}
