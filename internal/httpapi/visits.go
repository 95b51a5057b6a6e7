package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// intakeOut is an intake as the API shows it. `type` is a string, as the
// spec's Intake table has it; custom field-value pairs come back under
// `custom`.
type intakeOut struct {
	ID             string            `json:"id"`
	Type           string            `json:"type"`
	ReasonForVisit string            `json:"reason_for_visit"`
	Provider       string            `json:"provider,omitempty"`
	VisitID        string            `json:"visit_id,omitempty"`
	MemberID       string            `json:"member_id"`
	RoomID         string            `json:"room_id"`
	Location       string            `json:"location"`
	Phone          string            `json:"phone"`
	Custom         map[string]string `json:"custom"`
	Attachments    []attachmentOut   `json:"attachments"`
	Consultation   string            `json:"consultation_id,omitempty"`
	// PreferredLanguage is custom.preferred_language, checked (extension).
	PreferredLanguage string `json:"preferred_language,omitempty"`
	Created           int64  `json:"created"`
	Modified          int64  `json:"modified"`
}

type attachmentOut struct {
	ID   string `json:"_id"`
	Name string `json:"name"`
	Path string `json:"path"`
	Size int64  `json:"size"`
	Ext  string `json:"ext"`
}

func (s *Server) toIntake(ctx context.Context, p *clinic.Principal, it *clinic.Intake) (*intakeOut, error) {
	att, err := s.app.IntakeAttachments(ctx, p, it)
	if err != nil {
		return nil, err
	}
	return toIntakeOut(it, att), nil
}

// toIntakeOut is an intake with its attachments, as the API writes it.
func toIntakeOut(it *clinic.Intake, att []app.IntakeAttachment) *intakeOut {
	out := &intakeOut{ID: id(it.ID), Type: strconv.Itoa(it.Type), ReasonForVisit: it.ReasonForVisit, MemberID: id(it.MemberID),
		RoomID: id(it.RoomID), Location: it.Location, Phone: it.Phone, Custom: it.Custom, Attachments: []attachmentOut{},
		Consultation: it.ConsultationID, PreferredLanguage: it.Custom[app.PreferredLanguageKey],
		Created: it.Created, Modified: it.Modified}
	if out.Custom == nil {
		out.Custom = map[string]string{}
	}
	if it.ProviderID != 0 {
		out.Provider = id(it.ProviderID)
	}
	if it.VisitID != 0 {
		out.VisitID = id(it.VisitID)
	}
	for _, f := range att {
		out.Attachments = append(out.Attachments, attachmentOut{ID: id(f.ID), Name: f.Name, Path: f.URL, Size: f.Size, Ext: f.Ext})
	}
	return out
}

// intakeKnown are the named inputs of POST /intakes; every other body field is
// a custom field-value pair.
var intakeKnown = map[string]bool{"room_code": true, "provider_id": true, "provider": true, "reason_for_visit": true, "type": true,
	"member_id": true, "location": true, "phone": true, "attachments": true, "id": true, "consultation": true, "consultation_id": true,
	"answers": true, "consent_name": true, "consent_version": true, app.PreferredLanguageKey: true, "consent_language": true}

func intakeInput(c *call) (app.IntakeInput, error) {
	q := c.params
	in := app.IntakeInput{RoomCode: q.Str("room_code"), ReasonForVisit: q.Opt("reason_for_visit"), Type: q.Opt("type"),
		MemberRef: q.Str("member_id"), Location: q.Opt("location"), Phone: q.Opt("phone"), Custom: map[string]string{}}
	// docs/compat.md: clients send provider for provider_id.
	prov, given, err := optRefID(c, "provider_id", "provider")
	if err != nil {
		return in, err
	}
	if given {
		in.ProviderID = &prov
	}
	// The consultation: its id, as consultation_id or consultation.
	if v := q.Opt("consultation_id"); v != nil {
		in.Consultation = v
	} else {
		in.Consultation = q.Opt("consultation")
	}
	// Attachments: a list of ids, or of objects carrying _id.
	var objs []struct {
		ID any `json:"_id"`
	}
	var list *[]string
	if found, err := q.JSON("attachments", &objs); found && err == nil {
		l := []string{}
		for _, o := range objs {
			l = append(l, scalar(o.ID))
		}
		list = &l
	} else {
		list = q.OptList("attachments")
	}
	if list != nil {
		ids, err := idList(*list, func(string) error {
			return clinic.Errorf(clinic.EInvalid, "attachments are file ids from POST /files.")
		})
		if err != nil {
			return in, err
		}
		in.Attachments = &ids
	}
	for k, v := range q.BodyScalars() {
		if !intakeKnown[k] {
			in.Custom[k] = v
		}
	}
	// The room's questions' answers (extension): a JSON object by
	// question id; its consent, signed by name.
	if _, err := q.JSON("answers", &in.Answers); err != nil {
		return in, clinic.Errorf(clinic.EInvalid, "answers must be a JSON object: question id → answer.")
	}
	in.ConsentName, in.ConsentVersion = q.Opt("consent_name"), q.Str("consent_version")
	in.PreferredLanguage = q.Opt(app.PreferredLanguageKey)
	in.Language = q.Str("consent_language")
	return in, nil
}

