// Package contexts holds execution-context state in go-memdb: contexts,
// their stacks, visualizations and the latest update of each expression.
package contexts
