package app

import (
	"context"
	"fmt"
	"slices"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// AvailabilityQuery is GET /availability.
type AvailabilityQuery struct {
	Start, End     int64
	RoomCode       string
	Duration       int // seconds the visit needs; 0: one slot
	ProviderID     int64
	IntakeID       int64
	ConsultationID string
	Location       string
}

// AvailSlot is one slot with its flags.
type AvailSlot struct {
	Slot      clinic.Slot
	Booked    bool
	Available bool
}

// Availability is GET /availability's answer.
type Availability struct {
	Slots  []AvailSlot
	Groups map[int64]*clinic.SlotGroup
	// Through is where the answer ends: the window's end, or, when the
	// window holds more slots than one read takes (MaxSlotList), the
	// start of the last instant read, whose slots are left to the answer
	// that starts there.
	Through int64
}

// availabilityRoom is the room the question is about: its intake's
// (whose provider and location stand when the question names none), or
// the one it names.
func (a *App) availabilityRoom(ctx context.Context, p *clinic.Principal, in *AvailabilityQuery) (*clinic.Room, error) {
	if in.IntakeID == 0 {
		if in.RoomCode == "" {
			return nil, clinic.Errorf(clinic.EInvalid, "room_code or intake_id is required.")
		}
		return a.RoomByCode(ctx, p, in.RoomCode)
	}
	it, err := a.intakeFor(ctx, p, in.IntakeID)
	if err != nil {
		return nil, err
	}
	r, err := a.store.Read().RoomByID(ctx, p.Account.ID, it.RoomID)
	if err != nil {
		return nil, fmt.Errorf("availability: %w", err)
	}
	if in.ProviderID == 0 && it.ProviderID != 0 {
		in.ProviderID = it.ProviderID
	}
	if in.Location == "" {
		in.Location = it.Location
	}
	return r, nil
}

// length is the time the visit needs, in seconds: the question's, or its
// consultation's in room r.
func (in AvailabilityQuery) length(r *clinic.Room) (int64, error) {
	need := int64(in.Duration)
	if in.ConsultationID == "" {
		return need, nil
	}
	i := slices.IndexFunc(r.Settings.Consultations, func(c clinic.Consultation) bool { return c.ID == in.ConsultationID })
	if i < 0 {
		return 0, clinic.Errorf(clinic.EInvalid, "consultation_id %q is not one of the room's consultations.", in.ConsultationID)
	}
	if need == 0 {
		need = int64(r.Settings.Consultations[i].Duration) * 60
	}
	return need, nil
}

// Availability is GET /availability: the room's slots in [start, end) with
// whether each is booked and whether a visit of the asked length can start
// in it (it and the provider's following, back-to-back open slots cover the
// duration). intake_id supplies the room, and the provider and location the
// intake names, unless they are given.
func (a *App) Availability(ctx context.Context, p *clinic.Principal, in AvailabilityQuery) (*Availability, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if in.Start <= 0 || in.End <= in.Start {
		return nil, clinic.Errorf(clinic.EInvalid, "start and end (UNIX timestamps, end after start) are required.")
	}
	if in.Duration < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "duration (seconds) must not be negative.")
	}
	r, err := a.availabilityRoom(ctx, p, &in)
	if err != nil {
		return nil, err
	}
	need, err := in.length(r)
	if err != nil {
		return nil, err
	}
	// The same question in the same second, with no write since, has the
	// same answer (availcache.go).
	key := availKey{account: p.Account.ID, room: r.ID, provider: in.ProviderID, start: in.Start, end: in.End, need: need,
		intake: in.IntakeID, location: in.Location, now: a.Unix(), writes: a.store.Writes()}
	if av := a.avail.get(key); av != nil {
		return av, nil
	}
	v, err := a.findSlots(ctx, p, store.SlotFilter{AccountID: p.Account.ID, RoomID: r.ID, From: in.Start, To: in.End, Limit: MaxSlotList}, in.ProviderID)
	if err != nil {
		return nil, err
	}
	slots, now := v.Slots, key.now
	out := &Availability{Groups: v.Groups, Slots: []AvailSlot{}, Through: in.End}
	if v.Next != 0 {
		// The read stopped inside the window: the answer ends before the
		// last instant read, whose slots may go on past the read, and the
		// caller goes on from there (GET /availability's Link). Were every
		// slot read at one instant, the answer holds them and goes on
		// after it.
		out.Through = slots[len(slots)-1].Start
		if out.Through == slots[0].Start {
			out.Through++
		}
	}
	for i, s := range slots {
		if s.Start >= out.Through {
			break
		}
		if in.Location != "" && !servesState(v.Providers[s.ProviderID], in.Location) {
			continue
		}
		out.Slots = append(out.Slots, AvailSlot{Slot: s, Booked: s.Status == clinic.SlotBooked,
			Available: s.FreeFor(in.IntakeID, now) && s.Start > now && covers(slots, i, need, in.IntakeID, now)})
	}
	a.avail.put(key, out)
	return out, nil
}

