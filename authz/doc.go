// Package authz decides whether a principal may perform a Placement
// operation. It owns Placement's policy rule names and their default check
// strings (placement/policies/*.py), a parser and evaluator for the subset
// of oslo.policy's check language those defaults and ordinary overrides
// need, and the built-in rule sets berthd can run with:
//
//   - admin: every operation needs the admin role (berthd's default).
//   - secure: Placement's current defaults ([oslo_policy]
//     enforce_new_defaults and enforce_scope both true): admin or service
//     for most operations, service only for reshapes, project readers for
//     their own project's usages; system-scoped tokens are refused.
//   - legacy: the deprecated defaults (enforce_new_defaults false,
//     enforce_scope true): each rule's new check or its deprecated
//     "rule:admin_api".
//   - open: every operation allowed to every authenticated user.
//
// Overrides (a policy file, like oslo.policy's policy.yaml) replace single
// rules of a set. The package knows nothing about HTTP: httpapi turns a
// request into Credentials and a Target and asks an Enforcer; the daemon
// builds the Enforcer from configuration.
package authz
