package fhir

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
)

// Scheduling by the standard, as the Argonaut Scheduling guide and
// Medplum define it, over the slots and visits app keeps:
//
//   - a provider's published times are Slots of their Schedule (one per
//     provider: Schedule/<provider id>); a slot's room is its serviceType;
//   - Appointment/$find proposes the times a visit of a room fits (the
//     answer of GET /availability), as Appointments with status proposed;
//   - $hold holds one for the patient while they pay (app.HoldTTL, as the
//     portal does), filing the intake it is held for;
//   - $book books it as POST /visits does, under the same locks: of two
//     clients racing for a time, one books and the other is answered a
//     conflict. A time in a priced room is booked once its intake is paid;
//     before, $book holds it and answers 402 with what must be paid;
//   - an Appointment is cancelled (or marked a no-show) by writing its
//     status, by PATCH or PUT, and moved by a PUT of new times.
//
// The intake a hold or a booking made is the Appointment's identifier
// (urn:teleclinic:<clinic>:intake), which a later $book names to book the
// time held and paid for.

// findDays bound $find's window: a week unless asked, a month at most.
const (
	defaultFindDays = 7
	maxFindDays     = 31
)

type fhirSlot struct {
	base
	ServiceType []fhirConcept `json:"serviceType,omitempty"`
	Schedule    fhirRef       `json:"schedule"`
	Status      string        `json:"status"`
	Start       string        `json:"start"`
	End         string        `json:"end"`
}

type fhirSchedule struct {
	base
	Active  bool      `json:"active"`
	Actor   []fhirRef `json:"actor"`
	Comment string    `json:"comment,omitempty"`
}

type fhirExtension struct {
	URL          string `json:"url"`
	ValueInstant string `json:"valueInstant,omitempty"`
}

func roomSystem(acct *clinic.Account) string   { return "urn:teleclinic:" + acct.Code + ":room" }
func intakeSystem(acct *clinic.Account) string { return "urn:teleclinic:" + acct.Code + ":intake" }

// holdExtension is the instant a held time is given back.
func (s *Server) holdExtension() string { return s.base() + "StructureDefinition/hold-expires" }

func roomConcept(acct *clinic.Account, r *clinic.Room) fhirConcept {
	return fhirConcept{Coding: []fhirCoding{{System: roomSystem(acct), Code: r.Code, Display: r.Name}}, Text: r.Name}
}

// slotStatus is a slot's FHIR status at now: a slot held for a patient
// who is paying is busy-tentative.
func slotStatus(sl clinic.Slot, now int64) string {
	switch {
	case sl.Status == clinic.SlotBooked:
		return "busy"
	case sl.HeldUntil > now:
		return "busy-tentative"
	}
	return "free"
}

func toFHIRSlot(acct *clinic.Account, sl clinic.Slot, r *clinic.Room, now int64) *fhirSlot {
	out := &fhirSlot{base: newBase("Slot", id(sl.ID), sl.Modified), Schedule: fhirRef{Reference: "Schedule/" + id(sl.ProviderID)},
		Status: slotStatus(sl, now), Start: instant(sl.Start), End: instant(sl.End)}
	if r != nil {
		out.ServiceType = []fhirConcept{roomConcept(acct, r)}
	}
	return out
}

// Schedule is GET /fhir/R4/Schedule/{id}: a provider's schedule, whose
// slots Slot?schedule=Schedule/{id} lists.
func (s *Server) Schedule(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Schedule", 'r'); err != nil {
		return err
	}
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Schedule/%s not found.", r.PathValue("id"))
	}
	u, err := s.app.ProviderByID(r.Context(), p, n)
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "Schedule/%s not found.", r.PathValue("id"))
	}
	return writeFHIR(w, http.StatusOK, &fhirSchedule{base: newBase("Schedule", id(u.ID), u.Modified), Active: u.Active,
		Actor: []fhirRef{userRef(u)}, Comment: "The published times of " + strings.TrimSpace(u.FirstName+" "+u.LastName) + "."})
}

