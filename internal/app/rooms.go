package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
	"teleclinic/internal/store"
)

// Room list paging.
const (
	DefaultRoomLimit = 20
	MaxRoomLimit     = 100
	// DefaultQueueCapacity is how many walk-ins a room queues unless set.
	DefaultQueueCapacity = 50
	// defaultVisitSecs is the queue's estimate before a room has completed visits.
	defaultVisitSecs = 15 * 60
)

// RoomQuery is GET /rooms: page/limit, or DataTables' start/length with a
// search and an order.
type RoomQuery struct {
	Page, Limit int
	Start       int // DataTables offset; used when DataTable is set
	DataTable   bool
	Search      string
	SortCol     string
	Desc        bool
}

// ListRooms is GET /rooms. Anyone with the account code may list rooms.
func (a *App) ListRooms(ctx context.Context, p *clinic.Principal, in RoomQuery) (*clinic.RoomPage, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	if in.Page < 0 || in.Limit < 0 || in.Start < 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "page, start and limit must not be negative.")
	}
	if in.SortCol != "" && !store.RoomSortable(in.SortCol) {
		return nil, clinic.Errorf(clinic.EInvalid, "rooms sort by id, name, code, slug, created or modified.")
	}
	if in.Limit == 0 {
		in.Limit = DefaultRoomLimit
	}
	in.Limit = min(in.Limit, MaxRoomLimit)
	start := in.Start
	if !in.DataTable {
		start = (max(in.Page, 1) - 1) * in.Limit
	}
	f := store.RoomFilter{AccountID: p.Account.ID, Search: strings.TrimSpace(in.Search),
		SortCol: in.SortCol, Desc: in.Desc, Start: start, Limit: in.Limit}
	page, err := a.store.Rooms(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list rooms: %w", err)
	}
	return page, nil
}

// PublicRooms are the clinic's open doors, as its home page lists them:
// up to n active public rooms by name, from the from-th of all its rooms
// by name. next is where the list goes on (0: it ends here). Rooms that
// are not public are passed over, a page of MaxRoomLimit read at a time.
func (a *App) PublicRooms(ctx context.Context, p *clinic.Principal, from, n int) (rooms []clinic.Room, next int, err error) {
	if err := RequireAccount(p); err != nil {
		return nil, 0, err
	}
	from = max(from, 0)
	for {
		page, err := a.store.Rooms(ctx, store.RoomFilter{AccountID: p.Account.ID, SortCol: "name", Start: from, Limit: MaxRoomLimit})
		if err != nil {
			return nil, 0, fmt.Errorf("public rooms: %w", err)
		}
		for i, r := range page.Rooms {
			if len(rooms) == n {
				return rooms, from + i, nil
			}
			if r.Active && r.Settings.PublicAccess {
				rooms = append(rooms, r)
			}
		}
		from += len(page.Rooms)
		if len(page.Rooms) < MaxRoomLimit {
			return rooms, 0, nil
		}
	}
}

