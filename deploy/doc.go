// Package deploy holds no Go code: it is the home of berthd's deployment
// files (Dockerfile, kubernetes/, systemd/), and its tests check them
// statically, since no container engine or cluster runs where the tests
// do: every manifest parses, the objects refer to each other consistently
// (labels, ports, Secrets, the migration Job), every BERTH_* variable is
// one berthd knows, and the image and unit keep their hardening.
package deploy
