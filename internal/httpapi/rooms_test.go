package httpapi_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

// js is a JSON body as a client writes it.
func js(text string) json.RawMessage { return json.RawMessage(text) }

func TestRooms_Create(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)

	// A room made with a domain and a name gets a generated code, a slug
	// from its name, and the default consultation, visits and guests.
	t.Run("OKDefaults", func(t *testing.T) {
		d := mustRoom(t, e, c, js(`{"domain": "Alpha.Clinic.Test", "name": "Main Room"}`))
		if !regexp.MustCompile(`^[a-z0-9]{5}$`).MatchString(d.Code) || d.Slug != "main-room" || d.Domain != "alpha.clinic.test" {
			t.Fatalf("code %q, slug %q, domain %q", d.Code, d.Slug, d.Domain)
		}
		if diff := cmp.Diff([]client.Consultation{{Id: "1", Description: "15-min Consultation", Duration: 15, Slots: 1}}, d.Payment.Consultations); diff != "" {
			t.Errorf("consultations (-want +got):\n%s", diff)
		}
		if d.Payment.Currency != "USD" || d.Payment.PaymentCurrency != "USD" {
			t.Errorf("currency %q, paymentCurrency %q", d.Payment.Currency, d.Payment.PaymentCurrency)
		}
		if !d.Visits.Walkin.Enabled || d.Visits.Appointment.Enabled || d.Auth.Guest.Type != 600 || !d.Auth.Guest.LogIn.Enabled {
			t.Errorf("visits %+v, guests %+v", d.Visits, d.Auth.Guest)
		}
		if d.OperationSettings.IsClosedNow {
			t.Error("a new room is closed")
		}
	})
	// A code and a slug, sent as a form.
	t.Run("OKCodeAndSlugAsForm", func(t *testing.T) {
		d := dataOf[client.RoomDetail](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms.json", Header: adminHeaders(c),
			Form: q("domain", "alpha.clinic.test", "name", "Kids", "code", "kids", "slug", "children")}))
		if d.Code != "kids" || d.Slug != "children" {
			t.Fatalf("code %q, slug %q", d.Code, d.Slug)
		}
	})
	// A slug is unique in its domain: another domain may take it, and a
	// generated slug steps around a taken one.
	t.Run("ErrSlugTakenInDomain", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: adminHeaders(c), JSON: js(`{"domain": "alpha.clinic.test", "name": "X", "slug": "children"}`)})
		wantErr(t, res, 400, 400)
		if messageOf(res) != "In domain 'alpha.clinic.test' slug 'children' already exists." {
			t.Fatalf("%s", res.Raw)
		}
		mustRoom(t, e, c, js(`{"domain": "other.clinic.test", "name": "X", "slug": "children"}`))
		if d := mustRoom(t, e, c, js(`{"domain": "alpha.clinic.test", "name": "Main Room"}`)); !strings.HasPrefix(d.Slug, "main-room-") {
			t.Fatalf("slug %q", d.Slug)
		}
	})
	// The refusals of a create: each body and credential, its status.
	for _, tc := range []struct {
		name    string
		headers func() map[string]string
		body    json.RawMessage
		status  int
	}{
		{"ErrCodeTaken", func() map[string]string { return adminHeaders(c) }, js(`{"domain": "alpha.clinic.test", "name": "Y", "code": "kids"}`), 400},
		{"ErrNoDomain", func() map[string]string { return adminHeaders(c) }, js(`{"name": "No Domain"}`), 400},
		{"ErrBadDomain", func() map[string]string { return adminHeaders(c) }, js(`{"domain": "bad domain", "name": "N"}`), 400},
		{"ErrUserToken", func() map[string]string { return userHeaders(c, mustSSO(t, e, c, "400", "d1", "Doc", "One").Token) }, js(`{"domain": "a.b.c", "name": "N"}`), 401},
		{"ErrAccountCodeOnly", func() map[string]string { return acctHeaders(c) }, js(`{"domain": "a.b.c", "name": "N"}`), 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: tc.headers(), JSON: tc.body}), tc.status, tc.status)
		})
	}
}

// roomList is GET /rooms' answer: a page, with DataTables' counts when
// asked in its form.
type roomList struct {
	Data            []client.RoomListItem `json:"data"`
	TotalCount      int                   `json:"total_count"`
	Draw            int                   `json:"draw"`
	RecordsTotal    int                   `json:"recordsTotal"`
	RecordsFiltered int                   `json:"recordsFiltered"`
}

