package httpapi_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"teleclinic/internal/testenv"
)

func TestEMR_ReadWrite(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	put := func(token, user, name string, body map[string]any) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + user + "/emr/" + name, Header: userHeaders(s.c, token), JSON: body})
	}
	get := func(token, user string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/users/" + user + "/emr", Header: userHeaders(s.c, token)})
	}

	// Never written: all seven, empty, unmodified.
	res := get(s.pat.Token, "-")
	if res.Status != 200 || len(res.Data()) != 7 {
		t.Fatalf("%s", res.Raw)
	}
	if c := res.Data()["conditions"].(map[string]any); c["modified"] != nil || len(c["data"].([]any)) != 0 {
		t.Fatalf("%v", c)
	}
	if sh := res.Data()["social_history"].(map[string]any); len(sh["data"].(map[string]any)) != 0 {
		t.Fatalf("%v", sh)
	}

	res = put(s.pat.Token, "-", "family_conditions", map[string]any{"data_not_reported": false,
		"data": []any{map[string]any{"condition": "Diabetes", "relations": []any{"mother", "uncle"}}}})
	if res.Status != 200 || res.Data()["modified_by"].(map[string]any)["id"] != s.pat.UserID || res.Data()["data_not_reported"] != false {
		t.Fatalf("%s", res.Raw)
	}
	// A form client sends data as JSON text and the boolean as 1.
	res = e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/emr/social_history", Header: userHeaders(s.c, s.pat.Token),
		Form: q("data", `{"marital_status":"married","num_kids":"2","occupation":"nurse"}`, "data_not_reported", "0")})
	if res.Status != 200 || res.Data()["data"].(map[string]any)["num_kids"].(float64) != 2 {
		t.Fatalf("%s", res.Raw)
	}
	if res := put(s.pat.Token, "-", "allergies", map[string]any{"data_not_reported": true, "data": []any{}}); res.Status != 200 || res.Data()["data_not_reported"] != true {
		t.Fatalf("%s", res.Raw)
	}

	// Wrong shapes name the field.
	t.Run("ErrWrongShape", func(t *testing.T) {
		for _, c := range []struct {
			name string
			body map[string]any
			want string
		}{
			{"conditions", map[string]any{"data_not_reported": false, "data": map[string]any{"condition": "x"}}, "data must be an array"},
			{"conditions", map[string]any{"data_not_reported": false, "data": []any{map[string]any{"condition": 3}}}, "data[0].condition"},
			{"conditions", map[string]any{"data_not_reported": false, "data": []any{map[string]any{"illness": "x"}}}, "data[0].illness"},
			{"family_conditions", map[string]any{"data_not_reported": false, "data": []any{map[string]any{"condition": "x", "relations": "mother"}}}, "data[0].relations"},
			{"social_history", map[string]any{"data_not_reported": false, "data": []any{}}, "data must be an object"},
			{"social_history", map[string]any{"data_not_reported": false, "data": map[string]any{"num_kids": 2.5}}, "data.num_kids"},
			{"health_habits", map[string]any{"data_not_reported": false, "data": map[string]any{"smoking": true}}, "data.smoking"},
			{"medications", map[string]any{"data": []any{}}, "data_not_reported"},
			{"medications", map[string]any{"data_not_reported": false}, "data is required"},
		} {
			res := put(s.pat.Token, "-", c.name, c.body)
			wantErr(t, res, 400, 400)
			if msg, _ := res.Body["message"].(string); !strings.Contains(msg, c.want) {
				t.Errorf("%s %v: %q does not name %q", c.name, c.body, msg, c.want)
			}
		}
		wantErr(t, put(s.pat.Token, "-", "hobbies", map[string]any{"data_not_reported": false, "data": []any{}}), 404, 404)
	})

	// Who may read and write.
	t.Run("ErrNotAllowed", func(t *testing.T) {
		wantErr(t, get(s.pat2.Token, s.pat.UserID), 404, 404)
		wantErr(t, get(s.doc.Token, s.pat.UserID), 403, 403)
		wantErr(t, put(s.doc.Token, s.pat.UserID, "medications", map[string]any{"data_not_reported": false, "data": []any{}}), 403, 403)
		s.withVisit(t)
		if res := get(s.doc.Token, s.pat.UserID); res.Status != 200 {
			t.Fatal(res.Status)
		}
		res := put(s.doc.Token, s.pat.UserID, "medications", map[string]any{"data_not_reported": false, "data": []any{map[string]any{"name": "Metformin 500 mg"}}})
		if res.Status != 200 {
			t.Fatalf("%s", res.Raw)
		}
		got := get(s.pat.Token, "-").Data()["medications"].(map[string]any)
		if got["modified_by"].(map[string]any)["id"] != s.doc.UserID || got["data"].([]any)[0].(map[string]any)["name"] != "Metformin 500 mg" {
			t.Fatalf("%v", got)
		}
		if res := get("", s.pat.UserID); res.Status != 401 {
			t.Fatal(res.Status)
		}
		if res := e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/emr", Header: adminHeaders(s.c)}); res.Status != 200 {
			t.Fatal(res.Status)
		}
		beta := e.NewClinic("beta", true)
		wantErr(t, e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/emr", Header: adminHeaders(beta)}), 404, 404)
		var n int
		e.FlushAudits()
		_ = e.Store.DB().QueryRow("SELECT COUNT(*) FROM audit WHERE action IN ('emr.read', 'emr.write')").Scan(&n)
		if n < 8 {
			t.Fatalf("%d emr audit entries", n)
		}
	})

	// Schema.
	t.Run("OKSchema", func(t *testing.T) {
		res := e.Do(testenv.Req{Path: "/api_v3/emr/schema", Header: acctHeaders(s.c)})
		fam := res.Data()["family_conditions"].(map[string]any)
		items := fam["items"].(map[string]any)
		if res.Status != 200 || len(res.Data()) != 7 || fam["type"] != "array" || items["additionalProperties"] != false ||
			items["properties"].(map[string]any)["relations"].(map[string]any)["type"] != "array" {
			t.Fatalf("%s", res.Raw)
		}
	})
}

