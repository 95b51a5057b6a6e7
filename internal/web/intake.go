package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/payments"
)

// A patient's way through a room: the intake form (reason, the clinic's
// terms, and what kind of visit), then payment when the room's
// consultation charges, then the visit: the waiting room for a walk-in,
// the thread for an e-consult, the open slots for an appointment. Each
// step is the API's operation of the same name, so each keeps its rules.

// visit kinds a room's form offers, as its buttons send them.
const (
	kindWalkin      = "walkin"
	kindEconsult    = "econsult"
	kindAppointment = "appointment"
)

// roomBase is a room's address on this server.
func roomBase(account, room string) string {
	return "/c/" + url.PathEscape(account) + "/" + url.PathEscape(room)
}

// intakeRequest is the signed-in caller at the clinic the path names.
func (s *Server) intakeRequest(r *http.Request) (*clinic.Principal, error) {
	p, err := s.principal(r)
	if err != nil {
		return nil, err
	}
	if p.Account.Code != r.PathValue("account_code") {
		return nil, clinic.Errorf(clinic.EForbidden, "You are signed in at another clinic: sign out, then open this room's address again.")
	}
	return p, nil
}

// intake files the room's intake form (POST /intakes) and goes on to the
// next step for the kind of visit the pressed button asks for.
func (s *Server) intake(w http.ResponseWriter, r *http.Request) error {
	p, err := s.intakeRequest(r)
	if err != nil {
		return err
	}
	room, kind := r.PathValue("room_code"), r.PostFormValue("kind")
	if kind == "" {
		kind = kindWalkin // the form's first button; a form sent by Enter
	}
	if kind != kindWalkin && kind != kindEconsult && kind != kindAppointment {
		return clinic.Errorf(clinic.EInvalid, "Choose how you want to be seen with one of the form's buttons.")
	}
	reason := strings.TrimSpace(r.PostFormValue("reason_for_visit"))
	if r.PostFormValue("terms") != "1" {
		return clinic.Errorf(clinic.EInvalid, "Accept the clinic's terms to go on (the box under your reason).")
	}
	in := app.IntakeInput{RoomCode: room, ReasonForVisit: &reason, Answers: map[string]string{}, ConsentVersion: r.PostFormValue("consent_version"),
		Language: s.localeOf(r).Tag.String()}
	// The room's own questions come as q_<id>.
	for k, v := range r.PostForm {
		if id, ok := strings.CutPrefix(k, "q_"); ok && len(v) > 0 {
			in.Answers[id] = v[0]
		}
	}
	if _, ok := r.PostForm["consent_name"]; ok {
		in.ConsentName = new(r.PostFormValue("consent_name"))
	}
	// The language chosen, or the page's own when it is not the clinic's
	// first: a patient who reads the page in Spanish prefers Spanish.
	if lang := r.PostFormValue("preferred_language"); lang != "" {
		in.PreferredLanguage = &lang
	} else if loc := s.localeOf(r); loc != s.locales.Default() {
		in.PreferredLanguage = new(loc.Tag.String())
	}
	switch kind {
	case kindWalkin:
		in.Type = new("1")
	case kindAppointment:
		in.Type = new("2")
	}
	// A guest books ahead with an email: their session lasts hours, the
	// way back to the visit is the link mailed there.
	if kind == kindAppointment && p.User.Type == clinic.UserGuest {
		if err := s.app.SetGuestContact(r.Context(), p, r.PostFormValue("email"), r.PostFormValue("phone"), r.PostFormValue("texts") == "1"); err != nil {
			return err
		}
	}
	ids, err := s.attachments(r, p)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		in.Attachments = &ids
	}
	it, err := s.app.CreateIntake(r.Context(), p, in)
	if err != nil {
		s.dropFiles(r, p, ids)
		return err
	}
	return s.nextStep(w, r, p, it.ID, kind)
}

