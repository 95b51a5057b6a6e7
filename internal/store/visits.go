package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
)

const intakeCols = "id, account_id, room_id, member_id, creator_user_id, provider_id, type, reason_for_visit, location, phone, custom, attachments, consultation_id, visit_id, created, modified"

func scanIntake(sc interface{ Scan(...any) error }) (*clinic.Intake, error) {
	var in clinic.Intake
	var custom, att string
	if err := sc.Scan(&in.ID, &in.AccountID, &in.RoomID, &in.MemberID, &in.CreatorUserID, &in.ProviderID, &in.Type, &in.ReasonForVisit,
		&in.Location, &in.Phone, &custom, &att, &in.ConsultationID, &in.VisitID, &in.Created, &in.Modified); err != nil {
		return nil, err
	}
	_ = json.Unmarshal([]byte(custom), &in.Custom)
	_ = json.Unmarshal([]byte(att), &in.Attachments)
	return &in, nil
}

// CreateIntake inserts an intake.
func (q *Q) CreateIntake(ctx context.Context, in *clinic.Intake) error {
	custom, _ := json.Marshal(in.Custom)
	att, _ := json.Marshal(nonNilIDs(in.Attachments))
	id, err := q.insert(ctx, `INSERT INTO intakes (account_id, room_id, member_id, creator_user_id, provider_id, type, reason_for_visit, location, phone, custom, attachments, consultation_id, visit_id, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		in.AccountID, in.RoomID, in.MemberID, in.CreatorUserID, in.ProviderID, in.Type, in.ReasonForVisit, in.Location, in.Phone,
		string(custom), string(att), in.ConsultationID, in.VisitID, in.Created, in.Modified)
	in.ID = id
	return err
}

// UpdateIntake writes an intake's changeable fields.
func (q *Q) UpdateIntake(ctx context.Context, in *clinic.Intake) error {
	custom, _ := json.Marshal(in.Custom)
	att, _ := json.Marshal(nonNilIDs(in.Attachments))
	return q.mustAffect(ctx, `UPDATE intakes SET provider_id = ?, reason_for_visit = ?, location = ?, phone = ?, custom = ?, attachments = ?, consultation_id = ?, visit_id = ?, modified = ?
		WHERE account_id = ? AND id = ?`,
		in.ProviderID, in.ReasonForVisit, in.Location, in.Phone, string(custom), string(att), in.ConsultationID, in.VisitID, in.Modified, in.AccountID, in.ID)
}

// LinkIntakeVisit ties an intake to its visit, once: an intake already
// linked to a visit is ErrConflict.
func (q *Q) LinkIntakeVisit(ctx context.Context, accountID, intakeID, visitID, providerID, now int64) error {
	n, err := q.affected(ctx, "UPDATE intakes SET visit_id = ?, provider_id = ?, modified = ? WHERE account_id = ? AND id = ? AND visit_id = 0",
		visitID, providerID, now, accountID, intakeID)
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrConflict
	}
	return nil
}

// IntakeByID finds an intake of the clinic.
func (q *Q) IntakeByID(ctx context.Context, accountID, id int64) (*clinic.Intake, error) {
	rows, err := q.query(ctx, "SELECT "+intakeCols+" FROM intakes WHERE account_id = ? AND id = ?", accountID, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		return nil, firstErr(q.d.translate(rows.Err()), ErrNotFound)
	}
	in, err := scanIntake(rows)
	return in, q.d.translate(err)
}

const visitCols = `v.id, v.account_id, v.code, v.kind, v.member_id, v.provider_id, COALESCE(v.room_id, 0), v.intake_id, v.slot_id, v.status, v.type,
	v.starts_at, v.ends_at, COALESCE(v.actual_start, 0), COALESCE(v.actual_end, 0), v.cancel_reason, v.meeting, v.created, v.modified, v.message_count, v.reminders_off, COALESCE(v.seen_at, 0), v.outcome`

func scanVisit(sc interface{ Scan(...any) error }) (*clinic.Visit, error) {
	var v clinic.Visit
	var meeting string
	if err := sc.Scan(&v.ID, &v.AccountID, &v.Code, &v.Kind, &v.MemberID, &v.ProviderID, &v.RoomID, &v.IntakeID, &v.SlotID, &v.Status, &v.Type,
		&v.Start, &v.End, &v.ActualStart, &v.ActualEnd, &v.CancelReason, &meeting, &v.Created, &v.Modified, &v.MessageCount, &v.RemindersOff, &v.SeenAt, &v.Outcome); err != nil {
		return nil, err
	}
	if !parseMeeting(meeting, &v.Meeting) {
		_ = json.Unmarshal([]byte(meeting), &v.Meeting)
	}
	return &v, nil
}

// parseMeeting reads a meeting column as CreateVisit writes it: the four
// fields in order, strings without escapes. It says false, having set
// nothing, for anything else, which json.Unmarshal then reads. Every
// access to a visit or its thread reads the visit, and encoding/json's
// reflection was most of scanning the row (pprof).
func parseMeeting(s string, m *clinic.Meeting) bool {
	// str reads key and a string value of printable ASCII other than the
	// backslash: what needs no unescaping, read the same by both.
	str := func(rest, key string) (string, string, bool) {
		rest, ok := strings.CutPrefix(rest, key)
		if !ok {
			return "", "", false
		}
		val, rest, ok := strings.Cut(rest, `"`)
		if !ok || strings.ContainsFunc(val, func(r rune) bool { return r < 0x20 || r > 0x7e || r == '\\' }) {
			return "", "", false
		}
		return val, rest, true
	}
	id, rest, ok := str(s, `{"meeting_id":"`)
	if !ok {
		return false
	}
	pin, rest, ok := str(rest, `,"conference_pin":"`)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, `,"recording_auto_start":`)
	if !ok {
		return false
	}
	auto := strings.HasPrefix(rest, "true")
	if rest, ok = strings.CutPrefix(rest, strconv.FormatBool(auto)); !ok {
		return false
	}
	if rest, ok = strings.CutPrefix(rest, `,"expiry":`); !ok {
		return false
	}
	num, ok := strings.CutSuffix(rest, "}")
	digits := strings.TrimPrefix(num, "-")
	if !ok || digits == "" || digits[0] < '0' || digits[0] > '9' || (digits[0] == '0' && len(digits) > 1) {
		return false // JSON's integers: no sign but '-', no leading zero
	}
	expiry, err := strconv.ParseInt(num, 10, 64)
	if err != nil {
		return false
	}
	*m = clinic.Meeting{MeetingID: id, ConferencePIN: pin, RecordingAutoStart: auto, Expiry: expiry}
	return true
}

