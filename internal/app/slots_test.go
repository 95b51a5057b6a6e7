package app

import (
	"strings"
	"testing"
	"time"

	"teleclinic/internal/clinic"
)

// TestGenerateSlots_DST holds slot generation to golden instants across
// clock changes: local times that do not exist make no slot, a repeated
// local time makes one slot at its first occurrence, and no two slots overlap.
func TestGenerateSlots_DST(t *testing.T) {
	cases := []struct {
		name, zone, date string
		want             []string // slot starts, UTC
	}{
		{"New York spring forward (02:00 → 03:00)", "America/New_York", "2026-03-08",
			[]string{"05:00", "05:30", "06:00", "06:30", "07:00", "07:30"}},
		{"New York fall back (02:00 → 01:00)", "America/New_York", "2026-11-01",
			[]string{"04:00", "04:30", "05:00", "05:30", "07:00", "07:30", "08:00", "08:30"}},
		{"Lord Howe 30-minute fall back (02:00 → 01:30)", "Australia/Lord_Howe", "2026-04-05",
			// 01:30 is taken at its first occurrence (+11, 14:30Z); the repeated
			// half hour 15:00Z–15:30Z makes no second slot.
			[]string{"13:00", "13:30", "14:00", "14:30", "15:30", "16:00", "16:30", "17:00"}},
		{"Lord Howe 30-minute spring forward (02:00 → 02:30)", "Australia/Lord_Howe", "2026-10-04",
			// Local 02:00 does not exist; 01:30 (+10:30) ends where 02:30 (+11) starts.
			[]string{"13:30", "14:00", "14:30", "15:00", "15:30", "16:00", "16:30"}},
		{"an ordinary day", "America/New_York", "2026-03-09",
			[]string{"04:00", "04:30", "05:00", "05:30", "06:00", "06:30", "07:00", "07:30"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &clinic.SlotGroup{DateStart: c.date, DateEnd: c.date, TimeStart: "00:00", TimeEnd: "04:00", Timezone: c.zone, Duration: 30}
			spans, err := GenerateSlots(g)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i, s := range spans {
				got = append(got, s.Start.UTC().Format("15:04"))
				if s.End.Sub(s.Start) != 30*time.Minute {
					t.Errorf("slot %d lasts %v", i, s.End.Sub(s.Start))
				}
				if i > 0 && s.Start.Before(spans[i-1].End) {
					t.Errorf("slot %d overlaps the previous one", i)
				}
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("starts (UTC)\n got %v\nwant %v", got, c.want)
			}
		})
	}
}

func TestGenerateSlots_Repeat(t *testing.T) {
	g := &clinic.SlotGroup{DateStart: "2026-03-02", DateEnd: "2026-03-29", TimeStart: "09:00", TimeEnd: "10:00", Timezone: "Europe/London",
		Duration: 60, Repeat: true, RepeatDay: []string{"Monday", "thursday"}, RepeatWeek: 2}
	spans, err := GenerateSlots(g)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range spans {
		got = append(got, s.Start.UTC().Format("01-02 Mon 15:04"))
	}
	// Weeks 1 and 3 from Monday 2 March; London leaves GMT on 29 March.
	want := []string{"03-02 Mon 09:00", "03-05 Thu 09:00", "03-16 Mon 09:00", "03-19 Thu 09:00"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

func TestGenerateSlots_Invalid(t *testing.T) {
	base := clinic.SlotGroup{DateStart: "2026-03-02", DateEnd: "2026-03-02", TimeStart: "09:00", TimeEnd: "10:00", Timezone: "UTC", Duration: 30}
	for name, mod := range map[string]func(*clinic.SlotGroup){
		"zone":       func(g *clinic.SlotGroup) { g.Timezone = "Mars/Base" },
		"date":       func(g *clinic.SlotGroup) { g.DateStart = "03/02/2026" },
		"end before": func(g *clinic.SlotGroup) { g.DateEnd = "2026-03-01" },
		"too long":   func(g *clinic.SlotGroup) { g.DateEnd = "2027-04-02" },
		"times":      func(g *clinic.SlotGroup) { g.TimeEnd = "08:00" },
		"duration":   func(g *clinic.SlotGroup) { g.Duration = 90 },
		"weekday":    func(g *clinic.SlotGroup) { g.Repeat, g.RepeatDay = true, []string{"funday"} },
		"too many": func(g *clinic.SlotGroup) {
			g.DateEnd, g.TimeStart, g.TimeEnd, g.Duration = "2026-12-31", "00:00", "23:59", 5
		},
	} {
		g := base
		mod(&g)
		if _, err := GenerateSlots(&g); clinic.ErrorCode(err) != clinic.EInvalid {
			t.Errorf("%s: %v", name, err)
		}
	}
}
