package callorder_test

import (
	"context"
	"testing"

	"github.com/ripple-run/ripple/internal/callorder"
)

func TestRelease(t *testing.T) {
	n := 0
	ctx := callorder.WithRelease(context.Background(), func() { n++ })
	callorder.Release(ctx)
	if n != 1 {
		t.Fatalf("release called %d times, want 1", n)
	}
	// Without one (an in-process caller), Release does nothing.
	callorder.Release(context.Background())
}
