package scriptlet

import (
	"slices"

	"go.starlark.net/starlark"

	"github.com/berthd/berth/scheduler"
)

// The scriptlet's request: Berth's claim fields and LXD's instance
// placement request (scriptlet.InstancePlacement: api.InstancesPost with
// reason and project) in one object, read as request.x or request["x"].
// See docs/scheduling.md, "Coming from LXD or Incus".

// InstanceTypeContainer and InstanceTypeVM are LXD's instance types; an
// instance without a type is a container, as LXD defaults it.
const (
	InstanceTypeContainer = "container"
	InstanceTypeVM        = "virtual-machine"
)

// berthRequestFields are Berth's own fields of the request.
var berthRequestFields = []string{"consumer_type", "consumer_uuid", "exclude", "keys", "name", "project",
	"properties", "reason", "resources", "target", "traits", "user"}

// lxdRequestFields are the fields of LXD's InstancePlacement, with the
// value each has when the instance does not give it.
var lxdRequestFields = map[string]func() starlark.Value{
	"architecture":  emptyString,
	"config":        emptyDict,
	"description":   emptyString,
	"devices":       emptyDict,
	"disk_only":     falseValue,
	"ephemeral":     falseValue,
	"instance_type": emptyString,
	"profiles":      emptyList,
	"restore":       emptyString,
	"source":        func() starlark.Value { return instanceSource(nil, toStarlark) },
	"start":         falseValue,
	"stateful":      falseValue,
	"type":          func() starlark.Value { return starlark.String(InstanceTypeContainer) },
}

func emptyString() starlark.Value { return starlark.String("") }
func falseValue() starlark.Value  { return starlark.False }
func emptyList() starlark.Value   { return frozenList(nil) }
func emptyDict() starlark.Value {
	d := starlark.NewDict(0)
	d.Freeze()
	return d
}
func zeroInt() starlark.Value { return starlark.MakeInt(0) }

// requestValue is req as the scriptlet's request: Berth's fields, LXD's,
// "instance" (the document as sent, a dict; None without one) and every
// other field of the document. name and project are the instance's when
// it has them (LXD's), else the claim's name and project_id. Its values
// are frozen: filters and weighers of one Rank share it.
func requestValue(req *scheduler.Request) starlark.Value { return newRequestValue(req, toStarlark) }

// placementRequestValue is requestValue with the instance's lists and
// dicts mutable, as LXD's instance_placement gets them: a request of its
// own, for the one call.
func placementRequestValue(req *scheduler.Request) starlark.Value {
	return newRequestValue(req, thawedStarlark)
}

func newRequestValue(req *scheduler.Request, conv func(any) starlark.Value) starlark.Value {
	names := requestNames
	if len(req.Instance) > 0 {
		names = slices.Clone(names)
		for k := range req.Instance {
			names = append(names, k)
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	return lazyObject("InstancePlacement", names, func(name string) starlark.Value { return requestField(req, name, conv) })
}

// requestNames are the request's fields without an instance document,
// sorted (shared, never written).
var requestNames = func() []string {
	names := slices.Concat(berthRequestFields, []string{"instance"})
	for k := range lxdRequestFields {
		names = append(names, k)
	}
	slices.Sort(names)
	return slices.Compact(names)
}()

// requestField builds field name of req's request; conv converts the
// instance document's values.
func requestField(req *scheduler.Request, name string, conv func(any) starlark.Value) starlark.Value {
	inst := req.Instance
	switch name {
	case "consumer_uuid":
		return starlark.String(req.ConsumerUUID)
	case "name":
		return stringOr(inst["name"], req.Name)
	case "project":
		return stringOr(inst["project"], req.ProjectID)
	case "user":
		return starlark.String(req.UserID)
	case "consumer_type":
		return starlark.String(req.ConsumerType)
	case "reason":
		return starlark.String(req.Reason)
	case "resources":
		return intDict(req.Resources)
	case "traits":
		return frozenStruct("traits", starlark.StringDict{
			"required": stringList(req.Required), "forbidden": stringList(req.Forbidden)})
	case "properties":
		return toStarlark(req.Properties)
	case "keys":
		keys := make([]starlark.Value, len(req.Keys))
		for i, k := range req.Keys {
			keys[i] = frozenStruct("key", starlark.StringDict{"name": starlark.String(k.Name),
				"value": starlark.Float(k.Value), "weight": starlark.Float(k.Weight), "system": starlark.Bool(k.System)})
		}
		return frozenList(keys)
	case "target":
		return starlark.String(req.Target)
	case "exclude":
		return stringList(req.Avoid)
	case "instance":
		if inst == nil {
			return starlark.None
		}
		return conv(inst)
	case "source":
		src, _ := inst["source"].(map[string]any)
		return instanceSource(src, conv)
	}
	if v, ok := inst[name]; ok && v != nil {
		return conv(v)
	}
	if dflt, ok := lxdRequestFields[name]; ok {
		return thawIf(dflt(), conv)
	}
	return starlark.None // a field of the document that is null
}

// stringOr is v when it is a non-empty string, else dflt.
func stringOr(v any, dflt string) starlark.Value {
	if s, ok := v.(string); ok && s != "" {
		return starlark.String(s)
	}
	return starlark.String(dflt)
}

// instanceSourceFields are the fields of LXD's and Incus's
// InstanceSource (the union: container_only, source_disk_size,
// conversion_options and override_snapshot_profiles are LXD's,
// refresh_exclude_older Incus's) with their zero values, which the
// request carries whether set or not.
var instanceSourceFields = map[string]func() starlark.Value{
	"alias": emptyString, "allow_inconsistent": falseValue, "base-image": emptyString, "certificate": emptyString,
	"container_only": falseValue, "conversion_options": emptyList,
	"fingerprint": emptyString, "instance_only": falseValue, "live": falseValue, "mode": emptyString,
	"operation": emptyString, "override_snapshot_profiles": falseValue, "project": emptyString,
	"properties": emptyDict, "protocol": emptyString, "refresh": falseValue, "refresh_exclude_older": falseValue,
	"secret": emptyString, "secrets": emptyDict, "server": emptyString,
	"source": emptyString, "source_disk_size": zeroInt, "type": emptyString,
}

// thawIf is an empty default (a frozen empty list or dict) as conv would
// make it: mutable when conv leaves values mutable.
func thawIf(v starlark.Value, conv func(any) starlark.Value) starlark.Value {
	switch v := v.(type) {
	case *starlark.List:
		if v.Len() == 0 {
			return conv([]any{})
		}
	case *starlark.Dict:
		if v.Len() == 0 {
			return conv(map[string]any{})
		}
	}
	return v
}

// instanceSource is LXD's InstanceSource: the fields of src over the
// zero values.
func instanceSource(src map[string]any, conv func(any) starlark.Value) starlark.Value {
	names := make([]string, 0, len(instanceSourceFields)+len(src))
	for k := range instanceSourceFields {
		names = append(names, k)
	}
	for k := range src {
		names = append(names, k)
	}
	slices.Sort(names)
	return lazyObject("InstanceSource", slices.Compact(names), func(name string) starlark.Value {
		if v, ok := src[name]; ok && v != nil {
			return conv(v)
		}
		if dflt, ok := instanceSourceFields[name]; ok {
			return thawIf(dflt(), conv)
		}
		return starlark.None
	})
}
