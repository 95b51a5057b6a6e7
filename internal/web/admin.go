package web

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/payments"
)

// The clinic admin's pages. The admin signs in with the clinic code and
// the admin token (app.AdminSignIn); every page then calls the same admin
// operations as the API's admin routes, which refuse anyone else: each
// page calls an admin-only one before anything else.

type adminSigninPage struct{ Clinic, Error string }

func (s *Server) adminSigninForm(w http.ResponseWriter, r *http.Request) error {
	s.render(w, r, http.StatusOK, "adminsignin", adminSigninPage{Clinic: r.URL.Query().Get("clinic")})
	return nil
}

func (s *Server) adminSignin(w http.ResponseWriter, r *http.Request) error {
	in := adminSigninPage{Clinic: strings.TrimSpace(r.PostFormValue("clinic"))}
	sess, err := s.app.AdminSignIn(r.Context(), edge.RequestID(r.Context()), edge.ClientAddr(r), in.Clinic, strings.TrimSpace(r.PostFormValue("token")))
	if err != nil {
		if clinic.ErrorCode(err) != clinic.EUnauthenticated {
			return err // a throttled sign-in is 429 with Retry-After
		}
		in.Error = "That clinic code and admin token do not match. Check both (the admin token was shown when the clinic was created or last rotated) and try again."
		s.render(w, r, http.StatusUnauthorized, "adminsignin", in)
		return nil
	}
	s.setCookie(w, s.sessionCookie(), sess.Token, s.cfg.SessionMax)
	s.setCookie(w, s.navCookie(), "", 0)
	http.Redirect(w, r, "/admin", http.StatusSeeOther)
	return nil
}

type adminRoom struct {
	Code, Name, Address string
	Closed              bool
	Providers           int
}

// auditRow is an audit entry with who did it in words.
type auditRow struct {
	clinic.AuditEntry
	Who string
}

// actorWords name the credentials an entry's actor used, for an entry
// with no user (or one since deleted).
var actorWords = map[string]string{"admin_token": "the clinic admin (admin token)", "admin_session": "the clinic admin",
	"api_key": "the clinic's API key", "account_code": "someone with the clinic code", "system": "the server"}

// adminPayment is an invoice as the admin's payments list shows it.
type adminPayment struct {
	ID                       int64
	Created                  int64
	Patient                  string
	Status, Amount, Refunded string
	Refundable               bool
	// Major is the amount in major units, the refund's default; Currency
	// its currency.
	Major, Currency string
	VisitID         int64
}

// adminProvider is a provider as the admin's list shows them.
type adminProvider struct {
	ID          int64
	Name, Email string
	Invited     bool // not activated yet
	Deactivated bool
}

type adminPage struct {
	Clinic string
	// Rooms are a page of the clinic's rooms by name (RoomsPage, 1-based);
	// RoomsPrev and RoomsNext the pages either side (0: none), and
	// RoomsTotal all the clinic's rooms.
	Rooms                           []adminRoom
	RoomsPage, RoomsPrev, RoomsNext int
	RoomsTotal                      int
	WebhookURL                      string
	SecretSet                       bool
	// Shown is a secret or credential shown once, just after it was made.
	Shown, ShownWhat string
	Deliveries       []*app.WebhookDelivery
	// Endpoints are the clinic's webhook endpoints; Events the types one
	// subscribes to; DeliveriesTo the endpoint whose deliveries are shown
	// ("" for the clinic's webhook).
	Endpoints    []*app.WebhookEndpoint
	Events       []app.EventType
	DeliveriesTo string
	// Apps are the clinic's SMART apps; EHRs the EHRs it launches
	// Teleclinic from, with what an EHR's registration needs.
	Apps                                   []*clinic.OAuthClient
	EHRs                                   []adminEHR
	EHRRooms                               []adminRoom // every room, to hold an EHR's visits
	EHRLaunchURL, EHRRedirect, SmartConfig string
	// Interpreters are the clinic's; Languages those the form offers.
	Interpreters []adminInterpreter
	Languages    []languageOption
	// SMS is the clinic's text-message sender, SMSLog its newest texts.
	SMS    *app.SMSSettingsView
	SMSLog []*clinic.SMSLogEntry
	// DeliveriesPaged says the deliveries shown are not the latest.
	DeliveriesPaged bool
	Payments        []adminPayment
	Providers       []adminProvider
	// PaymentsPaged says the payments shown are not the latest;
	// PaymentsBefore is this page's place, for a refund to come back to it.
	PaymentsPaged  bool
	PaymentsBefore int64
	Audit          []auditRow
	Filter         app.AuditQuery
	FilterUser     string
	// FilterErrors are the address's refused fields (user_id beside the
	// trail's filter).
	FilterErrors map[string]string
	// Each list's page links.
	RoomsPager, DeliveriesPager, ProvidersPager, PaymentsPager, AuditPager pager
	Notice, Error                                                          string
	// Codes is the ICD-10-CM release the clinic codes with.
	Codes *app.CodeRelease
	// Domain is the clinic's, a new room's unless the form gives another.
	Domain string
}