// Slot is GET /fhir/R4/Slot/{id}.
func (s *Server) Slot(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Slot", 'r'); err != nil {
		return err
	}
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Slot/%s not found.", r.PathValue("id"))
	}
	v, err := s.app.GetSlot(r.Context(), p, n)
	if err != nil {
		return err
	}
	sl := v.Slots[0]
	return writeFHIR(w, http.StatusOK, toFHIRSlot(p.Account, sl, v.Rooms[sl.RoomID], s.app.Unix()))
}

// Slots is GET /fhir/R4/Slot: the clinic's slots starting in a window
// (start=ge…&start=lt…; from now for a week unless bounded), of one
// schedule (schedule=Schedule/<provider>), room (service-type) or status
// (free, busy, busy-tentative), _count at a time; the next link goes on
// after the page's last slot.
func (s *Server) Slots(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Slot", 's'); err != nil {
		return err
	}
	qv := r.URL.Query()
	if err := onlyParams(qv, "start", "schedule", "service-type", "status", "_count", "_after", "_format"); err != nil {
		return err
	}
	now := s.app.Unix()
	in := app.SlotQuery{Limit: defaultCount}
	var err error
	if in.Start, in.End, err = timeWindow(qv["start"], now, defaultFindDays); err != nil {
		return err
	}
	if v := qv.Get("schedule"); v != "" {
		if in.ProviderID, err = refNumber(v, "Schedule", "schedule"); err != nil {
			return err
		}
	}
	if v := qv.Get("service-type"); v != "" {
		in.RoomCode = roomCode(p.Account, v)
	}
	status := qv.Get("status")
	switch status {
	case "":
	case "free", "busy-tentative":
		in.Status = clinic.SlotOpen
	case "busy":
		in.Status = clinic.SlotBooked
	default:
		return clinic.Errorf(clinic.EInvalid, "status is free, busy or busy-tentative.")
	}
	if v := qv.Get("_count"); v != "" {
		if in.Limit, err = strconv.Atoi(v); err != nil || in.Limit < 1 || in.Limit > maxCount {
			return clinic.Errorf(clinic.EInvalid, "_count is from 1 to %d.", maxCount)
		}
	}
	if v := qv.Get("_after"); v != "" {
		if in.After, err = strconv.ParseInt(v, 10, 64); err != nil || in.After <= 0 {
			return clinic.Errorf(clinic.EInvalid, "_after is the id of the slot a page goes on after, as the next link gives it.")
		}
	}
	v, err := s.app.ListSlots(r.Context(), p, in)
	if err != nil {
		return err
	}
	var page []resource
	for _, sl := range v.Slots {
		if res := toFHIRSlot(p.Account, sl, v.Rooms[sl.RoomID], now); status == "" || res.Status == status {
			page = append(page, res)
		}
	}
	b := s.searchSet(r, page)
	if v.Next != 0 {
		next := r.URL.Query()
		next.Set("_after", id(v.Next))
		b.Link = append(b.Link, fhirLink{Relation: "next", URL: s.base() + "Slot?" + next.Encode()})
	}
	return writeFHIR(w, http.StatusOK, b)
}

// searchSet is page as a search set whose entries may have no id of
// their own ($find's proposals); its total is the page's.
func (s *Server) searchSet(r *http.Request, page []resource) *fhirBundle {
	now := s.app.Now().Unix()
	self := s.base() + strings.TrimPrefix(r.URL.Path, "/fhir/R4/")
	if r.URL.RawQuery != "" {
		self += "?" + r.URL.RawQuery
	}
	b := &fhirBundle{ResourceType: "Bundle", Meta: fhirMeta{LastUpdated: instant(now)}, Type: "searchset", Timestamp: instant(now),
		Total: len(page), Link: []fhirLink{{Relation: "self", URL: self}}}
	for _, res := range page {
		e := fhirEntry{Resource: res, Search: &fhirSearchMode{Mode: "match"}}
		if !strings.HasSuffix(res.ref(), "/") {
			e.FullURL = s.base() + res.ref()
		}
		b.Entry = append(b.Entry, e)
	}
	return b
}

