package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"teleclinic/internal/app"
	"teleclinic/internal/app/calls"
	"teleclinic/internal/clinic"
	"teleclinic/internal/edge"
	"teleclinic/internal/live"
	"teleclinic/internal/media"
)

// The visit page's call (static/call.js) talks to these JSON routes on the
// portal session; app/calls decides who may do what (Join, Send, Watch,
// Leave, InviteGuest, KeepRecording) as app does for the API. In peer-to-peer mode the page joins, follows its signals on an
// event stream and sends its own with POST; in LiveKit mode the join hands
// it the room's token and the page connects to LiveKit. Guests come in by
// an invitation's pages (/invite/…) to a page with the call alone.

// maxSignalBody bounds a signal request: the signal and its envelope.
const maxSignalBody = calls.MaxSignal + 1024

// callRoute registers a JSON route of the call: errors are answered as
// {"code", "message"} with the status the API would give, never a page.
func (s *Server) callRoute(pattern string, h pageFunc) { s.callRouteMax(pattern, h, maxSignalBody) }

// callRouteMax is callRoute with a body of up to limit bytes.
func (s *Server) callRouteMax(pattern string, h pageFunc, limit int64) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, s.guard.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = withPageState(r)
		edge.From(r.Context()).SetReply(replyJSON)
		r.Body = http.MaxBytesReader(w, r.Body, limit)
		if err := h(w, r); err != nil {
			s.failJSON(w, r, err)
		}
	})))
}

func (s *Server) failJSON(w http.ResponseWriter, r *http.Request, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		err = clinic.Errorf(clinic.ETooLarge, "That is more than the call takes (at most %d bytes).", tooLarge.Limit)
	}
	pr := edge.ProblemOf(r, err)
	pr.SetHeaders(w)
	_ = edge.WriteJSON(w, pr.Status, callError{Code: pr.Code, Message: s.words(r, pr.Code, pr.Message)})
}

// replyJSON is the call routes' answer to an error the edge answers (a
// panic): JSON, as failJSON's, never a page.
func replyJSON(w http.ResponseWriter, _ *http.Request, status int, msg string) {
	_ = edge.WriteJSON(w, status, callError{Code: edge.Code(status), Message: msg})
}

// callError is the call routes' error body.
type callError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type callPeer struct {
	Peer string `json:"peer"`
	Name string `json:"name"`
	Role string `json:"role"`
}

// callJoined is the answer to a join. Mode is "p2p" or "livekit".
type callJoined struct {
	Mode         string            `json:"mode"`
	Role         string            `json:"role"`
	Name         string            `json:"name"`
	Status       string            `json:"status"`
	Peer         string            `json:"peer,omitempty"`
	After        int64             `json:"after"`
	Peers        []callPeer        `json:"peers"`
	ICEServers   []media.ICEServer `json:"ice_servers"`
	ICEPolicy    string            `json:"ice_transport_policy,omitempty"`
	LiveKitURL   string            `json:"livekit_url,omitempty"`
	LiveKitToken string            `json:"livekit_token,omitempty"`
}

// callJoin is POST /visits/start/{id}/call/join.
func (s *Server) callJoin(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	// The page says whether it joins without a camera ({"audio_only":
	// true}); a body it cannot read joins with video.
	var in struct {
		AudioOnly bool `json:"audio_only"`
	}
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&in)
	j, err := s.calls.Join(r.Context(), p, id, in.AudioOnly)
	if err != nil {
		return err
	}
	out := callJoined{Mode: "p2p", Role: j.Role, Name: j.Name, Status: statusWord(j.Status), Peer: j.Peer, After: j.After,
		Peers: []callPeer{}, ICEServers: j.ICEServers, ICEPolicy: j.ICEPolicy}
	if j.LiveKitToken != "" {
		out.Mode, out.LiveKitURL, out.LiveKitToken = "livekit", j.LiveKitURL, j.LiveKitToken
	}
	for _, c := range j.Peers {
		out.Peers = append(out.Peers, callPeer{Peer: c.Peer, Name: c.Name, Role: c.Role})
	}
	edge.WriteJSON(w, http.StatusOK, out)
	return nil
}

