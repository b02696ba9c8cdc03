package authz

// Token scopes, as oslo.policy's scope_types.
const (
	ScopeProject = "project"
	ScopeSystem  = "system"
)

// Rule is one of Placement's registered policy rules.
type Rule struct {
	Name string
	// Check is the current default (Placement's check_str).
	Check string
	// Deprecated is the check string of the deprecated default, honoured
	// alongside Check ("Check or Deprecated") by the legacy set; empty if
	// the rule has none.
	Deprecated string
	// Scopes are the token scopes the rule accepts (scope_types) when a set
	// enforces scope; every Placement rule is project-scoped.
	Scopes []string
	// Operation says what the rule guards.
	Operation string
	// KeepInAdminSet keeps Check in the admin set, which otherwise makes
	// every operation admin-only.
	KeepInAdminSet bool
}

// Base rules that the operation rules refer to, as Placement's
// placement/policies/base.py.
const (
	RuleAdminAPI                         = "admin_api"
	RuleServiceAPI                       = "service_api"
	RuleAdminOrServiceAPI                = "admin_or_service_api"
	RuleProjectReaderAPI                 = "project_reader_api"
	RuleProjectReaderOrAdminOrServiceAPI = "project_reader_or_admin_or_service_api"
)

const (
	adminOrService      = "rule:" + RuleAdminOrServiceAPI
	service             = "rule:" + RuleServiceAPI
	projectReaderOrMore = "rule:" + RuleProjectReaderOrAdminOrServiceAPI
	// deprecatedAdmin is the deprecated default of every operation rule.
	deprecatedAdmin = "rule:" + RuleAdminAPI
)

var project = []string{ScopeProject}

// baseRules are the rules operation rules build on. They have no
// deprecated form of their own.
var baseRules = []Rule{
	{Name: RuleAdminAPI, Check: "role:admin", Scopes: project,
		Operation: "Default rule for most placement APIs."},
	{Name: RuleServiceAPI, Check: "role:service", Scopes: project,
		Operation: "Default rule for service-to-service placement APIs."},
	{Name: RuleAdminOrServiceAPI, Check: "role:admin or role:service", Scopes: project,
		Operation: "Default rule for most placement APIs: admin or service."},
	{Name: RuleProjectReaderAPI, Check: "role:reader and project_id:%(project_id)s", Scopes: project,
		Operation: "Default rule for project-level reader APIs."},
	{Name: RuleProjectReaderOrAdminOrServiceAPI,
		Check:  "rule:" + RuleProjectReaderAPI + " or " + adminOrService,
		Scopes: project, Operation: "Readers of the target project, admin or service."},
}

