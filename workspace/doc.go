// Package workspace is the project tree as ripple sees it: text buffers and
// their versions, atomic writes, confinement of every path to the project
// root, and watching the tree for changes on disk. It is the only code that
// touches user files.
package workspace
