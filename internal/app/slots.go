package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Slot publication limits.
const (
	maxSlotsPerGroup = 2000
	maxGroupDays     = 366
)

// Span is one generated slot: an instant and a length.
type Span struct{ Start, End time.Time }

// GenerateSlots turns a slot group's local dates and wall-clock times into
// instants, in the group's zone. A local time that does not exist on a day
// (the spring-forward gap) is skipped; a local time that happens twice (the
// fall-back hour) gives one slot, and no slot starts before the previous one
// ends, so the repeated hour is never doubled.
func GenerateSlots(g *clinic.SlotGroup) ([]Span, error) {
	g.RepeatWeek = max(g.RepeatWeek, 1) // kept as it is used: every week at least
	pl, err := planOf(g)
	if err != nil {
		return nil, err
	}
	var out []Span
	var lastEnd time.Time
	for d, n := pl.d0, 0; !d.After(pl.d1); d, n = d.AddDate(0, 0, 1), n+1 {
		if !pl.on(d, n) {
			continue
		}
		for m := pl.t0; m+g.Duration <= pl.t1; m += g.Duration {
			hh, mm := m/60, m%60
			start := time.Date(d.Year(), d.Month(), d.Day(), hh, mm, 0, 0, pl.loc)
			if start.Hour() != hh || start.Minute() != mm {
				continue // does not exist on this day
			}
			start = firstOccurrence(start)
			if start.Before(lastEnd) {
				continue // the second pass through a repeated hour
			}
			end := start.Add(time.Duration(g.Duration) * time.Minute)
			out = append(out, Span{start, end})
			lastEnd = end
			if len(out) > maxSlotsPerGroup {
				return nil, clinic.Errorf(clinic.EInvalid, "a slot group makes at most %d slots; publish a shorter range.", maxSlotsPerGroup)
			}
		}
	}
	return out, nil
}

// slotPlan is a slot group checked: its zone, first and last day, the
// day's first and last minute, and how it repeats.
type slotPlan struct {
	loc        *time.Location
	d0, d1     time.Time
	t0, t1     int
	repeat     bool
	days       map[time.Weekday]bool
	everyWeeks int
}

func planOf(g *clinic.SlotGroup) (slotPlan, error) {
	var pl slotPlan
	loc, err := time.LoadLocation(g.Timezone)
	if err != nil || g.Timezone == "" || g.Timezone == "Local" {
		return pl, clinic.Errorf(clinic.EInvalid, "timezone must be an IANA time zone name, for example America/New_York.")
	}
	d0, err0 := time.Parse("2006-01-02", g.DateStart)
	d1, err1 := time.Parse("2006-01-02", g.DateEnd)
	if err0 != nil || err1 != nil {
		return pl, clinic.Errorf(clinic.EInvalid, "date_start and date_end are dates in the form YYYY-MM-DD.")
	}
	if d1.Before(d0) || d1.Sub(d0) > maxGroupDays*24*time.Hour {
		return pl, clinic.Errorf(clinic.EInvalid, "date_end must be on or after date_start, and at most %d days later.", maxGroupDays)
	}
	t0, ok0 := minutesOf(g.TimeStart)
	t1, ok1 := minutesOf(g.TimeEnd)
	if !ok0 || !ok1 || t1 <= t0 {
		return pl, clinic.Errorf(clinic.EInvalid, "time_start and time_end are HH:MM, with time_end after time_start.")
	}
	if g.Duration <= 0 || g.Duration > t1-t0 {
		return pl, clinic.Errorf(clinic.EInvalid, "duration (minutes) must be positive and fit between time_start and time_end.")
	}
	days := map[time.Weekday]bool{}
	for _, d := range g.RepeatDay {
		i := slices.Index(weekdays, strings.ToLower(strings.TrimSpace(d)))
		if i < 0 {
			return pl, clinic.Errorf(clinic.EInvalid, "repeat_day holds weekday names such as monday.")
		}
		days[time.Weekday(i)] = true
	}
	return slotPlan{loc: loc, d0: d0, d1: d1, t0: t0, t1: t1, repeat: g.Repeat, days: days, everyWeeks: g.RepeatWeek}, nil
}

// on says whether the group has slots on day d, the nth from its first:
// every day unless it repeats, then on its weekdays (the first day's if
// none is named), every everyWeeks weeks.
func (pl slotPlan) on(d time.Time, n int) bool {
	switch {
	case !pl.repeat:
		return true
	case len(pl.days) > 0 && !pl.days[d.Weekday()]:
		return false
	case len(pl.days) == 0 && d.Weekday() != pl.d0.Weekday():
		return false
	}
	return (n/7)%pl.everyWeeks == 0
}