func TestHealth_DevicesAndReadings(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, JSON: map[string]any{"device_id": "BP-1", "device_name": "Cuff", "type": "vendorD_bp_bp100"}})
	if res.Status != 200 || res.Data()["device_id"] != "BP-1" || res.Data()["user_id"] != s.pat.UserID || res.Data()["type"] != "vendorD_bp_bp100" {
		t.Fatalf("%s", res.Raw)
	}
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, Form: q("device_id", "ENV-1", "device_name", "Room", "type", "vendorB_health")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, Form: q("device_id", "X", "device_name", "X", "type", "toaster")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, Form: q("device_name", "X", "type", "vendorB_health")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/devices", Header: userHeaders(s.c, s.pat2.Token), Form: q("device_id", "X", "device_name", "X", "type", "vendorB_health")}), 404, 404)

	now := e.Clock.Now().Unix()
	base := func(dataType, class, typ, device string, kv ...any) map[string]any {
		m := map[string]any{"type": typ, "date": "2026-03-02", "time": now - 60, "device_id": device, "data_type": dataType, "data_class": class}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	post := func(body map[string]any) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: h, JSON: body})
	}
	res = post(base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128, "lp", 82, "bp_unit", "mmHg"))
	if res.Status != 200 || res.Data()["status"] != "saved" || res.Data()["id"] == "" {
		t.Fatalf("%s", res.Raw)
	}
	for _, good := range []map[string]any{
		base("range", "environment", "vendorB_health", "ENV-1", "range", 2, "range_unit", "cm"),
		base("range", "environment", "vendorB_health", "ENV-1", "range", "400", "range_unit", "cm"),
		base("movement", "environment", "vendorB_health", "ENV-1", "movement", 1),
		base("movement", "environment", "vendorB_health", "ENV-1", "movement", "0"),
		base("noise", "environment", "vendorB_health", "ENV-1", "noise", 0.35, "noise_unit", "rel"),
		base("humidity", "environment", "vendorB_health", "ENV-1", "humidity", 45, "humidity_unit", "percentage"),
		base("gas", "environment", "vendorB_health", "ENV-1", "gas", "CO2 normal"),
	} {
		if res := post(good); res.Status != 200 {
			t.Errorf("%v: %s", good, res.Raw)
		}
	}
	// A form client: every value a string.
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: h, Form: q("type", "vendorD_bp_bp100", "date", "2026-03-02",
		"time", "1772441000", "device_id", "BP-1", "data_type", "bp", "data_class", "body", "hp", "16", "lp", "10", "bp_unit", "kPa")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	for _, c := range []struct {
		body map[string]any
		want string
	}{
		{base("range", "environment", "vendorB_health", "ENV-1", "range", 1, "range_unit", "cm"), "range must be from 2 to 400"},
		{base("range", "environment", "vendorB_health", "ENV-1", "range", 401, "range_unit", "cm"), "range must be from 2 to 400"},
		{base("range", "environment", "vendorB_health", "ENV-1", "range", 20, "range_unit", "m"), "range_unit"},
		{base("movement", "environment", "vendorB_health", "ENV-1", "movement", 2), "movement must be 0 or 1"},
		{base("noise", "environment", "vendorB_health", "ENV-1", "noise", 1.5), "noise must be from 0 to 1"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128, "bp_unit", "mmHg"), "lp is required"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 80, "lp", 120, "bp_unit", "mmHg"), "higher than lp"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128.5, "lp", 80, "bp_unit", "mmHg"), "hp must be a whole number"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128, "lp", 80), "bp_unit is required"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128, "lp", 80, "bp_unit", "mmHg", "weight", 70), "weight does not belong"},
		{base("bp", "environment", "vendorD_bp_bp100", "BP-1", "hp", 128, "lp", 80, "bp_unit", "mmHg"), "data_class must be body"},
		{base("temperature_body", "body", "vendorD_bp_bp100", "BP-1", "temperature_body", "98.6", "temperature_unit", "cel"), "temperature_body must be from 25 to 45 cel"},
		{base("bp", "body", "vendorD_bp_bp100", "NOPE", "hp", 128, "lp", 80, "bp_unit", "mmHg"), "not registered"},
		{base("bp", "body", "vendorA_scale_hs2", "BP-1", "hp", 128, "lp", 80, "bp_unit", "mmHg"), "registered type"},
		{base("sleep", "body", "vendorD_bp_bp100", "BP-1"), "data_type is required"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128, "lp", 80, "bp_unit", "mmHg", "date", "2026-3-2"), "date is required"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128, "lp", 80, "bp_unit", "mmHg", "date", "2026-01-01"), "not the same day"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", "hp", 128, "lp", 80, "bp_unit", "mmHg", "time", "soon"), "time is required"},
	} {
		res := post(c.body)
		wantErr(t, res, 400, 400)
		if msg, _ := res.Body["message"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("%v: %q does not say %q", c.body, msg, c.want)
		}
	}

	list := func(token string, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/health", Header: userHeaders(s.c, token), Query: q(kv...)})
	}
	res = list(s.pat.Token, "data_type", "bp")
	if res.Status != 200 || len(res.List()) != 2 {
		t.Fatalf("%s", res.Raw)
	}
	if r := res.List()[0]; r["hp"].(float64) != 128 || r["bp_unit"] != "mmHg" || r["device_id"] != "BP-1" {
		t.Fatalf("%v", r)
	}
	if got := list(s.pat.Token, "from", "1772441500").List(); len(got) != 8 {
		t.Fatalf("%d readings after from", len(got))
	}
	wantErr(t, list(s.doc.Token), 403, 403)
	wantErr(t, list(s.pat2.Token), 404, 404)
	s.withVisit(t)
	if res := list(s.doc.Token); res.Status != 200 || len(res.List()) != 9 {
		t.Fatalf("%d %s", res.Status, res.Raw)
	}
	if res := e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/devices", Header: userHeaders(s.c, s.doc.Token)}); res.Status != 200 || len(res.List()) != 2 {
		t.Fatalf("%s", res.Raw)
	}
	// A provider reads but does not register a patient's devices.
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/devices", Header: userHeaders(s.c, s.doc.Token), Form: q("device_id", "X", "device_name", "X", "type", "vendorB_health")}), 403, 403)
}