// adminProvidersPage is how many providers /admin lists at a time, and
// adminRoomChoices how many a room's "Add a provider" offers (a search
// finds the others).
const (
	adminProvidersPage  = 50
	adminRoomsPage      = 50
	adminRoomChoices    = 100
	adminPaymentsPage   = 20
	adminAuditPage      = 50
	adminDeliveriesPage = 20
)

// admin is /admin: rooms, the webhook and its deliveries, the audit trail
// (filtered by the query's action, object_type, object_id, user_id) and
// credential rotation.
func (s *Server) admin(w http.ResponseWriter, r *http.Request) error {
	return s.showAdmin(w, r, http.StatusOK, adminPage{Notice: noticeWords[r.URL.Query().Get("done")]})
}

var noticeWords = map[string]string{
	"room": "The room was saved.", "webhook": "The webhook was saved.", "redeliver": "The delivery is queued to be sent again.",
	"refund":              "The payment was refunded to the patient's card.",
	"refund-kept":         "The payment was refunded to the patient's card. The visit it paid for stays booked.",
	"refund-cancelled":    "The payment was refunded to the patient's card, and the visit it paid for is cancelled: the patient is emailed.",
	"invited":             "The invitation is on its way: the provider sets a password from the link in it, then signs in.",
	"codes":               "The diagnosis codes are loaded: notes and claims use them now.",
	"endpoint":            "The endpoint is added: each event it subscribed to goes to it, signed with its secret.",
	"endpoint-removed":    "The endpoint is removed: it gets nothing more.",
	"app":                 "The app is registered: give its developer the client id (and the secret, if it has one).",
	"app-revoked":         "The app is revoked: its tokens stopped working.",
	"ehr":                 "The EHR is connected: register Teleclinic there with the launch URL and redirect URI shown.",
	"ehr-removed":         "The EHR is disconnected: its launches stop.",
	"ehr-linked":          "The EHR user is linked to the provider.",
	"texts":               "The text-message settings are saved.",
	"interpreter":         "The interpreter is added: providers can bring them into a call.",
	"interpreter-removed": "The interpreter is removed: no longer offered; past visits still name them.",
}

// adminQuery is /admin's address: the page each list shows, and the
// audit trail's filter.
type adminQuery struct {
	RoomsPage int
	// Endpoint, when set, is the webhook endpoint whose deliveries the
	// deliveries list shows (else the clinic's webhook's).
	Endpoint                         int64
	DeliveriesBefore, ProvidersAfter int64
	PaymentsBefore, AuditAfter       int64
	Audit                            app.AuditQuery
	FilterUser                       string
}

// readAdminQuery decodes /admin's address. A malformed place is refused
// and its list starts from the first page; the page says why.
func readAdminQuery(r *http.Request) (adminQuery, *fields) {
	f := queryFields(r)
	q := adminQuery{RoomsPage: f.count("rooms_page", 1, 1), DeliveriesBefore: f.place("deliveries_before"),
		ProvidersAfter: f.place("providers_after"), PaymentsBefore: f.place("payments_before"), AuditAfter: f.place("audit_after"),
		FilterUser: f.str("user_id")}
	if f.str("endpoint") != "" {
		q.Endpoint = f.place("endpoint")
	}
	q.Audit = app.AuditQuery{Action: f.str("action"), ObjectType: f.str("object_type"), ObjectID: f.str("object_id"), After: q.AuditAfter, Limit: adminAuditPage,
		ChangesOnly: f.str("reads") != "1" && f.str("action") == ""} // an action asked for is shown, a read one too
	if q.FilterUser != "" {
		if q.Audit.UserID = f.place("user_id"); q.Audit.UserID == 0 {
			f.refuse("user_id", "The user filter must be a user id (a number).")
		}
	}
	return q, f
}