// firstOccurrence returns the earliest instant that shows the same local
// date and time as t. Where a local time happens twice, time.Date may return
// either (it differs by zone); slots always take the first, so coverage runs
// on without a gap up to the clock change.
func firstOccurrence(t time.Time) time.Time {
	for _, back := range []time.Duration{2 * time.Hour, time.Hour, 30 * time.Minute} {
		c := t.Add(-back)
		if c.Year() == t.Year() && c.YearDay() == t.YearDay() && c.Hour() == t.Hour() && c.Minute() == t.Minute() {
			return c
		}
	}
	return t
}

func minutesOf(hhmm string) (int, bool) {
	if !hhmmRE.MatchString(hhmm) {
		return 0, false
	}
	h, _ := strconv.Atoi(hhmm[:2])
	m, _ := strconv.Atoi(hhmm[3:])
	return h*60 + m, true
}

// SlotGroupInput is POST /slots.
type SlotGroupInput struct {
	ProviderID     int64 // the admin names the provider; a provider publishes for themself (0)
	RoomCode       string
	DateStart      string
	DateEnd        string
	TimeStart      string
	TimeEnd        string
	Timezone       string
	Duration       int // minutes; or from ConsultationID
	ConsultationID string
	Repeat         bool
	RepeatDay      []string
	RepeatWeek     int
	VisitType      string
	// KeepZone saves Timezone to the publishing provider's profile when it
	// names none (the portal's dashboard, whose times are in the browser's
	// zone until the provider chooses one), so their emails and the API
	// agree with the schedule.
	KeepZone bool
}

// SlotsView is slots with the groups, providers and rooms they show.
type SlotsView struct {
	Slots     []clinic.Slot
	Groups    map[int64]*clinic.SlotGroup
	Providers map[int64]*clinic.User
	Rooms     map[int64]*clinic.Room
	// Next is the slot the next page goes on after (the last one the page
	// read), 0 when the list ends here.
	Next int64
}

// CreateSlots is POST /slots: a provider publishes availability in a room
// they are linked to (or the admin for a provider). Slots overlapping the
// provider's existing slots are refused.
func (a *App) CreateSlots(ctx context.Context, p *clinic.Principal, in SlotGroupInput) (*clinic.SlotGroup, *SlotsView, error) {
	if err := RequireUser(p); err != nil {
		return nil, nil, err
	}
	prov, err := a.slotProvider(ctx, p, in.ProviderID)
	if err != nil {
		return nil, nil, err
	}
	if in.RoomCode == "" {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "room_code is required.")
	}
	r, err := a.RoomByCode(ctx, p, in.RoomCode)
	if err != nil {
		return nil, nil, err
	}
	linked, err := a.store.Read().UserInRoom(ctx, p.Account.ID, prov.ID, r.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("slots: %w", err)
	}
	if !linked {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "The provider is not linked to room '%s'.", r.Code)
	}
	now := a.Unix()
	g := &clinic.SlotGroup{AccountID: p.Account.ID, ProviderID: prov.ID, RoomID: r.ID, DateStart: in.DateStart, DateEnd: in.DateEnd,
		TimeStart: in.TimeStart, TimeEnd: in.TimeEnd, Timezone: in.Timezone, Repeat: in.Repeat, RepeatDay: in.RepeatDay,
		RepeatWeek: in.RepeatWeek, VisitType: in.VisitType, Duration: in.Duration, Created: now, Modified: now}
	if g.DateEnd == "" {
		g.DateEnd = g.DateStart
	}
	if g.Timezone == "" {
		g.Timezone = r.Settings.Operation.Timezone
	}
	if in.ConsultationID != "" {
		i := slices.IndexFunc(r.Settings.Consultations, func(c clinic.Consultation) bool { return c.ID == in.ConsultationID })
		if i < 0 {
			return nil, nil, clinic.Errorf(clinic.EInvalid, "consultation_id %q is not one of the room's consultations.", in.ConsultationID)
		}
		g.Consultation = r.Settings.Consultations[i]
		if g.Duration == 0 {
			g.Duration = g.Consultation.Duration
		}
	} else if len(r.Settings.Consultations) > 0 {
		g.Consultation = r.Settings.Consultations[0]
	}
	spans, err := GenerateSlots(g)
	if err != nil {
		return nil, nil, err
	}
	if len(spans) == 0 {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "These dates and times make no slot.")
	}
	// A time that has begun cannot be booked: a schedule for today from
	// 09:00 published at 11:00 starts at 11:00, and one wholly past is
	// refused, saying the time in the schedule's zone (the usual cause is
	// a zone other than the provider thought).
	var slots []clinic.Slot
	for _, sp := range spans {
		if sp.Start.Unix() < now {
			continue
		}
		slots = append(slots, clinic.Slot{AccountID: p.Account.ID, ProviderID: prov.ID, RoomID: r.ID, Start: sp.Start.Unix(), End: sp.End.Unix(),
			Status: clinic.SlotOpen, Created: now, Modified: now})
	}
	zone, _ := time.LoadLocation(g.Timezone) // GenerateSlots checked it
	if len(slots) == 0 {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "These times have passed: it is now %s in %s.", time.Unix(now, 0).In(zone).Format("Mon 2 Jan 15:04"), g.Timezone)
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		existing, err := q.ProviderSlotsOverlapping(ctx, prov.ID, slots[0].Start, slots[len(slots)-1].End)
		if err != nil {
			return err
		}
		for _, s := range slots {
			for _, x := range existing {
				if s.Start < x.End && x.Start < s.End {
					return clinic.Errorf(clinic.EConflict, "The provider already has a slot from %s to %s (%s).",
						time.Unix(x.Start, 0).In(zone).Format("Mon 2 Jan 15:04"), time.Unix(x.End, 0).In(zone).Format("15:04"), g.Timezone)
				}
			}
		}
		if err := q.CreateSlotGroup(ctx, g, slots); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "slots.create", "slot_group", i64s(g.ID), OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, nil, clinic.Errorf(clinic.EConflict, "The provider already has slots at these times.")
	}
	if err != nil {
		return nil, nil, StoreErr("create slots", err, "")
	}
	if in.KeepZone && in.ProviderID == 0 && p.User.Timezone == "" && g.Timezone != "UTC" {
		zone := g.Timezone
		if _, err := a.UpdateMe(ctx, p, ProfileUpdate{Timezone: &zone}); err != nil {
			return nil, nil, err
		}
	}
	v, err := a.slotsView(ctx, p, slots)
	return g, v, err
}

