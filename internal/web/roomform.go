package web

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/clinic"
)

// RoomForm is the admin's room form (/admin/rooms/{code}) as drawn from
// the room (roomFormOf) and as sent back (readRoomForm): each field as
// its text, so that a value refused is drawn again as typed, its reason
// beside it (Errors). update decodes and checks it in one place.
type RoomForm struct {
	Name, Subtitle, Description, CloseMsg string
	Active, Closed, Public                bool
	Walkin, Appointments, Guests          bool
	// The visit's price and length (the room's first consultation).
	Price, Currency, Minutes string
	// Opening hours, in Zone; AllDay is open at any time.
	AllDay                    bool
	OpenTime, CloseTime, Zone string
	Days                      []dayBox
	// The appointment rules, the reminders (minutes, by commas), and the
	// waiting room's size and alert.
	JoinBefore, CancelHours, RefundPercent, Reminders string
	WaitAlert, QueueCapacity                          string
	// The no-show and late-cancellation policy: minutes after the start,
	// and the fees (amounts in the room's currency).
	NoShowMinutes, NoShowFee, LateCancelFee string
	// The intake form: the room's questions (and empty rows for new
	// ones), and its consent.
	Questions                   []questionRow
	ConsentVersion, ConsentText string
	// The room's phone and email for patients, and its words in their
	// mails.
	ContactPhone, ContactEmail string
	EmailNote                  string
	// Texts are the room's words in the clinic's other languages.
	Texts []roomTextForm
	// Errors are the refused fields' reasons, by the field's name.
	Errors map[string]string
	// sent are the fields the post carried: a part of the form it leaves
	// out keeps its setting (a post of the name alone changes the name);
	// closedDays are the days it named, as sent (app checks them).
	sent       map[string]bool
	closedDays []string
}

// questionRow is a row of the room's questions' form.
type questionRow struct {
	N               int
	ID, Label, Kind string
	Choices         string
	Required        bool
}

// roomTextForm is the room's words in one more language (fields
// t_{tag}_name, …, t_{tag}_q_{id}_label and _choices).
type roomTextForm struct {
	Tag, Language                                    string
	Name, Subtitle, Description, CloseMsg, EmailNote string
	Consent                                          string
	// ConsentStale is the version of a translation of an earlier consent
	// (not shown to patients; "" for none).
	ConsentStale string
	Questions    []questionTextRow
}

// questionTextRow is a question's words in one more language, beside
// the room's own.
type questionTextRow struct {
	ID, Own, OwnChoices string
	Label, Choices      string
}

// dayBox is a weekday of the opening hours' form: ticked when closed.
type dayBox struct {
	Name, Label string
	Closed      bool
}

var weekdays = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// roomFormOf is the form of the room as stored; langs are the clinic's
// other languages (tag and name).
func roomFormOf(rm *clinic.Room, langs []languageOption) RoomForm {
	st := rm.Settings
	rules := st.AppointmentRules()
	rf := RoomForm{Name: rm.Name, Subtitle: st.Subtitle, Description: st.Description, CloseMsg: st.Operation.CloseMsg,
		Active: rm.Active, Closed: st.Operation.IsClosed, Public: st.PublicAccess, Walkin: st.WalkinEnabled,
		Appointments: st.AppointmentEnabled, Guests: st.GuestLogin, Currency: st.Currency,
		AllDay: st.Operation.IsOpenAllTime, OpenTime: st.Operation.OpenTime, CloseTime: st.Operation.CloseTime, Zone: st.Operation.Timezone,
		JoinBefore: strconv.Itoa(rules.JoinBeforeMinutes), CancelHours: strconv.Itoa(rules.CancelHours),
		RefundPercent: strconv.Itoa(rules.RefundPercent), Reminders: joinInts(rules.ReminderMinutes),
		WaitAlert: strconv.Itoa(st.WaitAlertMinutes), QueueCapacity: strconv.Itoa(st.QueueCapacity),
		NoShowMinutes: strconv.Itoa(rules.NoShowMinutes), NoShowFee: strconv.FormatFloat(rules.NoShowFee, 'f', -1, 64),
		LateCancelFee: strconv.FormatFloat(rules.LateCancelFee, 'f', -1, 64)}
	if len(st.Consultations) > 0 {
		c := st.Consultations[0]
		rf.Price, rf.Minutes = strconv.FormatFloat(c.Amount, 'f', -1, 64), strconv.Itoa(c.Duration)
	}
	for _, d := range weekdays {
		rf.Days = append(rf.Days, dayBox{Name: d, Label: words(d), Closed: slices.Contains(st.Operation.ClosedDays, d)})
	}
	for i, q := range st.IntakeQuestions {
		rf.Questions = append(rf.Questions, questionRow{N: i, ID: q.ID, Label: q.Label, Kind: q.Kind, Choices: strings.Join(q.Choices, ", "), Required: q.Required})
	}
	if c := st.Consent; c != nil {
		rf.ConsentVersion, rf.ConsentText = c.Version, c.Text
	}
	if c := st.Contact; c != nil {
		rf.ContactPhone, rf.ContactEmail = c.Phone, c.Email
	}
	rf.EmailNote = st.EmailNote
	for _, l := range langs {
		t := st.Translations[l.Tag]
		tf := roomTextForm{Tag: l.Tag, Language: l.Label, Name: t.Name, Subtitle: t.Subtitle, Description: t.Description,
			CloseMsg: t.CloseMsg, EmailNote: t.EmailNote, Consent: t.Consent}
		if t.Consent != "" && (st.Consent == nil || t.ConsentVersion != st.Consent.Version) {
			tf.Consent, tf.ConsentStale = "", t.ConsentVersion
		}
		for _, q := range st.IntakeQuestions {
			qt := t.Questions[q.ID]
			tf.Questions = append(tf.Questions, questionTextRow{ID: q.ID, Own: q.Label, OwnChoices: strings.Join(q.Choices, ", "),
				Label: qt.Label, Choices: strings.Join(qt.Choices, ", ")})
		}
		rf.Texts = append(rf.Texts, tf)
	}
	return rf.withBlankQuestions()
}

