//go:build !unix

package main

import (
	"io"
	"os"
)

// closableStdin returns stdin (see lspstdin_unix.go).
func closableStdin() io.ReadCloser { return os.Stdin }
