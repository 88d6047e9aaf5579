//go:build !unix

package main

import "os"

// terminalWidth reports no terminal: colours stay off where the window-size
// request does not exist.
func terminalWidth(f *os.File) (int, bool) { return 0, false }
