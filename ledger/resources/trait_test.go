package resources_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

func traitNames(traits []resources.Trait) []string {
	out := make([]string, len(traits))
	for i, tr := range traits {
		out[i] = tr.Name
	}
	return out
}

func TestTraits(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()

	for _, name := range []string{"CUSTOM_B", "CUSTOM_A"} {
		if _, created, err := s.Providers.TraitEnsure(ctx, name); err != nil || !created {
			t.Fatalf("ensure %s: %v %v", name, created, err)
		}
	}
	if _, created, err := s.Providers.TraitEnsure(ctx, "CUSTOM_A"); err != nil || created {
		t.Errorf("ensure existing: %v %v", created, err)
	}
	if _, err := s.Providers.TraitGet(ctx, "CUSTOM_A"); err != nil {
		t.Error(err)
	}
	_, err := s.Providers.TraitGet(ctx, "CUSTOM_NONE")
	wantError(t, err, fault.ErrNotFound, "", "No such trait(s): CUSTOM_NONE.")

	yes, no := true, false
	tests := []struct {
		name   string
		filter resources.TraitFilter
		want   []string
	}{
		{"in", resources.TraitFilter{NameIn: []string{"CUSTOM_B", "CUSTOM_A", "CUSTOM_X"}}, []string{"CUSTOM_A", "CUSTOM_B"}},
		{"prefix", resources.TraitFilter{Prefix: "CUSTOM_"}, []string{"CUSTOM_A", "CUSTOM_B"}},
		{"associated", resources.TraitFilter{Associated: &yes}, []string{"CUSTOM_B"}},
		{"prefix not associated", resources.TraitFilter{Prefix: "CUSTOM_", Associated: &no}, []string{"CUSTOM_A"}},
	}
	ledgertest.MustCreate(t, s, "rp", uuidA, "")
	gen, traits, err := s.Providers.ProviderTraitsReplace(ctx, uuidA, 0, []string{"CUSTOM_B"})
	if err != nil || gen != 1 || !slices.Equal(traitNames(traits), []string{"CUSTOM_B"}) {
		t.Fatalf("set provider traits: %d %v %v", gen, traits, err)
	}
	for _, tt := range tests {
		got, err := s.Providers.TraitList(ctx, tt.filter)
		if err != nil || !slices.Equal(traitNames(got), tt.want) {
			t.Errorf("%s: %v %v, want %v", tt.name, traitNames(got), err, tt.want)
		}
	}
	all, err := s.Providers.TraitList(ctx, resources.TraitFilter{})
	if err != nil || len(all) != len(resources.StandardTraits)+2 {
		t.Errorf("all traits: %d %v", len(all), err)
	}

	err = s.Providers.TraitDelete(ctx, "CUSTOM_B")
	wantError(t, err, fault.ErrConflict, "", "The trait CUSTOM_B is in use by a resource provider.")
	err = s.Providers.TraitDelete(ctx, "HW_CPU_X86_SSE")
	wantError(t, err, fault.ErrInvalid, "", "Cannot delete standard trait HW_CPU_X86_SSE.")
	err = s.Providers.TraitDelete(ctx, "CUSTOM_NONE")
	wantError(t, err, fault.ErrNotFound, "", "No such trait(s): CUSTOM_NONE.")
	if err := s.Providers.TraitDelete(ctx, "CUSTOM_A"); err != nil {
		t.Errorf("delete: %v", err)
	}
}

