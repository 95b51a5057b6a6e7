package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/live"
)

// roomListItem is a room as GET /rooms lists it.
type roomListItem struct {
	ID       string `json:"id"`
	Code     string `json:"code"`
	Slug     string `json:"slug"`
	Name     string `json:"name"`
	Domain   string `json:"domain"`
	Created  int64  `json:"created"`
	Modified int64  `json:"modified"`
}

// roomList is GET /rooms: the envelope, plus DataTables' counters when the
// request came in DataTables' format (it sends draw).
type roomList struct {
	Data            []roomListItem `json:"data"`
	TotalCount      int            `json:"total_count"`
	Draw            *int           `json:"draw,omitempty"`
	RecordsTotal    *int           `json:"recordsTotal,omitempty"`
	RecordsFiltered *int           `json:"recordsFiltered,omitempty"`
}

func (s *Server) listRooms(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	var in app.RoomQuery
	var err error
	page, err := q.Int("page", 1)
	if err != nil {
		return err
	}
	in.Page = int(page)
	limit, err := q.Int("limit", 0)
	if err != nil {
		return err
	}
	in.Limit = int(limit)
	draw, err := q.OptInt("draw")
	if err != nil {
		return err
	}
	if draw != nil {
		// DataTables: start/length, search[value], order[0][column] naming
		// columns[N][data], order[0][dir].
		in.DataTable = true
		start, err := q.Int("start", 0)
		if err != nil {
			return err
		}
		length, err := q.Int("length", int64(app.DefaultRoomLimit))
		if err != nil {
			return err
		}
		in.Start, in.Limit, in.Search = int(start), int(length), q.Str("search.value")
		if col := q.Str("order.0.column"); col != "" {
			in.SortCol = q.Str("columns." + col + ".data")
			in.Desc = strings.EqualFold(q.Str("order.0.dir"), "desc")
		}
	} else {
		in.Search = q.Str("search")
	}
	pg, err := s.app.ListRooms(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	out := roomList{Data: make([]roomListItem, 0, len(pg.Rooms)), TotalCount: pg.Filtered}
	for _, rm := range pg.Rooms {
		out.Data = append(out.Data, roomListItem{ID: id(rm.ID), Code: rm.Code, Slug: rm.Slug, Name: rm.Name, Domain: rm.Domain, Created: rm.Created, Modified: rm.Modified})
	}
	if draw != nil {
		out.Draw, out.RecordsTotal, out.RecordsFiltered = draw, &pg.Total, &pg.Filtered
	}
	return edge.WriteJSON(w, http.StatusOK, out)
}

// roomDetail is a room as GET, POST and PUT /rooms answer it.
type roomDetail struct {
	ID                string            `json:"id"`
	Code              string            `json:"code"`
	Slug              string            `json:"slug"`
	Name              string            `json:"name"`
	Domain            string            `json:"domain"`
	AccountCode       string            `json:"account_code"`
	Active            bool              `json:"active"`
	Users             string            `json:"users"`
	ProviderIDs       []string          `json:"provider_ids"`
	PublicAccessRoom  bool              `json:"public_access_room"`
	Subtitle          string            `json:"subtitle"`
	Description       string            `json:"description"`
	Visits            roomVisits        `json:"visits"`
	Auth              roomAuth          `json:"auth"`
	Payment           roomPayment       `json:"payment"`
	Specialties       []clinicSpecialty `json:"specialties"`
	OperationSettings operationSettings `json:"operation_settings"`
	QueueCapacity     int               `json:"queue_capacity"`
	// AppointmentSettings is the extension's: when a booked visit's call
	// opens, until when a patient changes it, the refund and reminders.
	AppointmentSettings appointmentSettings `json:"appointment_settings"`
	// WaitAlertMinutes is the extension's: providers are emailed when a
	// walk-in has waited this long (0: never).
	WaitAlertMinutes int `json:"wait_alert_minutes"`
	// IntakeQuestions and Consent are the extension's: the room's own
	// questions, and the consent a patient signs (null: none).
	IntakeQuestions []intakeQuestion `json:"intake_questions"`
	Consent         *consentText     `json:"consent"`
	// Contact is the extension's: the room's phone and email for
	// patients (null: none given).
	Contact *roomContact `json:"contact"`
	// EmailNote and Translations are the extension's: the room's words in
	// its patients' mails, and its words in the clinic's other languages.
	EmailNote    string              `json:"email_note"`
	Translations map[string]roomText `json:"translations"`
	Created      int64               `json:"created"`
	Modified     int64               `json:"modified"`
}

// roomText is a room's words in one more language.
type roomText struct {
	Name           string                     `json:"name,omitempty"`
	Subtitle       string                     `json:"subtitle,omitempty"`
	Description    string                     `json:"description,omitempty"`
	CloseMsg       string                     `json:"close_msg,omitempty"`
	EmailNote      string                     `json:"email_note,omitempty"`
	Questions      map[string]questionWording `json:"questions,omitempty"`
	Consent        string                     `json:"consent,omitempty"`
	ConsentVersion string                     `json:"consent_version,omitempty"`
}

type questionWording struct {
	Label   string   `json:"label,omitempty"`
	Choices []string `json:"choices,omitempty"`
}

func toRoomTexts(ts map[string]clinic.RoomText) map[string]roomText {
	out := map[string]roomText{}
	for tag, t := range ts {
		rt := roomText{Name: t.Name, Subtitle: t.Subtitle, Description: t.Description, CloseMsg: t.CloseMsg, EmailNote: t.EmailNote,
			Consent: t.Consent, ConsentVersion: t.ConsentVersion}
		for id, q := range t.Questions {
			if rt.Questions == nil {
				rt.Questions = map[string]questionWording{}
			}
			rt.Questions[id] = questionWording{Label: q.Label, Choices: q.Choices}
		}
		out[tag] = rt
	}
	return out
}

type appointmentSettings struct {
	JoinBeforeMinutes int     `json:"join_before_minutes"`
	CancelHours       int     `json:"cancel_hours"`
	RefundPercent     int     `json:"refund_percent"`
	ReminderMinutes   []int   `json:"reminder_minutes"`
	NoShowMinutes     int     `json:"no_show_minutes"`
	NoShowFee         float64 `json:"no_show_fee"`
	LateCancelFee     float64 `json:"late_cancel_fee"`
}

type enabled struct {
	Enabled bool `json:"enabled"`
}

type roomVisits struct {
	Walkin      enabled `json:"walkin"`
	Appointment enabled `json:"appointment"`
}

type roomAuth struct {
	Guest struct {
		Type  int     `json:"type"`
		LogIn enabled `json:"log_in"`
	} `json:"guest"`
}

type consultation struct {
	ID          string  `json:"id"`
	Description string  `json:"description"`
	Duration    int     `json:"duration"`
	Amount      float64 `json:"amount"`
	Group       bool    `json:"group"`
	Charge      bool    `json:"charge"`
	Slots       int     `json:"slots"`
}

type roomPayment struct {
	Consultations   []consultation `json:"consultations"`
	Currency        string         `json:"currency"`
	PaymentCurrency string         `json:"paymentCurrency"`
}

type clinicSpecialty struct {
	Code     string `json:"code"`
	Name     string `json:"name"`
	Duration int    `json:"duration"`
}

type operationSettings struct {
	IsClosed          bool      `json:"is_closed"`
	CloseMsg          string    `json:"close_msg"`
	CloseMessage      closeHTML `json:"close_message"`
	ClosedDays        []string  `json:"closed_days"`
	DefaultTimezone   string    `json:"default_timezone"`
	IsClosedNow       bool      `json:"is_closed_now"`
	IsOpenAllTime     bool      `json:"is_open_all_time"`
	IsScheduledClosed bool      `json:"is_scheduled_closed"`
	OpenTime          string    `json:"open_time"`
	CloseTime         string    `json:"close_time"`
}

type closeHTML struct {
	HTML string `json:"html"`
}

func toRoomDetail(acct *clinic.Account, d *app.RoomDetail) roomDetail {
	rm, st := d.Room, d.Room.Settings
	out := roomDetail{ID: id(rm.ID), Code: rm.Code, Slug: rm.Slug, Name: rm.Name, Domain: rm.Domain, AccountCode: acct.Code,
		Active: rm.Active, Users: joinIDs(d.UserIDs), ProviderIDs: ids(d.ProviderIDs), PublicAccessRoom: st.PublicAccess,
		Subtitle: st.Subtitle, Description: st.Description,
		Visits:        roomVisits{Walkin: enabled{st.WalkinEnabled}, Appointment: enabled{st.AppointmentEnabled}},
		Payment:       roomPayment{Consultations: []consultation{}, Currency: st.Currency, PaymentCurrency: st.Currency},
		Specialties:   []clinicSpecialty{},
		QueueCapacity: st.QueueCapacity, Created: rm.Created, Modified: rm.Modified,
		AppointmentSettings: appointmentSettings(st.AppointmentRules()), WaitAlertMinutes: st.WaitAlertMinutes,
		IntakeQuestions: toQuestions(st.IntakeQuestions), Consent: toConsent(st.Consent), Contact: toContact(st.Contact),
		EmailNote: st.EmailNote, Translations: toRoomTexts(st.Translations),
		OperationSettings: operationSettings{IsClosed: st.Operation.IsClosed, CloseMsg: st.Operation.CloseMsg,
			CloseMessage: closeHTML{st.Operation.CloseHTML}, ClosedDays: nonNilStrings(st.Operation.ClosedDays),
			DefaultTimezone: st.Operation.Timezone, IsClosedNow: d.IsClosedNow, IsOpenAllTime: st.Operation.IsOpenAllTime,
			IsScheduledClosed: d.IsScheduledClosed, OpenTime: st.Operation.OpenTime, CloseTime: st.Operation.CloseTime},
	}
	out.Auth.Guest.Type, out.Auth.Guest.LogIn = st.GuestType, enabled{st.GuestLogin}
	for _, c := range st.Consultations {
		out.Payment.Consultations = append(out.Payment.Consultations, consultation(c))
	}
	for _, sp := range st.Specialties {
		out.Specialties = append(out.Specialties, clinicSpecialty(sp))
	}
	return out
}

func (s *Server) createRoom(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	rm, err := s.app.CreateRoom(r.Context(), c.p, app.NewRoom{Domain: q.Str("domain"), Name: q.Str("name"), Code: q.Str("code"), Slug: q.Str("slug")})
	if err != nil {
		return err
	}
	d, err := s.app.GetRoom(r.Context(), c.p, rm.Code)
	if err != nil {
		return err
	}
	return ok(w, toRoomDetail(c.p.Account, d))
}

func (s *Server) getRoom(w http.ResponseWriter, r *http.Request, c *call) error {
	d, err := s.app.GetRoom(r.Context(), c.p, c.params.Str("code"))
	if err != nil {
		return err
	}
	return ok(w, toRoomDetail(c.p.Account, d))
}

func (s *Server) updateRoom(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	var in app.RoomUpdate
	in.Name, in.Subtitle, in.Description = q.Opt("name"), q.Opt("subtitle"), q.Opt("description")
	in.CloseMsg, in.CloseHTML = q.Opt("operation_settings.close_msg"), q.Opt("operation_settings.close_message.html")
	in.Timezone = q.Opt("operation_settings.default_timezone")
	in.OpenTime, in.CloseTime = q.Opt("operation_settings.open_time"), q.Opt("operation_settings.close_time")
	in.ClosedDays = q.OptList("operation_settings.closed_days")
	for _, cur := range []string{"payment.currency", "payment.paymentCurrency", "currency", "paymentCurrency"} {
		if v := q.Opt(cur); v != nil {
			in.Currency = v
			break
		}
	}
	bools := []struct {
		name string
		dst  **bool
	}{
		{"active", &in.Active}, {"public_access_room", &in.PublicAccess}, {"visits.walkin.enabled", &in.WalkinEnabled},
		{"visits.appointment.enabled", &in.AppointmentEnable}, {"auth.guest.log_in.enabled", &in.GuestLogin},
		{"operation_settings.is_closed", &in.IsClosed}, {"operation_settings.is_open_all_time", &in.IsOpenAllTime},
	}
	var err error
	for _, b := range bools {
		if *b.dst, err = q.Bool(b.name); err != nil {
			return err
		}
	}
	if in.GuestType, err = q.OptInt("auth.guest.type"); err != nil {
		return err
	}
	if in.QueueCapacity, err = q.OptInt("queue_capacity"); err != nil {
		return err
	}
	if in.WaitAlertMinutes, err = q.OptInt("wait_alert_minutes"); err != nil {
		return err
	}
	var qs []clinic.IntakeQuestion
	if found, err := q.JSON("intake_questions", &qs); err != nil {
		return err
	} else if found {
		in.IntakeQuestions = &qs
	}
	var consent clinic.ConsentText
	if found, err := q.JSON("consent", &consent); err != nil {
		return err
	} else if found {
		in.Consent = &consent
	}
	var contact clinic.RoomContact
	if found, err := q.JSON("contact", &contact); err != nil {
		return err
	} else if found {
		in.Contact = &contact
	}
	in.EmailNote = q.Opt("email_note")
	var texts map[string]clinic.RoomText
	if found, err := q.JSON("translations", &texts); err != nil {
		return err
	} else if found {
		if texts == nil {
			texts = map[string]clinic.RoomText{}
		}
		in.Translations = &texts
	}
	var ap app.AppointmentPatch
	if found, err := q.JSON("appointment_settings", &ap); err != nil {
		return err
	} else if found {
		in.Appointments = &ap
	}
	var cons []clinic.Consultation
	for _, name := range []string{"payment.consultations", "consultations"} {
		found, err := q.JSON(name, &cons)
		if err != nil {
			return err
		}
		if found {
			in.Consultations = &cons
			break
		}
	}
	var specs []clinic.Specialty
	if found, err := q.JSON("specialties", &specs); err != nil {
		return err
	} else if found {
		in.Specialties = &specs
	}
	d, err := s.app.UpdateRoom(r.Context(), c.p, q.Str("code"), in)
	if err != nil {
		return err
	}
	return ok(w, toRoomDetail(c.p.Account, d))
}

func (s *Server) deleteRoom(w http.ResponseWriter, r *http.Request, c *call) error {
	if err := s.app.DeleteRoom(r.Context(), c.p, c.params.Str("code")); err != nil {
		return err
	}
	return ok(w, true)
}

// roomProvider is a provider as a room lists them. status and short_bio are
// false when unset, as the original service shows them.
type roomProvider struct {
	ID        string `json:"id"`
	Username  string `json:"username"`
	Code      string `json:"code"`
	Subtype   string `json:"subtype"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name"`
	SvcID     string `json:"svcid"`
	Photo     string `json:"photo"`
	Title     string `json:"title"`
	Suffix    string `json:"suffix"`
	Status    any    `json:"status"`
	ShortBio  any    `json:"short_bio"`
}

// roomProviderDetail adds the detail fields.
type roomProviderDetail struct {
	roomProvider
	Email                 string `json:"email"`
	Active                bool   `json:"active"`
	TOS                   bool   `json:"tos"`
	Phone                 string `json:"phone"`
	EducationalTraining   string `json:"educational_training"`
	ProfessionalInterests string `json:"professional_interests"`
	PersonalInterests     string `json:"personal_interests"`
}

func toRoomProvider(rp app.RoomProvider) roomProvider {
	u := rp.User
	str := func(k string) string { v, _ := u.Extra[k].(string); return v }
	orFalse := func(k string) any {
		if v, ok := u.Extra[k]; ok && v != "" && v != nil {
			return v
		}
		return false
	}
	return roomProvider{ID: id(u.ID), Username: u.Username, Code: u.Code, Subtype: u.Subtype, FirstName: u.FirstName, LastName: u.LastName,
		SvcID: u.SvcID, Photo: rp.PhotoURL, Title: str("title"), Suffix: str("suffix"), Status: orFalse("status"), ShortBio: orFalse("short_bio")}
}

func (s *Server) roomProviders(w http.ResponseWriter, r *http.Request, c *call) error {
	list, err := s.app.RoomProviders(r.Context(), c.p, c.params.Str("code"))
	if err != nil {
		return err
	}
	out := make([]roomProvider, 0, len(list))
	for _, rp := range list {
		out = append(out, toRoomProvider(rp))
	}
	return ok(w, out)
}

func (s *Server) roomProvider(w http.ResponseWriter, r *http.Request, c *call) error {
	pid, err := strconv.ParseInt(c.params.Str("id"), 10, 64)
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "Provider not found in this room.")
	}
	rp, err := s.app.RoomProviderByID(r.Context(), c.p, c.params.Str("code"), pid)
	if err != nil {
		return err
	}
	u := rp.User
	str := func(k string) string { v, _ := u.Extra[k].(string); return v }
	return ok(w, roomProviderDetail{roomProvider: toRoomProvider(*rp), Email: u.Email, Active: u.Active, TOS: u.TOS, Phone: u.Phone,
		EducationalTraining: str("educational_training"), ProfessionalInterests: str("professional_interests"), PersonalInterests: str("personal_interests")})
}

