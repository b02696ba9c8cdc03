// Package cloud is the scheduler's view of the cloud, read through the
// ledger: the costly provider fields a policy asks for (reported state,
// placement keys, consumer counts) for one claim's candidates, and what
// scriptlets and scheduler units query (members, instances, consumer
// groups, consumer keys; scheduler.CloudData). Every answer reads
// committed data at the time of the call. Claims take it as claims.Cloud.
package cloud
