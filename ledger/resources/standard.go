package resources

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/berthd/berth/ledger/internal/core"
)

// The standard resource classes and traits, one name a line, from
// Placement's os-resource-classes and os-traits libraries.
var (
	//go:embed standard/resource-classes.txt
	standardClassesText string
	//go:embed standard/traits.txt
	standardTraitsText string
)

// StandardClasses lists the standard resource classes; a class's id is its index.
var StandardClasses = lines(standardClassesText)

// StandardTraits lists the standard traits.
var StandardTraits = lines(standardTraitsText)

// CustomClassMinID is the first id given to a custom resource class.
const CustomClassMinID = 10000

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// SyncStandard inserts, through co, the standard classes and traits that are missing. It
// is idempotent and safe to run from several processes at once.
func SyncStandard(ctx context.Context, co *core.Core) error {
	ids := make([]int32, len(StandardClasses))
	for i := range ids {
		ids[i] = int32(i)
	}
	_, err := co.DB.Exec(ctx, `
		INSERT INTO resource_classes (id, name)
		SELECT * FROM unnest($1::int[], $2::text[])
		ON CONFLICT DO NOTHING`, ids, StandardClasses)
	if err != nil {
		return fmt.Errorf("ledger: sync standard resource classes: %w", err)
	}
	_, err = co.DB.Exec(ctx, `
		INSERT INTO traits (name)
		SELECT n FROM unnest($1::text[]) WITH ORDINALITY AS t(n, i)
		WHERE NOT EXISTS (SELECT 1 FROM traits WHERE name = n)
		ORDER BY i
		ON CONFLICT DO NOTHING`, StandardTraits)
	if err != nil {
		return fmt.Errorf("ledger: sync standard traits: %w", err)
	}
	return nil
}
