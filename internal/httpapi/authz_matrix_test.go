package httpapi_test

import (
	"net/url"
	"strings"
	"testing"

	"teleclinic/client"
	"teleclinic/internal/app"
	"teleclinic/internal/testenv"
)

// The authorization matrix: every route of routes.go declares, for every
// kind of caller, whether it is let through (A), refused for its
// credentials (R: 401, or 400 where the spec says so for a missing token)
// or denied the object (D: 403 or 404). One test sends every cell over
// HTTP, on the engine the suite runs on, and fails on a route without a
// declaration. "Let through" is judged by status class only (a request
// without the right body may still be a 400), and a 5xx fails any cell.

type outcome = testenv.Outcome

const (
	allow   = testenv.Allow
	refuse  = testenv.Refuse
	deny    = testenv.Deny
	missing = testenv.Missing
	gone    = testenv.Gone
)

// The callers, in the order the cells run (the refused first, so that a
// route that deletes its object is exercised by the others before).
var callerKinds = []string{
	"none", "code only", "key and secret", "expired token", "other admin, this code",
	"other patient", "other provider", "guest", "other admin, own code",
	"provider of the visit", "owning patient", "clinic admin",
}

// profile gives each caller's outcome on a route; a route declares one.
type profile map[string]outcome

func prof(def outcome, except map[string]outcome) profile {
	p := profile{}
	for _, k := range callerKinds {
		p[k] = def
	}
	for k, v := range except {
		p[k] = v
	}
	return p
}

var (
	// Everyone: public routes and links that carry their own credential.
	pPublic = prof(allow, nil)
	// The account code: every credential of a clinic works, none is needed
	// beyond the code.
	pAccount = prof(allow, map[string]outcome{"none": refuse})
	// The account code, and a user token if one is sent, which must be valid.
	pAccountOptUser = prof(allow, map[string]outcome{"none": refuse, "expired token": refuse, "other admin, this code": refuse})
	// The clinic's API key and secret.
	pAPIKey = prof(refuse, map[string]outcome{"key and secret": allow})
	// Any signed-in user of the clinic, acting on their own things.
	pUser = prof(allow, map[string]outcome{"none": refuse, "code only": refuse, "key and secret": refuse, "expired token": refuse, "other admin, this code": refuse})
	// The admin token only (the other clinic's admin on its own clinic).
	pAdmin = prof(refuse, map[string]outcome{"clinic admin": allow, "other admin, own code": allow})
	// The server operator's token only (GET /metrics): no clinic's
	// credential, an admin's included.
	pOperator = prof(refuse, nil)
	// A patient's records: the patient, the admin, the provider of their
	// visit; anyone else is denied.
	pRecords = with(pUser, map[string]outcome{"other patient": deny, "other provider": deny, "guest": deny, "other admin, own code": deny})
	// Records only the patient and the admin change (or, for insurance,
	// read).
	pPatientOnly = with(pRecords, map[string]outcome{"provider of the visit": deny})
	// The visit's own: its patient, its provider, the admin.
	pVisit = pRecords
	// Things of the patient's own (files they made, their cards, their
	// endpoints): the patient and the admin.
	pOwn = pPatientOnly
	// Visit messages: the thread's participants; a missing token is a 400.
	pThread = with(pRecords, map[string]outcome{"other admin, own code": deny, "clinic admin": deny})
	// Provider operations (codes of a visit) that a patient may not use.
	pProviderOfVisit = with(pVisit, map[string]outcome{"owning patient": deny})
	// Prescribing: the provider of the visit only.
	pPrescriber = with(pProviderOfVisit, map[string]outcome{"clinic admin": deny})
	// Only the owner: a patient's saved cards are theirs alone.
	pOwnerOnly = with(pOwn, map[string]outcome{"clinic admin": deny})
	// A room of this clinic: the other clinic has none of that code.
	pRoom  = with(pAccount, map[string]outcome{"other admin, own code": deny})
	pQueue = with(pAccountOptUser, map[string]outcome{"other admin, own code": deny})
	// The queue's stream: a credential with a part in the queue (the
	// admin, the room's provider, a patient waiting in it).
	pQueueStream = with(pUser, map[string]outcome{"other patient": deny, "other provider": deny, "guest": deny, "other admin, own code": deny})
	pAdminOn     = with(pAdmin, map[string]outcome{"other admin, own code": deny})
	// An admin's object the fixture lacks: let through, nothing found.
	pAdminMissing = with(pAdminOn, map[string]outcome{"clinic admin": missing})
	// The clinic admin's, behind a user credential: users are denied.
	pUsersDenied = with(pUser, map[string]outcome{"other patient": deny, "other provider": deny, "guest": deny, "provider of the visit": deny, "owning patient": deny})
	// Staff: providers and the admin; patients and guests are refused.
	pStaff = with(pUser, map[string]outcome{"other patient": deny, "guest": deny, "owning patient": deny})
	// Not for providers (invoices are the patient's and the admin's).
	pNoProviders = with(pUser, map[string]outcome{"other provider": deny, "provider of the visit": deny})
	// The clinic's, on the FHIR door (NeedUser: users are let in and
	// refused by the operation): the admin, and another clinic's admin on
	// its own clinic.
	pAdminOnFHIR        = with(pUser, map[string]outcome{"other patient": deny, "other provider": deny, "guest": deny, "provider of the visit": deny, "owning patient": deny})
	pAdminMissingOnFHIR = with(pAdminOnFHIR, map[string]outcome{"clinic admin": missing, "other admin, own code": missing})
	// A signed link: its signature is the credential; without one,
	// everyone is denied whatever headers they send.
	pLink = prof(deny, nil)
	// A person's own, of which the admin has none.
	pPerson = with(pUser, map[string]outcome{"clinic admin": deny, "other admin, own code": deny})
	// Every signed-in caller is let through to an object no one has.
	pUserMissing = with(pUser, map[string]outcome{"other patient": missing, "other provider": missing, "guest": missing,
		"other admin, own code": missing, "provider of the visit": missing, "owning patient": missing, "clinic admin": missing})
)