// covers reports whether slots[i] and the same provider's back-to-back
// slots after it, free for intake, last at least need seconds.
func covers(slots []clinic.Slot, i int, need, intake, now int64) bool {
	s := slots[i]
	end := s.End
	for j := i + 1; end-s.Start < need && j < len(slots); j++ {
		n := slots[j]
		if n.ProviderID != s.ProviderID {
			continue
		}
		if n.Start != end || !n.FreeFor(intake, now) {
			break
		}
		end = n.End
	}
	return end-s.Start >= need
}

// BookInput is POST /visits.
type BookInput struct {
	SlotStart, SlotEnd int64
	RoomCode           string
	Type               string
	IntakeID           int64
	MemberRef          string
	ProviderID         int64
}

// Book is POST /visits: it books the open slots of one provider that run
// from slot_start to slot_end, back to back, for the intake's patient. Each
// slot is taken by a conditional UPDATE in the visit's transaction, so of
// any number of concurrent bookings of a slot — in one process or several —
// exactly one gets a visit and the others a 409.
func (a *App) Book(ctx context.Context, p *clinic.Principal, in BookInput) (*VisitDetail, error) {
	it, r, chain, err := a.bookingChain(ctx, p, in)
	if err != nil {
		return nil, err
	}
	var v *clinic.Visit
	err = a.store.Tx(ctx, func(q *store.Q) error {
		v, err = a.bookChain(ctx, q, p, it, r, chain, in)
		return err
	})
	if err != nil {
		return nil, StoreErr("book", err, "")
	}
	return a.visitDetail(ctx, p, v)
}

// BookNew books as Book does for a patient with no intake yet (FHIR's
// $book): the intake in, of type scheduling, is filed in the booking's
// transaction, so a booking refused leaves no intake behind.
func (a *App) BookNew(ctx context.Context, p *clinic.Principal, intake IntakeInput, in BookInput) (*VisitDetail, error) {
	nb, err := a.newBooking(ctx, p, intake, in)
	if err != nil {
		return nil, err
	}
	var v *clinic.Visit
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := a.insertIntake(ctx, q, p, nb.it, nb.consent); err != nil {
			return err
		}
		v, err = a.bookChain(ctx, q, p, nb.it, nb.room, nb.chain, in)
		return err
	})
	if err != nil {
		return nil, StoreErr("book", err, "")
	}
	return a.visitDetail(ctx, p, v)
}

// pendingBooking is a booking (or hold) of in with an intake not yet filed:
// the intake (of type scheduling, in in's room), its consent, its room and
// the slots it would take. BookNew and HoldNew write the intake in the
// transaction that takes the slots.
type pendingBooking struct {
	it      *clinic.Intake
	consent *clinic.Consent
	room    *clinic.Room
	chain   []clinic.Slot
}

// newBooking checks a booking of in for an intake to be filed with it.
func (a *App) newBooking(ctx context.Context, p *clinic.Principal, intake IntakeInput, in BookInput) (*pendingBooking, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	if err := checkBooking(in); err != nil {
		return nil, err
	}
	schedule := "2"
	intake.Type = &schedule
	intake.RoomCode = in.RoomCode
	it, r, consent, err := a.newIntake(ctx, p, intake)
	if err != nil {
		return nil, err
	}
	chain, err := a.slotChain(ctx, p, it, r, in)
	if err != nil {
		return nil, err
	}
	return &pendingBooking{it: it, consent: consent, room: r, chain: chain}, nil
}

