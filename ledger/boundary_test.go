package ledger_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

// TestErrorsLeaveAsFaults: every exported method of the Store and of
// each of its parts (the store types of ledger's packages) answers a
// database that went away with fault.ErrUnavailable (or refuses its
// arguments with another fault kind first): driver errors are translated
// at the ledger's boundary, so nothing above it looks at one. Each method
// is called through reflection with arguments that get past the usual
// early checks (a well-formed uuid for every string), after the proxy
// between the Store and PostgreSQL is cut.
func TestErrorsLeaveAsFaults(t *testing.T) {
	proxy, dbURL := ledgertest.NewProxy(t, ledgertest.NewDB(t))
	ctx := context.Background()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4,
		ConnectTimeout: time.Second, AcquireTimeout: time.Second, SnapshotRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ledgertest.MustCreate(t, store, "a", uuidA, "")
	proxy.Cut()

	// Methods that take no database round trip, run until their context
	// ends, or take callbacks.
	skip := map[string]bool{"Close": true, "OnChange": true, "ListenScheduling": true,
		"PoolStats": true, "SnapshotListening": true, "RegisterMetrics": true}
	// The Store and every part it holds.
	targets := []reflect.Value{reflect.ValueOf(store)}
	sv := reflect.ValueOf(store).Elem()
	for i := range sv.NumField() {
		if sv.Type().Field(i).IsExported() {
			targets = append(targets, sv.Field(i))
		}
	}
	unavailable := 0
	for _, target := range targets {
		typ := target.Type()
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			mt := m.Type
			if skip[m.Name] || mt.NumOut() == 0 || mt.Out(mt.NumOut()-1) != reflect.TypeFor[error]() {
				continue
			}
			args, ok := callArgs(mt)
			if !ok {
				t.Logf("%s.%s: arguments not built, not called", typ.Elem().Name(), m.Name)
				continue
			}
			t.Run(typ.Elem().Name()+"."+m.Name, func(t *testing.T) {
				cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				args[0] = target
				args[1] = reflect.ValueOf(cctx)
				out := m.Func.Call(args)
				err, _ := out[len(out)-1].Interface().(error)
				switch {
				case err == nil:
					t.Logf("no error (nothing to read for these arguments)")
				case errors.Is(err, fault.ErrUnavailable):
					unavailable++
				default:
					if _, ok := fault.As(err); !ok {
						t.Errorf("%s returned %v (%T), not one of fault's kinds", m.Name, err, err)
					}
				}
			})
		}
	}
	if unavailable < 40 {
		t.Errorf("only %d methods met the outage; the test no longer reaches the database", unavailable)
	}
}

// callArgs builds arguments for a method of type mt (receiver first),
// leaving the receiver and the context to the caller. ok is false when a
// parameter has no sensible stand-in (a function).
func callArgs(mt reflect.Type) ([]reflect.Value, bool) {
	if mt.NumIn() < 2 || mt.In(1) != reflect.TypeFor[context.Context]() {
		return nil, false
	}
	args := make([]reflect.Value, mt.NumIn())
	for i := 2; i < mt.NumIn(); i++ {
		v, ok := standIn(mt.In(i), 0)
		if !ok {
			return nil, false
		}
		args[i] = v
	}
	return args, true
}

// standIn is a value of type t that a method's checks accept: a uuid for
// strings, one element for slices, filled fields for structs.
func standIn(t reflect.Type, depth int) (reflect.Value, bool) {
	v := reflect.New(t).Elem()
	if depth > 4 {
		return v, true
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(uuidB)
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Slice:
		e, ok := standIn(t.Elem(), depth+1)
		if !ok {
			return v, false
		}
		v = reflect.Append(v, e)
	case reflect.Pointer:
		e, ok := standIn(t.Elem(), depth+1)
		if !ok {
			return v, false
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(e)
		v = p
	case reflect.Struct:
		if t.PkgPath() != "" && t.PkgPath() != reflect.TypeFor[ledger.Store]().PkgPath() &&
			!strings.HasPrefix(t.PkgPath(), reflect.TypeFor[ledger.Store]().PkgPath()+"/") {
			return v, true // time.Time and the like: zero
		}
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			f, ok := standIn(t.Field(i).Type, depth+1)
			if !ok {
				return v, false
			}
			v.Field(i).Set(f)
		}
	case reflect.Func, reflect.Chan, reflect.Interface:
		return v, false
	case reflect.Map:
		// nil
	default:
		// bool, float, byte: zero
	}
	return v, true
}
