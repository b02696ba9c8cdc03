package load

import (
	"context"
	"fmt"
	"io"
	"time"
)

// NestedParams describes Placement's perfload nested shape: Trees trees of
// 7 providers each. The root (compute node) has DISK_GB and the trait
// COMPUTE_VOLUME_MULTI_ATTACH; two NUMA children have VCPU and MEMORY_MB
// and the trait HW_NUMA_ROOT; each NUMA node has an FPGA child (1 FPGA)
// and a GPU child (8 VGPU).
type NestedParams struct {
	Trees   int // default 1000
	Workers int // concurrent HTTP workers while seeding; default 8
}

// NestedTreeUUIDs names the providers of tree t: root, then per NUMA node
// n (0, 1) numa[n], fpga[n], gpu[n].
type NestedTreeUUIDs struct {
	Root string
	NUMA [2]string
	FPGA [2]string
	GPU  [2]string
}

// NestedTree returns the names and UUIDs of tree t's providers.
func NestedTree(t int) (names, uuids NestedTreeUUIDs) {
	names.Root = fmt.Sprintf("bench-nested-%04d", t)
	for n := 0; n < 2; n++ {
		names.NUMA[n] = fmt.Sprintf("%s-numa%d", names.Root, n)
		names.FPGA[n] = fmt.Sprintf("%s-numa%d-fpga", names.Root, n)
		names.GPU[n] = fmt.Sprintf("%s-numa%d-gpu", names.Root, n)
	}
	uuids.Root = NameUUID(names.Root)
	for n := 0; n < 2; n++ {
		uuids.NUMA[n] = NameUUID(names.NUMA[n])
		uuids.FPGA[n] = NameUUID(names.FPGA[n])
		uuids.GPU[n] = NameUUID(names.GPU[n])
	}
	return names, uuids
}

// SeedNested creates p.Trees nested trees over the API (7 providers and 7
// to 9 writes each); like Seed it resumes a partial run.
func SeedNested(ctx context.Context, c *Client, p NestedParams, log io.Writer) (*SeedResult, error) {
	if p.Trees < 1 {
		return nil, fmt.Errorf("nested: --trees must be at least 1")
	}
	if p.Workers <= 0 {
		p.Workers = 8
	}
	start, sent := time.Now(), c.Requests()
	root := map[string]InventoryBody{"DISK_GB": NewInventory(20480, 0, 1)}
	numa := map[string]InventoryBody{"VCPU": NewInventory(16, 0, 1), "MEMORY_MB": NewInventory(65536, 0, 1)}
	fpga := map[string]InventoryBody{"FPGA": NewInventory(1, 0, 1)}
	gpu := map[string]InventoryBody{"VGPU": NewInventory(8, 0, 1)}
	err := forEach(ctx, p.Trees, p.Workers, func(ctx context.Context, t int) error {
		names, ids := NestedTree(t)
		leaf := func(name, rp, parent string, inv map[string]InventoryBody, traits ...string) error {
			return c.SeedProvider(ctx, ProviderBody{UUID: rp, Name: name, ParentUUID: parent}, inv, traits...)
		}
		if err := leaf(names.Root, ids.Root, "", root, "COMPUTE_VOLUME_MULTI_ATTACH"); err != nil {
			return err
		}
		for n := 0; n < 2; n++ {
			if err := leaf(names.NUMA[n], ids.NUMA[n], ids.Root, numa, "HW_NUMA_ROOT"); err != nil {
				return err
			}
			if err := leaf(names.FPGA[n], ids.FPGA[n], ids.NUMA[n], fpga); err != nil {
				return err
			}
			if err := leaf(names.GPU[n], ids.GPU[n], ids.NUMA[n], gpu); err != nil {
				return err
			}
		}
		return nil
	}, NewMeter(log, "nested", "trees", p.Trees, 0))
	if err != nil {
		return nil, fmt.Errorf("nested: %w", err)
	}
	return newSeedResult(7*p.Trees, c.Requests()-sent, time.Since(start)), nil
}

// NestedQueries are the granular queries timed on the nested shape.
//
// "same-subtree" asks one unit of compute, accelerator and GPU that all sit
// under one NUMA node: each tree gives 2 candidates (one per NUMA node)
// where a query without same_subtree gives 8.
//
// "perfload" is modelled on the query of Placement's nested-perfload gate
// job, on this shape: disk from the root with its trait, compute from a
// NUMA root, an FPGA in the same subtree as that compute. The gate job's
// own trees, query and throughput run are the perfload command's
// (perfload.go).
func NestedQueries() []Query {
	return []Query{
		{"same-subtree", CandidatesQuery{
			Groups: []Group{
				{Suffix: "_COMPUTE", Resources: []Amount{{"VCPU", 1}, {"MEMORY_MB", 256}}},
				{Suffix: "_ACC", Resources: []Amount{{"FPGA", 1}}},
				{Suffix: "_GPU", Resources: []Amount{{"VGPU", 1}}},
			},
			GroupPolicy: "none",
			SameSubtree: []string{"_COMPUTE", "_ACC", "_GPU"},
		}.Path()},
		{"perfload", CandidatesQuery{
			Groups: []Group{
				{Resources: []Amount{{"DISK_GB", 10}}, Required: []string{"COMPUTE_VOLUME_MULTI_ATTACH"}},
				{Suffix: "_COMPUTE", Resources: []Amount{{"VCPU", 1}, {"MEMORY_MB", 256}}, Required: []string{"HW_NUMA_ROOT"}},
				{Suffix: "_ACC", Resources: []Amount{{"FPGA", 1}}},
			},
			GroupPolicy: "none",
			SameSubtree: []string{"_COMPUTE", "_ACC"},
		}.Path()},
	}
}
