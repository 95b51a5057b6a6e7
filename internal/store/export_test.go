package store

import (
	"context"
	"fmt"
	"strings"
)

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

// AbandonJournal ends s's audit journal as a process that dies does: the
// loop stops, the files are closed (which releases the lock) and nothing is
// flushed. It returns the journal's directory and name.
func AbandonJournal(s *Store) (dir, name string) {
	j := s.audits.(*journal)
	j.ending.Do(func() {
		j.mu.Lock()
		j.closed = true
		if j.f != nil {
			j.f.Close()
		}
		j.mu.Unlock()
		close(j.stop)
		<-j.done
		j.lock.Close()
	})
	return j.dir, j.name
}

// WritePosts writes mps as one PostgreSQL post batch, as the batcher's
// writer does with the posts that arrive together, and returns each one's
// outcome. It is nil on SQLite, which has no batcher.
func WritePosts(s *Store, ctxs []context.Context, mps []*MessagePost) []error {
	pg, ok := s.eng.(*postgresEngine)
	if !ok {
		return nil
	}
	batch := make([]*postReq, len(mps))
	for i, mp := range mps {
		SealAudit(s.auditKey, &mp.Audit, true)
		query, args := mp.postgres()
		batch[i] = &postReq{ctx: ctxs[i], mp: mp, query: s.d.rebind(query), args: args, done: make(chan error, 1)}
	}
	pg.posts.write(batch)
	out := make([]error, len(batch))
	for i, r := range batch {
		out[i] = <-r.done
	}
	return out
}

// ExplainListVisits is the plan of each statement of f's list (ListVisits),
// as the engine's EXPLAIN writes it, one line per plan step.
func ExplainListVisits(ctx context.Context, s *Store, f VisitFilter) ([]string, error) {
	lqs, err := s.Read().visitListQueries(ctx, f)
	if err != nil {
		return nil, err
	}
	return explain(ctx, s, lqs)
}

// ExplainAuditPage is the plan of the statement of f's page of the trail.
func ExplainAuditPage(ctx context.Context, s *Store, f AuditFilter) ([]string, error) {
	query, args := f.page()
	return explain(ctx, s, []listQuery{{query, args}})
}

// ExplainAccessLog is the plans of the access log's total and page.
func ExplainAccessLog(ctx context.Context, s *Store, accountID, userID int64, after *AuditPlace) ([]string, error) {
	count, page := accessLogQueries(accountID, userID, after, 0, 50)
	return explain(ctx, s, []listQuery{count, page})
}

// ExplainAuditChainPage is the plan of a page of the chain's walk.
func ExplainAuditChainPage(ctx context.Context, s *Store, accountID, after int64) ([]string, error) {
	return explain(ctx, s, []listQuery{{auditChainPageQuery, []any{accountID, after, 1000}}})
}

// ExplainUserPage is the plan of the statement of f's page of users.
func ExplainUserPage(ctx context.Context, s *Store, f UserFilter) ([]string, error) {
	w, args := f.cond()
	query, args, err := s.Read().userPage(ctx, f, w, args)
	if err != nil {
		return nil, err
	}
	return explain(ctx, s, []listQuery{{query, args}})
}

// ExplainReadingsWindow is the plans of w's count and page of a user's readings.
func ExplainReadingsWindow(ctx context.Context, s *Store, accountID, userID int64, w RecordWindow) ([]string, error) {
	count, page := readingsWindow(accountID, userID, w)
	return explain(ctx, s, []listQuery{count, page})
}

// ExplainReadings is the plan of a page of Readings.
func ExplainReadings(ctx context.Context, s *Store, accountID, userID int64, f ReadingFilter) ([]string, error) {
	return explain(ctx, s, []listQuery{readingsQuery(accountID, userID, f)})
}

// ExplainMessagesWindow is the plans of w's count and page of the visits' messages.
func ExplainMessagesWindow(ctx context.Context, s *Store, accountID int64, visitIDs []int64, w RecordWindow) ([]string, error) {
	count, page := messagesWindow(accountID, visitIDs, w)
	return explain(ctx, s, []listQuery{count, page})
}

// ExplainVisitsWindow is the plans of w's count and page of rv's visits.
func ExplainVisitsWindow(ctx context.Context, s *Store, rv RecordVisits, w RecordWindow) ([]string, error) {
	count, page := visitsWindow(rv, "", w)
	return explain(ctx, s, []listQuery{count, page})
}

// ExplainProviderOpenVisits is the plans of a provider's open visits' count and page.
func ExplainProviderOpenVisits(ctx context.Context, s *Store, accountID, providerID int64, oq OpenVisitQuery) ([]string, error) {
	oq.Limit = 100
	count, page := providerOpenVisits(accountID, providerID, oq)
	return explain(ctx, s, []listQuery{count, page})
}

// ExplainNotesWindow is the plans of w's count and page of the notes of rv's visits.
func ExplainNotesWindow(ctx context.Context, s *Store, rv RecordVisits, signedOnly bool, w RecordWindow) ([]string, error) {
	count, page := notesWindow(rv, signedOnly, w)
	return explain(ctx, s, []listQuery{count, page})
}

// UserFilterCond is f's WHERE over users u.
func UserFilterCond(f UserFilter) (string, []any) { return f.cond() }

// UserFilterCount is the statement of f's total from the user counts, ""
// when the users are counted.
func UserFilterCount(f UserFilter) (string, []any) { return f.count() }

func explain(ctx context.Context, s *Store, lqs []listQuery) ([]string, error) {
	explain := "EXPLAIN QUERY PLAN "
	if _, pg := s.eng.(*postgresEngine); pg {
		explain = "EXPLAIN "
	}
	var out []string
	for _, lq := range lqs {
		rows, err := s.Read().query(ctx, explain+lq.query, lq.args...)
		if err != nil {
			return nil, err
		}
		cols, _ := rows.Columns()
		var plan []string
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return nil, err
			}
			plan = append(plan, fmt.Sprint(vals[len(vals)-1]))
		}
		rows.Close()
		out = append(out, strings.Join(plan, "\n"))
	}
	return out, nil
}

// ExplainSlots is the plan of f's slots.
func ExplainSlots(ctx context.Context, s *Store, f SlotFilter) ([]string, error) {
	return explain(ctx, s, []listQuery{slotsQuery(f)})
}

// ExplainClaimVisits is the plan of cq's page of the claims report.
func ExplainClaimVisits(ctx context.Context, s *Store, cq ClaimQuery) ([]string, error) {
	return explain(ctx, s, []listQuery{claimVisitsQuery(cq)})
}

// ExplainNumberVisits is the plan of the clinic's numbers' read of a range.
func ExplainNumberVisits(ctx context.Context, s *Store, accountID, from, to int64) ([]string, error) {
	return explain(ctx, s, []listQuery{{numberVisitsQuery, []any{accountID, from, to}}})
}
