package engine

import (
	"errors"
	"fmt"
)

// ErrInvalid is the kind of the engine's rejections: a request that names
// something that does not exist. The ledger's ErrInvalid is this same
// value, so callers test for either with errors.Is.
var ErrInvalid = errors.New("invalid")

// UnknownNameError reports a resource class or trait that does not exist.
// Its message is Placement's ("No such trait(s): X.").
type UnknownNameError struct {
	Trait bool // a trait; otherwise a resource class
	Name  string
}

func (e *UnknownNameError) Error() string {
	if e.Trait {
		return fmt.Sprintf("No such trait(s): %s.", e.Name)
	}
	return fmt.Sprintf("No such resource class %s.", e.Name)
}

// Unwrap makes an UnknownNameError an ErrInvalid.
func (e *UnknownNameError) Unwrap() error { return ErrInvalid }
