package kernel

import (
	"errors"
	"sync"
)

// MaxCrashRetries is how many times in a row a run that killed its kernel
// is retried automatically: once (../shared/PROTOCOL.md 5.6: a run that
// kills its kernel twice in a row stays failed until the user acts).
const MaxCrashRetries = 1

// CrashStreak counts, per run key (an execution context, say), how many
// runs in a row ended with the death of their kernel, to decide whether a
// run is retried after the pool replaced the kernel. The zero value is
// ready to use; it is safe for concurrent use.
type CrashStreak struct {
	mu     sync.Mutex
	deaths map[string]int // guarded by mu
}

// Observe records how a run of key ended (err is what the kernel call
// returned) and reports whether to run it again automatically: true after
// its first kernel death in a row, false after the second. A run that did
// not kill its kernel (success, a Python error, an interrupt) ends the
// streak and reports false: nothing to retry.
func (c *CrashStreak) Observe(key string, err error) (retry bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !errors.Is(err, ErrKernelDied) {
		delete(c.deaths, key)
		return false
	}
	if c.deaths == nil {
		c.deaths = make(map[string]int)
	}
	c.deaths[key]++
	return c.deaths[key] <= MaxCrashRetries
}

// Count returns the current streak of key.
func (c *CrashStreak) Count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deaths[key]
}

// Reset ends the streak of key: the user edited, recomputed or pushed, so
// the next death may be retried again.
func (c *CrashStreak) Reset(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.deaths, key)
}