// TestHealth_ReadingsPages: GET /users/{id}/health pages by keyset. A full
// page names the next (Link, rel="next", before = its last reading); the
// pages together are the whole list once, in its order, even where many
// readings share a time (which paging by moving `to` back would repeat or
// skip); a `before` that is not one of the patient's readings is a 400.
func TestHealth_ReadingsPages(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, JSON: map[string]any{"device_id": "HR-1", "device_name": "Band", "type": "vendorC_health"}}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	now := e.Clock.Now().Unix()
	// 23 readings: 10 at one time, the others a minute apart around it.
	for i := range 23 {
		at := now - 600
		if i >= 10 {
			at = now - int64(i)*60
		}
		if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: h, JSON: map[string]any{"type": "vendorC_health", "date": time.Unix(now, 0).UTC().Format("2006-01-02"),
			"time": at, "device_id": "HR-1", "data_type": "hr", "data_class": "body", "hr": 60 + i}}); res.Status != 200 {
			t.Fatalf("reading %d: %s", i, res.Raw)
		}
	}
	path := "/api_v3/users/" + s.pat.UserID + "/health"
	whole := e.Do(testenv.Req{Path: path, Header: h})
	if whole.Status != 200 || len(whole.List()) != 23 || whole.Header.Get("Link") != "" {
		t.Fatalf("the whole list: %d %d readings, Link %q", whole.Status, len(whole.List()), whole.Header.Get("Link"))
	}
	var want []string
	for i, r := range whole.List() {
		want = append(want, r["id"].(string))
		if i > 0 {
			prev := whole.List()[i-1]
			if r["time"].(float64) > prev["time"].(float64) {
				t.Fatalf("not newest first: %v after %v", r, prev)
			}
		}
	}
	for _, limit := range []int{1, 4, 7} {
		rs, pages := pageWalk{path: path, query: url.Values{"limit": {fmt.Sprint(limit)}, "data_type": {"hr"}}, header: h, cursor: "before", idKey: "id", limit: limit}.walk(t, e)
		if got := idsOf(rs, "id"); strings.Join(got, ",") != strings.Join(want, ",") || pages < len(want)/limit {
			t.Fatalf("%d a page: %v in %d pages, want %v", limit, got, pages, want)
		}
	}
	// Another patient's reading, or none, is no place in this list.
	other := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: userHeaders(s.c, s.pat2.Token), JSON: map[string]any{"device_id": "HR-2", "device_name": "Band", "type": "vendorC_health"}})
	if other.Status != 200 {
		t.Fatalf("%s", other.Raw)
	}
	theirs := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: userHeaders(s.c, s.pat2.Token), JSON: map[string]any{"type": "vendorC_health", "date": time.Unix(now, 0).UTC().Format("2006-01-02"),
		"time": now, "device_id": "HR-2", "data_type": "hr", "data_class": "body", "hr": 70}})
	if theirs.Status != 200 {
		t.Fatalf("%s", theirs.Raw)
	}
	for _, before := range []string{theirs.Data()["id"].(string), "999999", "-1", "soon"} {
		wantErr(t, e.Do(testenv.Req{Path: path, Query: q("before", before), Header: h}), 400, 400)
	}
}