// Find is Appointment/$find (GET, or POST with a Parameters body): the
// times a visit of the room service-type names can start between start
// and end (a week from now unless given, a month at most), of one
// practitioner if named, lasting duration minutes (one slot unless
// given). Each is an Appointment with status proposed and the slots it
// would take.
func (s *Server) Find(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Slot", 's'); err != nil {
		return err
	}
	qv := r.URL.Query()
	if r.Method == http.MethodPost {
		var err error
		if qv, err = readParameters(r); err != nil {
			return err
		}
	}
	if err := onlyParams(qv, "start", "end", "practitioner", "service-type", "duration", "_format"); err != nil {
		return err
	}
	now := s.app.Unix()
	bounds := qv["start"]
	for _, e := range qv["end"] {
		bounds = append(bounds, "lt"+e)
	}
	from, to, err := timeWindow(bounds, now, defaultFindDays)
	if err != nil {
		return err
	}
	if qv.Get("service-type") == "" {
		return clinic.Errorf(clinic.EInvalid, "service-type (the code of the room the visit is in) is required.")
	}
	in := app.AvailabilityQuery{Start: max(from, now), End: to, RoomCode: roomCode(p.Account, qv.Get("service-type"))}
	if in.End <= in.Start {
		return writeFHIR(w, http.StatusOK, s.searchSet(r, nil))
	}
	if v := qv.Get("practitioner"); v != "" {
		if in.ProviderID, err = refNumber(v, "Practitioner", "practitioner"); err != nil {
			return err
		}
	}
	if v := qv.Get("duration"); v != "" {
		m, err := strconv.Atoi(v)
		if err != nil || m < 1 || m > 24*60 {
			return clinic.Errorf(clinic.EInvalid, "duration is the visit's minutes, 1 to 1440.")
		}
		in.Duration = m * 60
	}
	av, err := s.app.Availability(r.Context(), p, in)
	if err != nil {
		return err
	}
	room, err := s.app.RoomByCode(r.Context(), p, in.RoomCode)
	if err != nil {
		return err
	}
	var page []resource
	for i, as := range av.Slots {
		if !as.Available {
			continue
		}
		chain := proposedChain(av.Slots, i, int64(in.Duration))
		first, last := chain[0], chain[len(chain)-1]
		a := &fhirAppointment{base: base{ResourceType: "Appointment", Meta: fhirMeta{LastUpdated: instant(now)}}, Status: "proposed",
			ServiceType: []fhirConcept{roomConcept(p.Account, room)}, Start: instant(first.Start), End: instant(last.End),
			Participant: []fhirAppointmentParticipant{{Actor: fhirRef{Reference: "Practitioner/" + id(first.ProviderID)}, Status: "needs-action"}}}
		for _, sl := range chain {
			a.Slot = append(a.Slot, fhirRef{Reference: "Slot/" + id(sl.ID)})
		}
		page = append(page, a)
	}
	return writeFHIR(w, http.StatusOK, s.searchSet(r, page))
}

// proposedChain is the slots a visit of need seconds starting in
// slots[i] takes: it and its provider's back-to-back slots after it
// (Availability said they cover need).
func proposedChain(slots []app.AvailSlot, i int, need int64) []clinic.Slot {
	first := slots[i].Slot
	chain := []clinic.Slot{first}
	for j := i + 1; j < len(slots) && chain[len(chain)-1].End-first.Start < need; j++ {
		if sl := slots[j].Slot; sl.ProviderID == first.ProviderID && sl.Start == chain[len(chain)-1].End {
			chain = append(chain, sl)
		}
	}
	return chain
}

// appointmentIn is an Appointment as a client writes it to $hold, $book
// or an update: the elements the scheduling maps.
type appointmentIn struct {
	ResourceType      string           `json:"resourceType"`
	ID                string           `json:"id"`
	Status            string           `json:"status"`
	Identifier        []fhirIdentifier `json:"identifier"`
	ServiceType       []fhirConcept    `json:"serviceType"`
	ReasonCode        []fhirConcept    `json:"reasonCode"`
	Start             string           `json:"start"`
	End               string           `json:"end"`
	Slot              []fhirRef        `json:"slot"`
	CancelationReason *fhirConcept     `json:"cancelationReason"`
	Participant       []struct {
		Actor fhirRef `json:"actor"`
	} `json:"participant"`
}