// showAdmin draws /admin with page's notice or error: each section read
// by its own loader, then the names its rows show, read in one list.
func (s *Server) showAdmin(w http.ResponseWriter, r *http.Request, status int, page adminPage) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	q, f := readAdminQuery(r)
	if err := f.Err(); err != nil && page.Error == "" {
		page.Error = clinic.ErrorMessage(err)
	}
	page.FilterErrors = f.Errors()
	ctx := r.Context()
	for _, load := range []func(context.Context, *clinic.Principal, adminQuery, *adminPage) error{
		s.adminWebhookSection, s.adminRooms, s.adminDeliveries, s.adminProviders, s.adminCodesSection, s.adminSmart, s.adminTexts,
		s.adminInterpreters,
	} {
		if err := load(ctx, p, q, &page); err != nil {
			return err
		}
	}
	invs, err := s.adminPayments(ctx, p, q, &page)
	if err != nil {
		return err
	}
	entries, err := s.adminAudit(ctx, p, q, &page)
	if err != nil {
		return err
	}
	if err := s.adminRows(ctx, p, invs, entries, &page); err != nil {
		return err
	}
	s.render(w, r, status, "admin", page)
	return nil
}

// adminWebhookSection is the clinic's webhook settings.
func (s *Server) adminWebhookSection(ctx context.Context, p *clinic.Principal, _ adminQuery, page *adminPage) error {
	wh, err := s.app.WebhookSettings(ctx, p)
	if err != nil {
		return err
	}
	page.Clinic, page.WebhookURL, page.SecretSet, page.Domain = p.Account.Name, wh.URL, wh.SecretSet, p.Account.Domain
	return nil
}

// adminCodesSection is the ICD-10-CM release in use, and whether this
// admin may load another (a server of one clinic).
func (s *Server) adminCodesSection(ctx context.Context, p *clinic.Principal, _ adminQuery, page *adminPage) error {
	rel, err := s.app.DiagnosisRelease(ctx, p)
	page.Codes = rel
	return err
}

// adminCodes is POST /admin/codes: the admin uploads a year's ICD-10-CM
// release, as `teleclinic codes import` loads it (app.AdminImportDiagnoses);
// a file that is not a whole release is refused on the page, saying why.
func (s *Server) adminCodes(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	file, header, err := r.FormFile("release")
	if err != nil {
		return s.adminRefused(w, r, clinic.Errorf(clinic.EInvalid, "Choose CMS's order file (icd10cm_order_YYYY.txt, gzipped or not) or its zip."))
	}
	defer file.Close()
	if _, err := s.app.AdminImportDiagnoses(r.Context(), p, header.Filename, file); err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin?done=codes#codes", http.StatusSeeOther)
	return nil
}

// adminStanding is POST /admin/providers/{id}/deactivate and /reactivate
// (app.DeactivateUser, app.ReactivateUser): the page says what it did.
func (s *Server) adminStanding(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return clinic.Errorf(clinic.ENotFound, "User not found.")
	}
	var notice string
	switch r.PathValue("change") {
	case "deactivate":
		d, err := s.app.DeactivateUser(r.Context(), p, id)
		if err != nil {
			return s.adminRefused(w, r, err)
		}
		notice = fmt.Sprintf("%s is deactivated: signed out everywhere, unable to sign in, with %d open slots ahead removed.", d.User.FullName(), d.SlotsRemoved)
		if d.OpenVisits > 0 {
			notice += fmt.Sprintf(" %d of their visits are still open: give them to another provider.", d.OpenVisits)
		}
	case "reactivate":
		u, err := s.app.ReactivateUser(r.Context(), p, id)
		if err != nil {
			return s.adminRefused(w, r, err)
		}
		notice = u.FullName() + " can sign in again."
	default:
		return clinic.Errorf(clinic.ENotFound, "There is no such change.")
	}
	return s.showAdmin(w, r, http.StatusOK, adminPage{Notice: notice})
}