func (a *App) slotProvider(ctx context.Context, p *clinic.Principal, id int64) (*clinic.User, error) {
	switch {
	case IsProvider(p):
		if id != 0 && id != p.UserID() {
			return nil, clinic.Errorf(clinic.EForbidden, "A provider manages only their own slots.")
		}
		return p.User, nil
	case p.IsAdmin():
		if id == 0 {
			return nil, clinic.Errorf(clinic.EInvalid, "provider_id is required.")
		}
		return a.ProviderByID(ctx, p, id)
	}
	return nil, clinic.Errorf(clinic.EForbidden, "Only providers and the clinic admin manage slots.")
}

func (a *App) slotsView(ctx context.Context, p *clinic.Principal, slots []clinic.Slot) (*SlotsView, error) {
	var gids, uids, rids []int64
	for _, s := range slots {
		gids, uids, rids = append(gids, s.GroupID), append(uids, s.ProviderID), append(rids, s.RoomID)
	}
	// The related rows by id lists, one statement each however many slots
	// (a provider read per provider was 8 of availability's 13 statements).
	rd := a.store.Read()
	v := &SlotsView{Slots: slots}
	var err error
	if v.Providers, err = rd.UsersByIDs(ctx, p.Account.ID, uids); err != nil {
		return nil, fmt.Errorf("slot providers: %w", err)
	}
	if v.Rooms, err = rd.RoomsByIDs(ctx, p.Account.ID, rids); err != nil {
		return nil, fmt.Errorf("slot rooms: %w", err)
	}
	for _, s := range slots {
		if v.Providers[s.ProviderID] == nil || v.Rooms[s.RoomID] == nil {
			return nil, fmt.Errorf("slot %d: its provider or room is not of the clinic", s.ID)
		}
	}
	v.Groups, err = rd.SlotGroupsByID(ctx, p.Account.ID, gids)
	return v, err
}

// SlotQuery is GET /slots.
type SlotQuery struct {
	Start, End     int64
	Status         int
	Type           string // one or group
	ProviderID     int64
	RoomCode       string
	AccountCode    string
	SpecialtyID    string
	StatesServiced string
	// After (a slot's id) and Limit page the list: it goes on after that
	// slot, Limit slots read at a time (MaxSlotList by default and at
	// most).
	After int64
	Limit int
}