// readAppointment reads an Appointment, bare or as a Parameters'
// appt-resource (Argonaut's name; Medplum's is appointment), valid R4.
func (s *Server) readAppointment(r *http.Request) (*appointmentIn, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWriteBytes+1))
	if err != nil || len(body) > maxWriteBytes {
		return nil, clinic.Errorf(clinic.EInvalid, "The body must be an Appointment of at most 64 KiB.")
	}
	var probe struct {
		ResourceType string `json:"resourceType"`
		Parameter    []struct {
			Name     string          `json:"name"`
			Resource json.RawMessage `json:"resource"`
		} `json:"parameter"`
	}
	if err := json.Unmarshal(body, &probe); err != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "The body is not FHIR JSON: %s.", err.Error())
	}
	if probe.ResourceType == "Parameters" {
		i := slices.IndexFunc(probe.Parameter, func(p struct {
			Name     string          `json:"name"`
			Resource json.RawMessage `json:"resource"`
		}) bool {
			return p.Name == "appt-resource" || p.Name == "appointment"
		})
		if i < 0 {
			return nil, clinic.Errorf(clinic.EInvalid, "The Parameters carry no appt-resource (the Appointment).")
		}
		body = probe.Parameter[i].Resource
	}
	var in appointmentIn
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, clinic.Errorf(clinic.EInvalid, "The Appointment is not FHIR JSON: %s.", err.Error())
	}
	if in.ResourceType != "Appointment" {
		return nil, clinic.Errorf(clinic.EInvalid, "resourceType must be Appointment, not %q.", in.ResourceType)
	}
	if err := s.r4.validate("Appointment", body); err != nil {
		return nil, err
	}
	return &in, nil
}

// appointmentRequest is what a $hold or $book asks, in app's terms.
type appointmentRequest struct {
	book   app.BookInput
	intake app.IntakeInput
	room   *clinic.Room
	slots  []fhirRef
}

