package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrIDInUse: another agent process holds the agent id: on this host (its
// lock file) or at the coordinator (a connected agent of another run with
// a live lease). Two agents must never share an id: each would take the
// other's slots on every reconnect.
var ErrIDInUse = errors.New("agent id in use by another agent")

// maxIDFiles bounds the generated ids one host and root can hold: agents
// started without --id on one host and root get agent-id-HOST, then
// agent-id-HOST-2, ... each the first whose lock is free.
const maxIDFiles = 64

// idLock is an agent id held by this process: the lock file stays open
// and locked (an exclusive flock, released by the kernel when the process
// dies, kill -9 included) until release.
type idLock struct {
	id string
	f  *os.File
}

func (l *idLock) release() {
	if l != nil && l.f != nil {
		l.f.Close()
	}
}

// lockAgentID returns the agent's id, locked for this process. An id given
// (--id) is locked under ROOT/.ripple/agent-lock-ID: taken, it is refused
// with ErrIDInUse. Without one, the id is generated once and kept in
// ROOT/.ripple/agent-id-HOST (so a restarted agent on the same host
// reconnects as itself), or the next such file whose lock is free, so two
// agents of one host and root get two ids, each stable across restarts.
func lockAgentID(root, host, given string) (*idLock, error) {
	dir := filepath.Join(root, ".ripple")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("agent id: %w", err)
	}
	if given != "" {
		f, ok, err := tryLockFile(filepath.Join(dir, "agent-lock-"+safeName(given)))
		if err != nil {
			return nil, fmt.Errorf("agent id %s: %w", given, err)
		}
		if !ok {
			return nil, fmt.Errorf("%w: agent id %q is held by another ripple agent on this host with root %s: give this one another --id", ErrIDInUse, given, root)
		}
		return &idLock{id: given, f: f}, nil
	}
	for n := 1; n <= maxIDFiles; n++ {
		path := filepath.Join(dir, "agent-id-"+safeName(host))
		if n > 1 {
			path += fmt.Sprintf("-%d", n)
		}
		f, ok, err := tryLockFile(path + ".lock")
		if err != nil {
			return nil, fmt.Errorf("agent id: %w", err)
		}
		if !ok {
			continue // another agent of this host and root has it
		}
		id, err := readOrMakeID(path)
		if err != nil {
			f.Close()
			return nil, err
		}
		return &idLock{id: id, f: f}, nil
	}
	return nil, fmt.Errorf("%w: all %d agent ids of host %s in %s are held by running agents", ErrIDInUse, maxIDFiles, host, dir)
}

// readOrMakeID reads the id kept at path, or makes and keeps one.
func readOrMakeID(path string) (string, error) {
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b)), nil
	}
	id := randomHex(16)
	if err := os.WriteFile(path, []byte(id), 0o600); err != nil {
		return "", fmt.Errorf("agent id: %w", err)
	}
	return id, nil
}

// safeName keeps a host name or id usable as a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == '\\' {
			return '_'
		}
		return r
	}, s)
}
