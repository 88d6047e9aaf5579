// Package callorder lets a method's handler tell the transport that the
// notifications it causes from now on need not wait behind its reply.
//
// The WebSocket server holds the notifications a call causes until the
// call's reply is queued, so that a reply always comes first (the state a
// reconnect resends, the Pending updates of a push). text/applyEdit is the
// exception worth making: its reply waits for the edit to be in the state
// log (an fsync), while the run it caused is already sending values. Those
// values are of the client's own text, which it has; holding them behind
// the fsync only adds the fsync to keystroke-to-value. The engine releases
// them once the edit's jobs are queued (Release), and the reply still
// follows the append.
package callorder

import "context"

type releaseKey struct{}

// WithRelease returns ctx carrying release, the transport's way to stop
// holding the current call's notifications back.
func WithRelease(ctx context.Context, release func()) context.Context {
	return context.WithValue(ctx, releaseKey{}, release)
}

// Release stops holding back the notifications of the call whose context
// is ctx: those held so far and those to come are sent as they are
// queued, ahead of the call's reply. A no-op on a context without a
// release (an in-process caller, a transport that does not hold).
func Release(ctx context.Context) {
	if release, ok := ctx.Value(releaseKey{}).(func()); ok && release != nil {
		release()
	}
}
