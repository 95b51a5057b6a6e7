package store

import (
	"context"
	"encoding/json"
	"strings"

	"teleclinic/internal/clinic"
)

const groupCols = "id, account_id, provider_id, room_id, date_start, date_end, time_start, time_end, timezone, repeats, repeat_day, repeat_week, visit_type, consultation, duration, created, modified"

// CreateSlotGroup inserts a group and its slots. A slot starting when the
// provider already has one is ErrConflict.
func (q *Q) CreateSlotGroup(ctx context.Context, g *clinic.SlotGroup, slots []clinic.Slot) error {
	days, _ := json.Marshal(nonNil(g.RepeatDay))
	cons, _ := json.Marshal(g.Consultation)
	id, err := q.insert(ctx, `INSERT INTO slot_groups (account_id, provider_id, room_id, date_start, date_end, time_start, time_end, timezone, repeats, repeat_day, repeat_week, visit_type, consultation, duration, created, modified)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.AccountID, g.ProviderID, g.RoomID, g.DateStart, g.DateEnd, g.TimeStart, g.TimeEnd, g.Timezone, b2i(g.Repeat), string(days), g.RepeatWeek,
		g.VisitType, string(cons), g.Duration, g.Created, g.Modified)
	if err != nil {
		return err
	}
	g.ID = id
	for i := range slots {
		s := &slots[i]
		s.GroupID = id
		if s.ID, err = q.insert(ctx, "INSERT INTO slots (account_id, provider_id, room_id, group_id, starts_at, ends_at, status, created, modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
			s.AccountID, s.ProviderID, s.RoomID, id, s.Start, s.End, s.Status, s.Created, s.Modified); err != nil {
			return err
		}
	}
	return nil
}

// SlotGroupsByID loads groups of the clinic by id.
func (q *Q) SlotGroupsByID(ctx context.Context, accountID int64, ids []int64) (map[int64]*clinic.SlotGroup, error) {
	out := map[int64]*clinic.SlotGroup{}
	if ids = distinct(ids); len(ids) == 0 {
		return out, nil
	}
	rows, err := q.query(ctx, "SELECT "+groupCols+" FROM slot_groups WHERE account_id = ? AND id IN ("+placeholders(len(ids))+")", append([]any{accountID}, anys(ids)...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var g clinic.SlotGroup
		var rep int
		var days, cons string
		if err := rows.Scan(&g.ID, &g.AccountID, &g.ProviderID, &g.RoomID, &g.DateStart, &g.DateEnd, &g.TimeStart, &g.TimeEnd, &g.Timezone,
			&rep, &days, &g.RepeatWeek, &g.VisitType, &cons, &g.Duration, &g.Created, &g.Modified); err != nil {
			return nil, q.d.translate(err)
		}
		g.Repeat = rep == 1
		_ = json.Unmarshal([]byte(days), &g.RepeatDay)
		_ = json.Unmarshal([]byte(cons), &g.Consultation)
		out[g.ID] = &g
	}
	return out, q.d.translate(rows.Err())
}

const slotCols = "s.id, s.account_id, s.provider_id, s.room_id, s.group_id, s.starts_at, s.ends_at, s.status, s.visit_id, s.created, s.modified, s.held_by, s.held_until"

func (q *Q) slots(ctx context.Context, query string, args ...any) ([]clinic.Slot, error) {
	rows, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []clinic.Slot{}
	for rows.Next() {
		var s clinic.Slot
		if err := rows.Scan(&s.ID, &s.AccountID, &s.ProviderID, &s.RoomID, &s.GroupID, &s.Start, &s.End, &s.Status, &s.VisitID, &s.Created, &s.Modified, &s.HeldBy, &s.HeldUntil); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, s)
	}
	return out, q.d.translate(rows.Err())
}

// SlotFilter selects a clinic's slots. Zero values do not filter.
type SlotFilter struct {
	AccountID   int64
	From, To    int64 // slots starting in [From, To)
	Status      int
	ProviderIDs []int64
	RoomID      int64
	GroupID     int64
	// After is the last slot of the page before: the list goes on after
	// it in its order (start time, then id), so slots sharing a start
	// are neither repeated nor skipped across pages.
	After *clinic.Slot
	Limit int
}

// ListSlots lists slots by start time, then id.
func (q *Q) ListSlots(ctx context.Context, f SlotFilter) ([]clinic.Slot, error) {
	if f.ProviderIDs != nil && len(f.ProviderIDs) == 0 {
		return []clinic.Slot{}, nil
	}
	lq := slotsQuery(f)
	return q.slots(ctx, lq.query, lq.args...)
}

// slotsQuery is the statement of f's slots.
func slotsQuery(f SlotFilter) listQuery {
	where := []string{"s.account_id = ?"}
	args := []any{f.AccountID}
	add := func(c string, a ...any) { where = append(where, c); args = append(args, a...) }
	if f.From != 0 {
		add("s.starts_at >= ?", f.From)
	}
	if f.To != 0 {
		add("s.starts_at < ?", f.To)
	}
	if f.Status != 0 {
		add("s.status = ?", f.Status)
	}
	if len(f.ProviderIDs) > 0 {
		add("s.provider_id IN ("+placeholders(len(f.ProviderIDs))+")", anys(f.ProviderIDs)...)
	}
	if f.RoomID != 0 {
		add("s.room_id = ?", f.RoomID)
	}
	if f.GroupID != 0 {
		add("s.group_id = ?", f.GroupID)
	}
	if f.After != nil {
		add("s.starts_at >= ? AND (s.starts_at > ? OR s.id > ?)", f.After.Start, f.After.Start, f.After.ID)
	}
	return listQuery{"SELECT " + slotCols + " FROM slots s WHERE " + strings.Join(where, " AND ") + " ORDER BY s.starts_at, s.id LIMIT ?", append(args, f.Limit)}
}

// ProviderSlotsOverlapping lists a provider's slots that overlap [from, to).
func (q *Q) ProviderSlotsOverlapping(ctx context.Context, providerID, from, to int64) ([]clinic.Slot, error) {
	return q.slots(ctx, "SELECT "+slotCols+" FROM slots s WHERE s.provider_id = ? AND s.starts_at < ? AND s.ends_at > ? ORDER BY s.starts_at", providerID, to, from)
}

// SlotByID finds a slot of the clinic.
func (q *Q) SlotByID(ctx context.Context, accountID, id int64) (*clinic.Slot, error) {
	ss, err := q.slots(ctx, "SELECT "+slotCols+" FROM slots s WHERE s.account_id = ? AND s.id = ?", accountID, id)
	if err != nil {
		return nil, err
	}
	if len(ss) == 0 {
		return nil, ErrNotFound
	}
	return &ss[0], nil
}

// BookSlot books an open slot for a visit of intake; false when it is not
// open any more (another booking won) or another intake holds it.
func (q *Q) BookSlot(ctx context.Context, accountID, slotID, visitID, intakeID, now int64) (bool, error) {
	n, err := q.affected(ctx, `UPDATE slots SET status = ?, visit_id = ?, held_by = 0, held_until = 0, modified = ?
		WHERE account_id = ? AND id = ? AND status = ? AND (held_until <= ? OR held_by = ?)`,
		clinic.SlotBooked, visitID, now, accountID, slotID, clinic.SlotOpen, now, intakeID)
	return n == 1, err
}

// HoldSlot holds an open slot for intake until until, unless another
// intake holds it; it reports whether the hold is the intake's.
func (q *Q) HoldSlot(ctx context.Context, accountID, slotID, intakeID, until, now int64) (bool, error) {
	n, err := q.affected(ctx, `UPDATE slots SET held_by = ?, held_until = ?, modified = ?
		WHERE account_id = ? AND id = ? AND status = ? AND (held_until <= ? OR held_by = ?)`,
		intakeID, until, now, accountID, slotID, clinic.SlotOpen, now, intakeID)
	return n == 1, err
}

// ReleaseHolds gives back the open slots intake holds.
func (q *Q) ReleaseHolds(ctx context.Context, accountID, intakeID, now int64) error {
	_, err := q.exec(ctx, "UPDATE slots SET held_by = 0, held_until = 0, modified = ? WHERE account_id = ? AND held_by = ? AND status = ?",
		now, accountID, intakeID, clinic.SlotOpen)
	return err
}

// FreeVisitSlots reopens the slots a cancelled visit held.
func (q *Q) FreeVisitSlots(ctx context.Context, accountID, visitID, now int64) error {
	_, err := q.exec(ctx, "UPDATE slots SET status = ?, visit_id = 0, modified = ? WHERE account_id = ? AND visit_id = ?",
		clinic.SlotOpen, now, accountID, visitID)
	return err
}

// DeleteOpenSlot deletes a slot if it is open; false when it is booked.
func (q *Q) DeleteOpenSlot(ctx context.Context, accountID, id int64) (bool, error) {
	n, err := q.affected(ctx, "DELETE FROM slots WHERE account_id = ? AND id = ? AND status = ?", accountID, id, clinic.SlotOpen)
	return n == 1, err
}

// DeleteOpenGroupSlots deletes a group's open slots and returns how many.
func (q *Q) DeleteOpenGroupSlots(ctx context.Context, accountID, groupID int64) (int64, error) {
	return q.affected(ctx, "DELETE FROM slots WHERE account_id = ? AND group_id = ? AND status = ?", accountID, groupID, clinic.SlotOpen)
}

// DeleteGroupIfEmpty deletes a group that has no slots left; true if it did.
func (q *Q) DeleteGroupIfEmpty(ctx context.Context, accountID, groupID int64) (bool, error) {
	n, err := q.affected(ctx, "DELETE FROM slot_groups WHERE account_id = ? AND id = ? AND NOT EXISTS (SELECT 1 FROM slots WHERE group_id = ?)", accountID, groupID, groupID)
	return n == 1, err
}

// DeleteProviderOpenSlots deletes a provider's open slots that start at or
// after from, and says how many.
func (q *Q) DeleteProviderOpenSlots(ctx context.Context, accountID, providerID, from int64) (int64, error) {
	return q.affected(ctx, "DELETE FROM slots WHERE account_id = ? AND provider_id = ? AND status = ? AND starts_at >= ?", accountID, providerID, clinic.SlotOpen, from)
}