// callRelay is POST /visits/start/{id}/call/relay: the ICE servers with
// a relay credential, for the device check to try the clinic's relay
// (calls.RelayCheck).
func (s *Server) callRelay(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	servers, err := s.calls.RelayCheck(r.Context(), p, id)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, callRelayOut{ICEServers: servers})
	return nil
}

type callRelayOut struct {
	ICEServers []media.ICEServer `json:"ice_servers"`
}

// callSignalIn is a signal as the page sends it.
type callSignalIn struct {
	Peer string          `json:"peer"`
	To   string          `json:"to"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// callSignal is POST /visits/start/{id}/call/signal; the answer is the
// signal's number.
func (s *Server) callSignal(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	var in callSignalIn
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return clinic.Errorf(clinic.EInvalid, "The body must be a JSON object with peer, to, type and data.")
	}
	if len(in.Data) == 0 {
		in.Data = json.RawMessage("{}")
	}
	seq, err := s.calls.Send(r.Context(), p, id, calls.SignalInput{Peer: in.Peer, To: in.To, Kind: in.Type, Body: in.Data})
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, map[string]int64{"seq": seq})
	return nil
}

// callLeave is POST /visits/start/{id}/call/leave, sent by the Leave
// button and, as a beacon, by a page that closes.
func (s *Server) callLeave(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	var in struct {
		Peer string `json:"peer"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		return clinic.Errorf(clinic.EInvalid, "The body must be a JSON object with peer.")
	}
	if err := s.calls.Leave(r.Context(), p, id, in.Peer); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// callEnd is POST /visits/start/{id}/call/end: the provider ends the
// visit for everyone, as PUT /visits/close does (app.MoveVisit decides
// who may).
func (s *Server) callEnd(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	d, err := s.app.MoveVisit(r.Context(), p, id, app.ActClose, app.MoveInput{})
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, map[string]string{"status": statusWord(d.Visit.Status)})
	return nil
}

// callInvite is POST /visits/start/{id}/call/invite: the provider's
// one-time link for a guest.
func (s *Server) callInvite(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	inv, err := s.calls.InviteGuest(r.Context(), p, id)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"url": inv.URL, "expires": inv.Expires})
	return nil
}

type invitePage struct {
	Action string
	Error  string
}

// inviteForm is GET /invite/{account_code}/{token}: a guest's invitation
// asks their name, once the link is known to be good.
func (s *Server) inviteForm(w http.ResponseWriter, r *http.Request) error {
	p, err := s.accountPrincipal(r, r.PathValue("account_code"))
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "No clinic has that address.")
	}
	if err := s.calls.InviteOpen(r.Context(), p, r.PathValue("token")); err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "invite", invitePage{Action: r.URL.Path})
	return nil
}

// inviteAccept is POST /invite/{account_code}/{token}: the guest signs in
// with the invitation and goes to the call.
func (s *Server) inviteAccept(w http.ResponseWriter, r *http.Request) error {
	p, err := s.accountPrincipal(r, r.PathValue("account_code"))
	if err != nil {
		return clinic.Errorf(clinic.ENotFound, "No clinic has that address.")
	}
	sess, visitID, err := s.calls.AcceptInvite(r.Context(), p, r.PathValue("token"), r.PostFormValue("first_name"), r.PostFormValue("last_name"))
	if status, msg, ok := s.refused(r, err, clinic.EInvalid); ok {
		s.render(w, r, status, "invite", invitePage{Action: r.URL.Path, Error: msg})
		return nil
	}
	if err != nil {
		return err
	}
	s.setCookie(w, s.sessionCookie(), sess.Token, s.cfg.SessionMax)
	http.Redirect(w, r, "/visits/call/"+strconv.FormatInt(visitID, 10), http.StatusSeeOther)
	return nil
}