func with(base profile, except map[string]outcome) profile {
	p := profile{}
	for k, v := range base {
		p[k] = v
	}
	for k, v := range except {
		p[k] = v
	}
	return p
}

// matrix declares every route: method and pattern as routes.go registers
// them → profile.
func matrix() map[string]profile {
	return map[string]profile{
		"GET /api_v3/users":                                 pAdmin,
		"GET /api_v3/users/{id}":                            with(pRecords, map[string]outcome{"guest": deny}),
		"POST /api_v3/users/sso":                            pAPIKey,
		"POST /api_v3/users/invite":                         pAdmin,
		"GET /api_v3/auth":                                  pPublic,
		"GET /api_v3/me":                                    pUser,
		"POST /api_v3/me":                                   pUser,
		"POST /api_v3/users/logout":                         pUser,
		"POST /api_v3/tokens/refresh":                       pAccount,
		"POST /api_v3/users/token/refresh":                  pAccount,
		"POST /api_v3/users/login":                          pAccount,
		"POST /api_v3/users/activate/request":               pAccount,
		"POST /api_v3/users/activate":                       pAccount,
		"POST /api_v3/users/password/reset":                 pAccount,
		"POST /api_v3/users/password/reset/confirm":         pAccount,
		"GET /api_v3/settings":                              pAccount,
		"GET /api_v3/accounts":                              pAccount,
		"GET /api_v3/accounts/{code}":                       with(pAccount, map[string]outcome{"other admin, own code": deny}),
		"GET /api_v3/audit":                                 pAdmin,
		"GET /api_v3/audit/verify":                          pAdmin,
		"GET /api_v3/users/{id}/access-log":                 pOwn,
		"GET /api_v3/rooms":                                 pAccount,
		"POST /api_v3/rooms":                                pAdmin,
		"GET /api_v3/rooms/{code}":                          pRoom,
		"GET /api_v3/rooms/{code}/providers":                pRoom,
		"GET /api_v3/rooms/{code}/providers/{id}":           pRoom,
		"GET /api_v3/rooms/{code}/queue":                    pQueue,
		"GET /api_v3/rooms/{code}/queue/events":             pQueueStream,
		"POST /api_v3/users/{id}/rooms":                     pAdmin,
		"DELETE /api_v3/users/{id}/rooms/{room_code}":       pAdminMissing,
		"PUT /api_v3/rooms/{code}":                          pAdminOn,
		"DELETE /api_v3/rooms/{code}":                       with(pAdminOn, map[string]outcome{"clinic admin": gone}),
		"POST /api_v3/intakes":                              pUser,
		"POST /api_v3/intakes/{id}":                         pOwn,
		"GET /api_v3/intakes/{id}":                          pOwn,
		"POST /api_v3/visits/add_walkin":                    pUser,
		"POST /api_v3/visits/add_econsult":                  pUser,
		"GET /api_v3/visits":                                pUser,
		"GET /api_v3/visits/{id}":                           pVisit,
		"POST /api_v3/visits":                               pUser,
		"GET /api_v3/availability":                          pUser,
		"POST /api_v3/visits/accept":                        pUser,
		"POST /api_v3/visits/confirm":                       pUser,
		"POST /api_v3/visits/inprogress":                    pUser,
		"POST /api_v3/visits/close":                         pUser,
		"POST /api_v3/visits/delete":                        pUser,
		"POST /api_v3/visits/{id}/recordings":               pAdminOn,
		"GET /api_v3/visits/{id}/recordings/{recording_id}": pAdminMissing,
		"GET /api_v3/recordings/{id}/download":              pLink,
		"POST /api_v3/files":                                pUser,
		"GET /api_v3/files":                                 pUser,
		"GET /api_v3/files/{id}":                            pRecords,
		"POST /api_v3/files/{id}":                           pOwn,
		"DELETE /api_v3/files/{id}":                         with(pOwn, map[string]outcome{"clinic admin": gone}),
		"GET /api_v3/files/view/{id}":                       pLink,
		// LiveKit's signature is its only credential (none here: 404 without LiveKit, 401 with).
		"POST /api_v3/livekit/webhook":                                      pLink,
		"GET /api_v3/users/{id}/emr":                                        pRecords,
		"POST /api_v3/users/{id}/emr/{name}":                                pRecords,
		"GET /api_v3/emr/schema":                                            pAccount,
		"POST /api_v3/users/{user_id}/devices":                              pPatientOnly,
		"GET /api_v3/users/{user_id}/devices":                               pRecords,
		"POST /api_v3/health":                                               pUser,
		"GET /api_v3/users/{user_id}/health":                                pRecords,
		"GET /api_v3/users/{user_id}/insurances":                            pPatientOnly,
		"POST /api_v3/users/{user_id}/insurances/import":                    pPatientOnly,
		"POST /api_v3/users/{user_id}/insurances/{card_type}":               pPatientOnly,
		"GET /api_v3/users/{user_id}/insurances/{card_type}":                pPatientOnly,
		"DELETE /api_v3/users/{user_id}/insurances/{card_type}":             with(pPatientOnly, map[string]outcome{"clinic admin": gone}),
		"POST /api_v3/users/{user_id}/insurances/primary/eligibility/check": pPatientOnly,
		"GET /api_v3/users/{user_id}/insurances/primary/eligibility":        with(pPatientOnly, map[string]outcome{"owning patient": missing, "clinic admin": missing}),
		"GET /api_v3/reports/claims":                                        pStaff,
		"GET /api_v3/reports/numbers":                                       pAdmin,
		"GET /api_v3/insurances/list/carriers":                              pUser,
		"GET /api_v3/insurances/list/insurers":                              pUser,
		"GET /api_v3/insurances/list/billing_modifiers":                     pUser,
		"GET /api_v3/insurances/list/dxs":                                   pUser,
		"GET /api_v3/insurances/list/procedures":                            pUser,
		"POST /api_v3/visits/{id}/codes":                                    pProviderOfVisit,
		// The fixture's visit is an e-consult: who may move it is let
		// through to the refusal that only a booked visit moves.
		"POST /api_v3/visits/{id}/reschedule": pVisit,
		// The visit's note: its provider writes it, the admin reads it (the
		// fixture's visit has none: let through to a 404); the patient
		// reads only the summary, which exists once the note is signed.
		"GET /api_v3/visits/{id}/note":                                  with(pProviderOfVisit, map[string]outcome{"provider of the visit": missing, "clinic admin": missing}),
		"POST /api_v3/visits/{id}/note":                                 with(pPrescriber, nil),
		"POST /api_v3/visits/{id}/note/sign":                            with(pPrescriber, nil),
		"POST /api_v3/visits/{id}/note/addenda":                         with(pPrescriber, nil),
		"GET /api_v3/visits/{id}/summary":                               with(pVisit, map[string]outcome{"provider of the visit": missing, "owning patient": missing, "clinic admin": missing}),
		"GET /api_v3/visits/{id}/codes":                                 pVisit,
		"GET /api_v3/visits/{id}/facts":                                 pVisit,
		"POST /api_v3/visits/{id}/location":                             pVisit,
		"GET /api_v3/visits/{id}/superbill":                             pVisit,
		"GET /api_v3/users/{id}/erx/prescriptions":                      pRecords,
		"POST /api_v3/users/{id}/erx/prescriptions":                     pPrescriber,
		"POST /api_v3/users/{id}/erx/prescriptions/{rx_id}/discontinue": with(pPrescriber, map[string]outcome{"provider of the visit": missing}),
		"GET /api_v3/users/{id}/erx/pharmacies":                         pRecords,
		"POST /api_v3/users/{id}/erx/pharmacies":                        pPatientOnly,
		"DELETE /api_v3/users/{id}/erx/pharmacies/{code}":               with(pPatientOnly, map[string]outcome{"owning patient": missing, "clinic admin": missing}),
		"GET /api_v3/billing/settings":                                  pUser,
		"GET /api_v3/billing/processor":                                 pAdmin,
		"POST /api_v3/billing/processor":                                pAdmin,
		"GET /api_v3/billing/sources":                                   pUser,
		"POST /api_v3/billing/sources":                                  pUser,
		"GET /api_v3/billing/sources/{id}":                              pOwnerOnly,
		"PUT /api_v3/billing/sources/{id}":                              pOwnerOnly,
		"DELETE /api_v3/billing/sources/{id}":                           pOwnerOnly,
		"POST /api_v3/billing/invoices/process":                         pUser,
		"GET /api_v3/billing/invoices":                                  pNoProviders,
		"POST /api_v3/billing/invoices/{id}/refund":                     pAdminMissing,
		"POST /api_v3/billing/coupons":                                  pAdmin,
		"GET /api_v3/billing/coupons":                                   pAdmin,
		"DELETE /api_v3/billing/coupons/{code}":                         pAdminMissing,
		"POST /api_v3/slots":                                            pStaff,
		"GET /api_v3/slots":                                             pUser,
		"GET /api_v3/slots/available":                                   pUser,
		"DELETE /api_v3/slots/{id}":                                     pUserMissing,
		"DELETE /api_v3/slots/groups/{groupId}":                         pUserMissing,
		"GET /api/visits/{visit_id}/messages":                           pThread,
		"POST /api/visits/{visit_id}/messages":                          pThread,
		"GET /api/visits/{visit_id}/messages/events":                    pThread,
		"POST /api_v3/endpoints":                                        pUser,
		"GET /api_v3/endpoints":                                         pUser,
		"GET /api_v3/endpoints/{id}":                                    pOwnerOnly,
		"DELETE /api_v3/endpoints/{id}":                                 pOwnerOnly,
		"GET /api_v3/notifications":                                     pUser,
		"GET /api_v3/notifications/badge":                               pUser,
		"POST /api_v3/notifications/badge":                              pUser,
		"PUT /api_v3/notifications/{id}":                                pOwnerOnly,
		"GET /api_v3/account/settings":                                  pAdmin,
		"POST /api_v3/account/settings":                                 pAdmin,
		"GET /api_v3/webhooks/deliveries":                               pAdmin,
		"POST /api_v3/webhooks/deliveries/{id}/redeliver":               pAdminMissing,
		"GET /api_v3/webhooks/events":                                   pAdmin,
		"GET /api_v3/webhooks/endpoints":                                pAdmin,
		"POST /api_v3/webhooks/endpoints":                               pAdmin,
		"DELETE /api_v3/webhooks/endpoints/{id}":                        pAdminMissing,
		"GET /api_v3/webhooks/endpoints/{id}/deliveries":                pAdminMissing,
		"GET /openapi.yaml":                                             pPublic,
		"GET /healthz":                                                  pPublic,
		"GET /metrics":                                                  pOperator,
		"GET /fhir/R4/metadata":                                         pPublic,
		"GET /fhir/R4/{type}":                                           pRecords,
		"GET /fhir/R4/{type}/{id}":                                      pRecords,
		"GET /fhir/R4/Patient/{id}/$everything":                         pRecords,
		"POST /fhir/R4/{type}":                                          pUsersDenied,
		"PUT /fhir/R4/{type}/{id}":                                      pPatientOnly,
		// The SMART authorization server authenticates apps by its own
		// protocol (client ids, codes, PKCE, assertions): the API's
		// headers give no one anything there. The apps are the admin's.
		"GET /fhir/R4/.well-known/smart-configuration": pPublic,
		"GET /oauth/.well-known/openid-configuration":  pPublic,
		"GET /oauth/authorize":                         pPublic,
		"GET /oauth/authorize/callback":                pPublic,
		"POST /oauth/token":                            pPublic,
		"GET /oauth/keys":                              pPublic,
		"POST /oauth/revoke":                           pPublic,
		"POST /oauth/introspect":                       pPublic,
		"GET /oauth/userinfo":                          prof(refuse, nil), // an app's token only
		"GET /api_v3/smart/clients":                    pAdmin,
		"POST /api_v3/smart/clients":                   pAdmin,
		"GET /api_v3/smart/ehrs":                       pAdmin,
		"POST /api_v3/smart/ehrs":                      pAdmin,
		"DELETE /api_v3/smart/ehrs/{id}":               pAdminMissing,
		"POST /api_v3/smart/ehrs/{id}/links":           pAdminMissing,
		"DELETE /api_v3/smart/clients/{id}":            pAdminMissing,
		// Texts: the sender and its log are the admin's, consent each
		// person's own (not the admin's: no one to text), a visit's link
		// its provider's or the admin's; Twilio's addresses take its
		// signature only (none here: the clinic sends no texts, 404).
		"GET /api_v3/sms/settings":           pAdmin,
		"POST /api_v3/sms/settings":          pAdmin,
		"GET /api_v3/sms/log":                pAdmin,
		"GET /api_v3/sms/consent":            pPerson,
		"POST /api_v3/sms/consent":           pPerson,
		"POST /api_v3/visits/{id}/text_link": pProviderOfVisit,
		// Interpreters: the staff read them, the admin keeps them; the
		// visit's provider brings one in (the fixture has none: 404).
		"GET /api_v3/interpreters":         pStaff,
		"POST /api_v3/interpreters":        pAdmin,
		"DELETE /api_v3/interpreters/{id}": pAdminMissing,
		"POST /api_v3/visits/{id}/interpreter": with(pVisit, map[string]outcome{"owning patient": deny, "clinic admin": deny,
			"provider of the visit": missing}),
		"POST /sms/twilio/{clinic}/inbound": pLink,
		"POST /sms/twilio/{clinic}/status":  pLink,
		// Bulk export is the clinic's (its admin token, or a backend
		// service's token). The matrix sends no Prefer, so the admin is let
		// through to a 400; the status and files of a job no one started
		// are not found.
		"GET /fhir/R4/$export":                  pAdminOnFHIR,
		"GET /fhir/R4/Patient/$export":          pAdminOnFHIR,
		"GET /fhir/R4/Group/{id}/$export":       pAdminOnFHIR,
		"GET /fhir/R4/$export-status/{id}":      pAdminMissingOnFHIR,
		"DELETE /fhir/R4/$export-status/{id}":   pAdminMissingOnFHIR,
		"GET /fhir/R4/$export-file/{id}/{name}": pAdminMissingOnFHIR,
		// Scheduling: any user of the clinic finds, holds and books (the
		// matrix sends no body, so each is let through to a 400; who may
		// book or cancel for whom is TestFHIR_Scheduling's); the slot and
		// schedule the fixture's id names do not exist.
		"GET /fhir/R4/Slot":               pUser,
		"GET /fhir/R4/Slot/{id}":          pUserMissing,
		"GET /fhir/R4/Schedule/{id}":      pUserMissing,
		"GET /fhir/R4/Appointment/$find":  pUser,
		"POST /fhir/R4/Appointment/$find": pUser,
		"POST /fhir/R4/Appointment/$hold": pUser,
		"POST /fhir/R4/Appointment/$book": pUser,
		"PATCH /fhir/R4/Appointment/{id}": pUser,
	}
}

