package placementdb

import (
	"math"
	"strconv"
	"time"
)

// Dump is the state the Placement API exposes, with ids in the numbering
// of the database it was read from. Provider, aggregate, project, user,
// consumer type and consumer ids are kept across a move (both schemas use
// integer ids for them); class and trait ids are mapped by name.
type Dump struct {
	Classes            []NamedRow
	Traits             []NamedRow
	Providers          []ProviderRow
	Inventories        []InventoryRow
	ProviderTraits     []LinkRow // A: provider id, B: trait id
	Aggregates         []AggregateRow
	ProviderAggregates []LinkRow // A: provider id, B: aggregate id
	Projects           []ExternalRow
	Users              []ExternalRow
	ConsumerTypes      []NamedRow
	Consumers          []ConsumerRow
	Allocations        []AllocationRow
}

// Stamps are a row's creation and last update times, in UTC.
type Stamps struct {
	Created, Updated time.Time
}

// NamedRow is a row of resource_classes, traits or consumer_types.
type NamedRow struct {
	ID   int64
	Name string
	Stamps
}

// ProviderRow is a row of resource_providers; ParentID is 0 for a root.
type ProviderRow struct {
	ID         int64
	UUID       string
	Name       string
	Generation int64
	RootID     int64
	ParentID   int64
	Stamps
}

// InventoryRow is a row of inventories: one provider's inventory of one
// class.
type InventoryRow struct {
	ProviderID, ClassID                         int64
	Total, Reserved, MinUnit, MaxUnit, StepSize int64
	AllocationRatio                             float64
	Stamps
}

// LinkRow is a row of an association table.
type LinkRow struct{ A, B int64 }

// AggregateRow is a row of placement_aggregates.
type AggregateRow struct {
	ID   int64
	UUID string
}

// ExternalRow is a row of projects or users: Keystone's id kept as text.
type ExternalRow struct {
	ID         int64
	ExternalID string
}

// ConsumerRow is a row of consumers; TypeID is 0 when it has no consumer
// type.
type ConsumerRow struct {
	ID                int64
	UUID              string
	ProjectID, UserID int64
	TypeID            int64
	Generation        int64
	Stamps
}

// AllocationRow is a row of allocations: what one consumer holds of one
// class on one provider.
type AllocationRow struct {
	ID                     int64
	ProviderID, ConsumerID int64
	ClassID                int64
	Used                   int64
	Stamps
}

// Counts summarises a dump for reports.
func (d *Dump) Counts() string {
	return strconv.Itoa(len(d.Providers)) + " providers, " +
		strconv.Itoa(len(d.Inventories)) + " inventories, " +
		strconv.Itoa(len(d.Consumers)) + " consumers, " +
		strconv.Itoa(len(d.Allocations)) + " allocations, " +
		strconv.Itoa(len(d.Aggregates)) + " aggregates, " +
		strconv.Itoa(customCount(d.Classes)) + " custom resource classes, " +
		strconv.Itoa(customCount(d.Traits)) + " custom traits"
}

func customCount(ns []NamedRow) int {
	n := 0
	for _, c := range ns {
		if isCustom(c.Name) {
			n++
		}
	}
	return n
}

func isCustom(name string) bool { return len(name) > 7 && name[:7] == "CUSTOM_" }

// float32Shortest returns the float64 whose shortest decimal form equals
// that of v read as a single-precision float: MySQL stores Placement's
// allocation_ratio as FLOAT, so 1.1 reads back as 1.100000023841858
// through a binary-protocol driver while Placement (and its clients) see
// 1.1.
func float32Shortest(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	s := strconv.FormatFloat(float64(float32(v)), 'g', -1, 32)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return v
	}
	return f
}

// stamps fills a missing time (Placement's columns are nullable) from the
// other one, else from now.
func stamps(created, updated *time.Time, now time.Time) Stamps {
	var s Stamps
	switch {
	case created != nil:
		s.Created = created.UTC()
	case updated != nil:
		s.Created = updated.UTC()
	default:
		s.Created = now
	}
	if updated != nil {
		s.Updated = updated.UTC()
	} else {
		s.Updated = s.Created
	}
	return s
}