type queue struct {
	Length           int `json:"length"`
	Capacity         int `json:"capacity"`
	AverageVisitTime int `json:"average_visit_time"`
	BeforeMe         int `json:"before_me"`
}

func (s *Server) roomQueue(w http.ResponseWriter, r *http.Request, c *call) error {
	qu, err := s.app.RoomQueue(r.Context(), c.p, c.params.Str("code"))
	if err != nil {
		return err
	}
	return ok(w, queue(*qu))
}

// roomQueueEvents streams the queue as GET /rooms/{code}/queue answers it:
// an event "queue" at once and another each time it changes.
func (s *Server) roomQueueEvents(w http.ResponseWriter, r *http.Request, c *call) error {
	release, err := s.cfg.Streams.Open(live.CredentialKey(c.p), edge.ClientAddr(r))
	if err != nil {
		return err
	}
	watch, err := s.app.WatchQueue(r.Context(), c.p, c.params.Str("code"))
	if err != nil {
		release()
		return err
	}
	src := live.Polled{Subs: []*live.Sub{watch.Sub()}, Ahead: watch.Ahead, Poll: func(ctx context.Context, ch live.Changes) ([]live.Frame, error) {
		qu, ok, err := watch.Poll(ctx, ch)
		if !ok || err != nil {
			return nil, err
		}
		return []live.Frame{{Name: "queue", Data: mustJSON(queue(*qu))}}, nil
	}}
	s.pump(r, c).Serve(w, r, src, func() { watch.Close(); release() })
	return nil
}

