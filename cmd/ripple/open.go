package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// openBrowser opens url with $BROWSER (a command, or a ":"-separated list
// of them, as Python's webbrowser module reads it; "%s" in one is replaced
// by the URL, else the URL is appended), else xdg-open (open on macOS). It
// does not wait for the browser.
func openBrowser(ctx context.Context, url string) error {
	var candidates [][]string
	if env := os.Getenv("BROWSER"); env != "" {
		for _, c := range strings.Split(env, string(os.PathListSeparator)) {
			if f := strings.Fields(c); len(f) > 0 {
				candidates = append(candidates, f)
			}
		}
	} else if runtime.GOOS == "darwin" {
		candidates = append(candidates, []string{"open"})
	} else {
		candidates = append(candidates, []string{"xdg-open"})
	}
	var errs []error
	for _, c := range candidates {
		args := make([]string, 0, len(c)+1)
		replaced := false
		for _, a := range c[1:] {
			if strings.Contains(a, "%s") {
				a, replaced = strings.ReplaceAll(a, "%s", url), true
			}
			args = append(args, a)
		}
		if !replaced {
			args = append(args, url)
		}
		cmd := exec.CommandContext(context.WithoutCancel(ctx), c[0], args...)
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		go cmd.Wait() // reaped whenever the browser launcher exits
		return nil
	}
	return errors.Join(errs...)
}
