package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/app"
	"teleclinic/internal/app/billing"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/live"
	"teleclinic/internal/store"
	"teleclinic/internal/testenv"
)

// role is who calls an operation in the permission matrix.
type role int

const (
	// asPatient is another patient of the clinic: not the patient whose
	// visit, records and files the calls name.
	asPatient role = iota
	// asGuest is a guest of the clinic, signed in through SSO.
	asGuest
	// asOtherAdmin is the admin of another clinic on the same server.
	asOtherAdmin
	nRoles
)

func (r role) String() string { return [...]string{"patient", "guest", "other clinic's admin"}[r] }

// allowed names the roles the API lets through an operation, acting on
// their own data or their own clinic's; every other role must be refused.
type allowed []role

var (
	nobody     = allowed{}
	everyone   = allowed{asPatient, asGuest, asOtherAdmin}
	users      = allowed{asPatient, asGuest}               // the clinic's users, on themselves or public rooms
	otherAdmin = allowed{asOtherAdmin}                     // an admin's operation, on its own clinic
	selfOnly   = allowed{asPatient, asGuest, asOtherAdmin} // only the caller's own data
)

// permFixture is a clinic with a patient who has a visit, an intake, a
// message, a file, records, an endpoint and a notification, and the
// principals that try to reach them.
type permFixture struct {
	env                 *testenv.Env
	admin, p1, provider *clinic.Principal
	callers             [nRoles]*clinic.Principal
	p1Token             string
	p1Code              string
	visitID, intakeID   int64
	fileID, endpointID  int64
	slotID              int64  // a published slot, weeks ahead of the bookings the rows try
	oauthClient         string // a SMART app of the first clinic
	exportID            string // a bulk export of the first clinic
	ehrID               int64  // an EHR the first clinic connected
	interpreterID       int64  // an interpreter of the first clinic
	notificationID      int64
	intake              *clinic.Intake
	markers             []string // text only the patient's data holds
	clinicMarkers       []string // text only the first clinic's data holds
}

// oauthRequest starts a sign-in request of the first clinic's app.
func (f *permFixture) oauthRequest() string {
	r := &clinic.OAuthRequest{ClientID: f.oauthClient, Params: []byte(`{"scopes": ["openid", "patient/*.rs"], "redirect_uri": "https://diary.example.com/app"}`)}
	if err := f.env.App.StartOAuthRequest(context.Background(), r); err != nil {
		f.env.T.Fatal(err)
	}
	return r.ID
}

// TestPermissions_EveryOperation calls every exported App operation that
// takes a Principal as another patient, a guest and another clinic's admin,
// against the first clinic's patient's data, as the portal will call them:
// without the route table's gate in front. Each must refuse (forbidden,
// not found or unauthenticated) where the API would; where the API lets
// the role through, the answer must hold nothing of the patient's (nor,
// for the other clinic, of the first clinic's). A new operation fails the
// test until it has a row.
func TestPermissions_EveryOperation(t *testing.T) {
	f := newPermFixture(t)
	ctx := context.Background()
	rows := permRows(f)

	// Every operation has a row, and every row an operation: the app's and
	// those of the families built on it (app/billing, app/calls).
	types := []reflect.Type{reflect.TypeFor[*app.App](), reflect.TypeFor[*billing.Service](), reflect.TypeFor[*calls.Service]()}
	principal := reflect.TypeFor[*clinic.Principal]()
	for _, typ := range types {
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			takesPrincipal := false
			for j := 1; j < m.Type.NumIn(); j++ {
				takesPrincipal = takesPrincipal || m.Type.In(j) == principal
			}
			_, hasRow := rows[m.Name]
			_, exempt := noPrincipal[m.Name]
			switch {
			case takesPrincipal && !hasRow && !exempt:
				t.Errorf("%s.%s takes a Principal but has no row in the permission matrix", typ.Elem().Name(), m.Name)
			case !takesPrincipal && !exempt:
				t.Errorf("%s.%s takes no Principal: add it to noPrincipal with the reason it needs none", typ.Elem().Name(), m.Name)
			}
		}
	}
	for name := range rows {
		if !slices.ContainsFunc(types, func(typ reflect.Type) bool { _, ok := typ.MethodByName(name); return ok }) {
			t.Errorf("row %s names no operation", name)
		}
	}

	for name, row := range rows {
		for r := range nRoles {
			t.Run(name+"/"+r.String(), func(t *testing.T) {
				out, err := row.call(ctx, f.callers[r])
				var code string
				if err != nil {
					code = clinic.ErrorCode(err)
				}
				if !slices.Contains(row.allow, r) {
					switch {
					case code == clinic.EForbidden, code == clinic.ENotFound, code == clinic.EUnauthenticated:
					case code != "" && code == refusedAs[name]:
					default:
						t.Fatalf("want forbidden, not found or unauthenticated; got %v (%q)", err, code)
					}
					return
				}
				switch code {
				case "", clinic.EInvalid, clinic.EConflict:
				default:
					t.Fatalf("the API lets %s through; got %v (%s)", r, err, code)
				}
				leaks := f.markers
				if r == asOtherAdmin {
					leaks = append(slices.Clone(leaks), f.clinicMarkers...)
				}
				b, jerr := json.Marshal(out)
				if jerr != nil {
					t.Fatalf("answer not inspectable: %v", jerr)
				}
				for _, m := range leaks {
					if bytes.Contains(b, []byte(m)) {
						t.Fatalf("the answer holds %q, which is not the caller's: %s", m, b)
					}
				}
			})
		}
	}

	// Nothing the refused calls tried took effect.
	if _, err := f.env.App.Authenticate(ctx, app.Credentials{AccountCode: "acme", APIToken: f.p1Token}, app.NeedUser); err != nil {
		t.Errorf("the patient's token no longer works: %v", err)
	}
	v, err := f.env.App.GetVisit(ctx, f.p1, f.visitID, false)
	if err != nil || v.Visit.Status != clinic.VisitPending {
		t.Errorf("the patient's visit changed: %+v, %v", v, err)
	}
	if _, err := f.env.App.GetFile(ctx, f.p1, f.fileID); err != nil {
		t.Errorf("the patient's file: %v", err)
	}
	if _, err := f.env.App.GetRoom(ctx, f.admin, "main"); err != nil {
		t.Errorf("the clinic's room: %v", err)
	}
	if ms, _, err := f.env.App.ListMessages(ctx, f.p1, f.visitID, app.MessageQuery{}); err != nil || len(ms) != 2 {
		t.Errorf("the visit's thread: %d messages, %v", len(ms), err)
	}
}

