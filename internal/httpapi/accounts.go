package httpapi

import (
	"net/http"

	"teleclinic/internal/app"
)

// clinicSettings is GET /settings: what a clinic shows before login.
type clinicSettings struct {
	Code       string   `json:"code"`
	Name       string   `json:"name"`
	Domain     string   `json:"domain"`
	SSOEnabled bool     `json:"sso_enabled"`
	Features   []string `json:"features"`
}

func (s *Server) settings(w http.ResponseWriter, r *http.Request, c *call) error {
	a, err := s.app.Settings(r.Context(), c.p)
	if err != nil {
		return err
	}
	fs := a.Features
	if fs == nil {
		fs = []string{}
	}
	return ok(w, clinicSettings{Code: a.Code, Name: a.Name, Domain: a.Domain, SSOEnabled: a.SSOEnabled, Features: fs})
}

type accountListItem struct {
	Code string `json:"code"`
	Name string `json:"name"`
}

func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request, c *call) error {
	accts, err := s.app.Accounts(r.Context(), c.p)
	if err != nil {
		return err
	}
	var out []accountListItem
	for _, a := range accts {
		out = append(out, accountListItem{Code: a.Code, Name: a.Name})
	}
	return ok(w, out)
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request, c *call) error {
	a, err := s.app.Account(r.Context(), c.p, c.params.Str("code"))
	if err != nil {
		return err
	}
	return ok(w, accountInfo{ID: id(a.ID), Code: a.Code, Name: a.Name, Domain: a.Domain})
}

// auditEntry is one line of GET /audit.
type auditEntry struct {
	ID        string      `json:"id"`
	Actor     auditActor  `json:"actor"`
	Action    string      `json:"action"`
	Object    auditObject `json:"object"`
	Outcome   string      `json:"outcome"`
	RequestID string      `json:"request_id"`
	Created   int64       `json:"created"`
}

type auditActor struct {
	Kind   string `json:"kind"`
	UserID string `json:"user_id"`
}

type auditObject struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

func (s *Server) listAudit(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	var in app.AuditQuery
	var err error
	ints := []struct {
		name string
		dst  *int64
	}{{"user_id", &in.UserID}, {"from", &in.From}, {"to", &in.To}}
	for _, f := range ints {
		if *f.dst, err = q.Int(f.name, 0); err != nil {
			return err
		}
	}
	if in.Start, in.Limit, err = q.Paging(); err != nil {
		return err
	}
	in.ObjectType, in.ObjectID, in.Action = q.Str("object_type"), q.Str("object_id"), q.Str("action")
	list, total, err := s.app.ListAudit(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	out := make([]auditEntry, 0, len(list))
	for _, e := range list {
		uid := ""
		if e.ActorUserID != 0 {
			uid = id(e.ActorUserID)
		}
		out = append(out, auditEntry{ID: id(e.ID), Actor: auditActor{Kind: e.ActorKind, UserID: uid}, Action: e.Action,
			Object: auditObject{Type: e.ObjectType, ID: e.ObjectID}, Outcome: e.Outcome, RequestID: e.RequestID, Created: e.Created})
	}
	return okList(w, out, total)
}