// bookChain writes the visit of a booking in q: the visit, each slot of
// the chain taken by a conditional UPDATE, its reminders, event and mail.
func (a *App) bookChain(ctx context.Context, q *store.Q, p *clinic.Principal, it *clinic.Intake, r *clinic.Room, chain []clinic.Slot, in BookInput) (*clinic.Visit, error) {
	v := a.newVisit(p, it, r, clinic.KindAppointment, clinic.VisitVideo, chain[0].ProviderID)
	v.Start, v.End, v.SlotID = in.SlotStart, in.SlotEnd, chain[0].ID
	v.Meeting.Expiry = in.SlotEnd + 3600
	if err := a.insertVisit(ctx, q, p, v, it); err != nil {
		return nil, err
	}
	for _, s := range chain { // ascending ids: concurrent bookings lock in one order
		won, err := q.BookSlot(ctx, p.Account.ID, s.ID, v.ID, it.ID, v.Created)
		if err != nil {
			return nil, err
		}
		if !won {
			return nil, clinic.Errorf(clinic.EConflict, "That time was just booked by someone else.")
		}
	}
	if err := a.enqueueReminders(ctx, q, v); err != nil {
		return nil, err
	}
	if err := a.emitVisit(ctx, q, EventAppointmentBooked, v, v.Status, ""); err != nil {
		return nil, err
	}
	return v, a.mailAppointmentChange(ctx, q, p, changeBooked, v, 0, "")
}

// bookingChain checks a booking (or a hold) of in and finds the slots it
// would take: the intake, its room and the chain of slots, free for the
// intake now.
func (a *App) bookingChain(ctx context.Context, p *clinic.Principal, in BookInput) (*clinic.Intake, *clinic.Room, []clinic.Slot, error) {
	if err := RequireUser(p); err != nil {
		return nil, nil, nil, err
	}
	if err := checkBooking(in); err != nil {
		return nil, nil, nil, err
	}
	if in.IntakeID == 0 {
		return nil, nil, nil, clinic.Errorf(clinic.EInvalid, "slot_start, slot_end (after slot_start), room_code, type and intake_id are required.")
	}
	it, r, err := a.visitIntake(ctx, p, in.IntakeID, in.RoomCode)
	if err != nil {
		return nil, nil, nil, err
	}
	if in.MemberRef != "" && in.MemberRef != i64s(it.MemberID) {
		if m, err := a.store.Read().UserByCode(ctx, p.Account.ID, in.MemberRef); err != nil || m.ID != it.MemberID {
			return nil, nil, nil, clinic.Errorf(clinic.EInvalid, "member_id does not match the intake's patient.")
		}
	}
	chain, err := a.slotChain(ctx, p, it, r, in)
	return it, r, chain, err
}

// checkBooking checks what a booking names, before anything is read.
func checkBooking(in BookInput) error {
	if in.SlotStart <= 0 || in.SlotEnd <= in.SlotStart || in.RoomCode == "" || in.Type == "" {
		return clinic.Errorf(clinic.EInvalid, "slot_start, slot_end (after slot_start), room_code, type and intake_id are required.")
	}
	if in.Type != "2" {
		return clinic.Errorf(clinic.EInvalid, "type must be 2 (scheduling).")
	}
	return nil
}

// slotChain finds the slots a booking of it in room r would take: one
// provider's (in's, else the intake's, else any), back to back from
// in.SlotStart to in.SlotEnd, free for the intake now.
func (a *App) slotChain(ctx context.Context, p *clinic.Principal, it *clinic.Intake, r *clinic.Room, in BookInput) ([]clinic.Slot, error) {
	if !r.Settings.AppointmentEnabled {
		return nil, clinic.Errorf(clinic.EInvalid, "Room '%s' does not take appointments.", r.Code)
	}
	if in.SlotStart <= a.Unix() {
		return nil, clinic.Errorf(clinic.EInvalid, "That slot has already started.")
	}
	f := store.SlotFilter{AccountID: p.Account.ID, RoomID: r.ID, From: in.SlotStart, To: in.SlotEnd, Limit: MaxSlotList}
	provider := in.ProviderID
	if provider == 0 {
		provider = it.ProviderID
	}
	if provider != 0 {
		prov, err := a.ProviderByID(ctx, p, provider)
		if err != nil {
			return nil, err
		}
		f.ProviderIDs = []int64{prov.ID}
	}
	slots, err := a.store.Read().ListSlots(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("book: %w", err)
	}
	chain, anyBooked := pickChain(slots, in.SlotStart, in.SlotEnd, it.ID, a.Unix())
	if chain == nil {
		if anyBooked {
			return nil, clinic.Errorf(clinic.EConflict, "That time is already booked.")
		}
		return nil, clinic.Errorf(clinic.EInvalid, "No slot of room '%s' runs from %s to %s.", r.Code,
			time.Unix(in.SlotStart, 0).UTC().Format(time.RFC3339), time.Unix(in.SlotEnd, 0).UTC().Format(time.RFC3339))
	}
	return chain, nil
}

