// Package protocoltest helps tests read what a client received: the
// expression updates of a run, in arrival order, as an IDE would fold them.
package protocoltest

import (
	"slices"

	"github.com/ripple-run/ripple/protocol"
)

// Updates are expression updates in the order a client received them.
type Updates []protocol.ExpressionUpdate

// Latest returns the last update of an expression, or nil.
func (us Updates) Latest(id string) *protocol.ExpressionUpdate {
	for i := len(us) - 1; i >= 0; i-- {
		if string(us[i].ExpressionID) == id {
			return &us[i]
		}
	}
	return nil
}

// Values maps each expression to its final preview ("Panic: msg" for a
// Panic); expressions whose last update is Pending are left out.
func (us Updates) Values() map[string]string {
	out := map[string]string{}
	for _, u := range us {
		switch u.Payload.Type {
		case protocol.PayloadValue:
			out[string(u.ExpressionID)] = u.Payload.Preview
		case protocol.PayloadPanic:
			out[string(u.ExpressionID)] = "Panic: " + u.Payload.Message
		default:
			delete(out, string(u.ExpressionID))
		}
	}
	return out
}

// Computed lists, in order, the expressions that got a fresh (not
// fromCache) value or Panic.
func (us Updates) Computed() []string {
	var out []string
	for _, u := range us {
		if u.Payload.Type != protocol.PayloadPending && !u.FromCache && !slices.Contains(out, string(u.ExpressionID)) {
			out = append(out, string(u.ExpressionID))
		}
	}
	return out
}