// request maps an Appointment onto a booking: its time (start and end, or
// the slots it names), its room (the slots', or serviceType's code), its
// practitioner and patient (participants; a patient books for themself),
// and the intake a hold made for it (identifier).
func (s *Server) request(ctx context.Context, p *clinic.Principal, in *appointmentIn) (*appointmentRequest, error) {
	out := &appointmentRequest{book: app.BookInput{Type: "2"}, slots: in.Slot}
	var err error
	if in.Start != "" || in.End != "" {
		if out.book.SlotStart, err = parseInstant(in.Start, "start"); err != nil {
			return nil, err
		}
		if out.book.SlotEnd, err = parseInstant(in.End, "end"); err != nil {
			return nil, err
		}
	}
	for i, ref := range in.Slot {
		n, err := refNumber(ref.Reference, "Slot", "slot")
		if err != nil {
			return nil, err
		}
		v, err := s.app.GetSlot(ctx, p, n)
		if clinic.ErrorCode(err) == clinic.ENotFound {
			return nil, clinic.Errorf(clinic.EInvalid, "%s is not a slot of this clinic.", ref.Reference)
		}
		if err != nil {
			return nil, err
		}
		sl, r := v.Slots[0], v.Rooms[v.Slots[0].RoomID]
		switch {
		case i == 0:
			out.room, out.book.ProviderID = r, sl.ProviderID
			if in.Start == "" {
				out.book.SlotStart, out.book.SlotEnd = sl.Start, sl.End
			}
		case sl.RoomID != out.room.ID || sl.ProviderID != out.book.ProviderID:
			return nil, clinic.Errorf(clinic.EInvalid, "The slots of one Appointment are one practitioner's, in one room.")
		case in.Start == "":
			out.book.SlotStart, out.book.SlotEnd = min(out.book.SlotStart, sl.Start), max(out.book.SlotEnd, sl.End)
		}
	}
	if out.book.SlotStart == 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "The Appointment names its time: start and end, or its slots (as $find proposed them).")
	}
	if out.room == nil {
		code := ""
		for _, c := range in.ServiceType {
			for _, cd := range c.Coding {
				if cd.System == roomSystem(p.Account) || cd.System == "" {
					code = cd.Code
				}
			}
		}
		if code == "" {
			return nil, clinic.Errorf(clinic.EInvalid, "The Appointment names its room: a serviceType coded in %s, or its slots.", roomSystem(p.Account))
		}
		if out.room, err = s.app.RoomByCode(ctx, p, code); err != nil {
			return nil, err
		}
	}
	out.book.RoomCode = out.room.Code
	for _, pt := range in.Participant {
		kind, n, _ := strings.Cut(pt.Actor.Reference, "/")
		switch kind {
		case "Practitioner":
			v, err := refNumber(pt.Actor.Reference, "Practitioner", "participant")
			if err != nil {
				return nil, err
			}
			if out.book.ProviderID != 0 && out.book.ProviderID != v {
				return nil, clinic.Errorf(clinic.EInvalid, "The practitioner is not the one whose slots the Appointment names.")
			}
			out.book.ProviderID = v
		case "Patient":
			out.intake.MemberRef = n
		}
	}
	if app.IsPatient(p) && out.intake.MemberRef == "" {
		out.intake.MemberRef = id(p.UserID())
	}
	for _, idf := range in.Identifier {
		if idf.System == intakeSystem(p.Account) {
			if out.book.IntakeID, err = strconv.ParseInt(idf.Value, 10, 64); err != nil || out.book.IntakeID <= 0 {
				return nil, clinic.Errorf(clinic.EInvalid, "The intake identifier is the number a hold gave.")
			}
		}
	}
	if out.book.IntakeID == 0 && out.intake.MemberRef == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "The Appointment names its patient: a participant Patient/<id>.")
	}
	if len(in.ReasonCode) > 0 && in.ReasonCode[0].Text != "" {
		reason := in.ReasonCode[0].Text
		out.intake.ReasonForVisit = &reason
	}
	if out.book.ProviderID != 0 {
		pid := out.book.ProviderID
		out.intake.ProviderID = &pid
	}
	out.intake.RoomCode = out.room.Code
	return out, nil
}

// hold holds rq's time for its intake, filing the intake with the hold
// when the request has none.
func (s *Server) hold(ctx context.Context, p *clinic.Principal, rq *appointmentRequest) (*app.Hold, error) {
	if rq.book.IntakeID != 0 {
		return s.app.HoldTime(ctx, p, rq.book)
	}
	h, err := s.app.HoldNew(ctx, p, rq.intake, rq.book)
	if err != nil {
		return nil, err
	}
	rq.book.IntakeID = h.IntakeID
	return h, nil
}

// held is the Appointment of a held time: pending, with the intake it is
// held for and until when.
func (s *Server) held(p *clinic.Principal, rq *appointmentRequest, h *app.Hold) *fhirAppointment {
	a := &fhirAppointment{base: base{ResourceType: "Appointment", Meta: fhirMeta{LastUpdated: instant(s.app.Unix())}}, Status: "pending",
		Identifier:  []fhirIdentifier{{System: intakeSystem(p.Account), Value: id(rq.book.IntakeID)}},
		ServiceType: []fhirConcept{roomConcept(p.Account, rq.room)}, Start: instant(h.Start), End: instant(h.End), Slot: rq.slots,
		Extension:   []fhirExtension{{URL: s.holdExtension(), ValueInstant: instant(h.Until)}},
		Participant: []fhirAppointmentParticipant{{Actor: fhirRef{Reference: "Practitioner/" + id(h.ProviderID)}, Status: "needs-action"}}}
	if rq.intake.MemberRef != "" {
		a.Participant = append(a.Participant, fhirAppointmentParticipant{Actor: fhirRef{Reference: "Patient/" + rq.intake.MemberRef}, Status: "accepted"})
	}
	return a
}