// operationRules are the rules httpapi enforces, one per operation, in
// Placement's names and with Placement's defaults.
var operationRules = []Rule{
	op("placement:resource_providers:list", adminOrService, "GET /resource_providers"),
	op("placement:resource_providers:create", adminOrService, "POST /resource_providers"),
	op("placement:resource_providers:show", adminOrService, "GET /resource_providers/{uuid}"),
	op("placement:resource_providers:update", adminOrService, "PUT /resource_providers/{uuid}"),
	op("placement:resource_providers:delete", adminOrService, "DELETE /resource_providers/{uuid}"),

	op("placement:resource_classes:list", adminOrService, "GET /resource_classes"),
	op("placement:resource_classes:create", adminOrService, "POST /resource_classes"),
	op("placement:resource_classes:show", adminOrService, "GET /resource_classes/{name}"),
	op("placement:resource_classes:update", adminOrService, "PUT /resource_classes/{name}"),
	op("placement:resource_classes:delete", adminOrService, "DELETE /resource_classes/{name}"),

	op("placement:resource_providers:inventories:list", adminOrService, "GET /resource_providers/{uuid}/inventories"),
	op("placement:resource_providers:inventories:create", adminOrService, "POST /resource_providers/{uuid}/inventories"),
	op("placement:resource_providers:inventories:show", adminOrService, "GET /resource_providers/{uuid}/inventories/{resource_class}"),
	op("placement:resource_providers:inventories:update", adminOrService,
		"PUT /resource_providers/{uuid}/inventories, PUT /resource_providers/{uuid}/inventories/{resource_class}"),
	op("placement:resource_providers:inventories:delete", adminOrService,
		"DELETE /resource_providers/{uuid}/inventories, DELETE /resource_providers/{uuid}/inventories/{resource_class}"),

	op("placement:resource_providers:aggregates:list", adminOrService, "GET /resource_providers/{uuid}/aggregates"),
	op("placement:resource_providers:aggregates:update", adminOrService, "PUT /resource_providers/{uuid}/aggregates"),

	op("placement:resource_providers:usages", adminOrService, "GET /resource_providers/{uuid}/usages"),
	op("placement:usages", projectReaderOrMore, "GET /usages (target: the project_id asked about)"),

	op("placement:traits:list", adminOrService, "GET /traits"),
	op("placement:traits:show", adminOrService, "GET /traits/{name}"),
	op("placement:traits:update", adminOrService, "PUT /traits/{name}"),
	op("placement:traits:delete", adminOrService, "DELETE /traits/{name}"),
	op("placement:resource_providers:traits:list", adminOrService, "GET /resource_providers/{uuid}/traits"),
	op("placement:resource_providers:traits:update", adminOrService, "PUT /resource_providers/{uuid}/traits"),
	op("placement:resource_providers:traits:delete", adminOrService, "DELETE /resource_providers/{uuid}/traits"),

	op("placement:allocations:manage", adminOrService, "POST /allocations"),
	op("placement:allocations:list", adminOrService, "GET /allocations/{consumer_uuid}"),
	op("placement:allocations:update", adminOrService, "PUT /allocations/{consumer_uuid}"),
	op("placement:allocations:delete", adminOrService, "DELETE /allocations/{consumer_uuid}"),
	op("placement:resource_providers:allocations:list", adminOrService, "GET /resource_providers/{uuid}/allocations"),

	op("placement:allocation_candidates:list", adminOrService, "GET /allocation_candidates"),

	op("placement:reshaper:reshape", service, "POST /reshaper"),

	// Berth's own operations: select and claim in one step. They write
	// allocations, so they default like the allocation rules.
	op("berth:claims:create", adminOrService, "POST /claims"),
	op("berth:claims:reschedule", adminOrService, "POST /claims/{consumer_uuid}/reschedule"),
	op("berth:claims:move", adminOrService, "POST /claims/{consumer_uuid}/move, .../move/confirm, .../move/revert"),
	op("berth:claims:show", adminOrService, "GET /claims/{consumer_uuid}"),
	op("berth:claims:update", adminOrService, "PATCH /claims/{consumer_uuid}"),
	// Evacuating a host moves its consumers: a move's rule.
	op("berth:resource_providers:evacuate", adminOrService, "POST /resource_providers/{uuid}/evacuate, .../restore"),
	// Read-only, but it shows the whole cloud's free capacity: admin or
	// service, like GET /allocation_candidates.
	op("berth:capacity:show", adminOrService, "GET /capacity"),

	// Scheduling (docs/policies.md): policy units, scheduling policies,
	// scriptlets and server config shape every claim, so they are the
	// administrator's, reads included.
	op("berth:policy_units:list", admin, "GET /policy_units"),
	op("berth:scheduling_policies:list", admin, "GET /scheduling_policies"),
	op("berth:scheduling_policies:create", admin, "POST /scheduling_policies"),
	op("berth:scheduling_policies:show", admin, "GET /scheduling_policies/{name}"),
	op("berth:scheduling_policies:update", admin, "PUT /scheduling_policies/{name}"),
	op("berth:scheduling_policies:delete", admin, "DELETE /scheduling_policies/{name}"),
	op("berth:scheduling_policies:balance", admin, "GET /scheduling_policies/{name}/balance"),
	op("berth:scheduling_policies:shadow:start", admin, "PUT /scheduling_policies/{name}/shadow"),
	op("berth:scheduling_policies:shadow:show", admin, "GET /scheduling_policies/{name}/shadow"),
	op("berth:scheduling_policies:shadow:stop", admin, "DELETE /scheduling_policies/{name}/shadow"),
	op("berth:scriptlets:list", admin, "GET /scriptlets"),
	op("berth:scriptlets:show", admin, "GET /scriptlets/{name}"),
	op("berth:scriptlets:update", admin, "PUT /scriptlets/{name}"),
	op("berth:scriptlets:delete", admin, "DELETE /scriptlets/{name}"),
	op("berth:scriptlets:test", admin, "POST /scriptlets/{name}/test"),
	op("berth:scriptlets:shadow:start", admin, "PUT /scriptlets/{name}/shadow"),
	op("berth:scriptlets:shadow:show", admin, "GET /scriptlets/{name}/shadow"),
	op("berth:scriptlets:shadow:stop", admin, "DELETE /scriptlets/{name}/shadow"),
	op("berth:config:show", admin, "GET /config"),
	op("berth:config:update", admin, "PATCH /config"),
	// Quotas (docs/quotas.md): a project's readers may see its own
	// limits and usage, as GET /usages; every project's, and the
	// registered limits, are the administrator's (and the service's), and
	// so are changes.
	op("berth:limits:show", projectReaderOrMore, "GET /limits/{project_id} (target: that project)"),
	op("berth:limits:list", adminOrService, "GET /limits, GET /registered_limits"),
	op("berth:limits:update", admin, "PUT /limits/{project_id}, DELETE /limits/{project_id}, PUT /registered_limits"),
	// The allocation audit reads every consumer and provider and its fix
	// deletes allocations: the administrator's.
	op("berth:audit:read", admin, "GET /audit"),
	op("berth:audit:fix", admin, "POST /audit/fix"),
	// The feed of preempted consumers (docs/preemption.md): every
	// project's, read by conductors and agents with the service role.
	agentOp("berth:preemptions:list", adminOrService, "GET /preemptions"),
	// Compute agents report their provider's state with the service
	// role, even under the admin set.
	agentOp("berth:resource_providers:state:show", adminOrService, "GET /resource_providers/{uuid}/state"),
	agentOp("berth:resource_providers:state:update", adminOrService, "PUT /resource_providers/{uuid}/state"),
	op("berth:resource_providers:placement_keys:list", adminOrService, "GET /resource_providers/{uuid}/placement_keys"),
	op("berth:resource_providers:placement_keys:update", adminOrService, "PUT /resource_providers/{uuid}/placement_keys"),
	// Checked by PUT /resource_providers/{uuid}/placement_keys when the
	// write adds, changes or removes a reserved key (name starting "_").
	op("berth:resource_providers:placement_keys:reserved", admin, "PUT /resource_providers/{uuid}/placement_keys with reserved keys"),
}