// attachments stores the form's files as the patient's documents
// (POST /files, with its checks of each file's content) for the intake to
// name. A file refused drops those stored before it.
func (s *Server) attachments(r *http.Request, p *clinic.Principal) ([]int64, error) {
	if r.MultipartForm == nil {
		return nil, nil
	}
	files := r.MultipartForm.File["attachments"]
	if len(files) > maxAttachments {
		return nil, clinic.Errorf(clinic.EInvalid, "Attach at most %d files.", maxAttachments)
	}
	var total int64
	for _, fh := range files {
		total += fh.Size
	}
	if total > maxIntakeBytes {
		return nil, clinic.Errorf(clinic.ETooLarge, "The files of one visit's form may weigh up to %d MB together; send fewer or smaller ones.", maxIntakeBytes>>20)
	}
	var ids []int64
	for _, fh := range files {
		if fh.Filename == "" && fh.Size == 0 {
			continue // the file field sent empty
		}
		f, err := fh.Open()
		if err != nil {
			s.dropFiles(r, p, ids)
			return nil, err
		}
		info, err := s.app.UploadFile(r.Context(), p, app.FileUpload{Body: f, Name: fh.Filename, TargetType: "user", Category: app.CategoryUserDocument})
		f.Close()
		if err != nil {
			s.dropFiles(r, p, ids)
			return nil, err
		}
		ids = append(ids, info.ID)
	}
	return ids, nil
}

// dropFiles removes files stored for a form that then failed.
func (s *Server) dropFiles(r *http.Request, p *clinic.Principal, ids []int64) {
	for _, id := range ids {
		if err := s.app.DeleteFile(r.Context(), p, id); err != nil {
			s.log.Warn("portal: dropping an attachment", "file", id, "err", err)
		}
	}
}

// nextStep takes the intake on after what is done: to payment while the
// consultation's bill is not paid, then to the visit.
func (s *Server) nextStep(w http.ResponseWriter, r *http.Request, p *clinic.Principal, intakeID int64, kind string) error {
	ctx := r.Context()
	account, room := r.PathValue("account_code"), r.PathValue("room_code")
	step := roomBase(account, room) + "/intake/" + strconv.FormatInt(intakeID, 10)
	// A booked visit's time comes first: it is held while the patient
	// pays (book), so nothing is charged for a time that is not theirs.
	if kind == kindAppointment {
		http.Redirect(w, r, step+"/book", http.StatusSeeOther)
		return nil
	}
	due, err := s.paymentDue(r, p, intakeID)
	if err != nil {
		return err
	}
	if due {
		http.Redirect(w, r, step+"/pay?kind="+url.QueryEscape(kind), http.StatusSeeOther)
		return nil
	}
	var d *app.VisitDetail
	switch kind {
	case kindEconsult:
		d, err = s.app.AddEconsult(ctx, p, intakeID, room)
	default:
		d, err = s.app.AddWalkin(ctx, p, app.WalkinInput{IntakeID: intakeID, RoomCode: room})
	}
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/visits/start/"+strconv.FormatInt(d.Visit.ID, 10), http.StatusSeeOther)
	return nil
}

// paymentDue says whether the intake's consultation has a price not yet
// paid (billing.Due).
func (s *Server) paymentDue(r *http.Request, p *clinic.Principal, intakeID int64) (bool, error) {
	bill, err := s.billing.Due(r.Context(), p, intakeID)
	return bill != nil, err
}

// intakeStep is the signed-in caller and the path's intake, for a step
// after the intake form; an id that is not a number names no intake.
func (s *Server) intakeStep(r *http.Request) (*clinic.Principal, int64, error) {
	p, err := s.intakeRequest(r)
	if err != nil {
		return nil, 0, err
	}
	n, err := strconv.ParseInt(r.PathValue("intake_id"), 10, 64)
	if err != nil || n <= 0 {
		return nil, 0, clinic.Errorf(clinic.ENotFound, "Intake not found.")
	}
	return p, n, nil
}

type payPage struct {
	Action, Kind    string
	Amount, Due     string
	Consultation    string
	Promo, Discount string
	// Stripe says the clinic takes cards with Stripe; otherwise the
	// sandbox's test cards are offered.
	Stripe    bool
	TestCards []testCard
	// StripeJS and PublishableKey are set when the clinic takes cards
	// with Stripe: the page mounts Stripe's card field (Stripe Elements).
	StripeJS, PublishableKey string
	Error                    string
	// Held is the time held for an appointment while the patient pays.
	Held *app.Hold
}

type testCard struct{ Token, Label string }

// sandboxCards are the sandbox's test cards the payment form offers: the
// sandbox, like a card processor's test mode, takes these and no real
// card number.
var sandboxCards = []testCard{
	{"tok_visa", "Visa test card (succeeds)"},
	{"tok_mastercard", "Mastercard test card (succeeds)"},
	{"tok_chargeDeclined", "Test card that is declined"},
	{"tok_chargeDeclinedInsufficientFunds", "Test card with insufficient funds"},
}

// pay is the payment step: the consultation's price, a coupon, and the
// card (POST /billing/invoices/process).
func (s *Server) pay(w http.ResponseWriter, r *http.Request) error {
	return s.showPay(w, r, http.StatusOK, "")
}

