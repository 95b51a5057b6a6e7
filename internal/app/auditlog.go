package app

import (
	"context"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// auditWriter writes the audit entries of reads in groups. Each request
// still waits until its own entry is recorded — health data is never
// served unaudited, and a crash loses no entry of an answered read — but
// requests arriving while a group is being written share the next write:
// one append to the SQLite audit journal, or one PostgreSQL commit
// (store.AppendReadAudits).
type auditWriter struct {
	st   *store.Store
	reqs chan auditReq
}

type auditReq struct {
	e    *clinic.AuditEntry
	done chan error
}

// maxAuditGroup bounds one transaction's entries.
const maxAuditGroup = 256

func newAuditWriter(st *store.Store) *auditWriter {
	w := &auditWriter{st: st, reqs: make(chan auditReq, maxAuditGroup)}
	go w.loop()
	return w
}

// write appends e and returns once it is committed.
func (w *auditWriter) write(ctx context.Context, e *clinic.AuditEntry) error {
	r := auditReq{e: e, done: make(chan error, 1)}
	select {
	case w.reqs <- r:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *auditWriter) loop() {
	for first := range w.reqs {
		group := []auditReq{first}
	fill:
		for len(group) < maxAuditGroup {
			select {
			case r := <-w.reqs:
				group = append(group, r)
			default:
				break fill
			}
		}
		es := make([]*clinic.AuditEntry, len(group))
		for i, r := range group {
			es[i] = r.e
		}
		err := w.st.AppendReadAudits(context.Background(), es)
		for _, r := range group {
			r.done <- err
		}
	}
}