func TestProviderTraits(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	ledgertest.MustCreate(t, s, "rp", uuidA, "")

	gen, traits, err := s.Providers.ProviderTraits(ctx, uuidA)
	if err != nil || gen != 0 || len(traits) != 0 {
		t.Fatalf("empty: %d %v %v", gen, traits, err)
	}
	_, _, err = s.Providers.ProviderTraitsReplace(ctx, uuidA, 5, []string{"HW_CPU_X86_AVX"})
	wantError(t, err, fault.ErrConflict, fault.CodeConcurrentUpdate, "Resource provider's generation already changed.")
	_, _, err = s.Providers.ProviderTraitsReplace(ctx, uuidA, 0, []string{"CUSTOM_Y", "HW_CPU_X86_AVX", "CUSTOM_X"})
	wantError(t, err, fault.ErrInvalid, "", "No such trait CUSTOM_X, CUSTOM_Y")
	_, _, err = s.Providers.ProviderTraitsReplace(ctx, uuidD, 0, nil)
	wantError(t, err, fault.ErrNotFound, "", "No resource provider with uuid "+uuidD+" found")

	// The failed attempts changed nothing.
	gen, _, _ = s.Providers.ProviderTraits(ctx, uuidA)
	if gen != 0 {
		t.Errorf("generation %d after failed writes", gen)
	}
	gen, traits, err = s.Providers.ProviderTraitsReplace(ctx, uuidA, 0, []string{"HW_CPU_X86_SSE", "HW_CPU_X86_AVX"})
	if err != nil || gen != 1 || !slices.Equal(traitNames(traits), []string{"HW_CPU_X86_AVX", "HW_CPU_X86_SSE"}) {
		t.Fatalf("replace: %d %v %v", gen, traitNames(traits), err)
	}
	gen, traits, err = s.Providers.ProviderTraitsReplace(ctx, uuidA, 1, []string{"HW_CPU_X86_SSE"})
	if err != nil || gen != 2 || !slices.Equal(traitNames(traits), []string{"HW_CPU_X86_SSE"}) {
		t.Fatalf("replace again: %d %v %v", gen, traitNames(traits), err)
	}
	// Writing the same set again changes nothing, the generation included
	// (Placement bumps it only when the set changes).
	gen, traits, err = s.Providers.ProviderTraitsReplace(ctx, uuidA, 2, []string{"HW_CPU_X86_SSE", "HW_CPU_X86_SSE"})
	if err != nil || gen != 2 || !slices.Equal(traitNames(traits), []string{"HW_CPU_X86_SSE"}) {
		t.Fatalf("replace with the same set: %d %v %v", gen, traitNames(traits), err)
	}
	_, _, err = s.Providers.ProviderTraitsReplace(ctx, uuidA, 1, []string{"HW_CPU_X86_SSE"})
	wantError(t, err, fault.ErrConflict, fault.CodeConcurrentUpdate, "Resource provider's generation already changed.")
	if err := s.Providers.ProviderTraitsDelete(ctx, uuidA); err != nil {
		t.Fatal(err)
	}
	gen, traits, _ = s.Providers.ProviderTraits(ctx, uuidA)
	if gen != 3 || len(traits) != 0 {
		t.Errorf("after delete: %d %v", gen, traitNames(traits))
	}
	// Deleting no traits leaves the generation alone.
	if err := s.Providers.ProviderTraitsDelete(ctx, uuidA); err != nil {
		t.Fatal(err)
	}
	if gen, _, _ = s.Providers.ProviderTraits(ctx, uuidA); gen != 3 {
		t.Errorf("generation %d after deleting no traits, want 3", gen)
	}
}

// TestProviderTraitsRace has many writers replace a provider's traits with
// the same generation: exactly one wins, the others see a conflict.
func TestProviderTraitsRace(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	ledgertest.MustCreate(t, s, "rp", uuidA, "")
	const writers = 8
	var wg sync.WaitGroup
	results := make(chan error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := s.Providers.ProviderTraitsReplace(ctx, uuidA, 0, []string{resources.StandardTraits[i]})
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		switch {
		case err == nil:
			won++
		default:
			wantError(t, err, fault.ErrConflict, fault.CodeConcurrentUpdate, "generation")
		}
	}
	gen, traits, _ := s.Providers.ProviderTraits(ctx, uuidA)
	if won != 1 || gen != 1 || len(traits) != 1 {
		t.Errorf("%d writers won, generation %d, traits %v", won, gen, traitNames(traits))
	}
}