func (s *Server) showPay(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	p, id, err := s.intakeStep(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	promo := strings.TrimSpace(r.FormValue("promo_code"))
	bill, err := s.billing.ProcessInvoice(ctx, p, billing.InvoiceInput{IntakeID: id, PromoCode: promo})
	if err != nil {
		return err
	}
	settings, err := s.billing.BillingSettings(ctx, p)
	if err != nil {
		return err
	}
	kind := r.FormValue("kind")
	page := payPage{Action: roomBase(r.PathValue("account_code"), r.PathValue("room_code")) + "/intake/" + strconv.FormatInt(id, 10) + "/pay",
		Kind: kind, Amount: money(bill.Amount, bill.Currency), Due: money(bill.AmountDue, bill.Currency),
		Consultation: bill.Consultation.Description, Promo: promo, Stripe: settings.Processor == "stripe", TestCards: sandboxCards, Error: msg}
	if settings.Processor == "stripe" {
		// Stripe's script and its card field's frame come from Stripe, and
		// the script talks to Stripe's API: this one page allows them.
		page.StripeJS, page.PublishableKey = s.cfg.StripeJS, settings.PublishableKey
		origin := s.cfg.StripeJS
		if u, err := url.Parse(origin); err == nil {
			origin = u.Scheme + "://" + u.Host
		}
		w.Header().Set("Content-Security-Policy", strings.NewReplacer(
			"script-src 'self'", "script-src 'self' "+origin,
			"default-src 'self'", "default-src 'self'; frame-src "+origin+"; connect-src 'self' https://api.stripe.com "+origin,
		).Replace(pageCSP))
	}
	if kind == kindAppointment {
		// The time is held again for as long as the page is open to pay.
		in, err := heldBooking(r, id)
		var h *app.Hold
		if err == nil {
			h, err = s.app.HoldTime(ctx, p, in)
		}
		if err != nil {
			if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
				return s.showBook(w, r, status, msg+" Choose a time first; nothing has been charged.")
			}
			return err
		}
		page.Held = h
	}
	if bill.Discount > 0 {
		page.Discount = money(bill.Discount, bill.Currency)
	}
	if bill.Coupon != nil && !bill.Coupon.Valid && page.Error == "" {
		page.Error = s.localeOf(r).T("That coupon cannot be used: check its code, or pay without it.")
	}
	s.render(w, r, status, "pay", page)
	return nil
}

// payNow saves the card and pays the bill; a declined card is shown on the
// payment page, in words, and nothing is booked. In the sandbox the card
// is one of its test cards; with Stripe it is the PaymentMethod that
// Stripe's card field made in the browser (static/stripe-pay.js), so no
// card number reaches this server.
func (s *Server) payNow(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.intakeStep(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	settings, err := s.billing.BillingSettings(ctx, p)
	if err != nil {
		return err
	}
	token := r.PostFormValue("token")
	if settings.Processor == "stripe" && !strings.HasPrefix(token, "pm_") {
		// Stripe's card field hands the form a PaymentMethod id; nothing
		// else (a card number above all) is taken.
		return s.showPay(w, r, http.StatusBadRequest, s.localeOf(r).T("The card field did not finish: enter the card again and press Pay."))
	}
	refuse := func(err error) error {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.EPayment, clinic.EConflict); ok {
			return s.showPay(w, r, status, msg)
		}
		return err
	}
	kind := r.PostFormValue("kind")
	if kind == kindAppointment {
		// No charge without the time held for this patient.
		in, err := heldBooking(r, id)
		if err == nil {
			_, err = s.app.HoldTime(ctx, p, in)
		}
		if err != nil {
			if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
				return s.showBook(w, r, status, msg+" Choose another time; nothing has been charged.")
			}
			return err
		}
	}
	src, err := s.billing.AddSource(ctx, p, billing.SourceInput{RoomCode: r.PathValue("room_code")}, "card", token)
	if err != nil {
		return refuse(err)
	}
	bill, err := s.billing.ProcessInvoice(ctx, p, billing.InvoiceInput{IntakeID: id, PromoCode: strings.TrimSpace(r.PostFormValue("promo_code")), CreateInvoice: true, SourceID: src.ID})
	if err != nil {
		return refuse(err)
	}
	if bill.Invoice == nil || bill.Invoice.Status != billing.InvoicePaid {
		return s.showPay(w, r, http.StatusPaymentRequired, s.localeOf(r).T("The payment did not go through. Try another card."))
	}
	if kind == kindAppointment {
		return s.bookPaid(w, r, p, id)
	}
	return s.nextStep(w, r, p, id, kind)
}