// admin is the check of Berth's administrator-only operations.
const admin = "rule:" + RuleAdminAPI

// agentOp is an operation rule that the admin set leaves at its default
// check instead of admin-only: what agents running with the service role
// must be able to do.
func agentOp(name, check, operation string) Rule {
	r := op(name, check, operation)
	r.KeepInAdminSet = true
	return r
}

func op(name, check, operation string) Rule {
	return Rule{Name: name, Check: check, Deprecated: deprecatedAdmin, Scopes: project, Operation: operation}
}

// Defaults returns Placement's registered rules: the base rules, then one
// rule per operation.
func Defaults() []Rule {
	return append(append([]Rule(nil), baseRules...), operationRules...)
}

// OperationRules returns the names of the rules that guard operations, the
// ones httpapi enforces.
func OperationRules() []string {
	names := make([]string, len(operationRules))
	for i, r := range operationRules {
		names[i] = r.Name
	}
	return names
}

// Built-in rule sets.
const (
	// SetAdmin requires the admin role for every operation, scope
	// unchecked. It is berthd's default.
	SetAdmin = "admin"
	// SetSecure is Placement's current defaults with scope enforced.
	SetSecure = "secure"
	// SetLegacy is Placement's deprecated defaults: each operation rule is
	// its current default or its deprecated one (rule:admin_api), with
	// scope enforced.
	SetLegacy = "legacy"
	// SetOpen allows every operation to every authenticated principal.
	SetOpen = "open"
)

// Sets lists the built-in rule sets.
func Sets() []string { return []string{SetAdmin, SetSecure, SetLegacy, SetOpen} }

// set describes how a built-in set derives each rule's check string.
type set struct {
	enforceScope bool
	// check returns the effective check string of r.
	check func(r Rule, isOperation bool) string
}

var sets = map[string]set{
	SetAdmin: {check: func(r Rule, isOp bool) string {
		if isOp && !r.KeepInAdminSet {
			return deprecatedAdmin
		}
		return r.Check
	}},
	SetSecure: {enforceScope: true, check: func(r Rule, _ bool) string { return r.Check }},
	SetLegacy: {enforceScope: true, check: func(r Rule, _ bool) string {
		if r.Deprecated == "" || r.Deprecated == r.Check {
			return r.Check
		}
		return "(" + r.Check + ") or (" + r.Deprecated + ")"
	}},
	SetOpen: {check: func(r Rule, isOp bool) string {
		if isOp {
			return "@"
		}
		return r.Check
	}},
}
