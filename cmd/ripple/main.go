// Command ripple is the live execution server for Python projects.
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: ripple <command> [arguments]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "version":
		fmt.Println("ripple", version)
	default:
		fmt.Fprintf(os.Stderr, "ripple: unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}
