package engine

// provTable holds a snapshot's providers by dense index, in chunks of
// provChunk records. Snapshots derived from one another share the chunks
// nobody changed, so publishing a snapshot in which k providers changed
// copies the list of chunks and the k (at most) touched chunks, not every
// provider: a claim batch's patch costs the same at 1,000 providers as at
// 100,000 (BenchmarkPatch). A provTable is immutable once in a snapshot;
// only one being built (or a private scratch copy) is changed with set.
type provTable struct {
	chunks []*provChunkRecords
	n      int
}

const (
	provChunkBits = 8
	provChunk     = 1 << provChunkBits
	provChunkMask = provChunk - 1
)

// provChunkRecords is one chunk: the records of provChunk consecutive
// indexes (the last chunk's tail past the table's length is nil).
type provChunkRecords [provChunk]*ProviderRecord

// indexedRecord is the record p for index i: a change with applies.
type indexedRecord struct {
	i int32
	p *ProviderRecord
}

// newProvTable returns a table of list's records, in order.
func newProvTable(list []*ProviderRecord) provTable {
	t := provTable{n: len(list), chunks: make([]*provChunkRecords, 0, (len(list)+provChunkMask)/provChunk)}
	for start := 0; start < len(list); start += provChunk {
		c := new(provChunkRecords)
		copy(c[:], list[start:min(start+provChunk, len(list))])
		t.chunks = append(t.chunks, c)
	}
	return t
}

// at returns provider i.
func (t *provTable) at(i int32) *ProviderRecord {
	return t.chunks[i>>provChunkBits][i&provChunkMask]
}

// len is the number of providers.
func (t *provTable) len() int { return t.n }

// list returns every record, in order, in a new slice.
func (t *provTable) list() []*ProviderRecord {
	out := make([]*ProviderRecord, 0, t.n)
	for _, c := range t.chunks {
		out = append(out, c[:min(provChunk, t.n-len(out))]...)
	}
	return out
}

// with returns a table in which the records of changed, sorted by index
// without repeats, replace those at their indexes; t is left as it was.
// It copies the list of chunks and the chunks changed touches.
func (t *provTable) with(changed []indexedRecord) provTable {
	out := provTable{n: t.n, chunks: make([]*provChunkRecords, len(t.chunks))}
	copy(out.chunks, t.chunks)
	copied := int32(-1)
	for _, c := range changed {
		ci := c.i >> provChunkBits
		if ci != copied {
			cp := *t.chunks[ci]
			out.chunks[ci], copied = &cp, ci
		}
		out.chunks[ci][c.i&provChunkMask] = c.p
	}
	return out
}

// clone returns a deep copy of the table's chunks (not of the records),
// which may be changed with set.
func (t *provTable) clone() provTable {
	out := provTable{n: t.n, chunks: make([]*provChunkRecords, len(t.chunks))}
	for i, c := range t.chunks {
		cp := *c
		out.chunks[i] = &cp
	}
	return out
}

// set replaces provider i. Only for a table no snapshot shares (see clone).
func (t *provTable) set(i int32, p *ProviderRecord) {
	t.chunks[i>>provChunkBits][i&provChunkMask] = p
}
