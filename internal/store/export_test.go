package store

import "context"

// CommitGroup writes fns as one group, as Grouped's loop does with the
// callers that arrive together, and returns each one's outcome. ctxs are
// the callers' contexts.
func CommitGroup(s *Store, ctxs []context.Context, fns []func(q *Q) error) []error {
	group := make([]*groupReq, len(fns))
	for i, fn := range fns {
		group[i] = &groupReq{ctx: ctxs[i], fn: fn, done: make(chan error, 1)}
	}
	(&txGroup{s: s}).commit(group)
	out := make([]error, len(group))
	for i, r := range group {
		out[i] = <-r.done
	}
	return out
}
