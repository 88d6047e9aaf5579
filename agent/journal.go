package agent

import (
	"os"
	"path/filepath"
)

// The value journal of agent kernels (docs/scale-out.md, "Values"). An
// agent's kernels read and write the journal of the project they run,
// the same SQLite file the coordinator's local kernels use
// (kernel/python/ripple_kernel/journal.py), found through the project
// root, which agents share with the coordinator (a shared file system:
// the kernels import the project's modules from it anyway):
//
//   - RIPPLE_VALUES_DB in the agent's environment is used as it is (empty:
//     no journal), for a site that keeps it elsewhere;
//   - else, with the coordinator on this host (a loopback address),
//     ROOT/.ripple/values.db: the coordinator's own journal when ROOT is
//     its project;
//   - else ROOT/.ripple/values-HOST.db: SQLite's write-ahead log keeps its
//     index in shared memory, which processes on different hosts do not
//     share, so a journal has the kernels of one host only. A context that
//     moves to another agent of the same host (or a restarted agent) finds
//     its values; one that moves to another host computes them again.
func journalPath(root, host, coordinator string) string {
	if v, ok := os.LookupEnv("RIPPLE_VALUES_DB"); ok {
		return v
	}
	name := "values.db"
	if !IsLoopback(coordinator) {
		name = "values-" + safeName(host) + ".db"
	}
	return filepath.Join(root, ".ripple", name)
}