func (s *Server) createIntake(w http.ResponseWriter, r *http.Request, c *call) error {
	in, err := intakeInput(c)
	if err != nil {
		return err
	}
	it, err := s.app.CreateIntake(r.Context(), c.p, in)
	return s.answerIntake(w, r, c, it, err)
}

func (s *Server) getIntake(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := pathID(c, "id", "Intake")
	if err != nil {
		return err
	}
	it, err := s.app.GetIntake(r.Context(), c.p, n)
	return s.answerIntake(w, r, c, it, err)
}

func (s *Server) updateIntake(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := pathID(c, "id", "Intake")
	if err != nil {
		return err
	}
	in, err := intakeInput(c)
	if err != nil {
		return err
	}
	it, err := s.app.UpdateIntake(r.Context(), c.p, n, in)
	return s.answerIntake(w, r, c, it, err)
}

// person is a visit's patient or provider.
type person struct {
	ID        string `json:"id"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	FullName  string `json:"full_name"`
	Email     string `json:"email"`
	Phone     string `json:"phone"`
	Code      string `json:"code"`
}

func toPerson(u *clinic.User) *person {
	if u == nil {
		return nil
	}
	return &person{ID: id(u.ID), FirstName: u.FirstName, LastName: u.LastName, FullName: u.FullName(), Email: u.Email, Phone: u.Phone, Code: u.Code}
}

type meetingOut struct {
	RecordingAutoStart bool                `json:"recording_auto_start"`
	PhoneNumbers       map[string][]string `json:"phone_numbers"`
	Hosts              []string            `json:"hosts"`
	Expiry             int64               `json:"expiry"`
	ConferencePIN      string              `json:"conference_pin"`
	MeetingID          string              `json:"meeting_id"`
}

// visitOut is a visit. Times, type and status are integers everywhere
// (docs/compat.md lets us pick one form); provider_id is "0" while unassigned.
type visitOut struct {
	ID            string      `json:"id"`
	Code          string      `json:"code"`
	Kind          string      `json:"kind"`
	MemberID      string      `json:"member_id"`
	ProviderID    string      `json:"provider_id"`
	AccountCode   string      `json:"account_code"`
	Start         int64       `json:"start"`
	End           int64       `json:"end"`
	ActualStart   *int64      `json:"actual_start"`
	ActualEnd     *int64      `json:"actual_end"`
	Type          int         `json:"type"`
	Status        int         `json:"status"`
	CancelReason  string      `json:"cancel_reason"`
	Outcome       string      `json:"outcome"`
	RoomID        string      `json:"room_id"`
	RoomCode      string      `json:"room_code"`
	IntakeID      string      `json:"intake_id"`
	Intake        *intakeOut  `json:"intake"`
	Member        *person     `json:"member"`
	Provider      *person     `json:"provider"`
	Meeting       meetingOut  `json:"meeting"`
	Hosts         []string    `json:"hosts"`
	Account       accountName `json:"account"`
	Recordings    *recordings `json:"recordings,omitempty"`
	InCharge      *bool       `json:"incharge,omitempty"`
	IsEditExpired *bool       `json:"isEditExpired,omitempty"`
	Created       int64       `json:"created"`
	Modified      int64       `json:"modified"`
}

type accountName struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

func (s *Server) toVisit(ctx context.Context, p *clinic.Principal, d *app.VisitDetail) (*visitOut, error) {
	v := d.Visit
	out := &visitOut{ID: id(v.ID), Code: v.Code, Kind: v.Kind, MemberID: id(v.MemberID), ProviderID: id(v.ProviderID),
		AccountCode: d.Account.Code, Start: v.Start, End: v.End, Type: v.Type, Status: v.Status, CancelReason: v.CancelReason, Outcome: v.Outcome,
		IntakeID: id(v.IntakeID), Member: toPerson(d.Member), Provider: toPerson(d.Provider), Hosts: []string{},
		Account: accountName{Code: d.Account.Code, Name: d.Account.Name}, Created: v.Created, Modified: v.Modified,
		Meeting: meetingOut{RecordingAutoStart: v.Meeting.RecordingAutoStart, PhoneNumbers: map[string][]string{}, Hosts: []string{},
			Expiry: v.Meeting.Expiry, ConferencePIN: v.Meeting.ConferencePIN, MeetingID: v.Meeting.MeetingID}}
	if v.ActualStart != 0 {
		out.ActualStart = &v.ActualStart
	}
	if v.ActualEnd != 0 {
		out.ActualEnd = &v.ActualEnd
	}
	if d.Room != nil {
		out.RoomID, out.RoomCode = id(d.Room.ID), d.Room.Code
	}
	if d.Provider != nil {
		out.Hosts = []string{id(d.Provider.ID)}
		out.Meeting.Hosts = []string{d.Provider.SvcID}
	}
	if d.Recordings != nil {
		out.Recordings = &recordings{Count: len(d.Recordings), Data: make([]recordingOut, 0, len(d.Recordings))}
		for _, r := range d.Recordings {
			out.Recordings.Data = append(out.Recordings.Data, toRecording(r))
		}
	}
	if d.Intake != nil {
		out.Intake = toIntakeOut(d.Intake, d.IntakeFiles)
	}
	return out, nil
}

func (s *Server) addWalkin(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	in := app.WalkinInput{RoomCode: q.Str("room_code"), UserCode: q.Str("user_code")}
	if err := readRefs(c, ref{dst: &in.IntakeID, name: "intake_id"}, ref{dst: &in.ProviderID, name: "provider_id", alt: "provider"}); err != nil {
		return err
	}
	d, err := s.app.AddWalkin(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	out, err := s.toVisit(r.Context(), c.p, d)
	if err != nil {
		return err
	}
	return ok(w, out)
}

func (s *Server) addEconsult(w http.ResponseWriter, r *http.Request, c *call) error {
	intakeID, err := refID(c, "intake_id")
	if err != nil {
		return err
	}
	d, err := s.app.AddEconsult(r.Context(), c.p, intakeID, c.params.Str("room_code"))
	if err != nil {
		return err
	}
	out, err := s.toVisit(r.Context(), c.p, d)
	if err != nil {
		return err
	}
	inCharge, expired := d.InCharge, false
	out.InCharge, out.IsEditExpired = &inCharge, &expired
	return ok(w, out)
}

func (s *Server) listVisits(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	start, err := q.Int("start_time", 0)
	if err != nil {
		return err
	}
	end, err := q.Int("end_time", 0)
	if err != nil {
		return err
	}
	only, err := q.Flag("with_recordings_only")
	if err != nil {
		return err
	}
	after, limit, err := q.Keyset("after")
	if err != nil {
		return err
	}
	page, err := s.app.ListVisits(r.Context(), c.p, app.VisitQuery{RoomCode: q.Str("room_code"), StartTime: start, EndTime: end,
		Statuses: q.List("status"), WithRecordings: wantsRecordings(c) || only, WithRecordingsOnly: only, Limit: limit, After: after})
	if err != nil {
		return err
	}
	nextLink(w, r, "after", page.Next, "start")
	out := make([]*visitOut, 0, len(page.Items))
	for _, d := range page.Items {
		v, err := s.toVisit(r.Context(), c.p, d)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	return ok(w, out)
}

func (s *Server) getVisit(w http.ResponseWriter, r *http.Request, c *call) error {
	n, err := pathID(c, "id", "Visit")
	if err != nil {
		return err
	}
	d, err := s.app.GetVisit(r.Context(), c.p, n, wantsRecordings(c))
	return s.answerVisit(w, r, c, d, err)
}

// moveVisit returns the handler of one lifecycle action.
func (s *Server) moveVisit(action string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, c *call) error {
		q := c.params
		providerID, err := refID(c, "provider_id", "provider")
		if err != nil {
			return err
		}
		in := app.MoveInput{Status: q.Str("status"), Reason: q.Str("reason"), ProviderID: providerID}
		if in.ActualStart, err = q.Int("actual_start", 0); err != nil {
			return err
		}
		if in.ActualEnd, err = q.Int("actual_end", 0); err != nil {
			return err
		}
		visitID, err := refID(c, "id")
		if err != nil {
			return err
		}
		if action == app.ActCancel { // with the refund the clinic's policy gives
			cv, err := s.billing.CancelVisit(r.Context(), c.p, visitID, in)
			if err != nil {
				return err
			}
			return s.answerVisit(w, r, c, cv.Detail, nil)
		}
		d, err := s.app.MoveVisit(r.Context(), c.p, visitID, action, in)
		return s.answerVisit(w, r, c, d, err)
	}
}

// answerIntake encodes the intake an app call returned, or its error.
func (s *Server) answerIntake(w http.ResponseWriter, r *http.Request, c *call, it *clinic.Intake, err error) error {
	if err != nil {
		return err
	}
	out, err := s.toIntake(r.Context(), c.p, it)
	if err != nil {
		return err
	}
	return ok(w, out)
}

// answerVisit encodes the visit an app call returned, or its error.
func (s *Server) answerVisit(w http.ResponseWriter, r *http.Request, c *call, d *app.VisitDetail, err error) error {
	if err != nil {
		return err
	}
	out, err := s.toVisit(r.Context(), c.p, d)
	if err != nil {
		return err
	}
	return ok(w, out)
}

// nextLink is the API's one writer of where a list's next page is (RFC
// 8288's Link, rel="next"), from the page's cursor (clinic.Page's Next):
// this request's address with name set to next, without the parameters
// drop names (an offset, `start`, that a keyset takes the place of). The
// last page (next 0) has none.
func nextLink(w http.ResponseWriter, r *http.Request, name string, next int64, drop ...string) {
	if next == 0 {
		return
	}
	q := r.URL.Query()
	q.Set(name, id(next))
	for _, d := range drop {
		q.Del(d)
	}
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	w.Header().Set("Link", "<"+u.String()+`>; rel="next"`)
}