// roomLink is a link of POST /users/{id}/rooms' answer.
type roomLink struct {
	Code      string           `json:"code"`
	Default   bool             `json:"default"`
	AddedTime client.MongoDate `json:"added_time"`
}

// roomProviderDetail is GET /rooms/{code}/providers/{id}'s answer.
type roomProviderDetail struct {
	ID                  string  `json:"id"`
	Email               *string `json:"email"`
	EducationalTraining string  `json:"educational_training"`
}

func TestRooms_ReadUpdateDelete(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	mustRoom(t, e, c, js(`{"domain": "alpha.clinic.test", "name": "Main", "code": "main"}`))
	put := func(body any) *testenv.Resp {
		return e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(c), JSON: body})
	}
	getRoom := func(t *testing.T) client.RoomDetail {
		t.Helper()
		return dataOf[client.RoomDetail](t, e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(c)}))
	}
	providers := func(t *testing.T) []client.RoomProvider {
		t.Helper()
		return dataOf[[]client.RoomProvider](t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers", Header: acctHeaders(c)}))
	}

	// A page of the list, and the DataTables form of it.
	t.Run("OKListAndPage", func(t *testing.T) {
		for i := range 4 {
			mustRoom(t, e, c, js(`{"domain": "alpha.clinic.test", "name": "Extra `+string(rune('A'+i))+`"}`))
		}
		page := decode[roomList](t, e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("page", "2", "limit", "2")}))
		if len(page.Data) != 2 || page.TotalCount != 5 {
			t.Fatalf("%d rooms of %d", len(page.Data), page.TotalCount)
		}
		dt := decode[roomList](t, e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("draw", "3", "start", "0", "length", "10",
			"search[value]", "extra", "order[0][column]", "0", "order[0][dir]", "desc", "columns[0][data]", "name")}))
		if dt.Draw != 3 || dt.RecordsTotal != 5 || dt.RecordsFiltered != 4 || len(dt.Data) != 4 || dt.Data[0].Name != "Extra D" {
			t.Fatalf("%+v", dt)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("draw", "1", "order[0][column]", "0", "columns[0][data]", "password")}), 400, 400)
	})
	// Every part of a room changes in one update; the form spelling of
	// the nested names too.
	t.Run("OKUpdateEveryPart", func(t *testing.T) {
		d := dataOf[client.RoomDetail](t, put(js(`{
			"name": "Main Room", "subtitle": "Walk in", "description": "Our main room", "public_access_room": true,
			"visits": {"walkin": {"enabled": false}, "appointment": {"enabled": true}},
			"auth": {"guest": {"type": 200, "log_in": {"enabled": false}}},
			"payment": {"currency": "eur", "consultations": [{"description": "Long", "duration": 45, "amount": 80, "charge": true}]},
			"specialties": [{"code": "derm", "name": "Dermatology", "duration": 30}],
			"operation_settings": {"close_msg": "Back soon", "close_message": {"html": "<b>Back soon</b>"},
				"closed_days": ["Sunday"], "default_timezone": "America/New_York", "is_open_all_time": false, "open_time": "08:00", "close_time": "18:00"},
			"queue_capacity": 5}`)))
		op := d.OperationSettings
		if d.Name != "Main Room" || d.Subtitle != "Walk in" || !d.PublicAccessRoom || d.Payment.PaymentCurrency != "EUR" ||
			d.QueueCapacity == nil || *d.QueueCapacity != 5 {
			t.Errorf("%+v", d)
		}
		if diff := cmp.Diff([]client.Consultation{{Id: "1", Description: "Long", Duration: 45, Amount: 80, Charge: true, Slots: 1}}, d.Payment.Consultations); diff != "" {
			t.Errorf("consultations (-want +got):\n%s", diff)
		}
		if op.DefaultTimezone != "America/New_York" || len(op.ClosedDays) != 1 || op.ClosedDays[0] != "sunday" || op.CloseMessage.Html != "<b>Back soon</b>" {
			t.Errorf("operation settings %+v", op)
		}
		d = dataOf[client.RoomDetail](t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(c), Form: q("visits[walkin][enabled]", "1", "paymentCurrency", "usd")}))
		if !d.Visits.Walkin.Enabled || d.Payment.Currency != "USD" {
			t.Fatalf("the form's: walk-ins %v, currency %q", d.Visits.Walkin.Enabled, d.Payment.Currency)
		}
	})
	// is_closed_now follows the schedule in the room's time zone.
	t.Run("OKClosedNowInRoomZone", func(t *testing.T) {
		// The clock starts Monday 2026-03-02 09:00 UTC = 04:00 in New York: before 08:00.
		if op := getRoom(t).OperationSettings; !op.IsClosedNow || !op.IsScheduledClosed {
			t.Fatalf("before opening: %+v", op)
		}
		e.Clock.Advance(5 * time.Hour) // 09:00 in New York
		if op := getRoom(t).OperationSettings; op.IsClosedNow {
			t.Fatalf("open hours: %+v", op)
		}
		dataOf[client.RoomDetail](t, put(js(`{"operation_settings": {"is_closed": true}}`)))
		if op := getRoom(t).OperationSettings; !op.IsClosedNow || op.IsScheduledClosed {
			t.Fatalf("closed by hand: %+v", op)
		}
		dataOf[client.RoomDetail](t, put(js(`{"operation_settings": {"is_closed": false}}`)))
		e.Clock.Advance(6 * 24 * time.Hour) // Sunday
		if op := getRoom(t).OperationSettings; !op.IsClosedNow {
			t.Fatalf("closed day: %+v", op)
		}
		e.Clock.Advance(24 * time.Hour)
	})
	// The appointment rules: the defaults, a change of some fields that
	// keeps the others, and the form spelling.
	t.Run("OKAppointmentSettings", func(t *testing.T) {
		rules := func(res *testenv.Resp) client.AppointmentSettings {
			t.Helper()
			d := dataOf[client.RoomDetail](t, res)
			if d.AppointmentSettings == nil {
				t.Fatalf("no appointment_settings: %s", res.Raw)
			}
			return *d.AppointmentSettings
		}
		for _, step := range []struct {
			what string
			res  func() *testenv.Resp
			want client.AppointmentSettings
		}{
			{"the defaults", func() *testenv.Resp { return e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(c)}) },
				client.AppointmentSettings{JoinBeforeMinutes: 10, RefundPercent: 100, ReminderMinutes: []int{1440, 15}}},
			{"two fields set", func() *testenv.Resp {
				return put(js(`{"appointment_settings": {"cancel_hours": 24, "reminder_minutes": [60]}}`))
			}, client.AppointmentSettings{JoinBeforeMinutes: 10, CancelHours: 24, RefundPercent: 100, ReminderMinutes: []int{60}}},
			{"the form's", func() *testenv.Resp {
				return e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(c), Form: q("appointment_settings", `{"refund_percent": 50}`)})
			}, client.AppointmentSettings{JoinBeforeMinutes: 10, CancelHours: 24, RefundPercent: 50, ReminderMinutes: []int{60}}},
		} {
			if diff := cmp.Diff(step.want, rules(step.res())); diff != "" {
				t.Errorf("%s (-want +got):\n%s", step.what, diff)
			}
		}
	})
	// Each update a room refuses is a 400, and changes nothing.
	t.Run("ErrInvalidUpdate", func(t *testing.T) {
		before := getRoom(t)
		for _, body := range []string{
			`{"appointment_settings": {"refund_percent": 101}}`, `{"appointment_settings": {"cancel_hours": -1}}`,
			`{"appointment_settings": {"reminder_minutes": [0]}}`, `{"appointment_settings": "soon"}`,
			`{"name": " "}`, `{"payment": {"currency": "dollars"}}`, `{"payment": {"consultations": []}}`,
			`{"payment": {"consultations": [{"description": "x", "duration": 0}]}}`,
			`{"operation_settings": {"closed_days": ["someday"]}}`, `{"operation_settings": {"default_timezone": "Nowhere/Land"}}`,
			`{"operation_settings": {"open_time": "25:00"}}`, `{"auth": {"guest": {"type": 400}}}`,
			`{"queue_capacity": 0}`, `{"specialties": "not json"}`,
		} {
			wantErr(t, put(js(body)), 400, 400)
		}
		if diff := cmp.Diff(before, getRoom(t)); diff != "" {
			t.Fatalf("a refused update changed the room (-before +after):\n%s", diff)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/nope", Header: acctHeaders(c)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/nope", Header: adminHeaders(c), JSON: js(`{"name": "x"}`)}), 404, 404)
	})
	// Providers, links and detail.
	t.Run("OKProvidersAndLinks", func(t *testing.T) {
		doc := mustSSO(t, e, c, "400", "d1", "Dana", "Zed")
		doc2 := mustSSO(t, e, c, "400", "d2", "Abe", "Able")
		pat := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		link := func(t *testing.T, user string, body any) *testenv.Resp {
			t.Helper()
			return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + user + "/rooms", Header: adminHeaders(c), JSON: body})
		}
		for _, u := range []string{doc.UserID, doc2.UserID, pat.UserID} {
			dataOf[[]roomLink](t, link(t, u, js(`{"code": "main"}`)))
		}
		wantErr(t, link(t, doc.UserID, js(`{"code": "kids-none", "default": true}`)), 404, 404)
		mustRoom(t, e, c, js(`{"domain": "alpha.clinic.test", "name": "Second", "code": "second"}`))
		links := dataOf[[]roomLink](t, link(t, doc.UserID, js(`{"code": "second", "default": true}`)))
		if len(links) != 2 || links[0].Code != "second" || !links[0].Default || links[0].AddedTime.Sec == 0 {
			t.Fatalf("links %+v", links)
		}
		prof := dataOf[struct {
			Rooms []client.RoomLink `json:"rooms"`
		}](t, e.Do(testenv.Req{Path: "/api_v3/users/" + doc.UserID, Header: adminHeaders(c)}))
		if len(prof.Rooms) != 2 || !prof.Rooms[0].Default {
			t.Fatalf("profile rooms %+v", prof.Rooms)
		}
		if l := providers(t); len(l) != 2 || l[0].LastName != "Able" || l[0].Status != false || l[0].ShortBio != false {
			t.Fatalf("providers %+v", l)
		}
		one := dataOf[roomProviderDetail](t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers/" + doc.UserID, Header: acctHeaders(c)}))
		if one.Email == nil || one.EducationalTraining != "" {
			t.Fatalf("provider %+v", one)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers/" + pat.UserID, Header: acctHeaders(c)}), 404, 404)
		// A provider of another room is not this room's; one hidden is in
		// neither the list nor read alone.
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/second/providers/" + doc2.UserID, Header: acctHeaders(c)}), 404, 404)
		if got := dataOf[roomProviderDetail](t, e.Do(testenv.Req{Path: "/api_v3/rooms/second/providers/" + doc.UserID, Header: acctHeaders(c)})); got.ID != doc.UserID {
			t.Fatalf("provider %+v", got)
		}
		hide := func(hidden int) {
			t.Helper()
			if _, err := e.Store.DB().Exec(e.Store.Rebind("UPDATE users SET is_hidden = ? WHERE id = ?"), hidden, doc2.UserID); err != nil {
				t.Fatal(err)
			}
		}
		hide(1)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers/" + doc2.UserID, Header: acctHeaders(c)}), 404, 404)
		if l := providers(t); len(l) != 1 || l[0].Id != doc.UserID {
			t.Fatalf("hidden provider listed: %+v", l)
		}
		hide(0)
		if d := getRoom(t); len(d.ProviderIds) != 2 || len(strings.Split(d.Users, ",")) != 3 {
			t.Fatalf("provider_ids %v, users %q", d.ProviderIds, d.Users)
		}
		res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/users/" + doc2.UserID + "/rooms/main", Header: adminHeaders(c)})
		if res.Status != 200 || string(res.Raw) != "{\"data\":{}}\n" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/users/" + doc2.UserID + "/rooms/main", Header: adminHeaders(c)}), 404, 404)
		if l := providers(t); len(l) != 1 {
			t.Fatalf("after unlink: %+v", l)
		}
	})
	t.Run("OKDelete", func(t *testing.T) {
		mustRoom(t, e, c, js(`{"domain": "alpha.clinic.test", "name": "Temp", "code": "temp"}`))
		if res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/rooms/temp", Header: adminHeaders(c)}); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/temp", Header: acctHeaders(c)}), 404, 404)
	})
	// Another clinic sees nothing of this one's rooms.
	t.Run("ErrOtherClinic", func(t *testing.T) {
		b := e.NewClinic("beta", true)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(b)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(b), JSON: js(`{"name": "Mine"}`)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/rooms/main", Header: adminHeaders(b)}), 404, 404)
		if page := decode[roomList](t, e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(b)})); len(page.Data) != 0 {
			t.Fatalf("%+v", page.Data)
		}
	})
}
