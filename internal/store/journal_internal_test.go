package store

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"teleclinic/internal/clinic"
)

// TestJournalLine_SameBytes holds appendJournalLine to what json.Encoder
// writes for the entry's journalLine, which the journal wrote before and
// recovery reads, over random entries whose strings mix the characters
// the encoder escapes and whose user is sometimes unset (omitted).
func TestJournalLine_SameBytes(t *testing.T) {
	pieces := []string{"a", "visit.messages.read", `"`, `\`, "\n", "\x00", "<", "&", "\u2028", "é", "\xff", "12"}
	rnd := rand.New(rand.NewPCG(5, 6))
	str := func() string {
		var b []byte
		for range rnd.IntN(6) {
			b = append(b, pieces[rnd.IntN(len(pieces))]...)
		}
		return string(b)
	}
	for range 1000 {
		e := &clinic.AuditEntry{AccountID: rnd.Int64N(1 << 40), ActorKind: str(), Action: str(), ObjectType: str(), ObjectID: str(),
			Outcome: str(), RequestID: str(), Created: rnd.Int64N(1<<40) - 1<<20}
		if rnd.IntN(3) > 0 {
			e.ActorUserID = rnd.Int64N(1 << 40)
		}
		if rnd.IntN(2) > 0 {
			SealAudit([]byte("key"), e, false)
		}
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(journalLine{e.AccountID, e.ActorKind, e.ActorUserID, e.Action, e.ObjectType, e.ObjectID, e.Outcome, e.RequestID, e.Created, e.MAC}); err != nil {
			t.Fatal(err)
		}
		if got := appendJournalLine(nil, e); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("\n got %s\nwant %s", got, want.Bytes())
		}
	}
}