func TestAuthzMatrix(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	other := e.NewClinic("beta", true)
	guest := mustSSO(t, e, s.c, "600", "", "Gus", "Guest")
	visit := s.withVisit(t)
	it := s.intake(t, s.pat, "reason_for_visit", "Cough")
	file := mustUpload(t, e, s.c, s.pat.Token, "scan.png", pngBytes(t, 20, 20)).Id
	card := s.addCard(t, s.pat, "tok_visa").Id
	endpoint := dataOf[client.Endpoint](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/endpoints", Header: userHeaders(s.c, s.pat.Token),
		Form: q("type", "10", "key", "pat@example.com")})).Id
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/insurances/primary", Header: userHeaders(s.c, s.pat.Token),
		Form: q("insurer_code", "AETNA", "subscriber_number", "W1")}); res.Status != 200 {
		t.Fatalf("card: %d %s", res.Status, res.Raw)
	}
	// A login of the owning patient whose token has expired.
	expired := mustSSO(t, e, s.c, "200", "pat", "Pat", "One")
	if _, err := e.Store.DB().Exec(e.Store.Rebind("UPDATE tokens SET expires = 1 WHERE hash = ?"), app.HashSecret(expired.Token)); err != nil {
		t.Fatal(err)
	}

	headers := map[string]map[string]string{
		"none":                   {},
		"code only":              acctHeaders(s.c),
		"key and secret":         ssoHeaders(s.c),
		"expired token":          userHeaders(s.c, expired.Token),
		"other admin, this code": {"X-AccountCode": "alpha", "X-ApiToken": other.AdminToken},
		"other patient":          userHeaders(s.c, s.pat2.Token),
		"other provider":         userHeaders(s.c, s.other.Token),
		"guest":                  userHeaders(s.c, guest.Token),
		"other admin, own code":  adminHeaders(other),
		"provider of the visit":  userHeaders(s.c, s.doc.Token),
		"owning patient":         userHeaders(s.c, s.pat.Token),
		"clinic admin":           adminHeaders(s.c),
	}
	// Path values: the owning patient's things.
	values := map[string]string{"{code}": "main", "{room_code}": "main", "{user_id}": s.pat.UserID, "{visit_id}": visit,
		"{card_type}": "primary", "{name}": "allergies", "{recording_id}": "1", "{rx_id}": "1", "{groupId}": "1", "{type}": "Patient"}
	idOf := func(pattern string) string {
		switch {
		case strings.HasPrefix(pattern, "/fhir/R4/"):
			return s.pat.UserID
		case strings.HasPrefix(pattern, "/api_v3/users/{id}"), strings.HasPrefix(pattern, "/api_v3/rooms/{code}/providers/{id}"):
			if strings.HasPrefix(pattern, "/api_v3/rooms/") {
				return s.doc.UserID
			}
			return s.pat.UserID
		case strings.HasPrefix(pattern, "/api_v3/visits/{id}"):
			return visit
		case strings.HasPrefix(pattern, "/api_v3/intakes/{id}"):
			return it
		case strings.HasPrefix(pattern, "/api_v3/files/"):
			return file
		case strings.HasPrefix(pattern, "/api_v3/billing/sources/"):
			return card
		case strings.HasPrefix(pattern, "/api_v3/endpoints/"):
			return endpoint
		}
		return "1"
	}

	declared := matrix()
	var routes []string
	for _, rt := range e.API().Routes() {
		routes = append(routes, rt.Method+" "+rt.Path)
	}
	// Bodies where an empty request would be refused before the caller's
	// rights are judged.
	bodies := map[string]url.Values{"POST /api/visits/{visit_id}/messages": q("content", "Hello")}
	// The FHIR writes read a resource: a Patient the caller may write.
	jsonBodies := map[string]any{
		"POST /fhir/R4/{type}":     js(`{"resourceType": "Patient", "name": [{"family": "Matrix", "given": ["Mia"]}]}`),
		"PUT /fhir/R4/{type}/{id}": js(`{"resourceType": "Patient", "name": [{"family": "One", "given": ["Pat"]}]}`),
	}
	testenv.Matrix{
		Name:    "authorization matrix",
		Callers: callerKinds,
		Routes:  routes,
		Want: func(route string) []outcome {
			p, ok := declared[route]
			if !ok {
				return nil
			}
			row := make([]outcome, len(callerKinds))
			for i, who := range callerKinds {
				row[i] = p[who]
			}
			return row
		},
		// Reads, then writes, then deletes; logout last of all.
		Rank: func(k string) int {
			switch {
			case strings.HasSuffix(k, "/logout"):
				return 4
			case strings.HasPrefix(k, "DELETE /api_v3/rooms/"):
				return 3
			case strings.HasPrefix(k, "DELETE"):
				return 2
			case strings.HasPrefix(k, "GET"):
				return 0
			}
			return 1
		},
		Do: func(key, who string) testenv.Answer {
			method, pattern, _ := strings.Cut(key, " ")
			path := pattern
			for k, v := range values {
				path = strings.ReplaceAll(path, k, v)
			}
			if strings.HasPrefix(pattern, "/api_v3/accounts/") {
				path = strings.ReplaceAll(pattern, "{code}", "alpha")
			}
			path = strings.ReplaceAll(path, "{id}", idOf(pattern))
			if key == "GET /fhir/R4/{type}" {
				path += "?patient=" + s.pat.UserID // the owning patient's record
			}
			h := map[string]string{}
			for k, v := range headers[who] {
				h[k] = v
			}
			req := testenv.Req{Method: method, Path: path, Header: h, NoValidate: true, StartOnly: true}
			if body, ok := bodies[key]; ok {
				req.Form = body
			}
			if body, ok := jsonBodies[key]; ok {
				req.JSON = body
			}
			res := testenv.Do(t, e.URL, req)
			return testenv.Answer{Status: res.Status, Class: testenv.ClassifyAPI(res.Status, strings.HasPrefix(pattern, "/api/visits/")), Detail: string(res.Raw)}
		},
	}.Run(t)
}
