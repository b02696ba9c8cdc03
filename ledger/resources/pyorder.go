package resources

// pySetOrder returns ids, without repeats, in the order CPython (3.x, as
// Placement runs on) iterates a set built by adding them in this order:
// small non-negative integers hash to themselves, the table starts with 8
// slots, collisions probe 9 slots linearly and then jump by the perturbed
// recurrence, and the table is rebuilt 4 times larger when it is 3/5 full.
//
// Placement keeps resource class ids in such sets where the order shows:
// the classes named in "Inventory for '...' on resource provider '...'
// invalid." and the order in which a PUT inserts new inventory rows, which
// is the order it lists them in afterwards. So a custom class (ids from
// 10000) can come before a standard one: set([10, 10000]) iterates as
// 10000, 10.
func pySetOrder(ids []int64) []int64 {
	const (
		minSize      = 8
		linearProbes = 9
		perturbShift = 5
	)
	table := make([]int64, minSize)
	full := make([]bool, minSize)
	mask := uint64(minSize - 1)
	n := 0
	// slot returns where key is, or the empty slot where it would go.
	slot := func(table []int64, full []bool, mask uint64, key int64) uint64 {
		h := uint64(key)
		perturb := h
		i := h & mask
		for {
			probes := uint64(0)
			if i+linearProbes <= mask {
				probes = linearProbes
			}
			for j := uint64(0); j <= probes; j++ {
				if !full[i+j] || table[i+j] == key {
					return i + j
				}
			}
			perturb >>= perturbShift
			i = (i*5 + 1 + perturb) & mask
		}
	}
	for _, id := range ids {
		i := slot(table, full, mask, id)
		if full[i] {
			continue
		}
		table[i], full[i] = id, true
		n++
		if uint64(n)*5 < mask*3 {
			continue
		}
		size := minSize
		for size <= n*4 {
			size <<= 1
		}
		newTable, newFull, newMask := make([]int64, size), make([]bool, size), uint64(size-1)
		for k, key := range table {
			if full[k] {
				j := slot(newTable, newFull, newMask, key)
				newTable[j], newFull[j] = key, true
			}
		}
		table, full, mask = newTable, newFull, newMask
	}
	out := make([]int64, 0, n)
	for k, key := range table {
		if full[k] {
			out = append(out, key)
		}
	}
	return out
}
