package eligibility

import (
	"context"
	"strings"
	"testing"
	"time"
)

func req(member string) Request {
	at := time.Date(2026, 3, 2, 9, 5, 0, 0, time.UTC)
	return Request{ControlNumber: 42, Created: at, ServiceDate: at,
		Payer:      Party{Name: "Aetna", ID: "60054"},
		Provider:   Party{Name: "Alpha Clinic", ID: "alpha"},
		Subscriber: Subscriber{MemberID: member, Group: "G-1", FirstName: "Pat", LastName: "O*Neil~", DOB: "1990-04-05", Gender: 2}}
}

func TestEligibility_Build270(t *testing.T) {
	doc := string(Build270(req("W123456780")))
	isa := doc[:strings.Index(doc, "~")+1]
	if len(isa) != 106 {
		t.Fatalf("ISA is %d characters, want 106: %q", len(isa), isa)
	}
	for _, want := range []string{"GS*HS*ALPHA*60054*20260302*0905*42*X*005010X279A1~", "ST*270*0001*005010X279A1~",
		"BHT*0022*13*000000042*20260302*0905~", "NM1*PR*2*AETNA*****PI*60054~", "NM1*1P*2*ALPHA CLINIC*****SV*ALPHA~",
		"NM1*IL*1*ONEIL*PAT****MI*W123456780~", "REF*6P*G-1~", "DMG*D8*19900405*F~", "DTP*291*D8*20260302~", "EQ*30~",
		"SE*14*0001~", "GE*1*42~", "IEA*1*000000042~"} {
		if !strings.Contains(doc, want) {
			t.Errorf("missing %q in\n%s", want, strings.ReplaceAll(doc, "~", "~\n"))
		}
	}
}

func TestEligibility_Sandbox(t *testing.T) {
	for member, want := range map[string]string{"W1": StatusActive, "W7": StatusInactive, "W8": StatusNotFound, "W9": StatusError, "ABC": StatusActive} {
		res, err := Sandbox{}.Check(context.Background(), Build270(req(member)))
		if err != nil || res.Status != want || res.Details["checker"] != "sandbox" {
			t.Errorf("%s: %v %+v, want %s", member, err, res, want)
		}
	}
	doc := strings.Replace(string(Build270(req("W1"))), "SE*14*", "SE*13*", 1)
	if _, err := (Sandbox{}).Check(context.Background(), []byte(doc)); err == nil {
		t.Fatal("a miscounted transaction was answered")
	}
}
