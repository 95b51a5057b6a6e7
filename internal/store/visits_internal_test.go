package store

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"

	"teleclinic/internal/clinic"
)

// TestVisits_ParseMeeting holds the meeting column's fast path to json.Unmarshal:
// whatever it accepts it reads the same, it accepts what CreateVisit
// writes for plain values, and it declines what it cannot read exactly.
func TestVisits_ParseMeeting(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	chars := []string{"0", "7", "a", " ", "<", "&", "\"", "\\", "\n", "é", "\u2028", "\xff"}
	str := func(plain bool) string {
		var b []byte
		for range rnd.IntN(12) {
			if plain {
				b = append(b, byte('0'+rnd.IntN(10)))
			} else {
				b = append(b, chars[rnd.IntN(len(chars))]...)
			}
		}
		return string(b)
	}
	check := func(col string) bool {
		t.Helper()
		var fast, slow clinic.Meeting
		ok := parseMeeting(col, &fast)
		if !ok {
			if fast != (clinic.Meeting{}) {
				t.Fatalf("%q: declined but set %+v", col, fast)
			}
			return false
		}
		if err := json.Unmarshal([]byte(col), &slow); err != nil || fast != slow {
			t.Fatalf("%q: fast %+v, json %+v (%v)", col, fast, slow, err)
		}
		return true
	}
	for range 2000 {
		plain := rnd.IntN(2) == 0
		m := clinic.Meeting{MeetingID: str(plain), ConferencePIN: str(plain), RecordingAutoStart: rnd.IntN(2) == 0, Expiry: rnd.Int64() - rnd.Int64()}
		if rnd.IntN(4) == 0 {
			m.Expiry = int64(rnd.IntN(3)) - 1
		}
		b, _ := json.Marshal(m)
		if took := check(string(b)); plain && !took {
			t.Fatalf("%s: the column CreateVisit writes took the slow path", b)
		}
	}
	for _, col := range []string{
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":3}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":false,"expiry":-0}`,
		`{"meeting_id":"1", "conference_pin":"2","recording_auto_start":true,"expiry":3}`,
		`{"conference_pin":"2","meeting_id":"1","recording_auto_start":true,"expiry":3}`,
		`{"meeting_id":"\u0031","conference_pin":"2","recording_auto_start":true,"expiry":3}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":tru,"expiry":3}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":03}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":+3}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":3.0}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":3e2}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":-}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":` + strconv.Itoa(1<<62) + `0}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":3,"x":1}`,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":3} `,
		`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true}`,
		"{\"meeting_id\":\"1\n\",\"conference_pin\":\"2\",\"recording_auto_start\":true,\"expiry\":3}",
		"{\"meeting_id\":\"1\xff\",\"conference_pin\":\"2\",\"recording_auto_start\":true,\"expiry\":3}",
		`{}`, ``, `null`,
	} {
		check(col)
	}
	var m clinic.Meeting
	if !parseMeeting(`{"meeting_id":"1","conference_pin":"2","recording_auto_start":true,"expiry":3}`, &m) || m.Expiry != 3 || !m.RecordingAutoStart {
		t.Fatalf("%+v", m)
	}
}

// BenchmarkMeeting_Parse reads a meeting column as scanVisit does now;
// BenchmarkMeeting_JSON as it did, through encoding/json.
func BenchmarkMeeting_Parse(b *testing.B) {
	col := `{"meeting_id":"4829105738","conference_pin":"204817","recording_auto_start":false,"expiry":1763834400}`
	for b.Loop() {
		var m clinic.Meeting
		if !parseMeeting(col, &m) {
			b.Fatal(col)
		}
	}
}

func BenchmarkMeeting_JSON(b *testing.B) {
	col := []byte(`{"meeting_id":"4829105738","conference_pin":"204817","recording_auto_start":false,"expiry":1763834400}`)
	for b.Loop() {
		var m clinic.Meeting
		if err := json.Unmarshal(col, &m); err != nil {
			b.Fatal(err)
		}
	}
}