// Hold is POST /fhir/R4/Appointment/$hold: the time held for the patient
// (app.HoldTTL, renewed by holding again), answered as a pending
// Appointment whose identifier $book names.
func (s *Server) Hold(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Appointment", 'c'); err != nil {
		return err
	}
	in, err := s.readAppointment(r)
	if err != nil {
		return err
	}
	rq, err := s.request(r.Context(), p, in)
	if err != nil {
		return err
	}
	h, err := s.hold(r.Context(), p, rq)
	if err != nil {
		return err
	}
	return writeFHIR(w, http.StatusOK, s.held(p, rq, h))
}

// Book is POST /fhir/R4/Appointment/$book: the time booked for the
// patient, answered as the booked Appointment (201, with its Location).
// In a room that charges for its visits the intake must be paid first:
// until it is, the time is held and the answer is 402 with the amount and
// the intake to pay.
func (s *Server) Book(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Appointment", 'c'); err != nil {
		return err
	}
	in, err := s.readAppointment(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	rq, err := s.request(ctx, p, in)
	if err != nil {
		return err
	}
	due, err := s.due(ctx, p, rq)
	if err != nil {
		return err
	}
	if due != nil {
		h, err := s.hold(ctx, p, rq)
		if err != nil {
			return err
		}
		return clinic.Errorf(clinic.EPayment, "Room %s charges %s %s for this visit. The time is held for intake %d until %s: pay its invoice "+
			"(POST /api_v3/billing/invoices/process with intake_id=%d and create_invoice=true), then $book again with the identifier %s|%d.",
			rq.room.Code, strconv.FormatFloat(payments.ToMajor(due.AmountDue, due.Currency), 'f', payments.Exponent(due.Currency), 64), due.Currency,
			rq.book.IntakeID, instant(h.Until), rq.book.IntakeID, intakeSystem(p.Account), rq.book.IntakeID)
	}
	var d *app.VisitDetail
	if rq.book.IntakeID != 0 {
		d, err = s.app.Book(ctx, p, rq.book)
	} else {
		d, err = s.app.BookNew(ctx, p, rq.intake, rq.book)
	}
	if err != nil {
		return err
	}
	res := toFHIRAppointment(p.Account, d)
	w.Header().Set("Location", s.base()+res.ref())
	return writeFHIR(w, http.StatusCreated, res)
}

// due is what a booking must pay before it is booked (billing's rule);
// a request with no intake yet is priced as its intake would be.
func (s *Server) due(ctx context.Context, p *clinic.Principal, rq *appointmentRequest) (*billing.InvoiceView, error) {
	if rq.book.IntakeID == 0 {
		return billing.FirstPrice(rq.room), nil
	}
	return s.billing.Due(ctx, p, rq.book.IntakeID)
}