// adminRooms is a page of the clinic's rooms by name (a clinic that
// gives each provider a room has hundreds).
func (s *Server) adminRooms(ctx context.Context, p *clinic.Principal, q adminQuery, page *adminPage) error {
	rooms, err := s.app.ListRooms(ctx, p, app.RoomQuery{Page: q.RoomsPage, Limit: adminRoomsPage, SortCol: "name"})
	if err != nil {
		return err
	}
	page.RoomsPage, page.RoomsTotal = q.RoomsPage, rooms.Total
	page.RoomsPager = pager{Label: "Rooms", BackText: "Earlier rooms", NextText: "More rooms"}
	if q.RoomsPage > 1 {
		page.RoomsPrev = q.RoomsPage - 1
		page.RoomsPager.Back = "/admin?rooms_page=" + strconv.Itoa(page.RoomsPrev) + "#rooms"
	}
	if q.RoomsPage*adminRoomsPage < rooms.Total {
		page.RoomsNext = q.RoomsPage + 1
		page.RoomsPager.Next = "/admin?rooms_page=" + strconv.Itoa(page.RoomsNext) + "#rooms"
	}
	for _, rm := range rooms.Rooms {
		page.Rooms = append(page.Rooms, adminRoom{Code: rm.Code, Name: rm.Name, Closed: rm.Settings.Operation.IsClosed || !rm.Active,
			Address: "/c/" + url.PathEscape(p.Account.Code) + "/" + url.PathEscape(rm.Code)})
	}
	return nil
}

// adminDeliveries is a page of the webhook's deliveries, newest first,
// or of one endpoint's (?endpoint=); and the clinic's endpoints.
func (s *Server) adminDeliveries(ctx context.Context, p *clinic.Principal, q adminQuery, page *adminPage) error {
	eps, err := s.app.WebhookEndpoints(ctx, p)
	if err != nil {
		return err
	}
	page.Endpoints, page.Events = eps, app.Events
	var ds clinic.Page[*app.WebhookDelivery]
	var keep url.Values
	if q.Endpoint != 0 {
		ds, err = s.app.EndpointDeliveries(ctx, p, q.Endpoint, q.DeliveriesBefore, adminDeliveriesPage)
		keep = url.Values{"endpoint": {strconv.FormatInt(q.Endpoint, 10)}}
		for _, e := range eps {
			if e.ID == q.Endpoint {
				page.DeliveriesTo = e.URL
			}
		}
	} else {
		ds, err = s.app.WebhookDeliveries(ctx, p, q.DeliveriesBefore, adminDeliveriesPage)
	}
	if err != nil {
		return err
	}
	page.Deliveries, page.DeliveriesPaged = ds.Items, q.DeliveriesBefore > 0
	page.DeliveriesPager = pager{Label: "Deliveries", BackText: "Latest deliveries", NextText: "Older deliveries"}.
		on("/admin", "deliveries", "deliveries_before", page.DeliveriesPaged, ds.Next, keep)
	return nil
}

// adminEndpoint is POST /admin/endpoints: an endpoint for the event types
// ticked (app.CreateWebhookEndpoint); its secret is shown once.
func (s *Server) adminEndpoint(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return clinic.Errorf(clinic.EInvalid, "The form could not be read.")
	}
	e, err := s.app.CreateWebhookEndpoint(r.Context(), p, app.EndpointInput{URL: r.PostForm.Get("url"), Events: r.PostForm["events"]})
	if err != nil {
		return s.adminRefused(w, r, err)
	}
	return s.showAdmin(w, r, http.StatusOK, adminPage{Notice: noticeWords["endpoint"], Shown: e.Secret, ShownWhat: "signing secret of the endpoint " + e.URL})
}

