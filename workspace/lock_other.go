//go:build !unix

package workspace

import "os"

// Without flock a temp file in use cannot be told from a stale one: stale
// temp files are then left alone (tryLock says in use).
func lockFile(f *os.File)     {}
func tryLock(f *os.File) bool { return false }