var (
	roomCodeRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	slugRE     = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$`)
	hhmmRE     = regexp.MustCompile(`^([01][0-9]|2[0-3]):[0-5][0-9]$`)
	slugJunkRE = regexp.MustCompile(`[^a-z0-9]+`)
	currencyRE = regexp.MustCompile(`^[A-Z]{3}$`)
)

// NewRoom is POST /rooms.
type NewRoom struct {
	Domain, Name, Code, Slug string
}

// DefaultRoomSettings are a new room's settings (docs/compat.md): a free 15-minute
// consultation in USD, walk-ins on, appointments off, guests (600) may log in.
func DefaultRoomSettings() clinic.RoomSettings {
	return clinic.RoomSettings{
		WalkinEnabled: true, GuestType: clinic.UserGuest, GuestLogin: true, Currency: "USD",
		Consultations: []clinic.Consultation{defaultConsultation()},
		Specialties:   []clinic.Specialty{}, QueueCapacity: DefaultQueueCapacity,
		Operation: clinic.OperationSettings{IsOpenAllTime: true, ClosedDays: []string{}},
	}
}

// defaultConsultation is a new room's one consultation: free, 15
// minutes, one patient at a time.
func defaultConsultation() clinic.Consultation {
	return clinic.Consultation{ID: "1", Description: "15-min Consultation", Duration: 15, Amount: 0, Slots: 1}
}

// WithFirstConsultation is current with its first consultation's price
// (amount, charged when above 0) and length set where given: the portal's
// room form edits that one, and the others (set through the API) are
// kept. A room without any gets the default one first.
func WithFirstConsultation(current []clinic.Consultation, amount *float64, minutes *int) []clinic.Consultation {
	cons := append([]clinic.Consultation{}, current...)
	if len(cons) == 0 {
		cons = []clinic.Consultation{defaultConsultation()}
	}
	if amount != nil {
		cons[0].Amount, cons[0].Charge = *amount, *amount > 0
	}
	if minutes != nil {
		cons[0].Duration = *minutes
	}
	return cons
}

// CreateRoom is POST /rooms (admin). A code is generated when omitted and is
// unique in the clinic; a slug is made from the name when omitted and is
// unique in the domain.
func (a *App) CreateRoom(ctx context.Context, p *clinic.Principal, in NewRoom) (*clinic.Room, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := CheckFields(Line("domain", in.Domain, MaxLineChars), Line("name", in.Name, MaxNameChars),
		Line("code", in.Code, MaxCodeChars), Line("slug", in.Slug, MaxCodeChars)); err != nil {
		return nil, err
	}
	in.Domain, in.Name = strings.ToLower(strings.TrimSpace(in.Domain)), strings.TrimSpace(in.Name)
	switch {
	case in.Domain == "" || in.Name == "":
		return nil, clinic.Errorf(clinic.EInvalid, "domain and name are required.")
	case !domainRE.MatchString(in.Domain):
		return nil, clinic.Errorf(clinic.EInvalid, "domain must be a DNS name such as clinic.example.com.")
	case in.Code != "" && !roomCodeRE.MatchString(in.Code):
		return nil, clinic.Errorf(clinic.EInvalid, "code may hold only letters, digits, '-' and '_' (at most 64).")
	case in.Slug != "" && !slugRE.MatchString(in.Slug):
		return nil, clinic.Errorf(clinic.EInvalid, "slug may hold only lowercase letters, digits and '-' (at most 64).")
	}
	now := a.Unix()
	r := &clinic.Room{AccountID: p.Account.ID, Code: in.Code, Slug: in.Slug, Name: in.Name, Domain: in.Domain, Active: true,
		Settings: DefaultRoomSettings(), Created: now, Modified: now}
	err := a.store.Tx(ctx, func(q *store.Q) error {
		r.Code, r.Slug = in.Code, in.Slug
		if err := a.pickRoomNames(ctx, q, r); err != nil {
			return err
		}
		if err := q.CreateRoom(ctx, r); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "room.create", "room", r.Code, OutcomeOK)
	})
	if errors.Is(err, store.ErrConflict) {
		return nil, clinic.Errorf(clinic.EInvalid, "In domain '%s' slug '%s' already exists.", r.Domain, r.Slug)
	}
	return r, StoreErr("create room", err, "")
}

// pickRoomNames checks a given code and slug, or makes free ones, before the
// insert (a failed insert aborts a PostgreSQL transaction).
func (a *App) pickRoomNames(ctx context.Context, q *store.Q, r *clinic.Room) error {
	if r.Code != "" {
		taken, err := q.RoomCodeTaken(ctx, r.AccountID, r.Code)
		if err != nil {
			return err
		}
		if taken {
			return clinic.Errorf(clinic.EInvalid, "A room with code '%s' already exists.", r.Code)
		}
	} else {
		for taken := true; taken; {
			r.Code = randomCode(5)
			var err error
			if taken, err = q.RoomCodeTaken(ctx, r.AccountID, r.Code); err != nil {
				return err
			}
		}
	}
	given := r.Slug != ""
	if !given {
		r.Slug = slugify(r.Name)
	}
	for try := 0; ; try++ {
		taken, err := q.SlugTaken(ctx, r.Domain, r.Slug)
		if err != nil {
			return err
		}
		if !taken {
			return nil
		}
		if given {
			return clinic.Errorf(clinic.EInvalid, "In domain '%s' slug '%s' already exists.", r.Domain, r.Slug)
		}
		r.Slug = slugify(r.Name) + "-" + randomCode(4)
	}
}

func slugify(s string) string {
	out := strings.Trim(slugJunkRE.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(out) > 50 {
		out = strings.TrimRight(out[:50], "-")
	}
	if out == "" {
		out = "room"
	}
	return out
}

// randomCode is n random lowercase letters and digits.
func randomCode(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)] // 256 % 36 = 4: a negligible bias for an identifier
	}
	return string(b)
}

// RoomDetail is a room with what its detail shows beside it.
type RoomDetail struct {
	Room              *clinic.Room
	ProviderIDs       []int64
	UserIDs           []int64
	IsClosedNow       bool
	IsScheduledClosed bool
}

// GetRoom is GET /rooms/{code}.
func (a *App) GetRoom(ctx context.Context, p *clinic.Principal, code string) (*RoomDetail, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return nil, err
	}
	users, err := a.store.Read().RoomUsers(ctx, p.Account.ID, r.ID, 0)
	if err != nil {
		return nil, fmt.Errorf("room users: %w", err)
	}
	d := &RoomDetail{Room: r, ProviderIDs: []int64{}, UserIDs: []int64{}}
	for _, u := range users {
		d.UserIDs = append(d.UserIDs, u.ID)
		if u.Type == clinic.UserProvider {
			d.ProviderIDs = append(d.ProviderIDs, u.ID)
		}
	}
	d.IsScheduledClosed = scheduledClosed(r.Settings.Operation, a.now())
	d.IsClosedNow = r.Settings.Operation.IsClosed || d.IsScheduledClosed
	return d, nil
}

// RoomByCode is the caller's clinic's room of that code (not found for
// any other).
func (a *App) RoomByCode(ctx context.Context, p *clinic.Principal, code string) (*clinic.Room, error) {
	r, err := a.store.Read().RoomByCode(ctx, p.Account.ID, code)
	return r, StoreErr("room", err, "Room not found.")
}

// scheduledClosed says whether the room's schedule closes it at now, in the
// room's time zone (UTC when it has none): a closed weekday, or outside its
// daily hours unless it is open all the time.
func scheduledClosed(op clinic.OperationSettings, now time.Time) bool {
	loc, err := time.LoadLocation(op.Timezone)
	if err != nil || op.Timezone == "" {
		loc = time.UTC
	}
	local := now.In(loc)
	if slices.Contains(op.ClosedDays, strings.ToLower(local.Weekday().String())) {
		return true
	}
	if op.IsOpenAllTime || op.OpenTime == "" || op.CloseTime == "" {
		return false
	}
	hm := local.Format("15:04")
	if op.OpenTime <= op.CloseTime {
		return hm < op.OpenTime || hm >= op.CloseTime
	}
	return hm < op.OpenTime && hm >= op.CloseTime // hours past midnight, e.g. 22:00–06:00
}

// RoomUpdate is PUT /rooms/{code}. A nil field is left as it is.
type RoomUpdate struct {
	Name, Subtitle, Description      *string
	Active, PublicAccess             *bool
	WalkinEnabled, AppointmentEnable *bool
	GuestType                        *int
	GuestLogin                       *bool
	Consultations                    *[]clinic.Consultation
	Currency                         *string
	Specialties                      *[]clinic.Specialty
	IsClosed, IsOpenAllTime          *bool
	CloseMsg, CloseHTML              *string
	ClosedDays                       *[]string
	Timezone, OpenTime, CloseTime    *string
	QueueCapacity                    *int
	Appointments                     *AppointmentPatch
	WaitAlertMinutes                 *int
	IntakeQuestions                  *[]clinic.IntakeQuestion
	// Consent sets the room's consent text; one with no text removes it.
	Consent *clinic.ConsentText
	// Contact sets the room's phone and email for patients; both empty
	// removes it.
	Contact *clinic.RoomContact
	// EmailNote sets the room's words in its patients' mails ("": none).
	EmailNote *string
	// Translations replace the room's words in the clinic's other
	// languages, by tag (an empty map removes them).
	Translations *map[string]clinic.RoomText
}

// AppointmentPatch changes a room's appointment rules: a nil field is left
// as it is.
type AppointmentPatch struct {
	JoinBeforeMinutes *int     `json:"join_before_minutes"`
	CancelHours       *int     `json:"cancel_hours"`
	RefundPercent     *int     `json:"refund_percent"`
	ReminderMinutes   *[]int   `json:"reminder_minutes"`
	NoShowMinutes     *int     `json:"no_show_minutes"`
	NoShowFee         *float64 `json:"no_show_fee"`
	LateCancelFee     *float64 `json:"late_cancel_fee"`
}

var weekdays = []string{"sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"}

// UpdateRoom is PUT /rooms/{code} (admin).
func (a *App) UpdateRoom(ctx context.Context, p *clinic.Principal, code string, in RoomUpdate) (*RoomDetail, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := CheckFields(optLine("name", in.Name, MaxNameChars), optLine("subtitle", in.Subtitle, MaxLineChars),
		optText("description", in.Description, MaxTextChars), optText("operation_settings.close_msg", in.CloseMsg, MaxTextChars),
		optText("operation_settings.close_message.html", in.CloseHTML, MaxRoomHTMLChars), optLine("currency", in.Currency, 8),
		optLine("operation_settings.default_timezone", in.Timezone, 64), optLine("operation_settings.open_time", in.OpenTime, 16),
		optLine("operation_settings.close_time", in.CloseTime, 16), optText("email_note", in.EmailNote, MaxEmailNoteChars)); err != nil {
		return nil, err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return nil, err
	}
	if err := applyRoomUpdate(r, in); err != nil {
		return nil, err
	}
	if in.Translations != nil {
		r.Settings.Translations = *in.Translations
		if len(r.Settings.Translations) == 0 {
			r.Settings.Translations = nil
		}
		if err := checkTranslations(&r.Settings, a.LanguageTags()); err != nil {
			return nil, err
		}
	}
	r.Modified = a.Unix()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.UpdateRoom(ctx, r); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "room.update", "room", r.Code, OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("update room", err, "Room not found.")
	}
	return a.GetRoom(ctx, p, code)
}

// applyRoomUpdate checks and applies the room's fields, each given in
// turn: a flat field list (its cyclomatic count is its fields').
func applyRoomUpdate(r *clinic.Room, in RoomUpdate) error {
	s := &r.Settings
	setS := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	setB := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	if in.Name != nil && strings.TrimSpace(*in.Name) == "" {
		return clinic.Errorf(clinic.EInvalid, "name cannot be empty.")
	}
	setS(&r.Name, in.Name)
	setS(&s.Subtitle, in.Subtitle)
	setS(&s.Description, in.Description)
	setB(&r.Active, in.Active)
	setB(&s.PublicAccess, in.PublicAccess)
	setB(&s.WalkinEnabled, in.WalkinEnabled)
	setB(&s.AppointmentEnabled, in.AppointmentEnable)
	setB(&s.GuestLogin, in.GuestLogin)
	setB(&s.Operation.IsClosed, in.IsClosed)
	setB(&s.Operation.IsOpenAllTime, in.IsOpenAllTime)
	setS(&s.Operation.CloseMsg, in.CloseMsg)
	setS(&s.Operation.CloseHTML, in.CloseHTML)
	if in.GuestType != nil {
		if *in.GuestType != clinic.UserGuest && *in.GuestType != clinic.UserMember {
			return clinic.Errorf(clinic.EInvalid, "auth.guest.type must be 600 (guest) or 200 (member).")
		}
		s.GuestType = *in.GuestType
	}
	if in.Currency != nil {
		c := strings.ToUpper(strings.TrimSpace(*in.Currency))
		if !currencyRE.MatchString(c) {
			return clinic.Errorf(clinic.EInvalid, "currency must be a three-letter ISO 4217 code such as USD.")
		}
		s.Currency = c
	}
	if in.Consultations != nil {
		cs, err := checkConsultations(*in.Consultations)
		if err != nil {
			return err
		}
		s.Consultations = cs
	}
	if in.Specialties != nil {
		if err := checkSpecialties(*in.Specialties); err != nil {
			return err
		}
		s.Specialties = *in.Specialties
	}
	if in.ClosedDays != nil {
		days, err := checkClosedDays(*in.ClosedDays)
		if err != nil {
			return err
		}
		s.Operation.ClosedDays = days
	}
	if in.Timezone != nil {
		tz := strings.TrimSpace(*in.Timezone)
		if _, err := time.LoadLocation(tz); err != nil || tz == "Local" {
			return clinic.Errorf(clinic.EInvalid, "default_timezone must be an IANA time zone name.")
		}
		s.Operation.Timezone = tz
	}
	for _, t := range []struct {
		v   *string
		dst *string
	}{{in.OpenTime, &s.Operation.OpenTime}, {in.CloseTime, &s.Operation.CloseTime}} {
		if t.v == nil {
			continue
		}
		if *t.v != "" && !hhmmRE.MatchString(*t.v) {
			return clinic.Errorf(clinic.EInvalid, "open_time and close_time are HH:MM, 24-hour.")
		}
		*t.dst = *t.v
	}
	if in.QueueCapacity != nil {
		if *in.QueueCapacity < 1 || *in.QueueCapacity > 10000 {
			return clinic.Errorf(clinic.EInvalid, "queue_capacity must be between 1 and 10000.")
		}
		s.QueueCapacity = *in.QueueCapacity
	}
	if in.IntakeQuestions != nil {
		if err := checkQuestions(*in.IntakeQuestions); err != nil {
			return err
		}
		s.IntakeQuestions = *in.IntakeQuestions
		keepTranslations(s)
	}
	if c := in.Consent; c != nil {
		if strings.TrimSpace(c.Text) == "" {
			s.Consent = nil
		} else {
			if err := checkConsent(c); err != nil {
				return err
			}
			s.Consent = c
		}
	}
	setS(&s.EmailNote, in.EmailNote)
	if c := in.Contact; c != nil {
		contact, err := checkContact(*c)
		if err != nil {
			return err
		}
		s.Contact = contact
	}
	if in.WaitAlertMinutes != nil {
		if *in.WaitAlertMinutes < 0 || *in.WaitAlertMinutes > 24*60 {
			return clinic.Errorf(clinic.EInvalid, "wait_alert_minutes must be between 0 (no alert) and 1440.")
		}
		s.WaitAlertMinutes = *in.WaitAlertMinutes
	}
	if ap := in.Appointments; ap != nil {
		cur := s.AppointmentRules()
		for _, f := range []struct{ v, dst *int }{{ap.JoinBeforeMinutes, &cur.JoinBeforeMinutes}, {ap.CancelHours, &cur.CancelHours}, {ap.RefundPercent, &cur.RefundPercent}, {ap.NoShowMinutes, &cur.NoShowMinutes}} {
			if f.v != nil {
				*f.dst = *f.v
			}
		}
		if ap.ReminderMinutes != nil {
			cur.ReminderMinutes = *ap.ReminderMinutes
		}
		for _, f := range []struct{ v, dst *float64 }{{ap.NoShowFee, &cur.NoShowFee}, {ap.LateCancelFee, &cur.LateCancelFee}} {
			if f.v != nil {
				*f.dst = *f.v
			}
		}
		if err := checkAppointments(&cur, RoomCurrency(&clinic.Room{Settings: *s})); err != nil {
			return err
		}
		s.Appointments = &cur
	}
	return nil
}

// checkAppointments bounds a room's appointment rules to what a clinic
// would set.
func checkAppointments(ap *clinic.AppointmentSettings, currency string) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"no_show_fee", ap.NoShowFee}, {"late_cancel_fee", ap.LateCancelFee}} {
		if minor, ok := payments.ToMinor(f.v, currency); !ok || minor < 0 || f.v > 10000 {
			return clinic.Errorf(clinic.EInvalid, "appointment_settings.%s must be an amount in %s from 0 (no fee) to 10000.", f.name, currency)
		}
	}
	switch {
	case ap.NoShowMinutes < 0 || ap.NoShowMinutes > maxNoShowMinutes:
		return clinic.Errorf(clinic.EInvalid, "appointment_settings.no_show_minutes must be between 0 (mark no-shows by hand) and %d.", maxNoShowMinutes)
	case ap.JoinBeforeMinutes < 0 || ap.JoinBeforeMinutes > 24*60:
		return clinic.Errorf(clinic.EInvalid, "appointment_settings.join_before_minutes must be between 0 and 1440.")
	case ap.CancelHours < 0 || ap.CancelHours > 30*24:
		return clinic.Errorf(clinic.EInvalid, "appointment_settings.cancel_hours must be between 0 and 720.")
	case ap.RefundPercent < 0 || ap.RefundPercent > 100:
		return clinic.Errorf(clinic.EInvalid, "appointment_settings.refund_percent must be between 0 and 100.")
	case len(ap.ReminderMinutes) > 5:
		return clinic.Errorf(clinic.EInvalid, "appointment_settings.reminder_minutes holds at most 5 reminders.")
	}
	for _, m := range ap.ReminderMinutes {
		if m < 1 || m > 14*24*60 {
			return clinic.Errorf(clinic.EInvalid, "appointment_settings.reminder_minutes are minutes before the start, from 1 to 20160.")
		}
	}
	if ap.ReminderMinutes == nil {
		ap.ReminderMinutes = []int{}
	}
	return nil
}

func checkSpecialties(sps []clinic.Specialty) error {
	for _, sp := range sps {
		if strings.TrimSpace(sp.Code) == "" || strings.TrimSpace(sp.Name) == "" || sp.Duration < 0 {
			return clinic.Errorf(clinic.EInvalid, "each specialty needs a code and a name, and a duration that is not negative.")
		}
	}
	return nil
}

// checkClosedDays are the weekdays named, in lower case, each once.
func checkClosedDays(in []string) ([]string, error) {
	days := []string{}
	for _, d := range in {
		d = strings.ToLower(strings.TrimSpace(d))
		if !slices.Contains(weekdays, d) {
			return nil, clinic.Errorf(clinic.EInvalid, "closed_days holds weekday names such as saturday.")
		}
		if !slices.Contains(days, d) {
			days = append(days, d)
		}
	}
	return days, nil
}

func checkConsultations(cs []clinic.Consultation) ([]clinic.Consultation, error) {
	if len(cs) == 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "a room needs at least one consultation.")
	}
	seen := map[string]bool{}
	out := make([]clinic.Consultation, 0, len(cs))
	for i, c := range cs {
		if c.ID == "" {
			c.ID = fmt.Sprint(i + 1)
		}
		switch {
		case seen[c.ID]:
			return nil, clinic.Errorf(clinic.EInvalid, "consultation ids must be unique (%s).", c.ID)
		case strings.TrimSpace(c.Description) == "":
			return nil, clinic.Errorf(clinic.EInvalid, "each consultation needs a description.")
		case c.Duration <= 0 || c.Duration > 24*60:
			return nil, clinic.Errorf(clinic.EInvalid, "consultation duration is in minutes, 1 to 1440.")
		case c.Amount < 0:
			return nil, clinic.Errorf(clinic.EInvalid, "consultation amount must not be negative.")
		}
		if c.Slots <= 0 {
			c.Slots = 1
		}
		seen[c.ID] = true
		out = append(out, c)
	}
	return out, nil
}

// DeleteRoom is DELETE /rooms/{code} (admin). A room with intakes or visits
// keeps its history: it cannot be deleted, only deactivated.
func (a *App) DeleteRoom(ctx context.Context, p *clinic.Principal, code string) error {
	if err := RequireAdmin(p); err != nil {
		return err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		hist, err := q.RoomHasHistory(ctx, p.Account.ID, r.ID)
		if err != nil {
			return err
		}
		if hist {
			return clinic.Errorf(clinic.EConflict, "Room '%s' has intakes or visits; deactivate it instead (PUT active=false).", code)
		}
		if err := q.DeleteRoom(ctx, p.Account.ID, r.ID); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "room.delete", "room", code, OutcomeOK)
	})
	return StoreErr("delete room", err, "Room not found.")
}

// RoomProvider is a provider of a room with their photo link.
type RoomProvider struct {
	User     *clinic.User
	PhotoURL string
}

// RoomProviders is GET /rooms/{code}/providers.
func (a *App) RoomProviders(ctx context.Context, p *clinic.Principal, code string) ([]RoomProvider, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return nil, err
	}
	users, err := a.store.Read().RoomUsers(ctx, p.Account.ID, r.ID, clinic.UserProvider)
	if err != nil {
		return nil, fmt.Errorf("room providers: %w", err)
	}
	out := make([]RoomProvider, 0, len(users))
	for _, u := range users {
		if listedInRoom(u) {
			out = append(out, RoomProvider{User: u, PhotoURL: a.photoURL(u, "")})
		}
	}
	return out, nil
}

// listedInRoom says whether u, a user linked to a room, is one of the
// room's providers the API lists: not hidden, not deactivated.
func listedInRoom(u *clinic.User) bool {
	return u.Type == clinic.UserProvider && !u.IsHidden && u.Active
}

// RoomProviderByID is GET /rooms/{code}/providers/{id}: one provider of the
// list RoomProviders gives, read on its own.
func (a *App) RoomProviderByID(ctx context.Context, p *clinic.Principal, code string, id int64) (*RoomProvider, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return nil, err
	}
	u, err := a.store.Read().RoomUser(ctx, p.Account.ID, r.ID, id)
	if err == nil && !listedInRoom(u) {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, StoreErr("room provider", err, "Provider not found in this room.")
	}
	return &RoomProvider{User: u, PhotoURL: a.photoURL(u, "")}, nil
}

// Queue is a room's waiting room as one caller sees it.
type Queue struct {
	Length, Capacity, AverageVisitTime, BeforeMe int
}

// RoomQueue is GET /rooms/{code}/queue. before_me counts the walk-ins ahead of
// the calling patient's own waiting visit (0 when they have none).
func (a *App) RoomQueue(ctx context.Context, p *clinic.Principal, code string) (*Queue, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return nil, err
	}
	// The caller's own walk-in counts, whether or not they had left: they
	// are back, asking.
	st, err := a.store.Read().RoomQueue(ctx, p.Account.ID, r.ID, a.leftBefore(), p.UserID())
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return queueFor(p, r, st), nil
}

// queueFor is room r's queue st as caller p sees it: before_me is the
// number of walk-ins ahead of the caller's own first one.
func queueFor(p *clinic.Principal, r *clinic.Room, st *store.QueueStats) *Queue {
	qu := &Queue{Length: st.Length, Capacity: r.Settings.QueueCapacity, AverageVisitTime: st.AvgVisitSecs}
	if qu.Capacity == 0 {
		qu.Capacity = DefaultQueueCapacity
	}
	if qu.AverageVisitTime == 0 {
		qu.AverageVisitTime = defaultVisitSecs
	}
	if uid := p.UserID(); uid != 0 && !p.IsAdmin() {
		if i := slices.Index(st.BeforeMemberIDs, uid); i >= 0 {
			qu.BeforeMe = i
		}
	}
	return qu
}

// LinkRoom is POST /users/{id}/rooms (admin): link a user to a room,
// optionally as their default. It returns the user's links.
func (a *App) LinkRoom(ctx context.Context, p *clinic.Principal, userID int64, code string, isDefault bool) ([]clinic.RoomLink, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if code == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "code (the room code) is required.")
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return nil, err
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if _, err := q.UserByID(ctx, p.Account.ID, userID); err != nil {
			return err
		}
		if isDefault {
			if err := q.ClearDefaultRoom(ctx, p.Account.ID, userID); err != nil {
				return err
			}
		}
		if err := q.LinkUserRoom(ctx, p.Account.ID, userID, r.ID, isDefault, "admin", a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "user.room.link", "user", i64s(userID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("link room", err, "User not found.")
	}
	links, err := a.store.Read().UserRooms(ctx, p.Account.ID, userID)
	return links, StoreErr("link room", err, "")
}

// UnlinkRoom is DELETE /users/{id}/rooms/{room_code} (admin).
func (a *App) UnlinkRoom(ctx context.Context, p *clinic.Principal, userID int64, code string) error {
	if err := RequireAdmin(p); err != nil {
		return err
	}
	r, err := a.RoomByCode(ctx, p, code)
	if err != nil {
		return err
	}
	return StoreErr("unlink room", a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.UnlinkUserRoom(ctx, p.Account.ID, userID, r.ID); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "user.room.unlink", "user", i64s(userID), OutcomeOK)
	}), "The user is not linked to this room.")
}

// EnsureRoom creates a room with this code unless it exists (demo seeding).
func (a *App) EnsureRoom(ctx context.Context, p *clinic.Principal, code, name string) (*clinic.Room, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	r, err := a.store.Read().RoomByCode(ctx, p.Account.ID, code)
	if err == nil || !errors.Is(err, store.ErrNotFound) {
		return r, err
	}
	now := a.Unix()
	r = &clinic.Room{AccountID: p.Account.ID, Code: code, Slug: code, Name: name, Domain: p.Account.Domain, Active: true,
		Settings: DefaultRoomSettings(), Created: now, Modified: now}
	err = a.store.Write().CreateRoom(ctx, r)
	return r, StoreErr("create room", err, "")
}

// checkContact is a room's contact as given, trimmed; nil when both are
// empty.
func checkContact(c clinic.RoomContact) (*clinic.RoomContact, error) {
	c.Phone, c.Email = strings.TrimSpace(c.Phone), strings.TrimSpace(c.Email)
	if c.Phone == "" && c.Email == "" {
		return nil, nil
	}
	if err := CheckFields(Line("contact.phone", c.Phone, 32), Line("contact.email", c.Email, MaxLineChars)); err != nil {
		return nil, err
	}
	if !phoneChars(c.Phone) {
		return nil, clinic.Errorf(clinic.EInvalid, "contact.phone must be a phone number: digits, spaces and + - ( ) . only.")
	}
	if c.Email != "" && !mailable(c.Email) {
		return nil, clinic.Errorf(clinic.EInvalid, "contact.email must be an email address (name@example.com).")
	}
	return &c, nil
}