// noPrincipal are the operations that take no Principal, or take one
// only to record it, and why.
var noPrincipal = map[string]string{
	// The SMART authorization server's protocol steps (package smart): the
	// protocol authenticates the app (client id, secret, code and PKCE, a
	// refresh token, a signed assertion) before it calls them; a person
	// only ever acts through ApproveOAuthRequest, which has a row.
	"OAuthIssuer":           "the authorization server's address, public",
	"OAuthCryptoSeed":       "a key the authorization server derives from the server key, for itself",
	"OAuthClient":           "a protocol step: the app named by a client id",
	"CheckOAuthSecret":      "a protocol step: checks an app's secret",
	"StartOAuthRequest":     "a protocol step: keeps an authorize request the protocol checked",
	"OAuthRequest":          "a protocol step: a request in flight, by its unguessable id",
	"OAuthRequestClinic":    "which clinic's sign-in a request needs, before anyone is signed in: its code only",
	"OAuthRequestByCode":    "a protocol step: the request a code (a secret) was issued for",
	"SaveOAuthCode":         "a protocol step: ties a code to an approved request",
	"EndOAuthRequest":       "a protocol step: forgets a request whose code was used",
	"IssueOAuthToken":       "a protocol step: the token of an approved request or a verified refresh or assertion",
	"OAuthTokenByRefresh":   "a protocol step: the token a refresh token (a secret) renews",
	"OAuthToken":            "a protocol step: a token by its id, for a token the server signed",
	"RevokeOAuthToken":      "RFC 7009: whoever holds a token may revoke it",
	"OAuthUser":             "a protocol step: the person a token is for, for its ID token",
	"OAuthSigningKey":       "the server's token signing key, for the protocol",
	"VerifyClientAssertion": "a protocol step: authenticates a backend service by its signed assertion",
	"SetRecordExporter":     "wiring: the FHIR door gives the app its mapping before the server serves",
	"EHRLaunchURL":          "the address an EHR opens Teleclinic at, public",
	"StartEHRLaunch":        "an EHR launch's start: nobody is signed in yet; the EHR named by iss must be a clinic's",
	"FinishEHRLaunch":       "an EHR launch's end: the EHR vouches for the person (code, PKCE, a verified ID token)",
	"DeliverExports":        "the worker: runs the jobs the kick-off (StartExport, checked) wrote",
	"DeliverTexts":          "the worker: sends the texts the operations (checked) wrote, to the people who said yes",
	"NoShowSweep":           "the worker: moves booked visits past their room's no-show wait, as the clinic, by the room's own policy",
	"ChargeFees":            "the worker: charges the fees the moves (checked) wrote to the outbox, on the patient's card as the policy set",
	"LateCancelFee":         "a price lookup on a visit and room the caller already read (checked); it reveals nothing else",
	"SMSInbound":            "Twilio's webhook: its signature, keyed by the clinic's auth token, is the credential",
	"SMSStatus":             "Twilio's webhook: its signature, keyed by the clinic's auth token, is the credential",
	"SendsTexts":            "whether a clinic texts: public (its forms show it)",
	// The core the families built on the app (app/billing, app/calls) use.
	"Audit":                    "the core: records the caller's audit entry, the operation's own check came first",
	"AuditIn":                  "the core: records the caller's audit entry, the operation's own check came first",
	"AuditOutcome":             "the core: records the caller's audit entry, the operation's own check came first",
	"Core":                     "the core itself (app.Core), given to the families built on the app; each of its lookups is an App operation checked here",
	"Config":                   "the core: the app's settings",
	"Log":                      "the core: the app's logger",
	"Seal":                     "the core: encrypts a secret under the server key",
	"Unseal":                   "the core: decrypts what Seal sealed",
	"Unix":                     "the core: the app's clock",
	"CreateAccount":            "the operator's command line (teleclinic account create)",
	"AccountByCode":            "the operator's command line",
	"SetSSO":                   "the operator's command line",
	"SetFeature":               "the operator's command line",
	"Rotate":                   "the operator's command line",
	"SetWebhookURL":            "the operator's command line",
	"SeedDemo":                 "the operator's command line (serve --demo)",
	"Authenticate":             "it makes the Principal from the request's credentials",
	"AuthRedirect":             "the one-time SSO token in the link is the credential",
	"ViewFile":                 "the signed, expiring link is the credential",
	"OpenRecording":            "the signed, expiring link is the credential",
	"LiveKitWebhook":           "the LiveKit server's signature over the body is the credential",
	"Run":                      "the server's delivery loops",
	"DeliverEligibility":       "the server's delivery loops",
	"DeliverReminders":         "the server's delivery loops",
	"PortalURL":                "the portal's address, for links",
	"Locales":                  "the languages the clinic writes in, a setting",
	"LanguageTags":             "the tags of the languages the clinic writes in, a setting",
	"Emit":                     "the core: writes an event in the transaction of a change whose operation checked its caller",
	"VisitLink":                "the mailed link is the credential (it shows its visit's time, nothing of its record)",
	"OpenVisitLink":            "the mailed link is the credential, good once",
	"ResendVisitLink":          "the mailed link is the credential; the new one goes to the address on file",
	"GuestUploadBytes":         "a setting, for the room page's file field",
	"STUNServers":              "public STUN addresses, no credential",
	"DeliverMail":              "the server's delivery loops",
	"DeliverPush":              "the server's delivery loops",
	"DeliverWebhooks":          "the server's delivery loops",
	"WriteMetrics":             "the metrics endpoint, which has its own token",
	"Ping":                     "the health check; it reads nothing",
	"Store":                    "wiring",
	"Now":                      "the app's clock",
	"BaseURL":                  "the server's public address",
	"ChainAudits":              "the background worker's pass over every clinic",
	"CredentialEpoch":          "a counter of credential events, no clinic's data",
	"CheckpointAudits":         "the background worker's anchoring of every clinic's chain",
	"AuditCheckpointPublicKey": "the server's public key, no clinic's data",
	"SignInLinkUser":           "the sign-in link's token is the credential, as PortalSession's",
	"SweepCallSignals":         "the background worker's upkeep of every clinic's calls",
	"ReferenceLists":           "public code lists",
	"ImportDiagnoses":          "the operator's command line (teleclinic codes import)",
	"RefreshDiagnoses":         "the background worker's look for a new code release, the server's",
	"LiveKitRoom":              "names a room; Join checks who joins it",
	"LiveKitURL":               "the deployment's media server, for the page's policy",
	"FileViewURL":              "builds a link; the file's checks are on its read",
	"PortalSession":            "the access token in the portal's sign-in link is the credential",
	"AdminSignIn":              "the admin token it is given is the credential",
	"FinishIdempotent":         "it takes the claim BeginIdempotent gave the caller",
}

