package kernel

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A binary's stamp spares each process of one ripple binary the hashing
// of the embedded files and the reading back of the installed ones
// (~5 ms of every ripple start): the first process of the binary installs
// and checks the files (installScripts), then writes
// <parent>/binary-<hash of the executable's path, size and mtime> naming
// the directory and each installed file's size and modification time.
// Later processes of the same binary stat the files against the stamp;
// any difference (a file rewritten, removed, another binary at that path)
// falls back to the full check, so the installed files still match the
// embedded ones whenever the directory is used.
const stampPrefix = "binary-"

// binaryStamp is the stamp file of the running executable in parent, or
// "" when the executable cannot be identified (then no stamp is used).
func binaryStamp(parent string) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	info, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	return stampPath(parent, exe, info)
}

// stampPath names the stamp of the executable exe (with info its stat).
func stampPath(parent, exe string, info fs.FileInfo) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", exe, info.Size(), info.ModTime().UnixNano()))
	return filepath.Join(parent, stampPrefix+hex.EncodeToString(h[:])[:16])
}

// stampLine is one installed file's line in a stamp: its name, size and
// modification time in nanoseconds.
func stampLine(name string, info fs.FileInfo) string {
	return fmt.Sprintf("%s\t%d\t%d\n", name, info.Size(), info.ModTime().UnixNano())
}

// stampedDir returns the directory the stamp names when every file it
// lists is there with the size and modification time it records.
func stampedDir(stamp string) (string, bool) {
	if stamp == "" {
		return "", false
	}
	data, err := os.ReadFile(stamp)
	if err != nil {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() {
		return "", false
	}
	dir := sc.Text()
	files := 0
	for sc.Scan() {
		line := sc.Text() + "\n"
		name, _, _ := strings.Cut(line, "\t")
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || !info.Mode().IsRegular() || stampLine(name, info) != line {
			return "", false
		}
		files++
	}
	if files == 0 || !strings.HasPrefix(filepath.Base(dir), "kernel-") {
		return "", false
	}
	now := time.Now()
	os.Chtimes(stamp, now, now) // in use: not stale
	return dir, true
}

// writeStamp records dir, just installed and checked against fsys, as the
// running binary's install. Best effort: without a stamp the next process
// checks the files again.
func writeStamp(stamp, dir string, fsys fs.FS) {
	if stamp == "" {
		return
	}
	files, err := readPythonFiles(fsys)
	if err != nil {
		return
	}
	var b strings.Builder
	b.WriteString(dir + "\n")
	for name := range files {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return
		}
		b.WriteString(stampLine(name, info))
	}
	// The content is checked after the stat, so a file rewritten before
	// the check fails it and one rewritten after has another mtime than
	// the stamp records.
	if !sameContent(dir, files) {
		return
	}
	tmp := stamp + ".tmp-" + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return
	}
	if err := os.Rename(tmp, stamp); err != nil {
		os.Remove(tmp)
	}
}
