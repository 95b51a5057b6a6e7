package store

import "context"

// NumberVisit is what the clinic's numbers read of one visit. Its kind
// and outcome come as small numbers (the Kind* and Outcome* codes below),
// and it holds no strings: a year's 100,000 rows cross the driver at the
// cost of their integers (docs/performance.md, "The clinic's numbers").
type NumberVisit struct {
	ID, RoomID, ProviderID int64
	Kind, Outcome, Status  int
	When                   int64 // when it took place (claimWhen)
	// Late is how long after its arrival (a walk-in) or its time (an
	// appointment) the visit started; -1 while it has not.
	Late int64
}

// The codes of NumberVisit.Kind and .Outcome.
const (
	NumberWalkin      = 1
	NumberAppointment = 2
	NumberEconsult    = 3
	NumberNoShow      = 1
	NumberLateCancel  = 2
)

// numberVisitsQuery reads a clinic's visits that took place in [from,
// to): one pass over the range.
const numberVisitsQuery = `SELECT v.id, COALESCE(v.room_id, 0), v.provider_id,
	CASE v.kind WHEN 'walkin' THEN 1 WHEN 'appointment' THEN 2 ELSE 3 END,
	CASE v.outcome WHEN 'no_show' THEN 1 WHEN 'late_cancel' THEN 2 ELSE 0 END, v.status, ` + claimWhen + `,
	CASE WHEN COALESCE(v.actual_start, 0) = 0 THEN -1 WHEN v.kind = 'walkin' THEN v.actual_start - v.created
		WHEN v.actual_start > v.starts_at THEN v.actual_start - v.starts_at ELSE 0 END
	FROM visits v
	WHERE v.account_id = ? AND ` + claimWhen + ` >= ? AND ` + claimWhen + ` < ?`

// NumberVisits are the visits of the clinic that took place in [from, to).
func (q *Q) NumberVisits(ctx context.Context, accountID, from, to int64) ([]NumberVisit, error) {
	rows, err := q.query(ctx, numberVisitsQuery, accountID, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NumberVisit
	for rows.Next() {
		var v NumberVisit
		if err := rows.Scan(&v.ID, &v.RoomID, &v.ProviderID, &v.Kind, &v.Outcome, &v.Status, &v.When, &v.Late); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, v)
	}
	return out, q.d.translate(rows.Err())
}

// NumberPayment is a payment the clinic's numbers add up.
type NumberPayment struct {
	Currency       string
	Paid, Refunded int64
	Created        int64
}

// NumberPayments are the clinic's invoices charged in [from, to) (paid,
// refunding or refunded; pending and failed ones took nothing).
func (q *Q) NumberPayments(ctx context.Context, accountID, from, to int64) ([]NumberPayment, error) {
	rows, err := q.query(ctx, `SELECT currency, amount_due, refunded, created FROM invoices
		WHERE account_id = ? AND created >= ? AND created < ? AND status IN ('paid', 'refunding', 'refunded')`, accountID, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []NumberPayment
	for rows.Next() {
		var p NumberPayment
		if err := rows.Scan(&p.Currency, &p.Paid, &p.Refunded, &p.Created); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, p)
	}
	return out, q.d.translate(rows.Err())
}

// NumberCall is what the numbers read of a visit's call.
type NumberCall struct{ CallStart, Rejoins int64 }

// NumberCalls are the calls of the clinic's visits whose facts were last
// written in [from, to), by visit: a call's facts are last written as it
// ends, within its visit's time, so the calls of the visits of a range
// are among those written from its start to a little past its end
// (visit_facts_updated).
func (q *Q) NumberCalls(ctx context.Context, accountID, from, to int64) (map[int64]NumberCall, error) {
	rows, err := q.query(ctx, `SELECT visit_id, call_start, rejoins FROM visit_facts
		WHERE account_id = ? AND updated >= ? AND updated < ? AND (call_start > 0 OR rejoins > 0)`, accountID, from, to)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]NumberCall{}
	for rows.Next() {
		var id int64
		var c NumberCall
		if err := rows.Scan(&id, &c.CallStart, &c.Rejoins); err != nil {
			return nil, q.d.translate(err)
		}
		out[id] = c
	}
	return out, q.d.translate(rows.Err())
}