// MaxSlotList bounds one answer of the slot lists.
const MaxSlotList = 1000

// DefaultAvailableSlots is GET /slots/available's page unless its limit
// says.
const DefaultAvailableSlots = 200

// slotAfter is the slot a page goes on after: one of the clinic's, or a
// 400 (nil for 0, the first page).
func (a *App) slotAfter(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Slot, error) {
	if id == 0 {
		return nil, nil
	}
	s, err := a.store.Read().SlotByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) || id < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "after is the id of one of the clinic's slots.")
	}
	if err != nil {
		return nil, fmt.Errorf("slots: %w", err)
	}
	return s, nil
}

// ListSlots is GET /slots, for any user of the clinic.
func (a *App) ListSlots(ctx context.Context, p *clinic.Principal, in SlotQuery) (*SlotsView, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if in.Start <= 0 || in.End <= 0 || in.End <= in.Start {
		return nil, clinic.Errorf(clinic.EInvalid, "start and end (UNIX timestamps, end after start) are required.")
	}
	if in.Type != "" && in.Type != "one" && in.Type != "group" {
		return nil, clinic.Errorf(clinic.EInvalid, "type is one or group.")
	}
	if in.AccountCode != "" && in.AccountCode != p.Account.Code {
		return &SlotsView{Slots: []clinic.Slot{}}, nil
	}
	after, err := a.slotAfter(ctx, p, in.After)
	if err != nil {
		return nil, err
	}
	f := store.SlotFilter{AccountID: p.Account.ID, From: in.Start, To: in.End, Status: in.Status, After: after, Limit: PageSize(in.Limit, MaxSlotList, MaxSlotList)}
	if in.RoomCode != "" {
		r, err := a.RoomByCode(ctx, p, in.RoomCode)
		if err != nil {
			return nil, err
		}
		if in.SpecialtyID != "" && !slices.ContainsFunc(r.Settings.Specialties, func(s clinic.Specialty) bool { return s.Code == in.SpecialtyID }) {
			return &SlotsView{Slots: []clinic.Slot{}}, nil
		}
		f.RoomID = r.ID
	}
	v, err := a.findSlots(ctx, p, f, in.ProviderID)
	if err != nil {
		return nil, err
	}
	v.Slots = slices.DeleteFunc(v.Slots, func(s clinic.Slot) bool { return !in.keeps(v, s) })
	return v, nil
}

// keeps says whether the query keeps slot s of v, by what SQL does not
// filter: a group consultation's or one patient's (type), the room's
// specialty across rooms, the provider's states.
func (in SlotQuery) keeps(v *SlotsView, s clinic.Slot) bool {
	g, r, u := v.Groups[s.GroupID], v.Rooms[s.RoomID], v.Providers[s.ProviderID]
	group := g != nil && g.Consultation.Group
	switch {
	case in.Type == "group" && !group, in.Type == "one" && group:
		return false
	case in.SpecialtyID != "" && in.RoomCode == "" && !slices.ContainsFunc(r.Settings.Specialties, func(sp clinic.Specialty) bool { return sp.Code == in.SpecialtyID }):
		return false
	}
	return in.StatesServiced == "" || servesState(u, in.StatesServiced)
}

// findSlots lists the slots f selects, of provider when one is named (not
// 0), with what they show, f.Limit at most. When more follow, Next names
// the last slot read (a clinic.Page's cursor): a caller's filter in Go may
// have left it out of the view.
func (a *App) findSlots(ctx context.Context, p *clinic.Principal, f store.SlotFilter, provider int64) (*SlotsView, error) {
	if provider != 0 {
		f.ProviderIDs = []int64{provider}
	}
	size := f.Limit
	f.Limit++
	slots, err := a.store.Read().ListSlots(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("slots: %w", err)
	}
	pg := clinic.PageOf(slots, size, func(s clinic.Slot) int64 { return s.ID })
	v, err := a.slotsView(ctx, p, pg.Items)
	if err != nil {
		return nil, err
	}
	v.Next = pg.Next
	return v, nil
}

// servesState: a provider with no states_serviced serves every state.
func servesState(u *clinic.User, state string) bool {
	states := ProviderStates(u)
	return len(states) == 0 || slices.Contains(states, strings.ToUpper(state))
}

// ProviderStates are the states a provider serves (extra.states_serviced).
func ProviderStates(u *clinic.User) []string { return extraList(u, "states_serviced") }

