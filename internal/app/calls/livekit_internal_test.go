package calls

import (
	"testing"

	"teleclinic/internal/clinic"
)

// A visit's LiveKit room name reads back to its clinic and visit, whatever
// the clinic's code holds, and a room that is not a visit's reads as none:
// the webhook acts on the visit it names and on nothing else.
func TestLiveKitRoom_ReadsBack(t *testing.T) {
	s := &Service{}
	for _, code := range []string{"acme", "north-side-visit-clinic", "a"} {
		for _, id := range []int64{1, 42, 1 << 40} {
			name := s.LiveKitRoom(&clinic.Account{Code: code}, id)
			gotCode, gotID, ok := parseLiveKitRoom(name)
			if !ok || gotCode != code || gotID != id {
				t.Errorf("parseLiveKitRoom(%q) = %q, %d, %v; want %q, %d", name, gotCode, gotID, ok, code, id)
			}
		}
	}
	for _, name := range []string{"", "lobby", "-visit-3", "acme-visit-", "acme-visit-0", "acme-visit--2", "acme-visit-3x", "acme-visit-99999999999999999999"} {
		if code, id, ok := parseLiveKitRoom(name); ok {
			t.Errorf("parseLiveKitRoom(%q) = %q, %d: want no visit", name, code, id)
		}
	}
}
