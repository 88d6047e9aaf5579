// Package engine is ripple's one execution path: it ties the workspace, the
// job queue, the kernel pool and the context state together for ripple serve,
// ripple watch and ripple run.
package engine