// HoldTTL is how long a time stays held for a patient who is paying for it.
const HoldTTL = 10 * time.Minute

// Hold is a time held for an intake until Until.
type Hold struct {
	Start, End, ProviderID, IntakeID, Until int64
}

// HoldTime holds the slots of a booking for the intake's patient while they
// pay (HoldTTL, renewed by holding again): no one else books them
// meanwhile, and a payment is taken only for a held time. Holding a time
// gives back any other the intake held.
func (a *App) HoldTime(ctx context.Context, p *clinic.Principal, in BookInput) (*Hold, error) {
	it, _, chain, err := a.bookingChain(ctx, p, in)
	if err != nil {
		return nil, err
	}
	var h *Hold
	err = a.store.Tx(ctx, func(q *store.Q) error {
		h, err = a.holdChain(ctx, q, p, it, chain, in)
		return err
	})
	if err != nil {
		return nil, StoreErr("hold", err, "")
	}
	return h, nil
}

// HoldNew holds a time as HoldTime does for a patient with no intake yet
// (FHIR's $hold): the intake in, of type scheduling, is filed in the
// hold's transaction, so a hold refused leaves no intake behind. The hold
// names the intake, which the booking names in turn.
func (a *App) HoldNew(ctx context.Context, p *clinic.Principal, intake IntakeInput, in BookInput) (*Hold, error) {
	nb, err := a.newBooking(ctx, p, intake, in)
	if err != nil {
		return nil, err
	}
	var h *Hold
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := a.insertIntake(ctx, q, p, nb.it, nb.consent); err != nil {
			return err
		}
		h, err = a.holdChain(ctx, q, p, nb.it, nb.chain, in)
		return err
	})
	if err != nil {
		return nil, StoreErr("hold", err, "")
	}
	return h, nil
}

// holdChain holds the chain's slots for the intake in q, giving back any
// other time it held.
func (a *App) holdChain(ctx context.Context, q *store.Q, p *clinic.Principal, it *clinic.Intake, chain []clinic.Slot, in BookInput) (*Hold, error) {
	now := a.Unix()
	until := now + int64(HoldTTL/time.Second)
	if err := q.ReleaseHolds(ctx, p.Account.ID, it.ID, now); err != nil {
		return nil, err
	}
	for _, s := range chain {
		held, err := q.HoldSlot(ctx, p.Account.ID, s.ID, it.ID, until, now)
		if err != nil {
			return nil, err
		}
		if !held {
			return nil, clinic.Errorf(clinic.EConflict, "That time was just taken by someone else.")
		}
	}
	if err := a.AuditIn(ctx, q, p, "intake.hold", "intake", i64s(it.ID), OutcomeOK); err != nil {
		return nil, err
	}
	return &Hold{Start: in.SlotStart, End: in.SlotEnd, ProviderID: chain[0].ProviderID, IntakeID: it.ID, Until: until}, nil
}

// pickChain finds one provider's slots that run back to back from start to
// end, free for intake at now (open, and held by no other intake). It
// reports whether a matching chain exists but is booked or held.
func pickChain(slots []clinic.Slot, start, end, intake, now int64) (chain []clinic.Slot, anyBooked bool) {
	for i, s := range slots {
		if s.Start != start {
			continue
		}
		c := []clinic.Slot{s}
		at := s.End
		for j := i + 1; at < end && j < len(slots); j++ {
			if slots[j].ProviderID == s.ProviderID && slots[j].Start == at {
				c = append(c, slots[j])
				at = slots[j].End
			}
		}
		if at != end {
			continue
		}
		if slices.ContainsFunc(c, func(x clinic.Slot) bool { return !x.FreeFor(intake, now) }) {
			anyBooked = true
			continue
		}
		slices.SortFunc(c, func(x, y clinic.Slot) int { return int(x.ID - y.ID) })
		return c, false
	}
	return nil, anyBooked
}