// readRoomForm is the form as posted; langs are the clinic's other
// languages.
func readRoomForm(r *http.Request, langs []languageOption) RoomForm {
	f := postFields(r)
	v := f.vals
	on := func(name string) bool { return v.Get(name) == "1" }
	rf := RoomForm{Name: f.str("name"), Subtitle: f.str("subtitle"), Description: f.str("description"), CloseMsg: f.str("close_msg"),
		Active: on("active"), Closed: on("is_closed"), Public: on("public_access"), Walkin: on("walkin"),
		Appointments: on("appointments"), Guests: on("guest_login"),
		Price: f.str("price"), Currency: strings.ToUpper(f.str("currency")), Minutes: f.str("minutes"),
		AllDay: on("all_day"), OpenTime: f.str("open_time"), CloseTime: f.str("close_time"), Zone: f.str("timezone"),
		JoinBefore: f.str("join_before"), CancelHours: f.str("cancel_hours"), RefundPercent: f.str("refund_percent"),
		Reminders: f.str("reminders"), WaitAlert: f.str("wait_alert"), QueueCapacity: f.str("queue_capacity"),
		NoShowMinutes: f.str("no_show_minutes"), NoShowFee: f.str("no_show_fee"), LateCancelFee: f.str("late_cancel_fee"),
		ConsentVersion: v.Get("consent_version"), ConsentText: v.Get("consent_text"),
		ContactPhone: f.str("contact_phone"), ContactEmail: f.str("contact_email"), EmailNote: v.Get("email_note"),
		Errors: f.Errors(), sent: map[string]bool{}, closedDays: append([]string{}, v["closed_days"]...)}
	for k := range v {
		rf.sent[k] = true
	}
	for _, d := range weekdays {
		rf.Days = append(rf.Days, dayBox{Name: d, Label: words(d), Closed: slices.Contains(v["closed_days"], d)})
	}
	for i := 0; f.has("q_label_" + strconv.Itoa(i)); i++ {
		n := strconv.Itoa(i)
		rf.Questions = append(rf.Questions, questionRow{N: i, ID: f.str("q_id_" + n), Label: f.str("q_label_" + n), Kind: v.Get("q_kind_" + n),
			Choices: v.Get("q_choices_" + n), Required: on("q_required_" + n)})
	}
	for _, l := range langs {
		at := "t_" + l.Tag + "_"
		tf := roomTextForm{Tag: l.Tag, Language: l.Label, Name: f.str(at + "name"), Subtitle: f.str(at + "subtitle"),
			Description: v.Get(at + "description"), CloseMsg: f.str(at + "close_msg"), EmailNote: v.Get(at + "email_note"), Consent: v.Get(at + "consent")}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			rest, isQuestion := strings.CutPrefix(k, at+"q_")
			if id, isLabel := strings.CutSuffix(rest, "_label"); isQuestion && isLabel && id != "" {
				row := questionTextRow{ID: id, Label: f.str(k), Choices: v.Get(at + "q_" + id + "_choices")}
				if i := slices.IndexFunc(rf.Questions, func(q questionRow) bool { return q.ID == id }); i >= 0 {
					row.Own, row.OwnChoices = rf.Questions[i].Label, rf.Questions[i].Choices
				}
				tf.Questions = append(tf.Questions, row)
			}
		}
		rf.Texts = append(rf.Texts, tf)
	}
	return rf
}

