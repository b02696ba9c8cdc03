package placement

import (
	"testing"

	"github.com/berthd/berth/httpapi/wire"
)

// The bodies the load tool sends when it seeds (cmd/berth-load/load: Seed,
// ComputeNodeInventory), as encoding/json writes them.
const (
	SeedInventories = `{"resource_provider_generation":0,"inventories":{` +
		`"DISK_GB":{"total":4000,"reserved":100,"min_unit":1,"max_unit":4000,"step_size":1,"allocation_ratio":1},` +
		`"MEMORY_MB":{"total":262144,"reserved":4096,"min_unit":1,"max_unit":262144,"step_size":1,"allocation_ratio":1},` +
		`"VCPU":{"total":64,"reserved":0,"min_unit":1,"max_unit":64,"step_size":1,"allocation_ratio":4}}}`
	SeedTrait = "CUSTOM_BENCH_TRAIT"
)

// BenchmarkSeedBodies measures the decoding of the seeding's request
// bodies alone (parse, schema, typed body), without a database: the part
// of BenchmarkSeedWrites that the machine's noise does not blur.
func BenchmarkSeedBodies(b *testing.B) {
	create := `{"uuid":"0000002a-0000-4000-8000-00000000002a","name":"compute-42"}`
	aggregates := `{"aggregates":["00000002-aaaa-4000-8000-000000000000"],"resource_provider_generation":1}`
	traits := `{"traits":["` + SeedTrait + `"],"resource_provider_generation":2}`
	for _, tc := range []struct {
		name string
		run  func(body []byte) error
		body string
	}{
		{"create", func(body []byte) error {
			var p providerCreateBody
			return wire.DecodeJSONDoc(body, providerPostSchemaV1_14, &p, p.decodeDoc)
		}, create},
		{"inventories", func(body []byte) error {
			var ib inventoriesBody
			return wire.DecodeJSONDoc(body, putInventoriesSchemaCompiled, &ib, ib.decodeDoc)
		}, SeedInventories},
		{"aggregates", func(body []byte) error {
			var l []string
			var g int64
			return wire.DecodeJSONDoc(body, aggregatesSchemaV1_19, &l, func(doc any, _ []byte) bool {
				return wire.DocListAndGeneration(doc, "aggregates", &l, &g)
			})
		}, aggregates},
		{"traits", func(body []byte) error {
			var l []string
			var g int64
			return wire.DecodeJSONDoc(body, providerTraitsSchema, &l, func(doc any, _ []byte) bool {
				return wire.DocListAndGeneration(doc, "traits", &l, &g)
			})
		}, traits},
	} {
		b.Run(tc.name, func(b *testing.B) {
			body := []byte(tc.body)
			b.ReportAllocs()
			for b.Loop() {
				if err := wire.CheckJSON(body); err != nil {
					b.Fatal(err)
				}
				if err := tc.run(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
