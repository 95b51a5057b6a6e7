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
	}{{"user_id", &in.UserID}, {"from", &in.From}, {"to", &in.To}, {"after", &in.After}}
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
	nextLink(w, r, "after", list.Next, "start")
	out := make([]auditEntry, 0, len(list.Items))
	for _, e := range list.Items {
		uid := ""
		if e.ActorUserID != 0 {
			uid = id(e.ActorUserID)
		}
		out = append(out, auditEntry{ID: id(e.ID), Actor: auditActor{Kind: e.ActorKind, UserID: uid}, Action: e.Action,
			Object: auditObject{Type: e.ObjectType, ID: e.ObjectID}, Outcome: e.Outcome, RequestID: e.RequestID, Created: e.Created})
	}
	return okList(w, out, total)
}

// auditVerification is GET /audit/verify.
type auditVerification struct {
	Entries    int64            `json:"entries"`
	Head       string           `json:"head"`
	Intact     bool             `json:"intact"`
	Broken     *auditBreak      `json:"broken"`
	Checkpoint *auditCheckpoint `json:"checkpoint"`
}

type auditCheckpoint struct {
	Seq  int64  `json:"seq"`
	Head string `json:"head"`
	Time int64  `json:"time"`
}

type auditBreak struct {
	Seq    int64  `json:"seq"`
	ID     string `json:"id"` // "" when the entry is missing
	Reason string `json:"reason"`
}

func (s *Server) verifyAudit(w http.ResponseWriter, r *http.Request, c *call) error {
	v, err := s.app.VerifyAudit(r.Context(), c.p)
	if err != nil {
		return err
	}
	out := auditVerification{Entries: v.Entries, Head: v.Head, Intact: v.Broken == nil}
	if b := v.Broken; b != nil {
		out.Broken = &auditBreak{Seq: b.Seq, Reason: b.Reason}
		if b.ID != 0 {
			out.Broken.ID = id(b.ID)
		}
	}
	if c := v.Checkpoint; c != nil {
		out.Checkpoint = &auditCheckpoint{Seq: c.Seq, Head: c.Head, Time: c.Time}
	}
	return ok(w, out)
}

// accessEntry is one line of GET /users/{id}/access-log.
type accessEntry struct {
	ID      string      `json:"id"`
	Actor   accessActor `json:"actor"`
	Action  string      `json:"action"`
	Object  auditObject `json:"object"`
	Outcome string      `json:"outcome"`
	Created int64       `json:"created"`
}

type accessActor struct {
	Kind   string `json:"kind"`
	UserID string `json:"user_id"`
	Name   string `json:"name"`
}

func (s *Server) accessLog(w http.ResponseWriter, r *http.Request, c *call) error {
	uid, err := userIDParam(c, "id")
	if err != nil {
		return err
	}
	start, limit, err := c.params.Paging()
	if err != nil {
		return err
	}
	after, err := c.params.Int("after", 0)
	if err != nil {
		return err
	}
	list, total, err := s.app.AccessLog(r.Context(), c.p, uid, app.AccessLogQuery{After: after, Start: start, Limit: limit})
	if err != nil {
		return err
	}
	nextLink(w, r, "after", list.Next, "start")
	out := make([]accessEntry, 0, len(list.Items))
	for _, e := range list.Items {
		a := accessActor{Kind: e.ActorKind, Name: e.ActorName}
		if e.ActorUserID != 0 {
			a.UserID = id(e.ActorUserID)
		}
		out = append(out, accessEntry{ID: id(e.ID), Actor: a, Action: e.Action, Object: auditObject{Type: e.ObjectType, ID: e.ObjectID},
			Outcome: e.Outcome, Created: e.Created})
	}
	return okList(w, out, total)
}