// withBlankQuestions is rf ending with two empty question rows, to add
// new ones.
func (rf RoomForm) withBlankQuestions() RoomForm {
	blank := 0
	for i := len(rf.Questions) - 1; i >= 0 && rf.Questions[i].Label == ""; i-- {
		blank++
	}
	for ; blank < 2; blank++ {
		rf.Questions = append(rf.Questions, questionRow{N: len(rf.Questions), Kind: clinic.QuestionText})
	}
	return rf
}

// update is the change the form asks of a room whose consultations are
// current; ok is false when a field was refused (rf.Errors says why,
// beside each). A part of the form the post left out is left unchanged.
func (rf *RoomForm) update(cur clinic.RoomSettings) (in app.RoomUpdate, ok bool) {
	if rf.Errors == nil {
		rf.Errors = map[string]string{}
	}
	in = app.RoomUpdate{Name: &rf.Name, Subtitle: &rf.Subtitle, Description: &rf.Description, CloseMsg: &rf.CloseMsg,
		Active: &rf.Active, IsClosed: &rf.Closed, PublicAccess: &rf.Public, WalkinEnabled: &rf.Walkin,
		AppointmentEnable: &rf.Appointments, GuestLogin: &rf.Guests}
	ap := &app.AppointmentPatch{JoinBeforeMinutes: rf.whole("join_before", rf.JoinBefore, "Minutes before the start"),
		CancelHours: rf.whole("cancel_hours", rf.CancelHours, "Hours before the start"), RefundPercent: rf.whole("refund_percent", rf.RefundPercent, "The refund"),
		NoShowMinutes: rf.whole("no_show_minutes", rf.NoShowMinutes, "The no-show wait"),
		NoShowFee:     rf.amount("no_show_fee", rf.NoShowFee), LateCancelFee: rf.amount("late_cancel_fee", rf.LateCancelFee)}
	in.WaitAlertMinutes = rf.whole("wait_alert", rf.WaitAlert, "The wait alert")
	in.QueueCapacity = rf.whole("queue_capacity", rf.QueueCapacity, "The waiting room's size")
	if rf.sent["reminders"] {
		ap.ReminderMinutes = rf.reminders()
	}
	in.Appointments = ap
	if rf.sent["q_label_0"] {
		qs := rf.questions()
		in.IntakeQuestions = &qs
	}
	if rf.sent["consent_text"] {
		in.Consent = &clinic.ConsentText{Version: rf.ConsentVersion, Text: rf.ConsentText}
	}
	if rf.sent["contact_phone"] || rf.sent["contact_email"] {
		in.Contact = &clinic.RoomContact{Phone: rf.ContactPhone, Email: rf.ContactEmail}
	}
	if rf.sent["email_note"] {
		in.EmailNote = &rf.EmailNote
	}
	if texts, ok := rf.translations(cur.IntakeQuestions); ok {
		in.Translations = &texts
	}
	if rf.sent["open_time"] {
		in.IsOpenAllTime, in.OpenTime, in.CloseTime = &rf.AllDay, &rf.OpenTime, &rf.CloseTime
		if rf.Zone != "" {
			in.Timezone = &rf.Zone
		}
		in.ClosedDays = &rf.closedDays
	}
	amount, minutes := rf.price(), rf.whole("minutes", rf.Minutes, "The visit's length")
	if amount != nil || minutes != nil {
		cons := app.WithFirstConsultation(cur.Consultations, amount, minutes)
		in.Consultations = &cons
	}
	if rf.Currency != "" {
		in.Currency = &rf.Currency
	}
	return in, len(rf.Errors) == 0
}