type permRow struct {
	allow allowed
	call  func(ctx context.Context, p *clinic.Principal) (any, error)
}

// refusedAs are the operations the API refuses with another code: a link
// that is not valid is invalid input (400), as a form naming another
// clinic's provider is.
var refusedAs = map[string]string{"CreateSlots": clinic.EInvalid, "Activate": clinic.EInvalid, "ResetPassword": clinic.EInvalid, "ProviderByID": clinic.EInvalid}

func one[T any](v T, err error) (any, error) { return v, err }

// invite stores a new invitation into the fixture visit's call, as its
// provider would make one, and returns its token.
func (f *permFixture) invite() string {
	tok := "invite-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	now := f.env.Clock.Now().Unix()
	if err := f.env.Store.Write().AddCallInvite(context.Background(), store.CallInvite{AccountID: f.p1.Account.ID, VisitID: f.visitID,
		InvitedBy: f.p1.User.ID, TokenHash: app.HashSecret(tok), Created: now, Expires: now + 3600}); err != nil {
		panic(err)
	}
	return tok
}

func two[T, U any](v T, u U, err error) (any, error) { return []any{v, u}, err }

func none(err error) (any, error) { return nil, err }

// permRows is the matrix: for each operation, the call against the
// patient's data and the roles the API lets through.
func permRows(f *permFixture) map[string]permRow {
	a := f.env.App
	b := billing.New(a.Core())
	c := calls.New(a.Core())
	str := func(s string) *string { return &s }
	pt := f.p1.User.ID
	return map[string]permRow{
		// Clinic accounts.
		"Settings": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Settings(ctx, p)) }},
		// A user's standing: the clinic's admin only, on its own clinic's
		// users (the other clinic's admin finds no such user).
		"DeactivateUser": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.DeactivateUser(ctx, p, f.provider.User.ID))
		}},
		"ReactivateUser": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ReactivateUser(ctx, p, f.provider.User.ID))
		}},
		// The server's code release: anyone signed in reads which it is; on
		// a server of several clinics no clinic's admin replaces it.
		"DiagnosisRelease": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.DiagnosisRelease(ctx, p)) }},
		"AdminImportDiagnoses": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AdminImportDiagnoses(ctx, p, "icd10cm_order_2026.txt", strings.NewReader("not a release")))
		}},
		"Accounts": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Accounts(ctx, p)) }},
		// Each caller's keys are their own: anyone signed in may claim one.
		"BeginIdempotent": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) {
			c, _, err := a.BeginIdempotent(ctx, p, "perm-key-"+p.Account.Code+"-"+strconv.FormatInt(p.UserID(), 10), "fp")
			return c, err
		}},
		"Account":     {users, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Account(ctx, p, "acme")) }},
		"VerifyAudit": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.VerifyAudit(ctx, p)) }},
		// The patient's own accounting of disclosures: p1's is p1's and the
		// admin's only.
		"AccessLog": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return two(a.AccessLog(ctx, p, pt, app.AccessLogQuery{}))
		}},
		"ListAudit": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return two(a.ListAudit(ctx, p, app.AuditQuery{UserID: pt}))
		}},

		// Payments.
		"BillingSettings": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(b.BillingSettings(ctx, p)) }},
		"SetProcessor": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.SetProcessor(ctx, p, billing.ProcessorInput{Processor: "sandbox"}))
		}},
		"Sources": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.Sources(ctx, p, billing.SourceInput{RoomCode: "main"}, ""))
		}},
		"AddSource": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.AddSource(ctx, p, billing.SourceInput{RoomCode: "main"}, "card", "tok_visa"))
		}},
		"Source": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.Source(ctx, p, f.sourceID(), billing.SourceInput{RoomCode: "main"}))
		}},
		"UpdateSource": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			yes := true
			return one(b.UpdateSource(ctx, p, f.sourceID(), billing.SourceInput{RoomCode: "main"}, &yes))
		}},
		"DeleteSource": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(b.DeleteSource(ctx, p, f.sourceID()))
		}},
		"CreateCoupon": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.CreateCoupon(ctx, p, billing.CouponInput{Code: "OWN10", PercentOff: "10"}))
		}},
		"Coupons": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(b.Coupons(ctx, p)) }},
		"DeactivateCoupon": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.DeactivateCoupon(ctx, p, "ACMEONLY"))
		}},
		"ProcessInvoice": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.ProcessInvoice(ctx, p, billing.InvoiceInput{IntakeID: f.intakeID}))
		}},
		"Due": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return b.Due(ctx, p, f.intakeID)
		}},
		"Invoices": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.Invoices(ctx, p, billing.InvoiceQuery{MemberID: pt}))
		}},
		"RefundInvoice": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.RefundInvoice(ctx, p, 1, ""))
		}},
		"RefundAndDecide": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.RefundAndDecide(ctx, p, 1, "", true))
		}},

		// Scheduling.
		"Availability": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			now := f.env.Clock.Now().Unix()
			return one(a.Availability(ctx, p, app.AvailabilityQuery{RoomCode: "main", IntakeID: f.intakeID, Start: now, End: now + 7*86400}))
		}},
		"Book": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			start := f.env.Clock.Now().Add(48 * 3600e9).Unix()
			return one(a.Book(ctx, p, app.BookInput{SlotStart: start, SlotEnd: start + 900, RoomCode: "main", Type: "2", IntakeID: f.intakeID}))
		}},
		"CreateSlots": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return two(a.CreateSlots(ctx, p, app.SlotGroupInput{ProviderID: f.provider.User.ID, RoomCode: "main",
				DateStart: "2026-03-10", DateEnd: "2026-03-10", TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 15}))
		}},
		"ListSlots": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			now := f.env.Clock.Now().Unix()
			return one(a.ListSlots(ctx, p, app.SlotQuery{RoomCode: "main", Start: now, End: now + 7*86400}))
		}},
		"AvailableSlots": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AvailableSlots(ctx, p, 0, 0))
		}},
		"DeleteSlot": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return slotsDeleted(a.DeleteSlot(ctx, p, 1))
		}},
		"DeleteSlotGroup": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return slotsDeleted(a.DeleteSlotGroup(ctx, p, 1))
		}},

		// The core's lookups check the caller as the operations that use them.
		"VisitFor":   {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.VisitFor(ctx, p, f.visitID)) }},
		"RoomByCode": {users, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.RoomByCode(ctx, p, "main")) }},
		"ProviderByID": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ProviderByID(ctx, p, f.provider.User.ID))
		}},

		// Claims.
		"SetClaimCodes": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.SetClaimCodes(ctx, p, f.visitID, billing.ClaimCodes{Diagnoses: []string{"J06.9"}}))
		}},
		"ClinicNumbers": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ClinicNumbers(ctx, p, app.NumbersQuery{FromDate: "2026-03-02", ToDate: "2026-03-02"}))
		}},
		"CheckIn": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.CheckIn(ctx, p, f.visitID, app.CheckInInput{State: "NY", AtHome: new(true)}))
		}},
		"VisitFacts": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			f, _, err := a.VisitFacts(ctx, p, f.visitID)
			return f, err
		}},
		"ClaimCodesOf": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.ClaimCodesOf(ctx, p, f.visitID))
		}},
		"Superbill": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.Superbill(ctx, p, f.visitID))
		}},
		"ClaimsReport": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.ClaimsReport(ctx, p, billing.ClaimsQuery{}))
		}},

		// Medical records, prescriptions and pharmacies.
		"GetEMR":   {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.GetEMR(ctx, p, pt)) }},
		"Consents": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Consents(ctx, p, pt)) }},
		"PutEMR": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			no := false
			return one(a.PutEMR(ctx, p, pt, "allergies", []any{}, true, &no))
		}},
		"Pharmacies": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Pharmacies(ctx, p, pt)) }},
		"SavePharmacy": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.SavePharmacy(ctx, p, pt, app.PharmacyInput{Fields: map[string]any{"code": "PH1", "name": "Corner"}}))
		}},
		"DeletePharmacy": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.DeletePharmacy(ctx, p, pt, "PH1"))
		}},
		"Prescriptions": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Prescriptions(ctx, p, pt, app.RxQuery{}))
		}},
		"Prescribe": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Prescribe(ctx, p, pt, app.PrescriptionInput{Drug: "Amoxicillin 500 mg", Directions: "1 tablet 3x daily", Qty: 21}))
		}},
		"Discontinue": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return none(a.Discontinue(ctx, p, pt, 1)) }},

		// Files.
		"UploadFile": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.UploadFile(ctx, p, app.FileUpload{Body: bytes.NewReader(tinyPNG()), Name: "planted.png", TargetType: "user", TargetID: pt}))
		}},
		"GetFile": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.GetFile(ctx, p, f.fileID)) }},
		"ListFiles": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ListFiles(ctx, p, app.FileQuery{TargetType: "user", TargetID: pt}))
		}},
		"UpdateFile": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.UpdateFile(ctx, p, f.fileID, app.FileChange{Name: str("renamed.png")}))
		}},
		"DeleteFile": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.DeleteFile(ctx, p, f.fileID))
		}},

		// Health devices.
		"RegisterDevice": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.RegisterDevice(ctx, p, pt, "scale-1", "Scale", "weight"))
		}},
		"Devices": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Devices(ctx, p, pt)) }},
		"AddReading": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AddReading(ctx, p, app.HealthInput{Type: "weight", Values: map[string]any{"weight": 70}}))
		}},
		"Readings": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Readings(ctx, p, pt, app.ReadingQuery{}))
		}},

		// Insurance.
		"PatientRecord": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.PatientRecord(ctx, p, pt, app.AllRecordParts))
		}},
		"Practitioner":   {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Practitioner(ctx, p, pt)) }},
		"InsuranceCards": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.InsuranceCards(ctx, p, pt)) }},
		"InsuranceCard": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.InsuranceCard(ctx, p, pt, "primary"))
		}},
		"SaveInsuranceCard": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.SaveInsuranceCard(ctx, p, pt, "primary", map[string]any{"member_id": "X1"}))
		}},
		"ImportInsuranceCards": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ImportInsuranceCards(ctx, p, pt, []map[string]any{{"type": "primary", "member_id": "X1"}}))
		}},
		"DeleteInsuranceCard": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.DeleteInsuranceCard(ctx, p, pt, "primary"))
		}},
		"CheckEligibility": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.CheckEligibility(ctx, p, pt))
		}},
		"Eligibility": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Eligibility(ctx, p, pt)) }},

		// Intakes and visits.
		"CreateIntake": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.CreateIntake(ctx, p, app.IntakeInput{RoomCode: "main", MemberRef: f.p1Code, ReasonForVisit: str("planted")}))
		}},
		"GetIntake": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.GetIntake(ctx, p, f.intakeID))
		}},
		"UpdateIntake": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.UpdateIntake(ctx, p, f.intakeID, app.IntakeInput{ReasonForVisit: str("changed")}))
		}},
		"IntakeAttachments": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.IntakeAttachments(ctx, p, f.intake))
		}},
		"AddWalkin": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AddWalkin(ctx, p, app.WalkinInput{IntakeID: f.intakeID, RoomCode: "main"}))
		}},
		"AddEconsult": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AddEconsult(ctx, p, f.intakeID, "main"))
		}},
		"GetVisit": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.GetVisit(ctx, p, f.visitID, true))
		}},
		"ListVisits": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ListVisits(ctx, p, app.VisitQuery{}))
		}},
		"ProviderDashboard": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ProviderDashboard(ctx, p, nil))
		}},
		"OwnOpenVisits": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			ds, _, err := a.OwnOpenVisits(ctx, p, nil)
			return ds, err
		}},
		"VisitNote": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.VisitNote(ctx, p, f.visitID))
		}},
		"VisitSummary": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.VisitSummary(ctx, p, f.visitID))
		}},
		"SaveVisitNote": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.SaveVisitNote(ctx, p, f.visitID, app.NoteDraft{Plan: "planted"}))
		}},
		"SignVisitNote": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.SignVisitNote(ctx, p, f.visitID))
		}},
		"AddNoteAddendum": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AddNoteAddendum(ctx, p, f.visitID, "planted"))
		}},
		"TakeVisit": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.TakeVisit(ctx, p, f.visitID))
		}},
		"CloseEconsult": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.CloseEconsult(ctx, p, f.visitID))
		}},
		"SetGuestContact": {allowed{asGuest}, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.SetGuestContact(ctx, p, "planted@example.com", "", false)
		}},
		"VisitLinkFor": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.VisitLinkFor(ctx, p, f.visitID)
		}},
		"RevokeVisitLinks": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.RevokeVisitLinks(ctx, p, f.visitID)
		}},
		"MarkThreadRead": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.MarkThreadRead(ctx, p, f.visitID, 1)
		}},
		"HoldNew": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			start := f.env.Clock.Now().Add(48 * 3600e9).Unix()
			return one(a.HoldNew(ctx, p, app.IntakeInput{MemberRef: strconv.FormatInt(f.p1.User.ID, 10)}, app.BookInput{SlotStart: start, SlotEnd: start + 900, RoomCode: "main", Type: "2"}))
		}},
		"BookNew": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			start := f.env.Clock.Now().Add(48 * 3600e9).Unix()
			return one(a.BookNew(ctx, p, app.IntakeInput{MemberRef: strconv.FormatInt(f.p1.User.ID, 10)}, app.BookInput{SlotStart: start, SlotEnd: start + 900, RoomCode: "main", Type: "2"}))
		}},
		"GetSlot": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.GetSlot(ctx, p, f.slotID))
		}},
		"HoldTime": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.HoldTime(ctx, p, app.BookInput{SlotStart: 1, SlotEnd: 2, RoomCode: "main", Type: "2", IntakeID: f.intakeID}))
		}},
		"RefundUnbooked": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.RefundUnbooked(ctx, p, f.intakeID))
		}},
		"Reschedule": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Reschedule(ctx, p, f.visitID, app.RescheduleInput{SlotStart: 1, SlotEnd: 2}))
		}},
		"SetReminders": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.SetReminders(ctx, p, f.visitID, false)
		}},
		"CancelVisit": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(b.CancelVisit(ctx, p, f.visitID, app.MoveInput{Reason: "planted"}))
		}},
		"MoveVisit": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.MoveVisit(ctx, p, f.visitID, app.ActCancel, app.MoveInput{Reason: "planted"}))
		}},
		"AddRecording": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AddRecording(ctx, p, f.visitID, app.RecordingInput{File: strings.NewReader("not a recording")}))
		}},
		"GetRecording": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.GetRecording(ctx, p, f.visitID, 1))
		}},

		// Visit messages.
		"ListMessages": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return two(a.ListMessages(ctx, p, f.visitID, app.MessageQuery{}))
		}},
		"PostMessage": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.PostMessage(ctx, p, f.visitID, app.NewMessage{Content: str("planted")}))
		}},

		// Push endpoints and notifications.
		"RegisterEndpoint": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.RegisterEndpoint(ctx, p, "caller-"+i64s(p.UserID())+"@example.com", "10"))
		}},
		"Endpoints": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Endpoints(ctx, p, "")) }},
		"Endpoint": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Endpoint(ctx, p, f.endpointID))
		}},
		"DeleteEndpoint": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.DeleteEndpoint(ctx, p, f.endpointID))
		}},
		"Notifications": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Notifications(ctx, p, nil, 0, 0))
		}},
		"ReadNotification": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ReadNotification(ctx, p, f.notificationID))
		}},
		"Badge":      {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Badge(ctx, p)) }},
		"ResetBadge": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) { return none(a.ResetBadge(ctx, p)) }},

		// Rooms.
		"ListRooms": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.ListRooms(ctx, p, app.RoomQuery{}))
		}},
		"PublicRooms": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			rooms, _, err := a.PublicRooms(ctx, p, 0, 10)
			return rooms, err
		}},
		"InviteProvider": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.InviteProvider(ctx, p, app.InviteInput{FirstName: "New", LastName: "Doctor", Email: "new.doctor@own.example.com"}))
		}},
		"CreateRoom": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.CreateRoom(ctx, p, app.NewRoom{Code: "own", Name: "Own Room", Domain: "own.example.com"}))
		}},
		"GetRoom": {users, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.GetRoom(ctx, p, "main")) }},
		"UpdateRoom": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.UpdateRoom(ctx, p, "main", app.RoomUpdate{Name: str("Taken Over")}))
		}},
		"DeleteRoom": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return none(a.DeleteRoom(ctx, p, "main")) }},
		"RoomProviders": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.RoomProviders(ctx, p, "main"))
		}},
		"RoomProviderByID": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.RoomProviderByID(ctx, p, "main", f.provider.User.ID))
		}},
		"WatchQueue": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			w, err := a.WatchQueue(ctx, p, "main")
			if err != nil {
				return nil, err
			}
			defer w.Close()
			v, _, err := w.Poll(ctx, live.Changes{})
			return v, err
		}},
		"Join": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(c.Join(ctx, p, f.visitID, false))
		}},
		"Send": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(c.Send(ctx, p, f.visitID, calls.SignalInput{Peer: "any", To: "other", Kind: "offer", Body: []byte(`{}`)}))
		}},
		"Role": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(c.Role(ctx, p, f.visitID))
		}},
		"RelayCheck": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return c.RelayCheck(ctx, p, f.visitID)
		}},
		"InviteGuest": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(c.InviteGuest(ctx, p, f.visitID))
		}},
		// An invitation link lets anyone of its clinic who has it in as a
		// new guest; another clinic's caller finds no such invitation.
		"InviteOpen": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(c.InviteOpen(ctx, p, f.invite()))
		}},
		"AcceptInvite": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			s, _, err := c.AcceptInvite(ctx, p, f.invite(), "Invited", "Guest")
			return s, err
		}},
		"KeepRecording": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(c.KeepRecording(ctx, p, f.visitID, calls.RecordingInput{Peer: "any", Request: 1,
				RecordingInput: app.RecordingInput{File: strings.NewReader("webm"), Start: 1, End: 2}}))
		}},
		"Leave": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(c.Leave(ctx, p, f.visitID, "any"))
		}},
		"Watch": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			w, err := c.Watch(ctx, p, f.visitID, "any", 0)
			if err != nil {
				return nil, err
			}
			defer w.Close()
			v, _, err := w.Poll(ctx, live.Changes{})
			return v, err
		}},
		"WatchDashboard": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			w, err := a.WatchDashboard(ctx, p)
			if err != nil {
				return nil, err
			}
			defer w.Close()
			return w.Sub(), nil
		}},
		"WatchVisit": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			w, err := a.WatchVisit(ctx, p, f.visitID, 0)
			if err != nil {
				return nil, err
			}
			defer w.Close()
			v, _, err := w.Poll(ctx, live.Changes{})
			return v, err
		}},
		"RoomQueue": {users, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.RoomQueue(ctx, p, "main")) }},
		"LinkRoom": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.LinkRoom(ctx, p, p.UserID(), "main", true))
		}},
		"UnlinkRoom": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.UnlinkRoom(ctx, p, f.provider.User.ID, "main"))
		}},
		// A room that lets guests in lets anyone with the clinic's
		// address in as a new guest (the fixture's room does).
		"GuestJoin": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.GuestJoin(ctx, p, "main", "Walk", "In"))
		}},
		"EnsureRoom": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.EnsureRoom(ctx, p, "ensured", "Ensured"))
		}},

		// Sessions: the credential in the call is the permission.
		"Login": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return two(a.Login(ctx, p, f.p1Code, "not-the-password"))
		}},
		// Naming another user's token destroys nothing (checked at the end).
		"Logout": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.Logout(ctx, p, []string{f.p1Token}))
		}},
		"Refresh": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Refresh(ctx, p, "not-a-refresh-token"))
		}},
		"RequestActivation": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.RequestActivation(ctx, p, f.p1Code))
		}},
		"RequestReset": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.RequestReset(ctx, p, f.p1Code))
		}},
		"Activate": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return two(a.Activate(ctx, p, "not-a-secret", "a long new password 1"))
		}},
		"ResetPassword": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.ResetPassword(ctx, p, "not-a-secret", "a long new password 1"))
		}},

		// Users.
		"GetUser": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.GetUser(ctx, p, pt, "")) }},
		"ListUsers": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return two(a.ListUsers(ctx, p, app.UserListQuery{}))
		}},
		"SSO": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.SSO(ctx, p, app.SSOInput{FirstName: "Planted", LastName: "User", Type: clinic.UserMember, Code: f.p1Code}))
		}},
		"UpdateMe": {selfOnly, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.UpdateMe(ctx, p, app.ProfileUpdate{City: str("Elsewhere")}))
		}},

		// The clinic's webhook.
		"WebhookSettings": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.WebhookSettings(ctx, p)) }},
		"RotateCredential": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.RotateCredential(ctx, p, app.RotateAPISecret))
		}},
		"SetWebhookSettings": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.SetWebhookSettings(ctx, p, app.WebhookSettingsInput{URL: str("")}))
		}},
		"WebhookDeliveries": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.WebhookDeliveries(ctx, p, 0, 10))
		}},
		"CreatePatient": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			u, _, err := a.CreatePatient(ctx, p, app.PatientInput{FirstName: "Planted", LastName: "Patient"}, "")
			return u, err
		}},
		"UpdatePatient": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.UpdatePatient(ctx, p, f.p1.UserID(), app.PatientInput{FirstName: "Planted", LastName: "Name"}, -1)
		}},
		// Bulk export is the clinic's: another clinic's admin exports its
		// own (its patients, none of the first clinic's).
		"StartExport": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.StartExport(ctx, p, app.ExportInput{Level: "system", Request: "planted"})
		}},
		"ExportJob": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.ExportJob(ctx, p, f.exportID)
		}},
		"CancelExport": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.CancelExport(ctx, p, f.exportID)
		}},
		"OpenExportFile": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.OpenExportFile(ctx, p, f.exportID, "Patient.ndjson")
		}},
		// A person's own grants: another patient, a guest and another
		// clinic's admin see none of the first patient's.
		"MyApps": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.MyApps(ctx, p)
		}},
		"DisconnectApp": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.DisconnectApp(ctx, p, f.oauthClient)
		}},
		"SMSSettings": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.SMSSettings(ctx, p)
		}},
		"SetSMSSettings": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.SetSMSSettings(ctx, p, app.SMSSettingsInput{Provider: "sandbox"})
		}},
		// Interpreters: the admin keeps them (another clinic's admin, its
		// own); the providers read them; the visit's provider invites one.
		"AddInterpreter": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.AddInterpreter(ctx, p, app.InterpreterInput{Name: "Ana Ruiz", Language: "es", Email: "ana@example.com"}))
		}},
		"InterpreterLanguages": {everyone, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.InterpreterLanguages(ctx, p))
		}},
		"Interpreters": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) { return one(a.Interpreters(ctx, p, "")) }},
		"RemoveInterpreter": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return none(a.RemoveInterpreter(ctx, p, f.interpreterID))
		}},
		"InviteInterpreter": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			inv, _, err := c.InviteInterpreter(ctx, p, f.visitID, f.interpreterID, app.InterpreterByEmail)
			return inv, err
		}},
		"SMSLog": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.SMSLog(ctx, p, 0, 10)
		}},
		"MySMSConsent": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.MySMSConsent(ctx, p)
		}},
		"SetSMSConsent": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.SetSMSConsent(ctx, p, "+14155550199", new(true))
		}},
		"TextVisitLink": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.TextVisitLink(ctx, p, f.visitID)
		}},
		"ConnectEHR": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.ConnectEHR(ctx, p, app.EHRInput{ISS: "https://ehr-" + strconv.FormatInt(p.Account.ID, 10) + ".example.com/fhir", ClientID: "tc", RoomCode: "main"})
		}},
		"EHRConnections": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.EHRConnections(ctx, p)
		}},
		"DisconnectEHR": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.DisconnectEHR(ctx, p, f.ehrID)
		}},
		"LinkEHRUser": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.LinkEHRUser(ctx, p, f.ehrID, "Practitioner/planted", f.provider.User.ID)
		}},
		"RegisterOAuthClient": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.RegisterOAuthClient(ctx, p, app.OAuthClientInput{Name: "Planted", Kind: clinic.ClientPublic, RedirectURIs: []string{"https://planted.example.com/app"}})
		}},
		"OAuthClients": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.OAuthClients(ctx, p)
		}},
		"RevokeOAuthClient": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.RevokeOAuthClient(ctx, p, 999999)
		}},
		// Anyone signed in to the clinic may answer its apps' sign-in
		// requests (a request is nobody's until approved); another clinic's
		// people may not. Each call answers a request of its own.
		"OAuthConsentFor": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.OAuthConsentFor(ctx, p, f.oauthRequest())
		}},
		"ApproveOAuthRequest": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.ApproveOAuthRequest(ctx, p, f.oauthRequest())
		}},
		"DenyOAuthRequest": {users, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.DenyOAuthRequest(ctx, p, f.oauthRequest())
		}},
		"WebhookEndpoints": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.WebhookEndpoints(ctx, p)
		}},
		"CreateWebhookEndpoint": {otherAdmin, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return a.CreateWebhookEndpoint(ctx, p, app.EndpointInput{URL: "https://hooks.example.com/planted", Events: []string{app.EventVisitStarted}})
		}},
		"DeleteWebhookEndpoint": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return nil, a.DeleteWebhookEndpoint(ctx, p, 999999) // none of any clinic: refused or not found alike
		}},
		"EndpointDeliveries": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.EndpointDeliveries(ctx, p, 999999, 0, 10))
		}},
		"Redeliver": {nobody, func(ctx context.Context, p *clinic.Principal) (any, error) {
			return one(a.Redeliver(ctx, p, f.deliveryID()))
		}},
	}
}

