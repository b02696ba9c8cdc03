// Package pgcluster runs a private PostgreSQL cluster on this machine: it
// finds (and, as root on Debian or Ubuntu, installs) the server binaries,
// creates a data directory with initdb, starts the postmaster listening only
// on a unix socket, waits until it accepts connections, creates databases in
// it and shuts it down. berthd uses it for its embedded database when no
// database URL is configured; test helpers use it for throwaway clusters.
//
// It drives the server binaries with os/exec and speaks just enough of the
// PostgreSQL wire protocol (startup, trust authentication and simple
// queries) to check readiness and create databases, so it needs no driver.
// When the calling process is root, the cluster's files belong to the
// postgres system user and the server runs as that user, because
// PostgreSQL refuses to run as root. It changes the permissions of no
// directory it did not create: the directories it is given must be
// reachable by that user already (MakeHome makes a home of its own for
// them, or takes over an empty one of the caller's, as mktemp -d makes),
// except for test clusters that ask for it (LoosenParents).
package pgcluster