// adminEndpointDelete is POST /admin/endpoints/{id}/delete.
func (s *Server) adminEndpointDelete(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Webhook endpoint not found.")
	}
	if err := s.app.DeleteWebhookEndpoint(r.Context(), p, id); err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin?done=endpoint-removed#endpoints", http.StatusSeeOther)
	return nil
}

// adminProviders is a page of the clinic's providers by name (keyset: a
// page costs the same in a clinic of 5 or 5,000). A provider gone since
// the link was made starts the list again.
func (s *Server) adminProviders(ctx context.Context, p *clinic.Principal, q adminQuery, page *adminPage) error {
	in := app.UserListQuery{Types: []string{strconv.Itoa(clinic.UserProvider)}, Sort: "full_name", After: q.ProvidersAfter, Limit: adminProvidersPage}
	provs, _, err := s.app.ListUsers(ctx, p, in)
	if clinic.ErrorCode(err) == clinic.EInvalid && in.After > 0 {
		in.After = 0
		provs, _, err = s.app.ListUsers(ctx, p, in)
	}
	if err != nil {
		return err
	}
	for _, u := range provs.Items {
		page.Providers = append(page.Providers, adminProvider{ID: u.ID, Name: u.FullName(), Email: u.Email,
			Invited: u.Status == clinic.StatusPending && u.Active, Deactivated: u.Status == clinic.StatusDisabled || !u.Active})
	}
	page.ProvidersPager = pager{Label: "Providers", BackText: "First providers", NextText: "More providers"}.
		on("/admin", "providers", "providers_after", in.After > 0, provs.Next, nil)
	return nil
}

// adminPayments is a page of the clinic's payments, newest first; their
// rows are drawn with the names (adminRows).
func (s *Server) adminPayments(ctx context.Context, p *clinic.Principal, q adminQuery, page *adminPage) ([]*clinic.Invoice, error) {
	invs, err := s.billing.Invoices(ctx, p, billing.InvoiceQuery{Before: q.PaymentsBefore, Limit: adminPaymentsPage})
	if err != nil {
		return nil, err
	}
	page.PaymentsPaged, page.PaymentsBefore = q.PaymentsBefore > 0, q.PaymentsBefore
	page.PaymentsPager = pager{Label: "Payments", BackText: "Latest payments", NextText: "Older payments"}.
		on("/admin", "payments", "payments_before", page.PaymentsPaged, invs.Next, nil)
	return invs.Items, nil
}

// adminAudit is a page of the audit trail under the query's filter,
// newest first; an entry that is not the trail's starts it again.
func (s *Server) adminAudit(ctx context.Context, p *clinic.Principal, q adminQuery, page *adminPage) ([]clinic.AuditEntry, error) {
	page.Filter, page.FilterUser = q.Audit, q.FilterUser
	trail, _, err := s.app.ListAudit(ctx, p, page.Filter)
	if clinic.ErrorCode(err) == clinic.EInvalid && page.Filter.After != 0 {
		page.Filter.After = 0
		trail, _, err = s.app.ListAudit(ctx, p, page.Filter)
	}
	if err != nil {
		return nil, err
	}
	keep := url.Values{}
	for k, val := range map[string]string{"action": page.Filter.Action, "object_type": page.Filter.ObjectType, "object_id": page.Filter.ObjectID, "user_id": page.FilterUser} {
		if val != "" {
			keep.Set(k, val)
		}
	}
	if !page.Filter.ChangesOnly && page.Filter.Action == "" {
		keep.Set("reads", "1")
	}
	page.AuditPager = pager{Label: "Audit trail", BackText: "Latest entries", NextText: "Older entries"}.
		on("/admin", "audit", "audit_after", page.Filter.After != 0, trail.Next, keep)
	return trail.Items, nil
}

