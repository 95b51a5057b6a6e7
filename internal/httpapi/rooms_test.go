package httpapi_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/testenv"
)

func TestRooms_Create(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)

	// OK with defaults and a generated code.
	t.Run("OKDefaults", func(t *testing.T) {
		d := mustRoom(t, e, c, map[string]any{"domain": "Alpha.Clinic.Test", "name": "Main Room"})
		if !regexp.MustCompile(`^[a-z0-9]{5}$`).MatchString(d["code"].(string)) || d["slug"] != "main-room" || d["domain"] != "alpha.clinic.test" {
			t.Fatalf("%v", d)
		}
		pay := d["payment"].(map[string]any)
		cons := pay["consultations"].([]any)[0].(map[string]any)
		if pay["currency"] != "USD" || pay["paymentCurrency"] != "USD" || cons["description"] != "15-min Consultation" ||
			cons["duration"].(float64) != 15 || cons["amount"].(float64) != 0 || cons["group"] != false || cons["charge"] != false || cons["slots"].(float64) != 1 {
			t.Fatalf("payment %v", pay)
		}
		v := d["visits"].(map[string]any)
		g := d["auth"].(map[string]any)["guest"].(map[string]any)
		if v["walkin"].(map[string]any)["enabled"] != true || v["appointment"].(map[string]any)["enabled"] != false ||
			g["type"].(float64) != 600 || g["log_in"].(map[string]any)["enabled"] != true {
			t.Fatalf("visits %v auth %v", v, g)
		}
		if d["operation_settings"].(map[string]any)["is_closed_now"] != false {
			t.Fatal("a new room is open")
		}
	})
	// OK with code and slug, as a form.
	t.Run("OKCodeAndSlugAsForm", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms.json", Header: adminHeaders(c), Form: q("domain", "alpha.clinic.test", "name", "Kids", "code", "kids", "slug", "children")})
		if res.Status != 200 || res.Data()["code"] != "kids" || res.Data()["slug"] != "children" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
	})
	t.Run("ErrSlugTakenInDomain", func(t *testing.T) {
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: adminHeaders(c), JSON: map[string]any{"domain": "alpha.clinic.test", "name": "X", "slug": "children"}})
		wantErr(t, res, 400, 400)
		if res.Body["message"] != "In domain 'alpha.clinic.test' slug 'children' already exists." {
			t.Fatalf("%s", res.Raw)
		}
		// The same slug in another domain is fine; a generated slug steps around a taken one.
		mustRoom(t, e, c, map[string]any{"domain": "other.clinic.test", "name": "X", "slug": "children"})
		d := mustRoom(t, e, c, map[string]any{"domain": "alpha.clinic.test", "name": "Main Room"})
		if !strings.HasPrefix(d["slug"].(string), "main-room-") {
			t.Fatalf("slug %v", d["slug"])
		}
	})
	t.Run("ErrCodeTaken", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: adminHeaders(c), JSON: map[string]any{"domain": "alpha.clinic.test", "name": "Y", "code": "kids"}}), 400, 400)
	})
	t.Run("ErrMissing", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: adminHeaders(c), JSON: map[string]any{"name": "No Domain"}}), 400, 400)
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: adminHeaders(c), JSON: map[string]any{"domain": "bad domain", "name": "N"}}), 400, 400)
	})
	t.Run("ErrUserToken", func(t *testing.T) {
		s := mustSSO(t, e, c, "400", "d1", "Doc", "One")
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: userHeaders(c, s.Token), JSON: map[string]any{"domain": "a.b.c", "name": "N"}}), 401, 401)
	})
	t.Run("ErrAccountCodeOnly", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/rooms", Header: acctHeaders(c), JSON: map[string]any{"domain": "a.b.c", "name": "N"}}), 401, 401)
	})
}

