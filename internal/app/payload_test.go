package app

import (
	"encoding/json"
	"testing"
)

// TestMessages_PayloadTemplates: the templates the store fills in an insert give
// exactly the bytes json.Marshal gives for the same ids, so a delivery does
// not depend on the engine that wrote it.
func TestMessages_PayloadTemplates(t *testing.T) {
	for _, ids := range [][2]int64{{1, 2}, {9007199254740993, 42}, {0, 0}} {
		want, _ := json.Marshal(pushItem{EndpointID: ids[0], NotificationID: ids[1]})
		if got := pushPayload.Fill(ids[0], ids[1]); got != string(want) {
			t.Fatalf("push %v: %s, want %s", ids, got, want)
		}
		want, _ = json.Marshal(messageEvent{VisitID: "17", MessageID: i64s(ids[0]), ActorType: "patient", TS: 1767312000})
		if got := messageEventPayload(17, "patient", 1767312000).Fill(ids[0]); got != string(want) {
			t.Fatalf("message event %v: %s, want %s", ids, got, want)
		}
	}
}