// mongoDate is how POST /users/{id}/rooms shows dates (spec: objects with
// sec and usec).
type mongoDate struct {
	Sec  int64 `json:"sec"`
	Usec int64 `json:"usec"`
}

type userRoomLink struct {
	ID          string    `json:"id"`
	Code        string    `json:"code"`
	Slug        string    `json:"slug"`
	Name        string    `json:"name"`
	AccountCode string    `json:"account_code"`
	Domain      string    `json:"domain"`
	Default     bool      `json:"default"`
	AddedTime   mongoDate `json:"added_time"`
	Source      string    `json:"source"`
	Created     mongoDate `json:"created"`
	Modified    mongoDate `json:"modified"`
}

func (s *Server) linkRoom(w http.ResponseWriter, r *http.Request, c *call) error {
	uid, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	def, err := c.params.Flag("default")
	if err != nil {
		return err
	}
	links, err := s.app.LinkRoom(r.Context(), c.p, uid, c.params.Str("code"), def)
	if err != nil {
		return err
	}
	out := make([]userRoomLink, 0, len(links))
	for _, l := range links {
		out = append(out, userRoomLink{ID: id(l.Room.ID), Code: l.Room.Code, Slug: l.Room.Slug, Name: l.Room.Name, AccountCode: c.p.Account.Code,
			Domain: l.Room.Domain, Default: l.Default, AddedTime: mongoDate{Sec: l.AddedTime}, Source: l.Source,
			Created: mongoDate{Sec: l.Room.Created}, Modified: mongoDate{Sec: l.Room.Modified}})
	}
	return ok(w, out)
}