func TestRooms_ReadUpdateDelete(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	mustRoom(t, e, c, map[string]any{"domain": "alpha.clinic.test", "name": "Main", "code": "main"})
	put := func(body map[string]any) *testenv.Resp {
		return e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(c), JSON: body})
	}

	// List, page and DataTables.
	t.Run("OKListAndPage", func(t *testing.T) {
		for i := 0; i < 4; i++ {
			mustRoom(t, e, c, map[string]any{"domain": "alpha.clinic.test", "name": "Extra " + string(rune('A'+i))})
		}
		res := e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("page", "2", "limit", "2")})
		if len(res.List()) != 2 || res.Body["total_count"].(float64) != 5 {
			t.Fatalf("%s", res.Raw)
		}
		res = e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("draw", "3", "start", "0", "length", "10",
			"search[value]", "extra", "order[0][column]", "0", "order[0][dir]", "desc", "columns[0][data]", "name")})
		l := res.List()
		if res.Body["draw"].(float64) != 3 || res.Body["recordsTotal"].(float64) != 5 || res.Body["recordsFiltered"].(float64) != 4 ||
			len(l) != 4 || l[0]["name"] != "Extra D" {
			t.Fatalf("%s", res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(c), Query: q("draw", "1", "order[0][column]", "0", "columns[0][data]", "password")}), 400, 400)
	})
	// OK update every part.
	t.Run("OKUpdateEveryPart", func(t *testing.T) {
		res := put(map[string]any{
			"name": "Main Room", "subtitle": "Walk in", "description": "Our main room", "public_access_room": true,
			"visits":      map[string]any{"walkin": map[string]any{"enabled": false}, "appointment": map[string]any{"enabled": true}},
			"auth":        map[string]any{"guest": map[string]any{"type": 200, "log_in": map[string]any{"enabled": false}}},
			"payment":     map[string]any{"currency": "eur", "consultations": []any{map[string]any{"description": "Long", "duration": 45, "amount": 80, "charge": true}}},
			"specialties": []any{map[string]any{"code": "derm", "name": "Dermatology", "duration": 30}},
			"operation_settings": map[string]any{"close_msg": "Back soon", "close_message": map[string]any{"html": "<b>Back soon</b>"},
				"closed_days": []any{"Sunday"}, "default_timezone": "America/New_York", "is_open_all_time": false, "open_time": "08:00", "close_time": "18:00"},
			"queue_capacity": 5,
		})
		if res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		d := res.Data()
		op := d["operation_settings"].(map[string]any)
		cons := d["payment"].(map[string]any)["consultations"].([]any)[0].(map[string]any)
		if d["name"] != "Main Room" || d["subtitle"] != "Walk in" || d["public_access_room"] != true || cons["id"] != "1" || cons["amount"].(float64) != 80 ||
			d["payment"].(map[string]any)["paymentCurrency"] != "EUR" || op["default_timezone"] != "America/New_York" ||
			op["closed_days"].([]any)[0] != "sunday" || op["close_message"].(map[string]any)["html"] != "<b>Back soon</b>" || d["queue_capacity"].(float64) != 5 {
			t.Fatalf("%s", res.Raw)
		}
		// The form spelling of the same fields.
		res = e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(c), Form: q("visits[walkin][enabled]", "1", "paymentCurrency", "usd")})
		if d := res.Data(); d["visits"].(map[string]any)["walkin"].(map[string]any)["enabled"] != true || d["payment"].(map[string]any)["currency"] != "USD" {
			t.Fatalf("%s", res.Raw)
		}
	})
	// Is_closed_now follows the schedule in the room's time zone.
	t.Run("OKClosedNowInRoomZone", func(t *testing.T) {
		// The clock starts Monday 2026-03-02 09:00 UTC = 04:00 in New York: before 08:00.
		get := func() map[string]any {
			return e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(c)}).Data()["operation_settings"].(map[string]any)
		}
		if op := get(); op["is_closed_now"] != true || op["is_scheduled_closed"] != true {
			t.Fatalf("before opening: %v", op)
		}
		e.Clock.Advance(5 * time.Hour) // 09:00 in New York
		if op := get(); op["is_closed_now"] != false {
			t.Fatalf("open hours: %v", op)
		}
		put(map[string]any{"operation_settings": map[string]any{"is_closed": true}})
		if op := get(); op["is_closed_now"] != true || op["is_scheduled_closed"] != false {
			t.Fatalf("closed by hand: %v", op)
		}
		put(map[string]any{"operation_settings": map[string]any{"is_closed": false}})
		e.Clock.Advance(6 * 24 * time.Hour) // Sunday
		if op := get(); op["is_closed_now"] != true {
			t.Fatalf("closed day: %v", op)
		}
		e.Clock.Advance(24 * time.Hour)
	})
	// The appointment rules: the defaults, a change of one field that
	// keeps the others, and the form spelling.
	t.Run("OKAppointmentSettings", func(t *testing.T) {
		rules := func(res *testenv.Resp) map[string]any {
			t.Helper()
			if res.Status != 200 {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
			return res.Data()["appointment_settings"].(map[string]any)
		}
		got := rules(e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(c)}))
		if got["join_before_minutes"].(float64) != 10 || got["cancel_hours"].(float64) != 0 || got["refund_percent"].(float64) != 100 || len(got["reminder_minutes"].([]any)) != 2 {
			t.Fatalf("the defaults: %v", got)
		}
		got = rules(put(map[string]any{"appointment_settings": map[string]any{"cancel_hours": 24, "reminder_minutes": []any{60}}}))
		if got["cancel_hours"].(float64) != 24 || got["join_before_minutes"].(float64) != 10 || got["refund_percent"].(float64) != 100 || len(got["reminder_minutes"].([]any)) != 1 {
			t.Fatalf("after setting two fields: %v", got)
		}
		got = rules(e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(c), Form: q("appointment_settings", `{"refund_percent": 50}`)}))
		if got["refund_percent"].(float64) != 50 || got["cancel_hours"].(float64) != 24 {
			t.Fatalf("the form's: %v", got)
		}
	})
	t.Run("ErrInvalidUpdate", func(t *testing.T) {
		for _, body := range []map[string]any{
			{"appointment_settings": map[string]any{"refund_percent": 101}}, {"appointment_settings": map[string]any{"cancel_hours": -1}},
			{"appointment_settings": map[string]any{"reminder_minutes": []any{0}}}, {"appointment_settings": "soon"},
			{"name": " "}, {"payment": map[string]any{"currency": "dollars"}}, {"payment": map[string]any{"consultations": []any{}}},
			{"payment": map[string]any{"consultations": []any{map[string]any{"description": "x", "duration": 0}}}},
			{"operation_settings": map[string]any{"closed_days": []any{"someday"}}}, {"operation_settings": map[string]any{"default_timezone": "Nowhere/Land"}},
			{"operation_settings": map[string]any{"open_time": "25:00"}}, {"auth": map[string]any{"guest": map[string]any{"type": 400}}},
			{"queue_capacity": 0}, {"specialties": "not json"},
		} {
			wantErr(t, put(body), 400, 400)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/nope", Header: acctHeaders(c)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/nope", Header: adminHeaders(c), JSON: map[string]any{"name": "x"}}), 404, 404)
	})
	// Providers, links and detail.
	t.Run("OKProvidersAndLinks", func(t *testing.T) {
		doc := mustSSO(t, e, c, "400", "d1", "Dana", "Zed")
		doc2 := mustSSO(t, e, c, "400", "d2", "Abe", "Able")
		pat := mustSSO(t, e, c, "200", "p1", "Pat", "One")
		for _, u := range []string{doc.UserID, doc2.UserID, pat.UserID} {
			res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + u + "/rooms", Header: adminHeaders(c), Form: q("code", "main")})
			if res.Status != 200 {
				t.Fatalf("%d %s", res.Status, res.Raw)
			}
		}
		res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + doc.UserID + "/rooms", Header: adminHeaders(c), JSON: map[string]any{"code": "kids-none", "default": true}})
		wantErr(t, res, 404, 404)
		mustRoom(t, e, c, map[string]any{"domain": "alpha.clinic.test", "name": "Second", "code": "second"})
		res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + doc.UserID + "/rooms", Header: adminHeaders(c), JSON: map[string]any{"code": "second", "default": true}})
		links := res.List()
		if len(links) != 2 || links[0]["code"] != "second" || links[0]["default"] != true || links[0]["added_time"].(map[string]any)["sec"].(float64) == 0 {
			t.Fatalf("%s", res.Raw)
		}
		prof := e.Do(testenv.Req{Path: "/api_v3/users/" + doc.UserID, Header: adminHeaders(c)}).Data()
		if rooms := prof["rooms"].([]any); len(rooms) != 2 || rooms[0].(map[string]any)["default"] != true {
			t.Fatalf("profile rooms %v", prof["rooms"])
		}
		res = e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers", Header: acctHeaders(c)})
		l := res.List()
		if len(l) != 2 || l[0]["last_name"] != "Able" || l[0]["status"] != false || l[0]["short_bio"] != false {
			t.Fatalf("%s", res.Raw)
		}
		res = e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers/" + doc.UserID, Header: acctHeaders(c)})
		if res.Status != 200 || res.Data()["email"] == nil || res.Data()["educational_training"] != "" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers/" + pat.UserID, Header: acctHeaders(c)}), 404, 404)
		// A provider of another room is not this room's; one hidden is in
		// neither the list nor read alone.
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/second/providers/" + doc2.UserID, Header: acctHeaders(c)}), 404, 404)
		if got := e.Do(testenv.Req{Path: "/api_v3/rooms/second/providers/" + doc.UserID, Header: acctHeaders(c)}); got.Status != 200 || got.Data()["id"] != doc.UserID {
			t.Fatalf("%d %s", got.Status, got.Raw)
		}
		if _, err := e.Store.DB().Exec(e.Store.Rebind("UPDATE users SET is_hidden = 1 WHERE id = ?"), doc2.UserID); err != nil {
			t.Fatal(err)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers/" + doc2.UserID, Header: acctHeaders(c)}), 404, 404)
		if l := e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers", Header: acctHeaders(c)}).List(); len(l) != 1 || l[0]["id"] != doc.UserID {
			t.Fatalf("hidden provider listed: %v", l)
		}
		if _, err := e.Store.DB().Exec(e.Store.Rebind("UPDATE users SET is_hidden = 0 WHERE id = ?"), doc2.UserID); err != nil {
			t.Fatal(err)
		}
		d := e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(c)}).Data()
		if len(d["provider_ids"].([]any)) != 2 || len(strings.Split(d["users"].(string), ",")) != 3 {
			t.Fatalf("%v %v", d["provider_ids"], d["users"])
		}
		res = e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/users/" + doc2.UserID + "/rooms/main", Header: adminHeaders(c)})
		if res.Status != 200 || string(res.Raw) != "{\"data\":{}}\n" {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/users/" + doc2.UserID + "/rooms/main", Header: adminHeaders(c)}), 404, 404)
		if l := e.Do(testenv.Req{Path: "/api_v3/rooms/main/providers", Header: acctHeaders(c)}).List(); len(l) != 1 {
			t.Fatalf("after unlink: %v", l)
		}
	})
	// Delete.
	t.Run("OKDelete", func(t *testing.T) {
		mustRoom(t, e, c, map[string]any{"domain": "alpha.clinic.test", "name": "Temp", "code": "temp"})
		if res := e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/rooms/temp", Header: adminHeaders(c)}); res.Status != 200 {
			t.Fatalf("%d %s", res.Status, res.Raw)
		}
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/temp", Header: acctHeaders(c)}), 404, 404)
	})
	// Another clinic sees nothing.
	t.Run("ErrOtherClinic", func(t *testing.T) {
		b := e.NewClinic("beta", true)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/rooms/main", Header: acctHeaders(b)}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Method: "PUT", Path: "/api_v3/rooms/main", Header: adminHeaders(b), JSON: map[string]any{"name": "Mine"}}), 404, 404)
		wantErr(t, e.Do(testenv.Req{Method: "DELETE", Path: "/api_v3/rooms/main", Header: adminHeaders(b)}), 404, 404)
		if l := e.Do(testenv.Req{Path: "/api_v3/rooms", Header: acctHeaders(b)}).List(); len(l) != 0 {
			t.Fatalf("%v", l)
		}
	})
}