// ProviderSpecialties are a provider's specialty codes (extra.specialties).
func ProviderSpecialties(u *clinic.User) []string { return extraList(u, "specialties") }

func extraList(u *clinic.User, key string) []string {
	out := []string{}
	if l, ok := u.Extra[key].([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// AvailableSlots is GET /slots/available: the clinic's open slots from now,
// soonest first, limit at a time (DefaultAvailableSlots unless it says)
// after the slot after names (0: from the first).
func (a *App) AvailableSlots(ctx context.Context, p *clinic.Principal, after int64, limit int) (*SlotsView, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	from, err := a.slotAfter(ctx, p, after)
	if err != nil {
		return nil, err
	}
	return a.findSlots(ctx, p, store.SlotFilter{AccountID: p.Account.ID, From: a.Unix(), Status: clinic.SlotOpen, After: from, Limit: PageSize(limit, DefaultAvailableSlots, MaxSlotList)}, 0)
}

// DeleteSlot is DELETE /slots/{id}: its provider or the admin deletes an
// open slot; a booked slot stays with its visit (409) until the visit is
// cancelled. A group left without slots goes too.
func (a *App) DeleteSlot(ctx context.Context, p *clinic.Principal, id int64) (slots, groups int, err error) {
	if err := RequireUser(p); err != nil {
		return 0, 0, err
	}
	s, err := a.store.Read().SlotByID(ctx, p.Account.ID, id)
	if err != nil {
		return 0, 0, StoreErr("delete slot", err, "Slot not found.")
	}
	if err := a.ownsSlots(p, s.ProviderID); err != nil {
		return 0, 0, err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		slots, groups = 0, 0
		ok, err := q.DeleteOpenSlot(ctx, p.Account.ID, id)
		if err != nil {
			return err
		}
		if !ok {
			return clinic.Errorf(clinic.EConflict, "Slot %d is booked; cancel its visit first.", id)
		}
		slots = 1
		if gone, err := q.DeleteGroupIfEmpty(ctx, p.Account.ID, s.GroupID); err != nil {
			return err
		} else if gone {
			groups = 1
		}
		return a.AuditIn(ctx, q, p, "slots.delete", "slot", i64s(id), OutcomeOK)
	})
	return slots, groups, StoreErr("delete slot", err, "")
}

// DeleteSlotGroup is DELETE /slots/groups/{id}: it deletes the group's open
// slots; booked slots stay with their visits, and the group stays with them
// (group_deleted 0) until they are gone.
func (a *App) DeleteSlotGroup(ctx context.Context, p *clinic.Principal, id int64) (slots, groups int, err error) {
	if err := RequireUser(p); err != nil {
		return 0, 0, err
	}
	gs, err := a.store.Read().SlotGroupsByID(ctx, p.Account.ID, []int64{id})
	if err != nil {
		return 0, 0, fmt.Errorf("delete group: %w", err)
	}
	g, ok := gs[id]
	if !ok {
		return 0, 0, clinic.Errorf(clinic.ENotFound, "Slot group not found.")
	}
	if err := a.ownsSlots(p, g.ProviderID); err != nil {
		return 0, 0, err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		n, err := q.DeleteOpenGroupSlots(ctx, p.Account.ID, id)
		if err != nil {
			return err
		}
		slots, groups = int(n), 0
		if gone, err := q.DeleteGroupIfEmpty(ctx, p.Account.ID, id); err != nil {
			return err
		} else if gone {
			groups = 1
		}
		return a.AuditIn(ctx, q, p, "slots.delete_group", "slot_group", i64s(id), OutcomeOK)
	})
	return slots, groups, StoreErr("delete group", err, "")
}

func (a *App) ownsSlots(p *clinic.Principal, providerID int64) error {
	if p.IsAdmin() || p.UserID() == providerID {
		return nil
	}
	return clinic.Errorf(clinic.EForbidden, "Only the slot's provider or the clinic admin may delete it.")
}

// GetSlot is one of the clinic's slots with what it shows, for any user of
// the clinic (FHIR's Slot read).
func (a *App) GetSlot(ctx context.Context, p *clinic.Principal, id int64) (*SlotsView, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	s, err := a.store.Read().SlotByID(ctx, p.Account.ID, id)
	if err != nil {
		return nil, StoreErr("slot", err, "Slot not found.")
	}
	return a.slotsView(ctx, p, []clinic.Slot{*s})
}
