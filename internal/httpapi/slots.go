package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// slotOut is the spec's Slot.
type slotOut struct {
	ID          string        `json:"id"`
	ProviderID  string        `json:"provider_id"`
	AccountCode string        `json:"account_code"`
	RoomCode    string        `json:"room_code"`
	Start       int64         `json:"start"`
	End         int64         `json:"end"`
	GroupID     string        `json:"group_id"`
	Status      int           `json:"status"`
	VisitID     string        `json:"visit_id,omitempty"`
	Created     int64         `json:"created"`
	Modified    int64         `json:"modified"`
	Group       *slotGroupOut `json:"group"`
	Provider    slotProvider  `json:"provider"`
	Account     accountInfo   `json:"account"`
}

// slotGroupOut shows the group's dates and times as timestamps written as
// strings, as the spec does, and as the provider wrote them under `local`.
type slotGroupOut struct {
	ID           string          `json:"id"`
	DateStart    string          `json:"date_start"`
	DateEnd      string          `json:"date_end"`
	TimeStart    string          `json:"time_start"`
	TimeEnd      string          `json:"time_end"`
	Repeat       bool            `json:"repeat"`
	RepeatDay    []string        `json:"repeat_day"`
	RepeatWeek   int             `json:"repeat_week"`
	AccountCode  string          `json:"account_code"`
	ProviderID   string          `json:"provider_id"`
	VisitType    string          `json:"visit_type"`
	Consultation slotConsult     `json:"consultation"`
	Timezone     string          `json:"timezone"`
	Local        slotGroupLocals `json:"local"`
	Created      int64           `json:"created"`
	Modified     int64           `json:"modified"`
}

type slotGroupLocals struct {
	DateStart string `json:"date_start"`
	DateEnd   string `json:"date_end"`
	TimeStart string `json:"time_start"`
	TimeEnd   string `json:"time_end"`
	Duration  int    `json:"duration"`
}

type slotConsult struct {
	ID               string  `json:"id"`
	Description      string  `json:"description"`
	Duration         int     `json:"duration"`
	Charge           bool    `json:"charge"`
	Group            bool    `json:"group"`
	Slots            int     `json:"slots"`
	Amount           float64 `json:"amount"`
	VisibleToPatient bool    `json:"visible_to_patient"`
}

type slotProvider struct {
	ID             string   `json:"id"`
	Username       string   `json:"username"`
	Email          string   `json:"email"`
	SvcID          string   `json:"svcid"`
	FullName       string   `json:"full_name"`
	Specialties    []string `json:"specialties"`
	StatesServiced []string `json:"states_serviced"`
	Clinics        []string `json:"clinics"`
	Rooms          []string `json:"rooms"`
}

// localUnix is a local date and HH:MM in zone as a timestamp string.
func localUnix(date, hhmm, zone string) string {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	t, err := time.ParseInLocation("2006-01-02 15:04", date+" "+hhmm, loc)
	if err != nil {
		return ""
	}
	return strconv.FormatInt(t.Unix(), 10)
}

func toGroup(acct *clinic.Account, g *clinic.SlotGroup) *slotGroupOut {
	if g == nil {
		return nil
	}
	return &slotGroupOut{ID: id(g.ID), DateStart: localUnix(g.DateStart, "00:00", g.Timezone), DateEnd: localUnix(g.DateEnd, "00:00", g.Timezone),
		TimeStart: localUnix(g.DateStart, g.TimeStart, g.Timezone), TimeEnd: localUnix(g.DateStart, g.TimeEnd, g.Timezone),
		Repeat: g.Repeat, RepeatDay: nonNilStrings(g.RepeatDay), RepeatWeek: g.RepeatWeek, AccountCode: acct.Code, ProviderID: id(g.ProviderID),
		VisitType: g.VisitType, Timezone: g.Timezone, Created: g.Created, Modified: g.Modified,
		Consultation: slotConsult{ID: g.Consultation.ID, Description: g.Consultation.Description, Duration: g.Consultation.Duration,
			Charge: g.Consultation.Charge, Group: g.Consultation.Group, Slots: g.Consultation.Slots, Amount: g.Consultation.Amount, VisibleToPatient: true},
		Local: slotGroupLocals{DateStart: g.DateStart, DateEnd: g.DateEnd, TimeStart: g.TimeStart, TimeEnd: g.TimeEnd, Duration: g.Duration}}
}

