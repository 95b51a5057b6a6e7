package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

func TestEMR_ReadWrite(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	put := func(token, user, name string, body json.RawMessage) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + user + "/emr/" + name, Header: userHeaders(s.c, token), JSON: body})
	}
	get := func(token, user string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/users/" + user + "/emr", Header: userHeaders(s.c, token)})
	}

	// Never written: all seven, empty, unmodified.
	all := dataOf[map[string]emrSection](t, get(s.pat.Token, "-"))
	if len(all) != 7 {
		t.Fatalf("%d sections: %v", len(all), all)
	}
	if c := all["conditions"]; c.Modified != nil || c.ModifiedBy != nil || string(c.Data) != "[]" {
		t.Fatalf("conditions never written: %+v %s", c, c.Data)
	}
	if sh := all["social_history"]; string(sh.Data) != "{}" {
		t.Fatalf("social history never written: %s", sh.Data)
	}

	fam := dataOf[emrSection](t, put(s.pat.Token, "-", "family_conditions", js(`{"data_not_reported": false,
		"data": [{"condition": "Diabetes", "relations": ["mother", "uncle"]}]}`)))
	if fam.ModifiedBy == nil || fam.ModifiedBy.ID != s.pat.UserID || fam.DataNotReported == nil || *fam.DataNotReported {
		t.Fatalf("%+v", fam)
	}
	type familyCondition struct {
		Condition string   `json:"condition"`
		Relations []string `json:"relations"`
	}
	if got := decodeRaw[[]familyCondition](t, fam.Data); !reflect.DeepEqual(got, []familyCondition{{"Diabetes", []string{"mother", "uncle"}}}) {
		t.Fatalf("%+v", got)
	}
	// A form client sends data as JSON text and the boolean as 1.
	sh := dataOf[emrSection](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/emr/social_history", Header: userHeaders(s.c, s.pat.Token),
		Form: q("data", `{"marital_status":"married","num_kids":"2","occupation":"nurse"}`, "data_not_reported", "0")}))
	if got := decodeRaw[struct {
		NumKids int `json:"num_kids"`
	}](t, sh.Data); got.NumKids != 2 {
		t.Fatalf("num_kids: %s", sh.Data)
	}
	if al := dataOf[emrSection](t, put(s.pat.Token, "-", "allergies", js(`{"data_not_reported": true, "data": []}`))); al.DataNotReported == nil || !*al.DataNotReported {
		t.Fatalf("%+v", al)
	}

	// Wrong shapes name the field.
	t.Run("ErrWrongShape", func(t *testing.T) {
		for _, c := range []struct {
			name, body, want string
		}{
			{"conditions", `{"data_not_reported": false, "data": {"condition": "x"}}`, "data must be an array"},
			{"conditions", `{"data_not_reported": false, "data": [{"condition": 3}]}`, "data[0].condition"},
			{"conditions", `{"data_not_reported": false, "data": [{"illness": "x"}]}`, "data[0].illness"},
			{"family_conditions", `{"data_not_reported": false, "data": [{"condition": "x", "relations": "mother"}]}`, "data[0].relations"},
			{"social_history", `{"data_not_reported": false, "data": []}`, "data must be an object"},
			{"social_history", `{"data_not_reported": false, "data": {"num_kids": 2.5}}`, "data.num_kids"},
			{"health_habits", `{"data_not_reported": false, "data": {"smoking": true}}`, "data.smoking"},
			{"medications", `{"data": []}`, "data_not_reported"},
			{"medications", `{"data_not_reported": false}`, "data is required"},
		} {
			res := put(s.pat.Token, "-", c.name, js(c.body))
			wantErr(t, res, 400, 400)
			if msg := messageOf(res); !strings.Contains(msg, c.want) {
				t.Errorf("%s %s: %q does not name %q", c.name, c.body, msg, c.want)
			}
		}
		wantErr(t, put(s.pat.Token, "-", "hobbies", js(`{"data_not_reported": false, "data": []}`)), 404, 404)
	})

	// Who may read and write.
	t.Run("ErrNotAllowed", func(t *testing.T) {
		wantErr(t, get(s.pat2.Token, s.pat.UserID), 404, 404)
		wantErr(t, get(s.doc.Token, s.pat.UserID), 403, 403)
		wantErr(t, put(s.doc.Token, s.pat.UserID, "medications", js(`{"data_not_reported": false, "data": []}`)), 403, 403)
		s.withVisit(t)
		if res := get(s.doc.Token, s.pat.UserID); res.Status != 200 {
			t.Fatal(res.Status)
		}
		mustOK(t, put(s.doc.Token, s.pat.UserID, "medications", js(`{"data_not_reported": false, "data": [{"name": "Metformin 500 mg"}]}`)))
		got := dataOf[map[string]emrSection](t, get(s.pat.Token, "-"))["medications"]
		type medication struct {
			Name string `json:"name"`
		}
		if got.ModifiedBy == nil || got.ModifiedBy.ID != s.doc.UserID || !reflect.DeepEqual(decodeRaw[[]medication](t, got.Data), []medication{{"Metformin 500 mg"}}) {
			t.Fatalf("%+v %s", got, got.Data)
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
		type schema struct {
			Type  string `json:"type"`
			Items *struct {
				AdditionalProperties *bool `json:"additionalProperties"`
				Properties           map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
			} `json:"items"`
		}
		res := e.Do(testenv.Req{Path: "/api_v3/emr/schema", Header: acctHeaders(s.c)})
		all := dataOf[map[string]schema](t, res)
		fam := all["family_conditions"]
		if len(all) != 7 || fam.Type != "array" || fam.Items == nil || fam.Items.AdditionalProperties == nil || *fam.Items.AdditionalProperties ||
			fam.Items.Properties["relations"].Type != "array" {
			t.Fatalf("%s", res.Raw)
		}
	})
}