// adminRows draws the payments' and the entries' rows, with the names of
// the patients paying and the users acting, read in one list.
func (s *Server) adminRows(ctx context.Context, p *clinic.Principal, invs []*clinic.Invoice, entries []clinic.AuditEntry, page *adminPage) error {
	var ids []int64
	for _, inv := range invs {
		ids = append(ids, inv.MemberID)
	}
	for _, e := range entries {
		if e.ActorUserID != 0 {
			ids = append(ids, e.ActorUserID)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	names := map[int64]string{}
	if len(ids) > 0 {
		us, _, err := s.app.ListUsers(ctx, p, app.UserListQuery{IDs: ids, Limit: len(ids)})
		if err != nil {
			return err
		}
		for _, u := range us.Items {
			names[u.ID] = u.FullName()
		}
	}
	for _, inv := range invs {
		pay := adminPayment{ID: inv.ID, Created: inv.Created, Status: inv.Status, Amount: money(inv.AmountDue, inv.Currency),
			Refundable: inv.Status == billing.InvoicePaid && inv.ChargeRef != "", Patient: names[inv.MemberID], Currency: inv.Currency,
			Major: strconv.FormatFloat(payments.ToMajor(inv.AmountDue, inv.Currency), 'f', payments.Exponent(inv.Currency), 64)}
		if pay.Patient == "" {
			pay.Patient = "patient " + strconv.FormatInt(inv.MemberID, 10)
		}
		if inv.Refunded > 0 {
			pay.Refunded = money(inv.Refunded, inv.Currency)
		}
		page.Payments = append(page.Payments, pay)
	}
	for _, e := range entries {
		row := auditRow{AuditEntry: e, Who: actorWords[e.ActorKind]}
		if row.Who == "" {
			row.Who = e.ActorKind
		}
		if n := names[e.ActorUserID]; n != "" {
			row.Who = n
		} else if e.ActorUserID != 0 {
			row.Who += " (user " + strconv.FormatInt(e.ActorUserID, 10) + ")"
		}
		page.Audit = append(page.Audit, row)
	}
	return nil
}

// adminRefused shows the admin page again with what went wrong, for the
// refusals a form can cause (400, 409).
func (s *Server) adminRefused(w http.ResponseWriter, r *http.Request, err error) error {
	if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.EConflict, clinic.ENotFound); ok {
		return s.showAdmin(w, r, status, adminPage{Error: msg})
	}
	return err
}

func (s *Server) adminCreateRoom(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	// The form's domain is the clinic's unless the admin gives another.
	domain := strings.TrimSpace(r.PostFormValue("domain"))
	if domain == "" {
		domain = p.Account.Domain
	}
	rm, err := s.app.CreateRoom(r.Context(), p, app.NewRoom{Name: r.PostFormValue("name"), Code: strings.TrimSpace(r.PostFormValue("code")), Domain: domain})
	if err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin/rooms/"+url.PathEscape(rm.Code), http.StatusSeeOther)
	return nil
}

type adminRoomPage struct {
	Code, Address string
	// The room's settings, as stored or as just sent and refused.
	RoomForm
	Linked, Others []*clinic.User
	// LinkedPager links the room's providers' first and next pages.
	LinkedPager pager
	// Find is the search the others answer; MoreOthers says it (or the
	// clinic) has more providers than the list offers.
	Find          string
	FindNote      string // why Find was not searched
	MoreOthers    bool
	Notice, Error string
}

// FindMin is the search's shortest text, for the form to ask for.
func (adminRoomPage) FindMin() int { return app.MinSearchLen }

// adminRoom is /admin/rooms/{code}: the room's settings and its providers.
func (s *Server) adminRoom(w http.ResponseWriter, r *http.Request) error {
	return s.showAdminRoom(w, r, http.StatusOK, noticeWords[r.URL.Query().Get("done")], "", nil)
}

// showAdminRoom draws the room's page with its notice or error, and the
// room's form as sent when it was refused (form; nil: as stored).
func (s *Server) showAdminRoom(w http.ResponseWriter, r *http.Request, status int, notice, msg string, form *RoomForm) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	d, err := s.app.GetRoom(ctx, p, r.PathValue("code"))
	if err != nil {
		return err
	}
	// The room's providers, and for "Add a provider" the first others by
	// name, or those a search finds: not every provider of the clinic.
	// The room's own are shown by name a page at a time, as /admin shows
	// the clinic's.
	var linked clinic.Page[*clinic.User]
	qf := queryFields(r)
	linkedAfter := qf.place("linked_after")
	if err := qf.Err(); err != nil {
		return err
	}
	if len(d.ProviderIDs) > 0 {
		in := app.UserListQuery{IDs: d.ProviderIDs, Sort: "full_name", After: linkedAfter, Limit: adminProvidersPage}
		linked, _, err = s.app.ListUsers(ctx, p, in)
		if clinic.ErrorCode(err) == clinic.EInvalid && in.After > 0 { // a provider gone since: from the start
			linkedAfter, in.After = 0, 0
			linked, _, err = s.app.ListUsers(ctx, p, in)
		}
		if err != nil {
			return err
		}
	}
	find := strings.TrimSpace(r.URL.Query().Get("find"))
	q, findNote := find, ""
	if app.SearchTooShort(find) {
		// Too short to search (the form asks for more; a typed address
		// may not): say so beside the first providers, not an error page.
		q, findNote = "", fmt.Sprintf("Type at least %d letters of a name or email to search.", app.MinSearchLen)
	}
	others, total, err := s.app.ListUsers(ctx, p, app.UserListQuery{Types: []string{strconv.Itoa(clinic.UserProvider)}, Q: q, Sort: "full_name", Limit: adminRoomChoices})
	if err != nil {
		return err
	}
	rm := d.Room
	page := adminRoomPage{Code: rm.Code, Address: "/c/" + url.PathEscape(p.Account.Code) + "/" + url.PathEscape(rm.Code),
		Notice: notice, Error: msg}
	if form != nil {
		page.RoomForm = form.withBlankQuestions()
	} else {
		page.RoomForm = roomFormOf(rm, s.otherLanguages())
	}
	page.Linked, page.Find, page.FindNote, page.MoreOthers = linked.Items, find, findNote, total > len(others.Items)
	page.LinkedPager = pager{Label: "The room's providers", BackText: "First providers", NextText: "More of the room's providers"}.
		on("/admin/rooms/"+url.PathEscape(rm.Code), "providers", "linked_after", linkedAfter > 0, linked.Next, nil)
	for _, u := range others.Items {
		if !slices.Contains(d.ProviderIDs, u.ID) {
			page.Others = append(page.Others, u)
		}
	}
	s.render(w, r, status, "adminroom", page)
	return nil
}