type callPage struct{ Call *callView }

// callOnly is GET /visits/call/{id}: the call alone, for everyone in it;
// it is a guest's whole view of the visit.
func (s *Server) callOnly(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	role, err := s.calls.Role(r.Context(), p, id)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "call", callPage{Call: s.callView(w, r, p, id, role)})
	return nil
}

// callView is the call part of a page for p, a participant in role: the
// provider's with the clinic's interpreters to bring in, those of the
// patient's language first. A failed read of those leaves them out: the
// call itself is still offered.
func (s *Server) callView(w http.ResponseWriter, r *http.Request, p *clinic.Principal, id int64, role string) *callView {
	stun, _ := json.Marshal(s.calls.STUNServers())
	c := &callView{Base: "/visits/start/" + strconv.FormatInt(id, 10) + "/call", Mode: "p2p", Seats: calls.MaxPeers, Role: role, CanEnd: role == calls.RoleProvider, STUN: string(stun)}
	if u := s.calls.LiveKitURL(); u != "" {
		c.Mode, c.Seats = "livekit", calls.LiveKitMaxParticipants
		w.Header().Set("Content-Security-Policy", liveKitCSP(u))
	}
	if role != calls.RoleProvider {
		return c
	}
	loc := s.localeOf(r)
	lang, err := s.app.Core().VisitLanguage(r.Context(), p.Account.ID, id)
	var list []*clinic.Interpreter
	if err == nil {
		list, err = s.app.Interpreters(r.Context(), p, "")
	}
	if err != nil {
		s.log.Warn("call: interpreters not offered", "visit", id, "err", err)
		return c
	}
	if lang != "" {
		c.PatientLanguage = app.LanguageName(lang, loc.Tag)
	}
	var others []interpreterView
	for _, it := range list {
		v := interpreterView{ID: it.ID, Name: it.Name, Language: app.LanguageName(it.Language, loc.Tag), Agency: it.Agency,
			Email: it.Email != "", Text: it.Phone != ""}
		if lang != "" && app.SameLanguage(it.Language, lang) {
			c.Interpreters = append(c.Interpreters, v)
		} else {
			others = append(others, v)
		}
	}
	c.Interpreters = append(c.Interpreters, others...)
	return c
}

// interpreterView is an interpreter the provider may bring into the call.
type interpreterView struct {
	ID             int64
	Name, Language string
	Agency         bool
	Email, Text    bool // how the link can go
}

// callInterpreter is POST /visits/start/{id}/call/interpreter: the
// provider sends an interpreter ({"interpreter_id", "via": "email" or
// "text"}) a one-time link into the call.
func (s *Server) callInterpreter(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	var in struct {
		InterpreterID int64  `json:"interpreter_id,string"`
		Via           string `json:"via"`
	}
	// A body it cannot read names no interpreter: the service says so,
	// after it has checked the caller may ask.
	_ = json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&in)
	_, it, err := s.calls.InviteInterpreter(r.Context(), p, id, in.InterpreterID, in.Via)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"name": it.Name, "via": in.Via})
	return nil
}

// callRecording is POST /visits/start/{id}/call/recording: a part of the
// call recorded in the provider's page (multipart: file, start, end as
// UNIX seconds, peer, and request, the number of the recording's notice).
func (s *Server) callRecording(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		return clinic.Errorf(clinic.EInvalid, "The recording must be sent as multipart/form-data with file, start, end, peer and request.")
	}
	defer r.MultipartForm.RemoveAll()
	f, _, err := r.FormFile("file")
	if err != nil {
		return clinic.Errorf(clinic.EInvalid, "file (the recording) is required.")
	}
	defer f.Close()
	ff := formFields(r)
	in := calls.RecordingInput{Peer: ff.str("peer"), Request: ff.number("request", "the recording request's number"),
		RecordingInput: app.RecordingInput{File: f, Start: ff.number("start", "a time in unix seconds"), End: ff.number("end", "a time in unix seconds")}}
	if err := ff.Err(); err != nil {
		return err
	}
	rec, err := s.calls.KeepRecording(r.Context(), p, id, in)
	if err != nil {
		return err
	}
	edge.WriteJSON(w, http.StatusOK, map[string]any{"id": strconv.FormatInt(rec.ID, 10), "size": rec.Size, "content_type": rec.ContentType})
	return nil
}