func TestHealth_DevicesAndReadings(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	s := newClinicSetup(t, e, "alpha")
	h := userHeaders(s.c, s.pat.Token)
	dev := dataOf[client.Device](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, JSON: client.DeviceBody{DeviceId: "BP-1", DeviceName: "Cuff", Type: "vendorD_bp_bp100"}}))
	if dev.DeviceId != "BP-1" || dev.UserId != s.pat.UserID || dev.Type != "vendorD_bp_bp100" {
		t.Fatalf("%+v", dev)
	}
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, Form: q("device_id", "ENV-1", "device_name", "Room", "type", "vendorB_health")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, Form: q("device_id", "X", "device_name", "X", "type", "toaster")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, Form: q("device_name", "X", "type", "vendorB_health")}), 400, 400)
	wantErr(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/" + s.pat.UserID + "/devices", Header: userHeaders(s.c, s.pat2.Token), Form: q("device_id", "X", "device_name", "X", "type", "vendorB_health")}), 404, 404)

	now := e.Clock.Now().Unix()
	// readingAt is a reading's JSON body: the fields every reading has,
	// and fields, the JSON members of its data type.
	readingAt := func(date, at, dataType, class, typ, device, fields string) json.RawMessage {
		if fields != "" {
			fields = ", " + fields
		}
		return js(fmt.Sprintf(`{"type": %q, "date": %q, "time": %s, "device_id": %q, "data_type": %q, "data_class": %q%s}`, typ, date, at, device, dataType, class, fields))
	}
	base := func(dataType, class, typ, device, fields string) json.RawMessage {
		return readingAt("2026-03-02", fmt.Sprint(now-60), dataType, class, typ, device, fields)
	}
	post := func(body json.RawMessage) *testenv.Resp {
		return e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: h, JSON: body})
	}
	if saved := decode[client.HealthSaved](t, post(base("bp", "body", "vendorD_bp_bp100", "BP-1", `"hp": 128, "lp": 82, "bp_unit": "mmHg"`))); saved.Data.Status != "saved" || saved.Data.Id == "" {
		t.Fatalf("%+v", saved)
	}
	for _, good := range []json.RawMessage{
		base("range", "environment", "vendorB_health", "ENV-1", `"range": 2, "range_unit": "cm"`),
		base("range", "environment", "vendorB_health", "ENV-1", `"range": "400", "range_unit": "cm"`),
		base("movement", "environment", "vendorB_health", "ENV-1", `"movement": 1`),
		base("movement", "environment", "vendorB_health", "ENV-1", `"movement": "0"`),
		base("noise", "environment", "vendorB_health", "ENV-1", `"noise": 0.35, "noise_unit": "rel"`),
		base("humidity", "environment", "vendorB_health", "ENV-1", `"humidity": 45, "humidity_unit": "percentage"`),
		base("gas", "environment", "vendorB_health", "ENV-1", `"gas": "CO2 normal"`),
	} {
		if res := post(good); res.Status != 200 {
			t.Errorf("%s: %s", good, res.Raw)
		}
	}
	// A form client: every value a string.
	if res := e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: h, Form: q("type", "vendorD_bp_bp100", "date", "2026-03-02",
		"time", "1772441000", "device_id", "BP-1", "data_type", "bp", "data_class", "body", "hp", "16", "lp", "10", "bp_unit", "kPa")}); res.Status != 200 {
		t.Fatalf("%s", res.Raw)
	}
	bp := `"hp": 128, "lp": 80, "bp_unit": "mmHg"`
	for _, c := range []struct {
		body json.RawMessage
		want string
	}{
		{base("range", "environment", "vendorB_health", "ENV-1", `"range": 1, "range_unit": "cm"`), "range must be from 2 to 400"},
		{base("range", "environment", "vendorB_health", "ENV-1", `"range": 401, "range_unit": "cm"`), "range must be from 2 to 400"},
		{base("range", "environment", "vendorB_health", "ENV-1", `"range": 20, "range_unit": "m"`), "range_unit"},
		{base("movement", "environment", "vendorB_health", "ENV-1", `"movement": 2`), "movement must be 0 or 1"},
		{base("noise", "environment", "vendorB_health", "ENV-1", `"noise": 1.5`), "noise must be from 0 to 1"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", `"hp": 128, "bp_unit": "mmHg"`), "lp is required"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", `"hp": 80, "lp": 120, "bp_unit": "mmHg"`), "higher than lp"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", `"hp": 128.5, "lp": 80, "bp_unit": "mmHg"`), "hp must be a whole number"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", `"hp": 128, "lp": 80`), "bp_unit is required"},
		{base("bp", "body", "vendorD_bp_bp100", "BP-1", bp+`, "weight": 70`), "weight does not belong"},
		{base("bp", "environment", "vendorD_bp_bp100", "BP-1", bp), "data_class must be body"},
		{base("temperature_body", "body", "vendorD_bp_bp100", "BP-1", `"temperature_body": "98.6", "temperature_unit": "cel"`), "temperature_body must be from 25 to 45 cel"},
		{base("bp", "body", "vendorD_bp_bp100", "NOPE", bp), "not registered"},
		{base("bp", "body", "vendorA_scale_hs2", "BP-1", bp), "registered type"},
		{base("sleep", "body", "vendorD_bp_bp100", "BP-1", ""), "data_type is required"},
		{readingAt("2026-3-2", fmt.Sprint(now-60), "bp", "body", "vendorD_bp_bp100", "BP-1", bp), "date is required"},
		{readingAt("2026-01-01", fmt.Sprint(now-60), "bp", "body", "vendorD_bp_bp100", "BP-1", bp), "not the same day"},
		{readingAt("2026-03-02", `"soon"`, "bp", "body", "vendorD_bp_bp100", "BP-1", bp), "time is required"},
	} {
		res := post(c.body)
		wantErr(t, res, 400, 400)
		if msg := messageOf(res); !strings.Contains(msg, c.want) {
			t.Errorf("%s: %q does not say %q", c.body, msg, c.want)
		}
	}

	list := func(token string, kv ...string) *testenv.Resp {
		return e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/health", Header: userHeaders(s.c, token), Query: q(kv...)})
	}
	type bpReading struct {
		DeviceID string `json:"device_id"`
		HP       int    `json:"hp"`
		BPUnit   string `json:"bp_unit"`
	}
	if got := dataOf[[]bpReading](t, list(s.pat.Token, "data_type", "bp")); len(got) != 2 || got[0] != (bpReading{"BP-1", 128, "mmHg"}) {
		t.Fatalf("%+v", got)
	}
	if got := dataOf[[]client.ReadingList_Data_Item](t, list(s.pat.Token, "from", "1772441500")); len(got) != 8 {
		t.Fatalf("%d readings after from", len(got))
	}
	wantErr(t, list(s.doc.Token), 403, 403)
	wantErr(t, list(s.pat2.Token), 404, 404)
	s.withVisit(t)
	if got := dataOf[[]client.ReadingList_Data_Item](t, list(s.doc.Token)); len(got) != 9 {
		t.Fatalf("%d readings", len(got))
	}
	if got := dataOf[[]client.Device](t, e.Do(testenv.Req{Path: "/api_v3/users/" + s.pat.UserID + "/devices", Header: userHeaders(s.c, s.doc.Token)})); len(got) != 2 {
		t.Fatalf("%+v", got)
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
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: h, JSON: client.DeviceBody{DeviceId: "HR-1", DeviceName: "Band", Type: "vendorC_health"}}))
	now := e.Clock.Now().Unix()
	heartRate := func(device string, at int64, hr int) json.RawMessage {
		return js(fmt.Sprintf(`{"type": "vendorC_health", "date": %q, "time": %d, "device_id": %q, "data_type": "hr", "data_class": "body", "hr": %d}`,
			time.Unix(now, 0).UTC().Format("2006-01-02"), at, device, hr))
	}
	// 23 readings: 10 at one time, the others a minute apart around it.
	for i := range 23 {
		at := now - 600
		if i >= 10 {
			at = now - int64(i)*60
		}
		mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: h, JSON: heartRate("HR-1", at, 60+i)}))
	}
	path := "/api_v3/users/" + s.pat.UserID + "/health"
	res := e.Do(testenv.Req{Path: path, Header: h})
	whole := dataOf[[]client.ReadingList_Data_Item](t, res)
	if len(whole) != 23 || res.Header.Get("Link") != "" {
		t.Fatalf("the whole list: %d readings, Link %q", len(whole), res.Header.Get("Link"))
	}
	var want []string
	for i, r := range whole {
		want = append(want, r.Id)
		if i > 0 && r.Time > whole[i-1].Time {
			t.Fatalf("not newest first: %+v after %+v", r, whole[i-1])
		}
	}
	for _, limit := range []int{1, 4, 7} {
		rs, pages := pageWalk{path: path, query: url.Values{"limit": {fmt.Sprint(limit)}, "data_type": {"hr"}}, header: h, cursor: "before", idKey: "id", limit: limit}.walk(t, e)
		if got := idsOf(rs, "id"); strings.Join(got, ",") != strings.Join(want, ",") || pages < len(want)/limit {
			t.Fatalf("%d a page: %v in %d pages, want %v", limit, got, pages, want)
		}
	}
	// Another patient's reading, or none, is no place in this list.
	mustOK(t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/users/-/devices", Header: userHeaders(s.c, s.pat2.Token), JSON: client.DeviceBody{DeviceId: "HR-2", DeviceName: "Band", Type: "vendorC_health"}}))
	theirs := decode[client.HealthSaved](t, e.Do(testenv.Req{Method: "POST", Path: "/api_v3/health", Header: userHeaders(s.c, s.pat2.Token), JSON: heartRate("HR-2", now, 70)}))
	for _, before := range []string{theirs.Data.Id, "999999", "-1", "soon"} {
		wantErr(t, e.Do(testenv.Req{Path: path, Query: q("before", before), Header: h}), 400, 400)
	}
}

// emrSection is a medical-record section as the API answers it; its data
// is decoded by each test into the section's own shape.
type emrSection struct {
	Data            json.RawMessage `json:"data"`
	DataNotReported *bool           `json:"data_not_reported"`
	Modified        *int64          `json:"modified"`
	ModifiedBy      *struct {
		ID string `json:"id"`
	} `json:"modified_by"`
}

// decodeRaw is raw JSON as T, failing t when it is not one.
func decodeRaw[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	return v
}