// Patch is PATCH /fhir/R4/Appointment/{id} with a JSON Patch
// (application/json-patch+json) that replaces the status — cancelled, or
// noshow — and, with it, the cancelationReason.
func (s *Server) Patch(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	if err := granted(p, "Appointment", 'u'); err != nil {
		return err
	}
	var ops []struct {
		Op    string          `json:"op"`
		Path  string          `json:"path"`
		Value json.RawMessage `json:"value"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWriteBytes+1))
	if err != nil || len(body) > maxWriteBytes || json.Unmarshal(body, &ops) != nil || len(ops) == 0 {
		return clinic.Errorf(clinic.EInvalid, "The body must be a JSON Patch: an array of operations, such as "+
			`[{"op": "replace", "path": "/status", "value": "cancelled"}].`)
	}
	var in appointmentIn
	for _, op := range ops {
		if op.Op != "replace" && op.Op != "add" {
			return clinic.Errorf(clinic.EInvalid, "An Appointment is patched by replace (or add) of /status and /cancelationReason.")
		}
		var err error
		switch op.Path {
		case "/status":
			err = json.Unmarshal(op.Value, &in.Status)
		case "/cancelationReason":
			err = json.Unmarshal(op.Value, &in.CancelationReason)
		case "/cancelationReason/text":
			in.CancelationReason = &fhirConcept{}
			err = json.Unmarshal(op.Value, &in.CancelationReason.Text)
		default:
			return clinic.Errorf(clinic.EInvalid, "%s cannot be patched: an Appointment's status and cancelationReason can; it moves by a PUT of new times.", op.Path)
		}
		if err != nil {
			return clinic.Errorf(clinic.EInvalid, "The value of %s is not of its type.", op.Path)
		}
	}
	if in.Status == "" {
		return clinic.Errorf(clinic.EInvalid, "The patch replaces /status.")
	}
	return s.changeAppointment(w, r, p, &in, false)
}

// updateAppointment is PUT /fhir/R4/Appointment/{id}: the Appointment as
// the client would have it. Its status may go to cancelled or noshow; its
// start and end, to another open time of its room (a reschedule); nothing
// else of it is written.
func (s *Server) updateAppointment(w http.ResponseWriter, r *http.Request, p *clinic.Principal) error {
	in, err := s.readAppointment(r)
	if err != nil {
		return err
	}
	if in.ID != "" && in.ID != r.PathValue("id") {
		return clinic.Errorf(clinic.EInvalid, "The resource's id (%s) is not the address's (%s).", in.ID, r.PathValue("id"))
	}
	return s.changeAppointment(w, r, p, in, true)
}

// changeAppointment applies the status (and, for a PUT, the times) in
// names to the path's Appointment.
func (s *Server) changeAppointment(w http.ResponseWriter, r *http.Request, p *clinic.Principal, in *appointmentIn, put bool) error {
	ctx := r.Context()
	n, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || n <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Appointment/%s not found.", r.PathValue("id"))
	}
	d, err := s.app.GetVisit(ctx, p, n, false)
	if err == nil && d.Visit.Kind != clinic.KindAppointment {
		err = clinic.Errorf(clinic.ENotFound, "Appointment/%d not found.", n)
	}
	if err != nil {
		return err
	}
	cur := toFHIRAppointment(p.Account, d)
	reason := ""
	if in.CancelationReason != nil {
		reason = strings.TrimSpace(in.CancelationReason.Text)
	}
	switch {
	case in.Status == cur.Status && (!put || (in.Start == cur.Start && in.End == cur.End)):
		// Nothing to change: a client writing back what it read.
	case in.Status == "cancelled" || in.Status == "noshow":
		if in.Status == "noshow" {
			reason = app.ReasonNoShow
		}
		c, err := s.billing.CancelVisit(ctx, p, n, app.MoveInput{Reason: cmp.Or(strings.TrimSpace(reason), "cancelled")})
		if err != nil {
			return err
		}
		d = c.Detail
	case put && in.Status == cur.Status && cur.Status == "booked":
		start, err := parseInstant(in.Start, "start")
		if err != nil {
			return err
		}
		end, err := parseInstant(in.End, "end")
		if err != nil {
			return err
		}
		if d, err = s.app.Reschedule(ctx, p, n, app.RescheduleInput{SlotStart: start, SlotEnd: end}); err != nil {
			return err
		}
	default:
		return clinic.Errorf(clinic.EInvalid, "An Appointment's status is written to cancelled or noshow (it is %s); its times move while it is booked. "+
			"A visit's other steps are the visit's: the provider starts and ends it.", cur.Status)
	}
	return writeFHIR(w, http.StatusOK, toFHIRAppointment(p.Account, d))
}

// timeWindow is the range [from, to) of unix seconds that FHIR date bounds
// (ge, gt, le, lt or eq and a date or dateTime) select: from now for
// days days unless bounded, and no longer than maxFindDays.
func timeWindow(bounds []string, now int64, days int) (from, to int64, err error) {
	from, to = now, 0
	for _, v := range bounds {
		prefix := "eq"
		if len(v) > 2 && v[0] >= 'a' && v[0] <= 'z' {
			prefix, v = v[:2], v[2:]
		}
		lo, hi, ok := parseFHIRDate(v)
		if !ok || !slices.Contains([]string{"eq", "gt", "ge", "lt", "le"}, prefix) {
			return 0, 0, clinic.Errorf(clinic.EInvalid, "start and end are FHIR dates or dateTimes, with ge, gt, le or lt for start: for example start=ge2026-12-01&start=lt2026-12-08.")
		}
		switch prefix {
		case "ge":
			from = lo
		case "gt":
			from = hi
		case "lt":
			to = lo
		case "le":
			to = hi
		default:
			from, to = lo, hi
		}
	}
	if to == 0 {
		to = from + int64(days)*86400
	}
	if to-from > maxFindDays*86400 {
		return 0, 0, clinic.Errorf(clinic.EInvalid, "The window is at most %d days: narrow start and end.", maxFindDays)
	}
	if to <= from {
		return 0, 0, clinic.Errorf(clinic.EInvalid, "The window ends before it starts.")
	}
	return from, to, nil
}

// parseInstant is an Appointment's start or end.
func parseInstant(v, name string) (int64, error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
	if err != nil {
		return 0, clinic.Errorf(clinic.EInvalid, "%s must be an instant with its zone, for example 2026-12-01T15:00:00Z.", name)
	}
	return t.Unix(), nil
}

// refNumber is the id of a reference (Type/12, or 12) to a resource of
// type typ.
func refNumber(v, typ, name string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(v), typ+"/"), 10, 64)
	if err != nil || n <= 0 {
		return 0, clinic.Errorf(clinic.EInvalid, "%s must be a reference to a %s: %s/<id>.", name, typ, typ)
	}
	return n, nil
}

// roomCode is the room a service-type token names: <system>|<code>, or
// the code alone.
func roomCode(acct *clinic.Account, v string) string {
	if system, code, ok := strings.Cut(v, "|"); ok && (system == "" || system == roomSystem(acct)) {
		return code
	}
	return v
}

// onlyParams refuses a parameter the operation does not know, rather than
// answering as though it were not asked.
func onlyParams(qv url.Values, names ...string) error {
	for name := range qv {
		if !slices.Contains(names, name) {
			return clinic.Errorf(clinic.EInvalid, "Unknown parameter %q: this takes %s.", name, strings.Join(names, ", "))
		}
	}
	return nil
}

// readParameters reads a Parameters body as the query it stands for: each
// parameter's value as text.
func readParameters(r *http.Request) (url.Values, error) {
	var in struct {
		ResourceType string `json:"resourceType"`
		Parameter    []struct {
			Name           string   `json:"name"`
			ValueString    *string  `json:"valueString"`
			ValueCode      *string  `json:"valueCode"`
			ValueDate      *string  `json:"valueDate"`
			ValueDateTime  *string  `json:"valueDateTime"`
			ValueInstant   *string  `json:"valueInstant"`
			ValueInteger   *int     `json:"valueInteger"`
			ValueReference *fhirRef `json:"valueReference"`
			ValueCoding    *struct {
				System string `json:"system"`
				Code   string `json:"code"`
			} `json:"valueCoding"`
		} `json:"parameter"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxWriteBytes+1))
	if err != nil || len(body) > maxWriteBytes || json.Unmarshal(body, &in) != nil || in.ResourceType != "Parameters" {
		return nil, clinic.Errorf(clinic.EInvalid, "The body must be a FHIR Parameters resource.")
	}
	out := url.Values{}
	for _, pm := range in.Parameter {
		var v string
		switch {
		case pm.ValueString != nil:
			v = *pm.ValueString
		case pm.ValueCode != nil:
			v = *pm.ValueCode
		case pm.ValueDate != nil:
			v = *pm.ValueDate
		case pm.ValueDateTime != nil:
			v = *pm.ValueDateTime
		case pm.ValueInstant != nil:
			v = *pm.ValueInstant
		case pm.ValueInteger != nil:
			v = strconv.Itoa(*pm.ValueInteger)
		case pm.ValueReference != nil:
			v = pm.ValueReference.Reference
		case pm.ValueCoding != nil:
			v = pm.ValueCoding.System + "|" + pm.ValueCoding.Code
		default:
			return nil, clinic.Errorf(clinic.EInvalid, "Parameter %q has no value this operation reads.", pm.Name)
		}
		out.Add(pm.Name, v)
	}
	return out, nil
}
