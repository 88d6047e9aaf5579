package batch

import (
	"fmt"
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data: a temporary file in the same
// directory, fsynced, renamed over path, and the directory fsynced. A
// crash leaves the old report or the new one, never a part of one; a
// failure removes the temporary file.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrReport, path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrReport, path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrReport, path, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("%w: write %s: sync: %w", ErrReport, path, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrReport, path, err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("%w: write %s: %w", ErrReport, path, err)
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync() // best effort: the rename is durable once the directory is
		d.Close()
	}
	return nil
}

// CheckReportPath refuses, before a run, a report path whose directory
// does not exist or that names a directory, so a long run does not end
// without its report.
func CheckReportPath(flag, path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%w: %s %s: is a directory", ErrUsage, flag, path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w: %s %s: directory %s: %w", ErrUsage, flag, path, dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w: %s %s: %s is not a directory", ErrUsage, flag, path, dir)
	}
	return nil
}