// translations are the room's words in the other languages as posted,
// when the post carried them: those of the questions the room keeps (its
// current ones, or those posted with them: a question removed in the same
// post takes its words along).
func (rf *RoomForm) translations(current []clinic.IntakeQuestion) (map[string]clinic.RoomText, bool) {
	if len(rf.Texts) == 0 || !rf.sent["t_"+rf.Texts[0].Tag+"_name"] {
		return nil, false
	}
	if rf.sent["q_label_0"] {
		current = rf.questions()
	}
	kept := map[string]bool{}
	for _, q := range current {
		kept[q.ID] = true
	}
	out := map[string]clinic.RoomText{}
	for _, tf := range rf.Texts {
		t := clinic.RoomText{Name: tf.Name, Subtitle: tf.Subtitle, Description: strings.TrimSpace(tf.Description), CloseMsg: tf.CloseMsg,
			EmailNote: strings.TrimSpace(tf.EmailNote), Consent: strings.TrimSpace(tf.Consent)}
		for _, q := range tf.Questions {
			if !kept[q.ID] || q.Label == "" && strings.TrimSpace(q.Choices) == "" {
				continue
			}
			if t.Questions == nil {
				t.Questions = map[string]clinic.QuestionWording{}
			}
			qw := clinic.QuestionWording{Label: q.Label}
			if strings.TrimSpace(q.Choices) != "" {
				qw.Choices = splitChoices(q.Choices)
			}
			t.Questions[q.ID] = qw
		}
		if t.Questions != nil || t.Name+t.Subtitle+t.Description+t.CloseMsg+t.EmailNote+t.Consent != "" {
			out[tf.Tag] = t
		}
	}
	return out, true
}

// whole is a whole number typed in the field name (what names it for
// people); nil when it is empty.
func (rf *RoomForm) whole(name, text, what string) *int {
	if text == "" {
		return nil
	}
	n, err := strconv.Atoi(text)
	if err != nil {
		rf.Errors[name] = what + " must be a whole number."
		return nil
	}
	return &n
}

// price is the visit's price, an amount of 0 or more; nil when empty.
func (rf *RoomForm) price() *float64 {
	if rf.Price == "" {
		return nil
	}
	amount, err := strconv.ParseFloat(rf.Price, 64)
	if err != nil || amount < 0 {
		rf.Errors["price"] = "The price is an amount like 25 or 25.50 (0 for free)."
		return nil
	}
	return &amount
}

// amount is a fee typed in the field name, 0 or more; nil when empty.
func (rf *RoomForm) amount(name, text string) *float64 {
	if text == "" {
		return nil
	}
	amount, err := strconv.ParseFloat(text, 64)
	if err != nil || amount < 0 {
		rf.Errors[name] = "A fee is an amount like 25 or 25.50 (0 for none)."
		return nil
	}
	return &amount
}

// reminders are the reminders' minutes before the start.
func (rf *RoomForm) reminders() *[]int {
	mins := []int{}
	for _, part := range strings.Split(rf.Reminders, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		m, err := strconv.Atoi(part)
		if err != nil {
			rf.Errors["reminders"] = "Reminders are minutes before the start, separated by commas (1440 is a day)."
			return nil
		}
		mins = append(mins, m)
	}
	return &mins
}

// questions are the form's questions: a row whose text is empty is
// removed (or was never filled); a new one's id is made from its text.
func (rf *RoomForm) questions() []clinic.IntakeQuestion {
	qs := []clinic.IntakeQuestion{}
	for _, row := range rf.Questions {
		if row.Label == "" {
			continue
		}
		q := clinic.IntakeQuestion{ID: row.ID, Label: row.Label, Kind: row.Kind, Required: row.Required}
		if q.ID == "" {
			q.ID = questionID(q.Label, qs)
		}
		if q.Kind == clinic.QuestionChoice {
			q.Choices = splitChoices(row.Choices)
		}
		qs = append(qs, q)
	}
	return qs
}

// splitChoices are the choices typed in a field, separated by commas.
func splitChoices(field string) []string {
	var out []string
	for _, c := range strings.Split(field, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// questionID makes a new question's id from its label: its words in
// lower case joined by _, made unique among qs.
func questionID(label string, qs []clinic.IntakeQuestion) string {
	var b strings.Builder
	for _, r := range strings.ToLower(label) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
		if b.Len() >= 24 {
			break
		}
	}
	id := strings.Trim(b.String(), "_")
	if id == "" {
		id = "q"
	}
	base := id
	for n := 2; slices.ContainsFunc(qs, func(q clinic.IntakeQuestion) bool { return q.ID == id }); n++ {
		id = base + "_" + strconv.Itoa(n)
	}
	return id
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}