func (s *Server) unlinkRoom(w http.ResponseWriter, r *http.Request, c *call) error {
	uid, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	if err := s.app.UnlinkRoom(r.Context(), c.p, uid, c.params.Str("room_code")); err != nil {
		return err
	}
	return ok(w, struct{}{})
}

func ids(ns []int64) []string {
	out := make([]string, 0, len(ns))
	for _, n := range ns {
		out = append(out, id(n))
	}
	return out
}

func joinIDs(ns []int64) string { return strings.Join(ids(ns), ",") }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// intakeQuestion is a room's question as the API shows it.
type intakeQuestion struct {
	ID       string   `json:"id"`
	Label    string   `json:"label"`
	Kind     string   `json:"kind"`
	Choices  []string `json:"choices"`
	Required bool     `json:"required"`
}

type consentText struct {
	Version string `json:"version"`
	Text    string `json:"text"`
}

func toQuestions(qs []clinic.IntakeQuestion) []intakeQuestion {
	out := make([]intakeQuestion, len(qs))
	for i, q := range qs {
		out[i] = intakeQuestion{ID: q.ID, Label: q.Label, Kind: q.Kind, Choices: q.Choices, Required: q.Required}
		if out[i].Choices == nil {
			out[i].Choices = []string{}
		}
	}
	return out
}

func toConsent(c *clinic.ConsentText) *consentText {
	if c == nil {
		return nil
	}
	return &consentText{Version: c.Version, Text: c.Text}
}

// roomContact is a room's phone and email for patients.
type roomContact struct {
	Phone string `json:"phone"`
	Email string `json:"email"`
}

func toContact(c *clinic.RoomContact) *roomContact {
	if c == nil {
		return nil
	}
	return &roomContact{Phone: c.Phone, Email: c.Email}
}