func (s *Server) adminUpdateRoom(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	code := r.PathValue("code")
	d, err := s.app.GetRoom(r.Context(), p, code)
	if err != nil {
		return err
	}
	form := readRoomForm(r, s.otherLanguages())
	in, ok := form.update(d.Room.Settings)
	if !ok {
		return s.showAdminRoom(w, r, http.StatusBadRequest, "", "The room was not saved: see the fields marked below.", &form)
	}
	if _, err := s.app.UpdateRoom(r.Context(), p, code, in); err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.EConflict); ok {
			return s.showAdminRoom(w, r, status, "", msg, &form)
		}
		return err
	}
	http.Redirect(w, r, "/admin/rooms/"+url.PathEscape(code)+"?done=room", http.StatusSeeOther)
	return nil
}

// adminLinkProvider links (or, with unlink=1, unlinks) a provider and the
// room, as POST /users/{id}/rooms and DELETE /users/{id}/rooms/{code} do.
func (s *Server) adminLinkProvider(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	code := r.PathValue("code")
	uid, err := strconv.ParseInt(r.PostFormValue("user_id"), 10, 64)
	if err != nil || uid <= 0 {
		return s.showAdminRoom(w, r, http.StatusBadRequest, "", "Choose a provider from the list.", nil)
	}
	if r.PostFormValue("unlink") == "1" {
		err = s.app.UnlinkRoom(r.Context(), p, uid, code)
	} else {
		_, err = s.app.LinkRoom(r.Context(), p, uid, code, false)
	}
	if err != nil {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.ENotFound); ok {
			return s.showAdminRoom(w, r, status, "", msg, nil)
		}
		return err
	}
	http.Redirect(w, r, "/admin/rooms/"+url.PathEscape(code)+"?done=room", http.StatusSeeOther)
	return nil
}

