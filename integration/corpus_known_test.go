package integration

import "strings"

// knownDifferences are the differences from Placement the replay still
// finds, each with the reason it is not fixed yet. A difference listed
// here is reported with t.Log, not as a failure; any other difference
// fails the test. Keys are "<session>/<step name>"; values are substrings
// of the accepted difference lines. Remove entries as they are fixed.
var knownDifferences = map[string][]string{
	// Which candidates a limit keeps: Placement takes the first N of a
	// Python set of allocation requests (_merge_candidates), whose order
	// comes from hashes and rows without ORDER BY: not defined (the
	// candidates are compared as a set without a limit, and match).
	"candidates/candidates limit 1":              {"body"},
	"candidates/candidates limit 2":              {"body"},
	"bandwidth/candidates port with limit":       {"body"},
	"candidates/candidates limit 3 with sharing": {"body"},
	// Placement broken: with numbered groups, its unnumbered group's
	// requests that a sharing provider alone satisfies are collected in a
	// set whose equality ignores the anchor tree, so only one of the
	// sharing disk's anchors survives (AllocationRequest.__eq__ in
	// objects/allocation_candidate.py) and the merge with the numbered
	// groups drops cn1+disk and cn2+disk. Without numbered groups it
	// returns them, as Berth always does.
	"candidates/candidates granular with unnumbered": {"body"},
	// Placement broken: a write for an unknown consumer that writes
	// nothing (POST /allocations with empty allocations) or is refused
	// before its transaction (an unknown provider: the allocation list is
	// built outside the clean-up of new consumers) leaves an orphan
	// consumer record (generation 0, no allocations) that later writes
	// with consumer_generation null trip over, and that DELETE then
	// reports as having no allocations. Berth keeps no consumer without
	// allocations.
	"listings/put empty allocations for new consumer":            {"body", "header content-type", "status"},
	"checks/alloc: after a refused first write, null generation": {"status", "header content-type", "body"},
	"checks/alloc: remove what that wrote":                       {"status", "header content-type", "body"},
	"listings/consumer new after 1.0 list":                       {"body"},
	// Placement broken on PostgreSQL: a duplicate POST .../inventories is
	// answered with psycopg2's unique-violation text, SQL included.
	"protocol/inventory POST exists":          {"body $.errors[0].detail"},
	"checks/inventory: post stale and exists": {"body $.errors[0].detail"},
}

// knownDifference reports whether diff, found at step name of session, is
// listed in knownDifferences.
func knownDifference(session, name, diff string) bool {
	for _, s := range knownDifferences[session+"/"+name] {
		if strings.Contains(diff, s) {
			return true
		}
	}
	return false
}