// bookPaid books the held time of a paid appointment. Should the booking
// fail all the same, the payment goes back at once: no money is kept for a
// visit that will not happen.
func (s *Server) bookPaid(w http.ResponseWriter, r *http.Request, p *clinic.Principal, id int64) error {
	in, err := heldBooking(r, id)
	var d *app.VisitDetail
	if err == nil {
		s.saveBrowserPrefs(r, p) // first: the booking's mail says its time in it
		d, err = s.app.Book(r.Context(), p, in)
	}
	if err == nil {
		http.Redirect(w, r, "/visits/start/"+strconv.FormatInt(d.Visit.ID, 10), http.StatusSeeOther)
		return nil
	}
	if _, rerr := s.billing.RefundUnbooked(r.Context(), p, id); rerr != nil {
		s.log.Error("book after payment: the refund failed; the admin must refund", "intake", id, "err", rerr)
		return clinic.Errorf(clinic.EUnavailable, "The time could not be booked, and the refund did not go through yet; the clinic will refund you. (%s)", clinic.ErrorMessage(err))
	}
	if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
		return s.showBook(w, r, status, msg+" Your payment has been refunded; choose another time.")
	}
	return err
}

// heldBooking is the appointment the form or query names for intake id:
// slot_start, slot_end and provider_id, as the time list sends them.
func heldBooking(r *http.Request, id int64) (app.BookInput, error) {
	t := slotFields(r)
	return app.BookInput{SlotStart: t.start, SlotEnd: t.end, RoomCode: r.PathValue("room_code"), Type: "2", IntakeID: id, ProviderID: t.provider}, t.err
}

// slotTime is a time the time list sends (booking or moving a visit):
// slot_start, slot_end and provider_id.
type slotTime struct {
	start, end, provider int64
	err                  error
}

func slotFields(r *http.Request) slotTime {
	f := formFields(r)
	t := slotTime{start: f.number("slot_start", "a time in unix seconds"), end: f.number("slot_end", "a time in unix seconds"),
		provider: f.number("provider_id", "a provider's id")}
	t.err = f.Err()
	return t
}

// money writes minor units as an amount with its currency, in the
// currency's own decimals (none for JPY).
func money(minor int64, currency string) string {
	return strconv.FormatFloat(payments.ToMajor(minor, currency), 'f', payments.Exponent(currency), 64) + " " + currency
}

type bookPage struct {
	Action string
	Days   []bookDay
	Zone   string
	Error  string
	// Path is the page's own address; Later and Earlier are where the
	// next and the previous pages of times start (unix seconds), Paged
	// that this page starts later than now.
	Path           string
	Later, Earlier int64
	Paged          bool
	// Walkin: the room also takes walk-ins today (what an empty page
	// offers); RoomLink is the room's page.
	Walkin   bool
	RoomLink string
}

type bookDay struct {
	Day   string
	Slots []bookSlot
}

type bookSlot struct {
	Start, End int64
	Time       string
	Provider   int64
}

// bookForm is the appointment step: the room's open times in the next
// two weeks (GET /availability for the intake), each with a Book button.
func (s *Server) bookForm(w http.ResponseWriter, r *http.Request) error {
	return s.showBook(w, r, http.StatusOK, "")
}

func (s *Server) showBook(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	p, id, err := s.intakeStep(r)
	if err != nil {
		return err
	}
	room, err := s.app.RoomByCode(r.Context(), p, r.PathValue("room_code"))
	if err != nil {
		return err
	}
	return s.showTimes(w, r, status, p, id, room, roomBase(r.PathValue("account_code"), room.Code)+"/intake/"+strconv.FormatInt(id, 10)+"/book", msg)
}

