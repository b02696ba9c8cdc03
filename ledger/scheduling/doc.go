// Package scheduling stores what the scheduler reads beyond Placement's
// data: the scheduling catalogue (Catalogue: policies, scriptlets, the
// scheduling config and active shadows, and the notification of their
// changes: policy.go, scriptlet.go, config.go, shadow.go), and what agents
// report of their providers and scheduler units and scriptlets ask of the
// cloud (Cloud: reported state, placement keys, evacuated hosts,
// instances, consumer counts, members: state.go, placement_keys.go,
// evacuation.go, cloud.go).
package scheduling