// adminWebhook saves the webhook's address and, when asked, makes a new
// signing secret, shown on the page this once.
func (s *Server) adminWebhook(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	u := strings.TrimSpace(r.PostFormValue("url"))
	wh, err := s.app.SetWebhookSettings(r.Context(), p, app.WebhookSettingsInput{URL: &u, GenerateSecret: r.PostFormValue("generate_secret") == "1"})
	if err != nil {
		return s.adminRefused(w, r, err)
	}
	if wh.Secret != "" {
		return s.showAdmin(w, r, http.StatusOK, adminPage{Notice: noticeWords["webhook"], Shown: wh.Secret, ShownWhat: "webhook signing secret"})
	}
	http.Redirect(w, r, "/admin?done=webhook#webhook", http.StatusSeeOther)
	return nil
}

func (s *Server) adminRedeliver(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Delivery not found.")
	}
	if _, err := s.app.Redeliver(r.Context(), p, id); err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin?done=redeliver#deliveries", http.StatusSeeOther)
	return nil
}

// adminRotate replaces the admin token or the API secret and shows the
// new value once. A new admin token ends the admin's portal sessions, so
// the page that shows it is the session's last.
func (s *Server) adminRotate(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	what := r.PostFormValue("what")
	creds, err := s.app.RotateCredential(r.Context(), p, what)
	if err != nil {
		return s.adminRefused(w, r, err)
	}
	if what == app.RotateAdminToken {
		s.setCookie(w, s.sessionCookie(), "", 0)
		s.render(w, r, http.StatusOK, "rotated", rotatedPage{Clinic: p.Account.Code, Token: creds.AdminToken})
		return nil
	}
	return s.showAdmin(w, r, http.StatusOK, adminPage{Shown: creds.APISecret, ShownWhat: "API secret"})
}

type rotatedPage struct{ Clinic, Token string }

// adminRefund is POST /admin/payments/{id}/refund: the payment, or the
// amount of it asked, back to the patient's card (POST
// /billing/invoices/{id}/refund), and the visit it paid for kept or
// cancelled as the admin chose (billing.RefundAndDecide); the notice says
// which.
func (s *Server) adminRefund(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return clinic.Errorf(clinic.ENotFound, "Payment not found.")
	}
	out, err := s.billing.RefundAndDecide(r.Context(), p, id, r.PostFormValue("amount"), r.PostFormValue("visit") == "cancel")
	if out == nil {
		if status, msg, ok := s.refused(r, err, clinic.EInvalid, clinic.EConflict, clinic.ENotFound, clinic.EPayment, clinic.EUnavailable); ok {
			return s.showAdmin(w, r, status, adminPage{Error: msg})
		}
		return err
	}
	if err != nil { // refunded; the visit's cancellation failed
		return s.showAdmin(w, r, http.StatusConflict, adminPage{Error: "The payment was refunded, but its visit could not be cancelled: " + clinic.ErrorMessage(err)})
	}
	// Back to the page of payments the refund was made from, saying what
	// became of the booking.
	done := "refund"
	switch {
	case out.Cancelled:
		done = "refund-cancelled"
	case out.Visit != nil && !app.VisitOver(out.Visit):
		done = "refund-kept"
	}
	back := url.Values{"done": {done}}
	if before, err := strconv.ParseInt(r.PostFormValue("payments_before"), 10, 64); err == nil && before > 0 {
		back.Set("payments_before", strconv.FormatInt(before, 10))
	}
	http.Redirect(w, r, "/admin?"+back.Encode()+"#payment-"+strconv.FormatInt(id, 10), http.StatusSeeOther)
	return nil
}

// adminInvite is POST /admin/providers: a provider invited by email into
// the rooms ticked (POST /users/invite).
func (s *Server) adminInvite(w http.ResponseWriter, r *http.Request) error {
	p, err := s.principal(r)
	if err != nil {
		return err
	}
	if err := r.ParseForm(); err != nil {
		return clinic.Errorf(clinic.EInvalid, "The form could not be read.")
	}
	f := r.PostForm
	in := app.InviteInput{FirstName: f.Get("first_name"), LastName: f.Get("last_name"), Email: f.Get("email"), Title: f.Get("title"), Rooms: f["rooms"]}
	if _, err := s.app.InviteProvider(r.Context(), p, in); err != nil {
		return s.adminRefused(w, r, err)
	}
	http.Redirect(w, r, "/admin?done=invited#providers", http.StatusSeeOther)
	return nil
}
