package resources_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

func TestProviderAggregates(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	ledgertest.MustCreate(t, s, "rp1", uuidA, "")
	ledgertest.MustCreate(t, s, "rp2", uuidB, "")
	agg1, agg2 := "f918801a-5e54-4bee-9095-09a9d0c786b8", "a893eb5c-e2a0-4251-ab26-f71d3b0cfc0b"

	gen, aggs, err := s.Providers.ProviderAggregates(ctx, uuidA)
	if err != nil || gen != 0 || aggs == nil || len(aggs) != 0 {
		t.Fatalf("empty: %d %#v %v", gen, aggs, err)
	}

	// From 1.19: the generation is checked and incremented.
	stale := int64(3)
	_, err = s.Providers.ProviderAggregatesReplace(ctx, uuidA, []string{agg1}, resources.AggregatesReplaceParams{Generation: &stale})
	wantError(t, err, fault.ErrConflict, fault.CodeConcurrentUpdate, "generation already changed")
	zero := int64(0)
	gen, err = s.Providers.ProviderAggregatesReplace(ctx, uuidA, []string{agg1, agg2}, resources.AggregatesReplaceParams{Generation: &zero})
	if err != nil || gen != 1 {
		t.Fatalf("replace: %d %v", gen, err)
	}
	_, aggs, _ = s.Providers.ProviderAggregates(ctx, uuidA)
	if !slices.Equal(aggs, []string{agg1, agg2}) {
		t.Errorf("aggregates %v", aggs)
	}

	// Before 1.19: no check, no increment. Uuids are kept as spelled, as
	// Placement keeps them: a dashless or upper-case spelling of agg2 is
	// an aggregate of its own, and so is each spelling in one request.
	dashless, upper := "a893eb5ce2a04251ab26f71d3b0cfc0b", strings.ToUpper(agg2)
	gen, err = s.Providers.ProviderAggregatesReplace(ctx, uuidB, []string{dashless, upper, agg2}, resources.AggregatesReplaceParams{})
	if err != nil || gen != 0 {
		t.Fatalf("legacy replace: %d %v", gen, err)
	}
	_, aggs, _ = s.Providers.ProviderAggregates(ctx, uuidB)
	if !slices.Equal(aggs, []string{agg2, dashless, upper}) {
		t.Errorf("aggregates %v", aggs)
	}
	gen, err = s.Providers.ProviderAggregatesReplace(ctx, uuidB, []string{upper}, resources.AggregatesReplaceParams{})
	if err != nil || gen != 0 {
		t.Fatalf("replace with one spelling: %d %v", gen, err)
	}
	if _, aggs, _ = s.Providers.ProviderAggregates(ctx, uuidB); !slices.Equal(aggs, []string{upper}) {
		t.Errorf("aggregates %v, want only %s", aggs, upper)
	}
	// Longer than Placement's varchar(36): refused, not a database error.
	_, err = s.Providers.ProviderAggregatesReplace(ctx, uuidB, []string{"{" + agg2 + "}"}, resources.AggregatesReplaceParams{})
	wantError(t, err, fault.ErrInvalid, "", "longer than 36")
	// Shorter odd spellings Placement accepts (oslo's is_uuid_like) are
	// kept as they are.
	odd := []string{"{a893eb5ce2a04251ab26f71d3b0cfc0b}", "a893eb5c-e2a04251-ab26-f71d3b0cfc0b"}
	if _, err = s.Providers.ProviderAggregatesReplace(ctx, uuidB, odd, resources.AggregatesReplaceParams{}); err != nil {
		t.Errorf("odd spellings: %v", err)
	}
	if _, aggs, _ = s.Providers.ProviderAggregates(ctx, uuidB); !slices.Equal(aggs, odd) {
		t.Errorf("aggregates %v, want %v", aggs, odd)
	}

	gen, err = s.Providers.ProviderAggregatesReplace(ctx, uuidA, []string{}, resources.AggregatesReplaceParams{})
	if err != nil || gen != 1 {
		t.Fatalf("clear: %d %v", gen, err)
	}
	if _, aggs, _ = s.Providers.ProviderAggregates(ctx, uuidA); len(aggs) != 0 {
		t.Errorf("aggregates after clear %v", aggs)
	}

	_, err = s.Providers.ProviderAggregatesReplace(ctx, uuidD, nil, resources.AggregatesReplaceParams{})
	wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid")
	_, err = s.Providers.ProviderAggregatesReplace(ctx, uuidA, []string{"harry"}, resources.AggregatesReplaceParams{})
	wantError(t, err, fault.ErrInvalid, "", "harry")
}