// signalOut is a signal as the page receives it: event "signal", its id
// the signal's number.
type signalOut struct {
	From string          `json:"from"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// callEvents is GET /visits/start/{id}/call/events?peer=…&after=…: the
// signals for the caller's peer, from after (or the stream's Last-Event-ID
// when it reconnects), and "ended" when the visit closes or the caller may
// no longer take part. The session is checked before every event (the
// pump), and at each keep-alive the peer is seen.
func (s *Server) callEvents(w http.ResponseWriter, r *http.Request) error {
	p, id, err := s.visitRequest(r)
	if err != nil {
		return err
	}
	// A browser that reconnects sends the last signal it had; the page's
	// first request says where its join left off.
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	after, err := int64(0), error(nil)
	if v != "" {
		after, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		return clinic.Errorf(clinic.EInvalid, "after (the last signal number the page has) must be a number.")
	}
	release, err := s.openStream(r)
	if err != nil {
		return err
	}
	cw, err := s.calls.Watch(r.Context(), p, id, r.URL.Query().Get("peer"), after)
	if err != nil {
		release()
		return err
	}
	pump := s.pump(r)
	// Every keep-alive, busy or quiet: still in the call? (which also
	// marks the peer seen).
	pump.Tick = func(ctx context.Context) error {
		v, err := cw.Alive(ctx)
		if v != nil {
			return callEnded{v}
		}
		return err
	}
	pump.End = func(err error) live.Frame {
		if ce, ok := errors.AsType[callEnded](err); ok {
			return endedFrame(clinic.EConflict, statusWord(ce.v.Status))
		}
		return endedFrame(clinic.ErrorCode(err), "")
	}
	src := live.Polled{Subs: []*live.Sub{cw.Sub()}, Ahead: cw.Ahead, Poll: func(ctx context.Context, ch live.Changes) ([]live.Frame, error) {
		ev, ok, err := cw.Poll(ctx, ch)
		switch {
		case err != nil || !ok:
			return nil, err
		case ev.Ended != nil:
			return nil, callEnded{ev.Ended}
		}
		out := make([]live.Frame, 0, len(ev.Signals))
		for _, sg := range ev.Signals {
			b, _ := json.Marshal(signalOut{From: sg.From, Type: sg.Kind, Data: json.RawMessage(sg.Body)})
			out = append(out, live.Frame{Name: "signal", ID: strconv.FormatInt(sg.Seq, 10), Data: b})
		}
		return out, nil
	}}
	pump.Serve(w, r, src, func() { cw.Close(); release() })
	return nil
}

// callEnded ends a call's stream: the visit closed (409 with its status).
type callEnded struct{ v *clinic.Visit }

func (e callEnded) Error() string { return "conflict: the visit has ended" }

// Unwrap gives the end its code, conflict, as the API's calls answer it.
func (e callEnded) Unwrap() error { return clinic.Errorf(clinic.EConflict, "The visit has ended.") }

// liveKitCSP is the visit page's policy when calls go through LiveKit at
// u: the page also connects to it (its signalling WebSocket, and its
// HTTPS address for the region and validation requests).
func liveKitCSP(u string) string {
	lk, err := url.Parse(u)
	if err != nil || lk.Host == "" {
		return pageCSP
	}
	ws, web := "wss://"+lk.Host, "https://"+lk.Host
	if lk.Scheme == "ws" || lk.Scheme == "http" {
		ws, web = "ws://"+lk.Host, "http://"+lk.Host
	}
	return strings.Replace(pageCSP, "default-src 'self';", "default-src 'self'; connect-src 'self' "+ws+" "+web+";", 1)
}