func slotsDeleted(slots, groups int, err error) (any, error) { return []int{slots, groups}, err }

func newPermFixture(t *testing.T) *permFixture {
	t.Helper()
	e := testenv.New(t)
	ctx := context.Background()
	a := e.App
	b := billing.New(a.Core())
	acme, other := e.NewClinic("acme", true), e.NewClinic("other", true)
	auth := func(c *testenv.Clinic, token string, need app.Need) *clinic.Principal {
		t.Helper()
		p, err := a.Authenticate(ctx, app.Credentials{AccountCode: c.Code, APIToken: token, APIKey: c.APIKey, APISecret: c.APISecret}, need)
		if err != nil {
			t.Fatalf("authenticate: %v", err)
		}
		return p
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	f := &permFixture{env: e, admin: auth(acme, acme.AdminToken, app.NeedAdmin), p1Code: "acme-patient-1"}
	key := auth(acme, "", app.NeedAPIKey)
	sso := func(typ int, code, first, last string) (*clinic.Principal, string) {
		t.Helper()
		res, err := a.SSO(ctx, key, app.SSOInput{FirstName: first, LastName: last, Type: typ, Code: code})
		must(err)
		return auth(acme, res.Session.Token, app.NeedUser), res.Session.Token
	}
	f.p1, f.p1Token = sso(clinic.UserMember, f.p1Code, "Adalind", "Quixotepatient")
	f.provider, _ = sso(clinic.UserProvider, "acme-provider-1", "Dana", "Acmeprovider")
	f.callers[asPatient], _ = sso(clinic.UserMember, "acme-patient-2", "Other", "Patient")
	f.callers[asGuest], _ = sso(clinic.UserGuest, "", "Passing", "Guest")
	f.callers[asOtherAdmin] = auth(other, other.AdminToken, app.NeedAdmin)

	_, err := a.CreateRoom(ctx, f.admin, app.NewRoom{Code: "main", Name: "Acme Main Room", Domain: "acme.clinic.test"})
	must(err)
	_, err = a.LinkRoom(ctx, f.admin, f.provider.User.ID, "main", true)
	must(err)
	_, err = b.CreateCoupon(ctx, f.admin, billing.CouponInput{Code: "ACMEONLY", PercentOff: "10"})
	must(err)
	_, published, err := a.CreateSlots(ctx, f.provider, app.SlotGroupInput{ProviderID: f.provider.User.ID, RoomCode: "main",
		DateStart: "2026-04-20", DateEnd: "2026-04-20", TimeStart: "09:00", TimeEnd: "09:15", Timezone: "UTC", Duration: 15})
	must(err)
	f.slotID = published.Slots[0].ID
	rc, err := a.RegisterOAuthClient(ctx, f.admin, app.OAuthClientInput{Name: "Acme Diary", Kind: clinic.ClientPublic, RedirectURIs: []string{"https://diary.example.com/app"}})
	must(err)
	f.oauthClient = rc.ClientID
	job, err := a.StartExport(ctx, f.admin, app.ExportInput{Level: "system", Request: "fixture"})
	must(err)
	f.exportID = job.ID
	ehr, err := a.ConnectEHR(ctx, f.admin, app.EHRInput{ISS: "https://ehr.acme.example.com/fhir", ClientID: "teleclinic", RoomCode: "main"})
	must(err)
	f.ehrID = ehr.ID
	interp, err := a.AddInterpreter(ctx, f.admin, app.InterpreterInput{Name: "Acme Interpreting", Language: "vi", Email: "vi@acme.example.com"})
	must(err)
	f.interpreterID = interp.ID
	reason := "acme-reason-text"
	f.intake, err = a.CreateIntake(ctx, f.p1, app.IntakeInput{RoomCode: "main", ReasonForVisit: &reason})
	must(err)
	f.intakeID = f.intake.ID
	v, err := a.AddEconsult(ctx, f.p1, f.intakeID, "main")
	must(err)
	f.visitID = v.Visit.ID
	content := "acme-secret-symptom"
	_, err = a.PostMessage(ctx, f.p1, f.visitID, app.NewMessage{Content: &content})
	must(err)
	reply := "acme-provider-reply"
	_, err = a.PostMessage(ctx, f.provider, f.visitID, app.NewMessage{Content: &reply})
	must(err)
	file, err := a.UploadFile(ctx, f.p1, app.FileUpload{Body: bytes.NewReader(tinyPNG()), Name: "acme-scan.png"})
	must(err)
	f.fileID = file.ID
	ep, err := a.RegisterEndpoint(ctx, f.p1, "adalind@acme.example.com", "10")
	must(err)
	f.endpointID = ep.ID
	ns, err := a.Notifications(ctx, f.p1, nil, 0, 0)
	must(err)
	if len(ns.Items) == 0 {
		t.Fatal("the provider's reply made no notification for the patient")
	}
	f.notificationID = ns.Items[0].ID
	no := false
	_, err = a.PutEMR(ctx, f.p1, f.p1.User.ID, "allergies", []any{map[string]any{"substance": "acme-allergy"}}, true, &no)
	must(err)
	_, err = b.AddSource(ctx, f.p1, billing.SourceInput{RoomCode: "main"}, "card", "tok_visa")
	must(err)
	// Only the messages the thread holds, the patient's names and the
	// patient's files and records are the patient's; the room and the
	// provider are the clinic's, public to its users.
	f.markers = []string{"Adalind", "Quixotepatient", f.p1Code, "acme-scan", content, reply, reason, "acme-allergy", "adalind@"}
	f.clinicMarkers = []string{"Acme Main Room", "Acmeprovider", "ACMEONLY", "acme.clinic.test"}
	return f
}

// sourceID is the patient's saved card.
func (f *permFixture) sourceID() int64 {
	ss, err := billing.New(f.env.App.Core()).Sources(context.Background(), f.p1, billing.SourceInput{RoomCode: "main"}, "")
	if err != nil || len(ss) == 0 {
		f.env.T.Fatalf("the patient's cards: %v", err)
	}
	return ss[0].ID
}

// deliveryID is a webhook delivery of the first clinic (its id, whether
// or not the clinic has a webhook: 1 is the first outbox row).
func (f *permFixture) deliveryID() int64 { return 1 }

func tinyPNG() []byte {
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 200, A: 255})
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

func i64s(n int64) string { return strconv.FormatInt(n, 10) }

// TestDurationWords: a mail says how long a link works as a person would.
func TestDurationWords(t *testing.T) {
	for d, want := range map[time.Duration]string{24 * time.Hour: "24 hours", time.Hour: "1 hour", 30 * time.Minute: "30 minutes",
		72 * time.Hour: "3 days", 90 * time.Second: "1 minute", 45 * time.Second: "45 seconds", 36 * time.Hour: "36 hours"} {
		if got := app.DurationWords(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}
