package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// StackItemType tags the variant of a StackItem.
type StackItemType string

const (
	// ExplicitCall calls a function with argument expressions; it is only
	// valid at the bottom of a stack.
	ExplicitCall StackItemType = "ExplicitCall"
	// LocalCall enters the function called by a statement of the frame
	// below; it is only valid on a non-empty stack.
	LocalCall StackItemType = "LocalCall"
)

// StackItem is one frame of an execution context's stack: a tagged union
// whose Type says which fields are meaningful.
//
//	ExplicitCall: MethodPointer, ThisArgumentExpression (optional; required
//	              when MethodPointer.DefinedOnType is set), PositionalArgumentsExpressions
//	LocalCall:    ExpressionID
//
// Build one with NewExplicitCall or NewLocalCall; Validate checks one that
// came from elsewhere.
//
// The tags name the JSON members and say which variant each belongs to, for
// the strict decoder (strictplan.go); MarshalJSON writes the variant's
// members itself.
type StackItem struct {
	Type StackItemType `json:"type" decode:"tag=ExplicitCall|LocalCall"`

	MethodPointer                  MethodPointer `json:"methodPointer" decode:"variants=ExplicitCall"`
	ThisArgumentExpression         string        `json:"thisArgumentExpression" decode:"variants=ExplicitCall?"` // "" when absent
	PositionalArgumentsExpressions []string      `json:"positionalArgumentsExpressions" decode:"variants=ExplicitCall"`

	ExpressionID ExpressionID `json:"expressionId" decode:"variants=LocalCall"`
}

// ErrBadStackItem is wrapped by StackItem.Validate errors.
var ErrBadStackItem = errors.New("invalid stack item")

// NewExplicitCall returns an ExplicitCall of fn with positional argument
// expressions args. For a method, set ThisArgumentExpression on the result.
func NewExplicitCall(fn MethodPointer, args ...string) StackItem {
	if args == nil {
		args = []string{}
	}
	return StackItem{Type: ExplicitCall, MethodPointer: fn, PositionalArgumentsExpressions: args}
}

// NewLocalCall returns a LocalCall into the function called by statement id.
func NewLocalCall(id ExpressionID) StackItem {
	return StackItem{Type: LocalCall, ExpressionID: id}
}

// Validate checks the item on its own (not against a stack): a known type,
// the fields of that type well formed, none of the other's set.
func (s StackItem) Validate() error {
	switch s.Type {
	case ExplicitCall:
		if s.ExpressionID != "" {
			return fmt.Errorf("%w: ExplicitCall with an expressionId", ErrBadStackItem)
		}
		if err := s.MethodPointer.Validate(); err != nil {
			return fmt.Errorf("%w: ExplicitCall of %s: %w", ErrBadStackItem, s.MethodPointer, err)
		}
		if s.MethodPointer.DefinedOnType != "" && s.ThisArgumentExpression == "" {
			return fmt.Errorf("%w: ExplicitCall of method %s needs thisArgumentExpression", ErrBadStackItem, s.MethodPointer)
		}
		for i, arg := range s.PositionalArgumentsExpressions {
			if arg == "" {
				return fmt.Errorf("%w: ExplicitCall of %s: positional argument %d is empty", ErrBadStackItem, s.MethodPointer, i)
			}
		}
	case LocalCall:
		if s.MethodPointer != (MethodPointer{}) || s.ThisArgumentExpression != "" || len(s.PositionalArgumentsExpressions) > 0 {
			return fmt.Errorf("%w: LocalCall with ExplicitCall fields", ErrBadStackItem)
		}
		if _, _, err := s.ExpressionID.Split(); err != nil {
			return fmt.Errorf("%w: LocalCall: %w", ErrBadStackItem, err)
		}
	default:
		return fmt.Errorf("%w: unknown type %q", ErrBadStackItem, s.Type)
	}
	return nil
}

// Clone returns a deep copy.
func (s StackItem) Clone() StackItem {
	s.PositionalArgumentsExpressions = slices.Clone(s.PositionalArgumentsExpressions)
	return s
}

// String describes the item for messages and logs.
func (s StackItem) String() string {
	switch s.Type {
	case ExplicitCall:
		return fmt.Sprintf("ExplicitCall %s", s.MethodPointer)
	case LocalCall:
		return fmt.Sprintf("LocalCall %s", s.ExpressionID)
	}
	return fmt.Sprintf("StackItem(%q)", s.Type)
}

type explicitCallJSON struct {
	Type                           StackItemType `json:"type"`
	MethodPointer                  MethodPointer `json:"methodPointer"`
	ThisArgumentExpression         string        `json:"thisArgumentExpression,omitempty"`
	PositionalArgumentsExpressions []string      `json:"positionalArgumentsExpressions"`
}

type localCallJSON struct {
	Type         StackItemType `json:"type"`
	ExpressionID ExpressionID  `json:"expressionId"`
}

// MarshalJSON writes the fields of the item's variant only.
func (s StackItem) MarshalJSON() ([]byte, error) {
	switch s.Type {
	case ExplicitCall:
		args := s.PositionalArgumentsExpressions
		if args == nil {
			args = []string{}
		}
		return json.Marshal(explicitCallJSON{s.Type, s.MethodPointer, s.ThisArgumentExpression, args})
	case LocalCall:
		return json.Marshal(localCallJSON{s.Type, s.ExpressionID})
	}
	return nil, fmt.Errorf("%w: unknown type %q", ErrBadStackItem, s.Type)
}

// UnmarshalJSON decodes strictly: the type tag and its variant's required
// fields.
func (s *StackItem) UnmarshalJSON(b []byte) error { return unmarshalStrict(b, s) }
