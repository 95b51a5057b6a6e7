package client_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"teleclinic/client"
	"teleclinic/internal/testenv"
)

func ptr[T any](v T) *T { return &v }

// TestClient drives the real server with the generated client: a room by
// the admin, SSO with the API key, /me, an intake, an e-consult and a
// message, as an integrator's code would.
func TestClient(t *testing.T) {
	t.Parallel()
	e := testenv.New(t)
	c := e.NewClinic("alpha", true)
	ctx := context.Background()
	api, err := client.NewClientWithResponses(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	admin := client.Credentials{AccountCode: c.Code, APIToken: c.AdminToken}.Editor()

	room, err := api.PostRoomsWithResponse(ctx, nil, client.NewRoom{Code: ptr("main"), Domain: "alpha.clinic.test", Name: "Main"}, admin)
	if err != nil || room.StatusCode() != http.StatusOK {
		t.Fatalf("room: %v %s", err, body(room))
	}

	sso, err := api.PostUsersSsoWithResponse(ctx, nil, client.SSOBody{Type: 200, Code: ptr("pat-1"), FirstName: "Pat", LastName: "One", Email: ptr("pat@example.com")},
		client.Credentials{AccountCode: c.Code, APIKey: c.APIKey, APISecret: c.APISecret}.Editor())
	if err != nil || sso.JSON200 == nil {
		t.Fatalf("sso: %v %s", err, body(sso))
	}
	pat := client.Credentials{AccountCode: c.Code, APIToken: sso.JSON200.Data.Token.Token}.Editor()

	me, err := api.GetMeWithResponse(ctx, nil, pat)
	if err != nil || me.JSON200 == nil || me.JSON200.Data.Id != sso.JSON200.Data.Id || me.JSON200.Data.Email != "pat@example.com" {
		t.Fatalf("me: %v %s", err, body(me))
	}

	intake, err := api.PostIntakesWithResponse(ctx, nil, client.IntakeBody{RoomCode: ptr("main"), ReasonForVisit: ptr("A rash on my arm")}, pat)
	if err != nil || intake.JSON200 == nil || intake.JSON200.Data.ReasonForVisit != "A rash on my arm" {
		t.Fatalf("intake: %v %s", err, body(intake))
	}
	visit, err := api.PostVisitsAddEconsultWithResponse(ctx, nil, client.VisitCreateBody{IntakeId: ptr(intake.JSON200.Data.Id), RoomCode: ptr("main")}, pat)
	if err != nil || visit.JSON200 == nil {
		t.Fatalf("e-consult: %v %s", err, body(visit))
	}
	msg, err := api.PostVisitsByVisitIdMessagesWithResponse(ctx, visit.JSON200.Data.Id, nil, client.MessageBody{Content: "It itches at night."}, pat)
	if err != nil || msg.JSON201 == nil || msg.JSON201.Data.Content != "It itches at night." || msg.JSON201.Data.VisitId != visit.JSON200.Data.Id {
		t.Fatalf("message: %v %s", err, body(msg))
	}
	// The stored effect, read back through the client.
	thread, err := api.GetVisitsByVisitIdMessagesWithResponse(ctx, visit.JSON200.Data.Id, nil, pat)
	if err != nil || thread.JSON200 == nil || len(thread.JSON200.Data) != 1 || thread.JSON200.Data[0].Id != msg.JSON201.Data.Id {
		t.Fatalf("thread: %v %s", err, body(thread))
	}
	// An error comes back typed.
	bad, err := api.GetMeWithResponse(ctx, nil, client.Credentials{AccountCode: c.Code, APIToken: "not-a-token"}.Editor())
	if err != nil || bad.StatusCode() != http.StatusUnauthorized {
		t.Fatalf("bad token: %v %s", err, body(bad))
	}
}

// body is a response's body, for a failure's message.
func body[T any](r *T) string {
	if r == nil {
		return "(no response)"
	}
	return string(reflect.ValueOf(r).Elem().FieldByName("Body").Bytes())
}