// showTimes is the room's open times for intake id (GET /availability),
// two weeks from ?from= (now by default), each a button that posts to
// action: a booking, or a booked visit's move. A time several providers
// have free is shown once (the first of them is booked). A window of more
// slots than one read takes (app.MaxSlotList: eight providers of
// five-minute slots fill it in two days) ends at its last whole day, and
// Later times goes on from there.
func (s *Server) showTimes(w http.ResponseWriter, r *http.Request, status int, p *clinic.Principal, id int64, room *clinic.Room, action, msg string) error {
	now := s.app.Now()
	qf := queryFields(r)
	from := max(qf.number("from", "a time in unix seconds"), now.Unix())
	if err := qf.Err(); err != nil {
		return err
	}
	end := time.Unix(from, 0).Add(bookWindow).Unix()
	av, err := s.app.Availability(r.Context(), p, app.AvailabilityQuery{IntakeID: id, RoomCode: room.Code, Start: from, End: end})
	if err != nil {
		return err
	}
	zone, _ := viewerZone(r, p.User)
	loc := s.localeOf(r)
	page := bookPage{Action: action, Zone: loc.ZoneName(zone), Error: msg, Later: end, Walkin: room.Settings.WalkinEnabled,
		RoomLink: roomBase(p.Account.Code, room.Code)}
	if av.Through < end {
		// Cut: the day the read stopped in is shown from the next page,
		// whole, unless it is the first day (a day of more slots than a
		// read takes), which goes on from where the read stopped.
		t := time.Unix(av.Through, 0).In(zone)
		page.Later = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, zone).Unix()
		if page.Later <= from {
			page.Later = av.Through
		}
	}
	if from > now.Unix() {
		page.Earlier = max(time.Unix(from, 0).Add(-bookWindow).Unix(), now.Unix())
		page.Paged = true
	}
	for _, sl := range av.Slots {
		if !sl.Available || sl.Slot.Start <= now.Unix() || sl.Slot.Start >= page.Later {
			continue
		}
		t := time.Unix(sl.Slot.Start, 0).In(zone)
		day := loc.Day(t)
		if len(page.Days) == 0 || page.Days[len(page.Days)-1].Day != day {
			page.Days = append(page.Days, bookDay{Day: day})
		}
		d := &page.Days[len(page.Days)-1]
		if n := len(d.Slots); n > 0 && d.Slots[n-1].Start == sl.Slot.Start {
			continue // another provider free at the same time
		}
		d.Slots = append(d.Slots, bookSlot{Start: sl.Slot.Start, End: sl.Slot.End, Time: loc.Clock(t), Provider: sl.Slot.ProviderID})
	}
	page.Path = r.URL.Path
	s.render(w, r, status, "book", page)
	return nil
}

// bookWindow is how far ahead one page of open times reaches.
const bookWindow = 14 * 24 * time.Hour

// book books the chosen time (POST /visits); a time taken meanwhile is
// shown on the list again with the 409 in words.
func (s *Server) book(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.intakeStep(r)
	if err != nil {
		return err
	}
	in, err := heldBooking(r, id)
	if err != nil {
		return err
	}
	due, err := s.paymentDue(r, p, id)
	if err != nil {
		return err
	}
	if due {
		// Held while the patient pays; booked once paid (bookPaid).
		h, err := s.app.HoldTime(r.Context(), p, in)
		if err != nil {
			if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
				return s.showBook(w, r, status, msg)
			}
			return err
		}
		q := url.Values{"kind": {kindAppointment}, "slot_start": {strconv.FormatInt(h.Start, 10)}, "slot_end": {strconv.FormatInt(h.End, 10)},
			"provider_id": {strconv.FormatInt(h.ProviderID, 10)}}
		http.Redirect(w, r, roomBase(r.PathValue("account_code"), r.PathValue("room_code"))+"/intake/"+strconv.FormatInt(id, 10)+"/pay?"+q.Encode(), http.StatusSeeOther)
		return nil
	}
	s.saveBrowserPrefs(r, p) // first: the booking's mail says its time in it
	d, err := s.app.Book(r.Context(), p, in)
	if err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EConflict, clinic.EInvalid); ok {
			return s.showBook(w, r, status, msg)
		}
		return err
	}
	http.Redirect(w, r, "/visits/start/"+strconv.FormatInt(d.Visit.ID, 10), http.StatusSeeOther)
	return nil
}

// saveBrowserPrefs gives a profile without a time zone the browser's,
// and one without a language the page's, before the booking: the times
// the patient chose from were in that zone and language, and the
// booking's and the reminders' emails (which have no browser) then say
// them the same way.
func (s *Server) saveBrowserPrefs(r *http.Request, p *clinic.Principal) {
	var in app.ProfileUpdate
	if zone, from := viewerZone(r, p.User); from == "browser" {
		in.Timezone = new(zone.String())
	}
	if app.UserLanguage(p.User) == "" && translated(r) {
		in.Language = new(s.localeOf(r).Tag.String())
	}
	if in.Timezone == nil && in.Language == nil {
		return
	}
	if _, err := s.app.UpdateMe(r.Context(), p, in); err != nil {
		s.log.Warn("book: the browser's zone and language were not saved to the profile", "err", err)
	}
}
