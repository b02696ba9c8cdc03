// Command berthd serves the OpenStack Placement API on PostgreSQL.
//
//	berthd [serve] [flags]   run the server (the default command)
//	berthd migrate [flags]   apply database migrations and exit
//	berthd version           print the version
//
// Every flag can also be set by an environment variable; run
// `berthd --help` for the list. With no database URL, berthd runs its own
// PostgreSQL cluster in the data directory.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
