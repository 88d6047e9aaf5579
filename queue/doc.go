// Package queue is the prioritised, collapsing job scheduler that enforces
// the scheduling rules of ../shared/DESIGN.md.
package queue