func toSlots(acct *clinic.Account, v *app.SlotsView) []slotOut {
	out := make([]slotOut, 0, len(v.Slots))
	for _, s := range v.Slots {
		u, r := v.Providers[s.ProviderID], v.Rooms[s.RoomID]
		so := slotOut{ID: id(s.ID), ProviderID: id(s.ProviderID), AccountCode: acct.Code, RoomCode: r.Code, Start: s.Start, End: s.End,
			GroupID: id(s.GroupID), Status: s.Status, Created: s.Created, Modified: s.Modified, Group: toGroup(acct, v.Groups[s.GroupID]),
			Provider: slotProvider{ID: id(u.ID), Username: u.Username, Email: u.Email, SvcID: u.SvcID, FullName: u.FullName(),
				Specialties: app.ProviderSpecialties(u), StatesServiced: app.ProviderStates(u), Clinics: []string{acct.Code}, Rooms: []string{r.Code}},
			Account: accountInfo{ID: id(acct.ID), Code: acct.Code, Name: acct.Name, Domain: acct.Domain}}
		if s.VisitID != 0 {
			so.VisitID = id(s.VisitID)
		}
		out = append(out, so)
	}
	return out
}

func (s *Server) createSlots(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	providerID, err := refID(c, "provider_id", "provider")
	if err != nil {
		return err
	}
	in := app.SlotGroupInput{ProviderID: providerID, RoomCode: q.Str("room_code"), DateStart: q.Str("date_start"),
		DateEnd: q.Str("date_end"), TimeStart: q.Str("time_start"), TimeEnd: q.Str("time_end"), Timezone: q.Str("timezone"),
		ConsultationID: q.Str("consultation_id"), RepeatDay: q.List("repeat_day"), VisitType: q.Str("visit_type")}
	if in.Repeat, err = q.Flag("repeat"); err != nil {
		return err
	}
	dur, err := q.Int("duration", 0)
	if err != nil {
		return err
	}
	week, err := q.Int("repeat_week", 1)
	if err != nil {
		return err
	}
	in.Duration, in.RepeatWeek = int(dur), int(week)
	_, v, err := s.app.CreateSlots(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	return ok(w, toSlots(c.p.Account, v))
}

func (s *Server) listSlots(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	providerID, err := refID(c, "provider_id", "provider")
	if err != nil {
		return err
	}
	in := app.SlotQuery{Type: q.Str("type"), ProviderID: providerID, RoomCode: q.Str("room_code"),
		AccountCode: q.Str("account_code"), SpecialtyID: q.Str("specialty_id"), StatesServiced: q.Str("states_serviced")}
	if in.Start, err = q.Int("start", 0); err != nil {
		return err
	}
	if in.End, err = q.Int("end", 0); err != nil {
		return err
	}
	st, err := q.Int("status", 0)
	if err != nil {
		return err
	}
	in.Status = int(st)
	if in.After, in.Limit, err = c.params.Keyset("after"); err != nil {
		return err
	}
	v, err := s.app.ListSlots(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	return slotPage(w, r, c, v)
}

func (s *Server) availableSlots(w http.ResponseWriter, r *http.Request, c *call) error {
	after, limit, err := c.params.Keyset("after")
	if err != nil {
		return err
	}
	v, err := s.app.AvailableSlots(r.Context(), c.p, after, limit)
	if err != nil {
		return err
	}
	return slotPage(w, r, c, v)
}

// slotPage answers a page of slots, with a Link to the next when more
// follow.
func slotPage(w http.ResponseWriter, r *http.Request, c *call, v *app.SlotsView) error {
	nextLink(w, r, "after", v.Next)
	return ok(w, toSlots(c.p.Account, v))
}

type deleted struct {
	SlotDeleted  int `json:"slot_deleted"`
	GroupDeleted int `json:"group_deleted"`
}

func (s *Server) deleteSlot(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := pathID(c, "id", "Slot")
	if err != nil {
		return err
	}
	sl, gr, err := s.app.DeleteSlot(r.Context(), c.p, n)
	if err != nil {
		return err
	}
	return ok(w, deleted{sl, gr})
}

func (s *Server) deleteSlotGroup(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := pathID(c, "groupId", "Slot group")
	if err != nil {
		return err
	}
	sl, gr, err := s.app.DeleteSlotGroup(r.Context(), c.p, n)
	if err != nil {
		return err
	}
	return ok(w, deleted{sl, gr})
}

type availSlot struct {
	SlotID        string `json:"slot_id"`
	SlotStart     int64  `json:"slot_start"`
	SlotEnd       int64  `json:"slot_end"`
	SlotBooked    int    `json:"slot_booked"`
	SlotAvailable int    `json:"slot_available"`
	GroupID       string `json:"group_id"`
}

type slotData struct {
	ID           string       `json:"id"`
	ProviderID   string       `json:"provider_id"`
	AccountCode  string       `json:"account_code"`
	Start        int64        `json:"start"`
	End          int64        `json:"end"`
	GroupID      string       `json:"group_id"`
	Status       int          `json:"status"`
	Consultation slotDuration `json:"consultation"`
}

type slotDuration struct {
	Duration int `json:"duration"`
	Slots    int `json:"slots"`
}

type availability struct {
	Slots    []availSlot         `json:"slots"`
	SlotData map[string]slotData `json:"slot_data"`
}

func (s *Server) availability(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.AvailabilityQuery{RoomCode: q.Str("room_code"), ConsultationID: q.Str("consultation_id"), Location: q.Str("location")}
	err := readRefs(c, ref{dst: &in.IntakeID, name: "intake_id"}, ref{dst: &in.ProviderID, name: "provider_id", alt: "provider"})
	if err != nil {
		return err
	}
	if in.Start, err = q.Int("start", 0); err != nil {
		return err
	}
	if in.End, err = q.Int("end", 0); err != nil {
		return err
	}
	dur, err := q.Int("duration", 0)
	if err != nil {
		return err
	}
	in.Duration = int(dur)
	av, err := s.app.Availability(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	if av.Through < in.End {
		// More slots than one answer holds: the next starts where it ends.
		nextLink(w, r, "start", av.Through)
	}
	body, err := s.avail.of(av, func() ([]byte, error) {
		b, err := json.Marshal(envelope{Data: toAvailability(c.p.Account.Code, av)})
		return append(b, '\n'), err // as edge.WriteJSON's encoder ends it
	})
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_, err = w.Write(body)
	return err
}

// availBodies are the encoded bodies of the availability answers app
// holds for their second (app/availcache.go), so that an answer sent to
// many of the clinic's callers is encoded once: encoding the load tool's
// answer (576 slots, ~170 KB) costs about 1 ms, the whole of the target
// (docs/performance.md, "Availability": 1 ms a request; held and encoded
// once, 0.14 ms). Keyed by the answer app returned, which a new
// second or a write replaces; past availBodiesMax the map starts again.
type availBodies struct {
	mu sync.Mutex
	m  map[*app.Availability]*availBody
}

type availBody struct {
	once sync.Once // its Do orders the one write before every read
	b    []byte
	err  error
}

const availBodiesMax = 256

// of is av's body, made by encode the first time it is asked for.
func (c *availBodies) of(av *app.Availability, encode func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	if c.m == nil || len(c.m) >= availBodiesMax {
		c.m = map[*app.Availability]*availBody{}
	}
	e := c.m[av]
	if e == nil {
		e = &availBody{}
		c.m[av] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.b, e.err = encode() })
	return e.b, e.err
}

// toAvailability is GET /availability's answer.
func toAvailability(accountCode string, av *app.Availability) availability {
	out := availability{Slots: []availSlot{}, SlotData: map[string]slotData{}}
	for _, a := range av.Slots {
		sl := a.Slot
		out.Slots = append(out.Slots, availSlot{SlotID: id(sl.ID), SlotStart: sl.Start, SlotEnd: sl.End, SlotBooked: b01(a.Booked),
			SlotAvailable: b01(a.Available), GroupID: id(sl.GroupID)})
		sd := slotData{ID: id(sl.ID), ProviderID: id(sl.ProviderID), AccountCode: accountCode, Start: sl.Start, End: sl.End,
			GroupID: id(sl.GroupID), Status: sl.Status, Consultation: slotDuration{Duration: int(sl.End-sl.Start) / 60, Slots: 1}}
		if g := av.Groups[sl.GroupID]; g != nil {
			sd.Consultation = slotDuration{Duration: g.Consultation.Duration, Slots: max(g.Consultation.Slots, 1)}
		}
		out.SlotData[id(sl.ID)] = sd
	}
	return out
}

func b01(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Server) book(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.BookInput{RoomCode: q.Str("room_code"), Type: q.Str("type"), MemberRef: q.Str("member_id")}
	err := readRefs(c, ref{dst: &in.IntakeID, name: "intake_id"}, ref{dst: &in.ProviderID, name: "provider_id", alt: "provider"})
	if err != nil {
		return err
	}
	if in.SlotStart, err = q.Int("slot_start", 0); err != nil {
		return err
	}
	if in.SlotEnd, err = q.Int("slot_end", 0); err != nil {
		return err
	}
	d, err := s.app.Book(r.Context(), c.p, in)
	return s.answerVisit(w, r, c, d, err)
}

// reschedule is POST /visits/{id}/reschedule (extension): a booked visit
// moved to other slots of its room (app.Reschedule).
func (s *Server) reschedule(w http.ResponseWriter, r *http.Request, c *call) error {
	vid, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	var in app.RescheduleInput
	if err := readRefs(c, ref{dst: &in.ProviderID, name: "provider_id", alt: "provider"}); err != nil {
		return err
	}
	if in.SlotStart, err = c.params.Int("slot_start", 0); err != nil {
		return err
	}
	if in.SlotEnd, err = c.params.Int("slot_end", 0); err != nil {
		return err
	}
	d, err := s.app.Reschedule(r.Context(), c.p, vid, in)
	return s.answerVisit(w, r, c, d, err)
}