// CreateVisit inserts a visit.
func (q *Q) CreateVisit(ctx context.Context, v *clinic.Visit) error {
	meeting, _ := json.Marshal(v.Meeting)
	id, err := q.insert(ctx, `INSERT INTO visits (account_id, code, kind, member_id, provider_id, room_id, intake_id, slot_id, status, type, starts_at, ends_at, meeting, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.AccountID, v.Code, v.Kind, v.MemberID, v.ProviderID, nullZero(v.RoomID), v.IntakeID, v.SlotID, v.Status, v.Type, v.Start, v.End, string(meeting), v.Created, v.Modified)
	v.ID = id
	return err
}

// VisitByID finds a visit of the clinic.
func (q *Q) VisitByID(ctx context.Context, accountID, id int64) (*clinic.Visit, error) {
	vs, err := q.visits(ctx, "SELECT "+visitCols+" FROM visits v WHERE v.account_id = ? AND v.id = ?", accountID, id)
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, ErrNotFound
	}
	return vs[0], nil
}

// ThreadVisit reads what a visit's thread needs of the visit
// (clinic.ThreadVisit). It is the read of every thread request, so it
// reads 8 columns, not VisitByID's 20, and reads by key (byKey): the
// driver's cost per column and per statement was most of it (pprof).
func (q *Q) ThreadVisit(ctx context.Context, accountID, id int64) (*clinic.ThreadVisit, error) {
	v := clinic.ThreadVisit{AccountID: accountID}
	err := q.queryRow(q.byKey(ctx), "SELECT id, kind, member_id, provider_id, COALESCE(room_id, 0), status, starts_at, created, message_count FROM visits WHERE account_id = ? AND id = ?",
		[]any{accountID, id}, &v.ID, &v.Kind, &v.MemberID, &v.ProviderID, &v.RoomID, &v.Status, &v.Start, &v.Created, &v.MessageCount)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func (q *Q) visits(ctx context.Context, query string, args ...any) ([]*clinic.Visit, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []*clinic.Visit{}
	for rows.Next() {
		v, err := scanVisit(rows)
		if err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, v)
	}
	return out, q.d.translate(rows.Err())
}

// VisitFilter selects a clinic's visits. Zero values do not filter.
type VisitFilter struct {
	AccountID int64
	// Who may see: with MemberID only that patient's visits (with a
	// ProviderID too, those of the provider's that are the patient's); with
	// ProviderID that provider's visits and, when ProviderRooms, the
	// unassigned e-consults and walk-ins of the rooms the provider is
	// linked to.
	MemberID      int64
	ProviderID    int64
	ProviderRooms bool
	RoomID        int64
	StartAfter    int64 // visits starting at or after
	EndBefore     int64 // visits ending at or before
	Statuses      []int
	WithRecording bool // only visits that have a recording
	// Unassigned keeps, of a provider's list with ProviderRooms, only
	// their rooms' unassigned e-consults and walk-ins (a dashboard's
	// queue and inbox).
	Unassigned bool
	// Oldest lists oldest first instead of newest first.
	Oldest bool
	// After is the last visit of the page before: the page is the visits
	// past it in the list's order (ids below it, or above it when Oldest).
	After int64
	Limit int
}

// ListVisits lists up to f.Limit visits, newest first (by id), after
// f.After when set. Each of its statements (visitListQueries) reads in the
// order of an index (migration 00022_list_keys.sql), so a page reads its
// rows and no more whatever the clinic's size; a provider's list is their
// own visits and each of their rooms' unassigned ones, such reads merged
// here.
func (q *Q) ListVisits(ctx context.Context, f VisitFilter) ([]*clinic.Visit, error) {
	lqs, err := q.visitListQueries(ctx, f)
	if err != nil {
		return nil, err
	}
	var out []*clinic.Visit
	for _, lq := range lqs {
		vs, err := q.visits(ctx, lq.query, lq.args...)
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
	}
	slices.SortFunc(out, func(a, b *clinic.Visit) int {
		if f.Oldest {
			return cmp.Compare(a.ID, b.ID)
		}
		return cmp.Compare(b.ID, a.ID)
	})
	return out[:min(len(out), f.Limit)], nil
}

// OpenVisitKey is a place in a provider's open visits, soonest first:
// the last visit of a page, its start and id.
type OpenVisitKey struct{ Start, ID int64 }

// OpenVisitQuery is a page of a provider's own open visits (pending,
// confirmed, in progress): those starting in [From, To) when To is set,
// those after After when it is set, Limit of them.
type OpenVisitQuery struct {
	From, To int64
	After    *OpenVisitKey
	Limit    int
}

// ProviderOpenVisits lists a page of a provider's own open visits, soonest
// start first (visits with no start, e-consults, first of all). The
// partial index visits_provider_open (migration 00026) holds open visits
// only, in this order, so a page reads what it returns however many
// visits the provider has, open or closed. The statuses are written out,
// not bound: SQLite uses a partial index only for a query whose WHERE says
// what the index's does.
func (q *Q) ProviderOpenVisits(ctx context.Context, accountID, providerID int64, oq OpenVisitQuery) ([]*clinic.Visit, error) {
	_, page := providerOpenVisits(accountID, providerID, oq)
	return q.visits(ctx, page.query, page.args...)
}

// CountProviderOpenVisits is how many open visits a provider has, counted
// through the same index.
func (q *Q) CountProviderOpenVisits(ctx context.Context, accountID, providerID int64) (int, error) {
	count, _ := providerOpenVisits(accountID, providerID, OpenVisitQuery{})
	var n int
	err := q.queryRow(ctx, count.query, count.args, &n)
	return n, err
}

// providerOpenVisits is the count and the page of a provider's open visits.
func providerOpenVisits(accountID, providerID int64, oq OpenVisitQuery) (count, page listQuery) {
	where := " FROM visits v WHERE v.account_id = ? AND v.provider_id = ? AND v.status IN (10, 20, 25)"
	args := []any{accountID, providerID}
	if oq.To != 0 {
		where += " AND v.starts_at >= ? AND v.starts_at < ?"
		args = append(args, oq.From, oq.To)
	}
	count = listQuery{"SELECT count(*)" + where, args}
	if a := oq.After; a != nil {
		// Starting at the visit's time or later, and of that time stored
		// after it: the first condition is the index's range.
		where += " AND v.starts_at >= ? AND (v.starts_at > ? OR v.id > ?)"
		args = append(slices.Clip(args), a.Start, a.Start, a.ID)
	}
	return count, listQuery{"SELECT " + visitCols + where + " ORDER BY v.starts_at, v.id LIMIT ?", append(slices.Clip(args), oq.Limit)}
}

// awaitingProvider is a visit that its room's providers see until one of
// them takes it: an e-consult or walk-in with no provider (app's
// awaitsProvider); its arguments are clinic.KindEconsult and KindWalkin.
const awaitingProvider = "v.provider_id = 0 AND v.kind IN (?, ?)"

// RecordVisits are the visits of a patient's record that its reader sees:
// all of the patient's, or with ProviderID those that provider sees
// through the API, their own and, with Rooms, the e-consults and walk-ins
// of their rooms that no provider has taken yet (app's seesVisit, as SQL,
// so that the database pages a record's lists of visits, notes and
// threads, however many visits the patient has).
type RecordVisits struct {
	AccountID, MemberID int64
	ProviderID          int64
	Rooms               bool
}

// cond is rv as a condition on visits v.
func (rv RecordVisits) cond() (string, []any) {
	c := "v.account_id = ? AND v.member_id = ?"
	args := []any{rv.AccountID, rv.MemberID}
	if rv.ProviderID == 0 {
		return c, args
	}
	c += " AND (v.provider_id = ?"
	args = append(args, rv.ProviderID)
	if rv.Rooms {
		c += " OR (" + awaitingProvider + " AND v.room_id IN (SELECT room_id FROM user_rooms WHERE account_id = ? AND user_id = ?))"
		args = append(args, clinic.KindEconsult, clinic.KindWalkin, rv.AccountID, rv.ProviderID)
	}
	return c + ")", args
}

// VisitsWindow is a window of rv's visits, newest first, with kind only
// visits of that kind, and how many the window's time range holds (by the
// visit's last change): a FHIR record's Encounters and Appointments. The
// (account_id, member_id, id) key serves the order.
func (q *Q) VisitsWindow(ctx context.Context, rv RecordVisits, kind string, w RecordWindow) ([]*clinic.Visit, int, error) {
	count, page := visitsWindow(rv, kind, w)
	return readWindow(ctx, q, w, count, page, -1, func(rows *sql.Rows) (*clinic.Visit, error) { return scanVisit(rows) })
}

// visitsWindow is the count and the page of VisitsWindow.
func visitsWindow(rv RecordVisits, kind string, w RecordWindow) (count, page listQuery) {
	cond, args := rv.cond()
	if kind != "" {
		cond += " AND v.kind = ?"
		args = append(args, kind)
	}
	wc, wargs := w.where("v.id", "v.modified", 1)
	from := " FROM visits v WHERE " + cond + wc
	args = append(args, wargs...)
	return listQuery{"SELECT count(*)" + from, args},
		listQuery{"SELECT " + visitCols + from + " ORDER BY v.id DESC LIMIT ? OFFSET ?", append(slices.Clip(args), w.Limit, w.Offset)}
}

// RecordProviders are the providers of rv's visits, by id: a FHIR
// record's Practitioners.
func (q *Q) RecordProviders(ctx context.Context, rv RecordVisits) ([]int64, error) {
	cond, args := rv.cond()
	return q.int64s(ctx, "SELECT DISTINCT v.provider_id FROM visits v WHERE "+cond+" AND v.provider_id <> 0 ORDER BY v.provider_id", args...)
}

// listQuery is one statement of a list and its arguments.
type listQuery struct {
	query string
	args  []any
}

// visitListQueries are the statements of f's list.
func (q *Q) visitListQueries(ctx context.Context, f VisitFilter) ([]listQuery, error) {
	where := []string{"v.account_id = ?"}
	args := []any{f.AccountID}
	add := func(c string, a ...any) { where = append(where, c); args = append(args, a...) }
	if f.MemberID != 0 {
		add("v.member_id = ?", f.MemberID)
	}
	if f.RoomID != 0 {
		add("v.room_id = ?", f.RoomID)
	}
	if f.StartAfter != 0 {
		add("v.starts_at >= ?", f.StartAfter)
	}
	if f.EndBefore != 0 {
		add("v.ends_at <= ?", f.EndBefore)
	}
	if len(f.Statuses) > 0 {
		add("v.status IN ("+placeholders(len(f.Statuses))+")", anys(f.Statuses)...)
	}
	if f.WithRecording {
		add("EXISTS (SELECT 1 FROM recordings r WHERE r.account_id = v.account_id AND r.visit_id = v.id)")
	}
	order := " ORDER BY v.id DESC LIMIT ?"
	switch {
	case f.Oldest:
		order = " ORDER BY v.id LIMIT ?"
		if f.After != 0 {
			add("v.id > ?", f.After)
		}
	case f.After != 0:
		add("v.id < ?", f.After)
	}
	list := func(more string, moreArgs ...any) listQuery {
		return listQuery{"SELECT " + visitCols + " FROM visits v WHERE " + strings.Join(where, " AND ") + more + order,
			append(append(slices.Clone(args), moreArgs...), f.Limit)}
	}
	switch {
	case f.ProviderID == 0:
		return []listQuery{list("")}, nil
	case !f.ProviderRooms:
		return []listQuery{list(" AND v.provider_id = ?", f.ProviderID)}, nil
	}
	// The unassigned visits of the provider's rooms, a statement a room:
	// one over all of them ("room_id IN (…)") cannot be read in one
	// index's order, and PostgreSQL sorted every unassigned visit of the
	// rooms to keep a page.
	rows, err := q.query(ctx, "SELECT room_id FROM user_rooms WHERE account_id = ? AND user_id = ? ORDER BY room_id", f.AccountID, f.ProviderID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []listQuery
	if !f.Unassigned {
		out = append(out, list(" AND v.provider_id = ?", f.ProviderID))
	}
	for rows.Next() {
		var room int64
		if err := rows.Scan(&room); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, list(" AND v.room_id = ? AND "+awaitingProvider, room, clinic.KindEconsult, clinic.KindWalkin))
	}
	return out, q.d.translate(rows.Err())
}

// VisitMove is a conditional state change: it applies only while the visit
// is in one of From, so of two concurrent moves only one takes effect.
type VisitMove struct {
	AccountID, ID int64
	From          []int
	To            int
	ProviderID    int64 // when not 0, also set the provider (accepting an e-consult)
	OnlyUnowned   bool  // only while provider_id is 0
	ActualStart   int64 // when not 0, set
	ActualEnd     int64 // when not 0, set
	Reason        string
	Outcome       string // when not "", set (a no-show, a late cancellation)
	Now           int64
}

// MoveVisit applies m and reports whether it did.
func (q *Q) MoveVisit(ctx context.Context, m VisitMove) (bool, error) {
	set := []string{"status = ?", "modified = ?"}
	args := []any{m.To, m.Now}
	if m.ProviderID != 0 {
		set, args = append(set, "provider_id = ?"), append(args, m.ProviderID)
	}
	if m.ActualStart != 0 {
		set, args = append(set, "actual_start = ?"), append(args, m.ActualStart)
	}
	if m.ActualEnd != 0 {
		set, args = append(set, "actual_end = ?"), append(args, m.ActualEnd)
	}
	if m.Reason != "" {
		set, args = append(set, "cancel_reason = ?"), append(args, m.Reason)
	}
	if m.Outcome != "" {
		set, args = append(set, "outcome = ?"), append(args, m.Outcome)
	}
	where := "account_id = ? AND id = ? AND status IN (" + placeholders(len(m.From)) + ")"
	args = append(append(args, m.AccountID, m.ID), anys(m.From)...)
	if m.OnlyUnowned {
		where += " AND provider_id = 0"
	}
	n, err := q.affected(ctx, "UPDATE visits SET "+strings.Join(set, ", ")+" WHERE "+where, args...)
	return n == 1, err
}

// SeeWalkin records that the patient of waiting walk-in id (pending, no
// provider yet, memberID's) has its page open at now, unless it was
// recorded less than every seconds ago. It answers when the patient was
// seen before (0: never), and false when the visit is no such walk-in.
func (q *Q) SeeWalkin(ctx context.Context, accountID, id, memberID, now, every int64) (prev int64, ok bool, err error) {
	const where = " WHERE account_id = ? AND id = ? AND member_id = ? AND kind = ? AND status = ? AND provider_id = 0"
	args := []any{accountID, id, memberID, clinic.KindWalkin, clinic.VisitPending}
	var seen sql.NullInt64
	if err := q.queryRow(ctx, "SELECT seen_at FROM visits"+where, args, &seen); errors.Is(err, ErrNotFound) {
		return 0, false, nil
	} else if err != nil {
		return 0, false, err
	}
	if seen.Valid && now-seen.Int64 < every {
		return seen.Int64, true, nil
	}
	_, err = q.exec(ctx, "UPDATE visits SET seen_at = ?"+where, append([]any{now}, args...)...)
	return seen.Int64, true, err
}

// SeeAppointment records that the patient of booked visit id (pending or
// confirmed, memberID's) has its page open at now, once the visit is
// within an hour of its start: they have arrived, and it is no no-show.
// A sight less than every seconds after the last is not written (read
// first: a page's keep-alives take no write lock for nothing).
func (q *Q) SeeAppointment(ctx context.Context, accountID, id, memberID, now, every int64) error {
	const where = " WHERE account_id = ? AND id = ? AND member_id = ? AND kind = ? AND status IN (?, ?) AND starts_at - 3600 <= ?"
	args := []any{accountID, id, memberID, clinic.KindAppointment, clinic.VisitPending, clinic.VisitConfirmed, now}
	var seen sql.NullInt64
	if err := q.queryRow(ctx, "SELECT seen_at FROM visits"+where, args, &seen); errors.Is(err, ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if seen.Valid && now-seen.Int64 < every {
		return nil
	}
	_, err := q.exec(ctx, "UPDATE visits SET seen_at = ?"+where, append([]any{now}, args...)...)
	return err
}

// OverdueAppointments are booked visits of every clinic, not started,
// whose start is in [from, to): the no-show sweep's candidates, by start,
// at most limit after the one at (afterStart, afterID).
func (q *Q) OverdueAppointments(ctx context.Context, from, to, afterStart, afterID int64, limit int) ([]*clinic.Visit, error) {
	return q.visits(ctx, "SELECT "+visitCols+` FROM visits v WHERE v.kind = ? AND v.status IN (?, ?) AND v.starts_at >= ? AND v.starts_at < ?
		AND (v.starts_at > ? OR (v.starts_at = ? AND v.id > ?)) AND COALESCE(v.actual_start, 0) = 0 ORDER BY v.starts_at, v.id LIMIT ?`,
		clinic.KindAppointment, clinic.VisitPending, clinic.VisitConfirmed, from, to, afterStart, afterStart, afterID, limit)
}

// ProviderOutcomes are provider's visits starting in [from, to) that
// were missed or cancelled late, by start, at most limit.
func (q *Q) ProviderOutcomes(ctx context.Context, accountID, providerID, from, to int64, limit int) ([]*clinic.Visit, error) {
	return q.visits(ctx, "SELECT "+visitCols+` FROM visits v WHERE v.account_id = ? AND v.provider_id = ? AND v.starts_at >= ? AND v.starts_at < ?
		AND v.outcome <> '' ORDER BY v.starts_at, v.id LIMIT ?`, accountID, providerID, from, to, limit)
}

// SeenVisit is a waiting walk-in by the time its patient was last seen.
type SeenVisit struct{ AccountID, ID, RoomID int64 }

// WalkinsLastSeen are the waiting walk-ins, of every clinic, whose
// patient was last seen in [from, to): those who have just left, for the
// sweep that tells their rooms.
func (q *Q) WalkinsLastSeen(ctx context.Context, from, to int64) ([]SeenVisit, error) {
	rows, err := q.query(ctx, `SELECT account_id, id, COALESCE(room_id, 0) FROM visits
		WHERE seen_at IS NOT NULL AND status = 10 AND provider_id = 0 AND seen_at >= ? AND seen_at < ? AND kind = ?`, from, to, clinic.KindWalkin)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SeenVisit
	for rows.Next() {
		var v SeenVisit
		if err := rows.Scan(&v.AccountID, &v.ID, &v.RoomID); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, v)
	}
	return out, q.d.translate(rows.Err())
}

// QueueStats are a room's waiting-room numbers.
type QueueStats struct {
	Length         int
	AvgVisitSecs   int // average length of the room's recent completed visits; 0 when none
	BeforeVisitIDs []int64
	// BeforeMemberIDs are the patients of BeforeVisitIDs, in their order.
	BeforeMemberIDs []int64
}

// RoomQueue counts the walk-ins waiting in a room, in arrival order (but
// those whose patient was last seen before leftBefore: they have left;
// memberID's own count, being back as they ask), and averages the length of its last 20 completed visits.
func (q *Q) RoomQueue(ctx context.Context, accountID, roomID, leftBefore, memberID int64) (*QueueStats, error) {
	rows, err := q.query(ctx, `SELECT id, member_id FROM visits WHERE account_id = ? AND room_id = ? AND kind = ? AND status = ?
		AND (seen_at IS NULL OR seen_at >= ? OR member_id = ?) ORDER BY created, id`,
		accountID, roomID, clinic.KindWalkin, clinic.VisitPending, leftBefore, memberID)
	if err != nil {
		return nil, err
	}
	st := &QueueStats{}
	for rows.Next() {
		var id, member int64
		if err := rows.Scan(&id, &member); err != nil {
			rows.Close()
			return nil, q.d.translate(err)
		}
		st.BeforeVisitIDs, st.BeforeMemberIDs = append(st.BeforeVisitIDs, id), append(st.BeforeMemberIDs, member)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, q.d.translate(err)
	}
	st.Length = len(st.BeforeVisitIDs)
	var avg sql.NullFloat64
	err = q.queryRow(ctx, `SELECT AVG(d) FROM (SELECT actual_end - actual_start AS d FROM visits
		WHERE account_id = ? AND room_id = ? AND status = ? AND actual_start IS NOT NULL AND actual_end IS NOT NULL AND actual_end > actual_start
		ORDER BY actual_end DESC LIMIT 20) recent`, []any{accountID, roomID, clinic.VisitCompleted}, &avg)
	if err != nil {
		return nil, err
	}
	if avg.Valid {
		st.AvgVisitSecs = int(avg.Float64 + 0.5)
	}
	return st, nil
}

func nonNilIDs(xs []int64) []int64 {
	if xs == nil {
		return []int64{}
	}
	return xs
}

// nullZero stores an optional reference whose zero value means none as NULL,
// which its foreign key allows.
func nullZero(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// SetVisitReminders turns the patient's reminder emails of a visit on or
// off.
func (q *Q) SetVisitReminders(ctx context.Context, accountID, id int64, off bool, now int64) error {
	_, err := q.exec(ctx, "UPDATE visits SET reminders_off = ?, modified = ? WHERE account_id = ? AND id = ?", b2i(off), now, accountID, id)
	return err
}

// MoveAppointment gives a booked visit its new time: start, end, first
// slot and provider, while it is still open (pending or confirmed); it
// reports false when it no longer was.
func (q *Q) MoveAppointment(ctx context.Context, v *clinic.Visit, now int64) (bool, error) {
	meeting, _ := json.Marshal(v.Meeting)
	n, err := q.affected(ctx, `UPDATE visits SET starts_at = ?, ends_at = ?, slot_id = ?, provider_id = ?, meeting = ?, modified = ?
		WHERE account_id = ? AND id = ? AND status IN (?, ?)`, v.Start, v.End, v.SlotID, v.ProviderID, string(meeting), now,
		v.AccountID, v.ID, clinic.VisitPending, clinic.VisitConfirmed)
	return n == 1, err
}
