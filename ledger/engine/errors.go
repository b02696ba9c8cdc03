package engine

import (
	"fmt"

	"github.com/berthd/berth/internal/fault"
)

// UnknownNameError reports a resource class or trait that does not exist.
// Its message is Placement's ("No such trait(s): X."). It is a
// fault.ErrInvalid.
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

// Unwrap makes an UnknownNameError a fault.ErrInvalid.
func (e *UnknownNameError) Unwrap() error { return fault.ErrInvalid }
