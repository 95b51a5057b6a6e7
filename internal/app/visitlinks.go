package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/locale"
	"teleclinic/internal/sms"
	"teleclinic/internal/store"
)

// The links the clinic's emails carry to a patient's visit. A patient who
// signed in through the clinic's own product (SSO) or as a guest has no
// password, so a link to the visit's page behind a password sign-in is a
// dead end. Instead every email about a visit carries a link of its own
// (/v/{token}) that signs its person into that visit and nothing else:
// the session it starts reads and acts on that one visit's pages (its
// call, thread, time, calendar file) and is refused everywhere else, by
// the portal and by the API.
//
//   - Single use: the link starts one session; opened again, it says so
//     and offers a fresh link by email (ResendVisitLink) to the address
//     the clinic has, which an eavesdropper of the old one does not read.
//     The page a link opens asks for a press before it is used, so the
//     mail scanners that fetch every link of a message do not spend it.
//   - Short-lived: it lasts until a day after the visit's end (a walk-in's,
//     a day), 30 days at most; the session it starts is an ordinary
//     session's length at most, and ends with the link's time.
//   - Revocable: a sign-out ends the session; RevokeVisitLinks ends every
//     link and session of the visit (the admin's, or the patient's when
//     a link went astray); disabling the person ends them all.
//
// The hash of the link is stored, as of every secret.

// visitLinkAfter is how long after a visit's end its links still open it
// (to read the summary); visitLinkMax bounds any link's life.
const (
	visitLinkAfter = 24 * time.Hour
	visitLinkMax   = 30 * 24 * time.Hour
)

// visitLinkExpiry is when a link of visit v made at now stops opening it.
func visitLinkExpiry(v *clinic.Visit, now int64) int64 {
	end := max(v.End, now)
	return min(end+int64(visitLinkAfter/time.Second), now+int64(visitLinkMax/time.Second))
}

// visitLink makes a link that opens visit v for user u, in q's
// transaction, and answers its address.
func (a *App) visitLink(ctx context.Context, q *store.Q, v *clinic.Visit, u *clinic.User) (string, error) {
	secret, now := NewSecret(), a.Unix()
	err := q.CreateToken(ctx, &store.Token{AccountID: v.AccountID, UserID: u.ID, Kind: store.TokenVisitLink, Hash: HashSecret(secret),
		Family: RandomHex(16), Created: now, LastUsed: now, Expires: visitLinkExpiry(v, now), VisitID: v.ID})
	if err != nil {
		return "", fmt.Errorf("visit link: %w", err)
	}
	return a.portalBase() + "/v/" + secret, nil
}

// patientLink is the link of visit v for user u in a mail: a visit link
// for its patient, the visit's page for anyone else (a provider signs in
// as they do every day).
func (a *App) patientLink(ctx context.Context, q *store.Q, v *clinic.Visit, u *clinic.User) (string, error) {
	if u.ID != v.MemberID {
		return a.portalBase() + "/visits/start/" + i64s(v.ID), nil
	}
	return a.visitLink(ctx, q, v, u)
}

// VisitLinkFor is the way to visit id for p in something p keeps (a
// calendar file): a fresh visit link for its patient, the visit's page
// for its other participants.
func (a *App) VisitLinkFor(ctx context.Context, p *clinic.Principal, id int64) (string, error) {
	d, err := a.GetVisit(ctx, p, id, false)
	if err != nil {
		return "", err
	}
	u := p.User
	if d.Visit.MemberID != p.UserID() {
		return a.portalBase() + "/visits/start/" + i64s(d.Visit.ID), nil
	}
	var link string
	err = a.store.Tx(ctx, func(q *store.Q) error {
		link, err = a.visitLink(ctx, q, d.Visit, u)
		return err
	})
	return link, err
}

// VisitLinkState is what the page of a visit link shows before it is
// used: whose visit, when, and whether the link still opens it.
type VisitLinkState struct {
	Account *clinic.Account
	Visit   *clinic.Visit
	User    *clinic.User
	// Used: opened already; Expired: past its time. Either way the page
	// offers a fresh link by email or text.
	Used, Expired bool
	// Email is where a fresh link would go, masked ("a•••@example.com");
	// "" when the person has no address (or turned emails off). Phone is
	// the last four digits of the number it would be texted to ("" when
	// the clinic sends no texts, the person said no yes, or their number
	// texted STOP).
	Email, Phone string
}

var errVisitLink = clinic.Errorf(clinic.ENotFound, "This link opens no visit. Use the latest email the clinic sent you, or contact the clinic.")

// visitLinkToken is the visit link token names, with its clinic, visit
// and user; errVisitLink when there is none, or it was revoked.
func (a *App) visitLinkToken(ctx context.Context, token string) (*store.Token, *VisitLinkState, error) {
	if token == "" || len(token) > 100 {
		return nil, nil, errVisitLink
	}
	rd := a.store.Read()
	t, err := rd.TokenByHash(ctx, HashSecret(token))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil, errVisitLink
	case err != nil:
		return nil, nil, fmt.Errorf("visit link: %w", err)
	case t.Kind != store.TokenVisitLink || t.Revoked != 0:
		return nil, nil, errVisitLink
	}
	st := &VisitLinkState{Used: t.Used != 0, Expired: a.Unix() >= t.Expires}
	if st.Account, err = a.accountByID(ctx, t.AccountID); err != nil {
		return nil, nil, fmt.Errorf("visit link: %w", err)
	}
	if st.Visit, err = rd.VisitByID(ctx, t.AccountID, t.VisitID); err != nil {
		return nil, nil, StoreErr("visit link", err, "This link's visit is gone. Contact the clinic.")
	}
	if st.User, err = rd.UserByID(ctx, t.AccountID, t.UserID); err != nil {
		return nil, nil, StoreErr("visit link", err, "This link opens no visit.")
	}
	if st.User.Status == clinic.StatusDisabled {
		return nil, nil, errVisitLink
	}
	if !st.User.DisableEmails {
		st.Email = MaskEmail(st.User.Email)
	}
	if st.Phone, err = a.textableNumber(ctx, st.Account.ID, st.User.ID); err != nil {
		return nil, nil, fmt.Errorf("visit link: %w", err)
	}
	return t, st, nil
}

// VisitLink is GET /v/{token}: the link's visit and whether it still
// opens it, without using it.
func (a *App) VisitLink(ctx context.Context, token string) (*VisitLinkState, error) {
	_, st, err := a.visitLinkToken(ctx, token)
	return st, err
}

// OpenVisitLink is POST /v/{token}: the link is used (once, of any number
// of concurrent tries) and starts a portal session that opens its visit
// alone, until the link's own time at most.
func (a *App) OpenVisitLink(ctx context.Context, requestID, clientAddr, token string) (*Session, *VisitLinkState, error) {
	t, st, err := a.visitLinkToken(ctx, token)
	if err != nil {
		return nil, nil, err
	}
	p := &clinic.Principal{Account: st.Account, Kind: clinic.CredUserToken, User: st.User, RequestID: requestID, ClientAddr: clientAddr}
	switch {
	case st.Expired:
		return nil, st, clinic.Errorf(clinic.EUnauthenticated, "This link has expired.")
	case st.Used:
		return nil, st, clinic.Errorf(clinic.EUnauthenticated, "This link was used already.")
	}
	now := a.Unix()
	s := &Session{UserID: st.User.ID, Token: NewSecret()}
	access := &store.Token{AccountID: t.AccountID, UserID: t.UserID, Kind: store.TokenAccess, Hash: HashSecret(s.Token), Family: t.Family,
		Created: now, LastUsed: now, Expires: min(now+int64(a.cfg.UserTokenMax/time.Second), t.Expires), VisitID: t.VisitID}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		won, err := q.UseToken(ctx, t.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return clinic.Errorf(clinic.EUnauthenticated, "This link was used already.")
		}
		if err := q.CreateToken(ctx, access); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "visit.link.open", "visit", i64s(t.VisitID), OutcomeOK)
	})
	if err != nil {
		st.Used = clinic.ErrorCode(err) == clinic.EUnauthenticated
		return nil, st, StoreErr("visit link", err, "")
	}
	s.Expiry = min(access.Expires, now+int64(a.cfg.UserTokenIdle/time.Second))
	return s, st, nil
}

// visitLinkResends bounds the fresh links one visit's person may ask for
// in the throttle's window.
const visitLinkResends = 3

// ResendVisitLink is POST /v/{token}/again: a fresh link to the link's
// visit, mailed to the address the clinic has for its person (never to
// one the asker gives), for a link used already or expired, while the
// visit may still be opened. It says nothing of whether a mail went: the
// page says where it would go.
func (a *App) ResendVisitLink(ctx context.Context, requestID, clientAddr, token string) error {
	_, st, err := a.visitLinkToken(ctx, token)
	if err != nil {
		return err
	}
	p := &clinic.Principal{Account: st.Account, Kind: clinic.CredUserToken, User: st.User, RequestID: requestID, ClientAddr: clientAddr}
	keys := []ThrottleKey{{AccountID: st.Account.ID, Bucket: "visitlink:" + i64s(st.Visit.ID), Limit: visitLinkResends}}
	if clientAddr != "" && a.cfg.AddressAttempts > 0 {
		keys = append(keys, ThrottleKey{Bucket: "addr:" + AddressBlock(clientAddr), Limit: a.cfg.AddressAttempts})
	}
	if _, err := a.countAttempt(ctx, keys); err != nil {
		return err
	}
	// A booked visit may be opened until a while after its end; one with
	// no end (a walk-in, an e-consult) while it is not over.
	now, v := a.Unix(), st.Visit
	over := v.Status == clinic.VisitCompleted || v.Status == clinic.VisitCancelled
	if v.End != 0 && now >= visitLinkExpiry(v, v.End) || v.End == 0 && over {
		return nil
	}
	return StoreErr("visit link", a.store.Tx(ctx, func(q *store.Q) error {
		// By text too, when they said yes to texts: its own link.
		if err := a.text(ctx, q, st.Account.ID, st.User, TextLinkAgain, func(loc *locale.Locale) (string, error) {
			link, err := a.visitLink(ctx, q, st.Visit, st.User)
			return loc.T("%s: a new link to your video visit (it works once): %s", st.Account.Name, link), err
		}); err != nil {
			return err
		}
		if st.User.Email == "" || st.User.DisableEmails {
			return a.AuditIn(ctx, q, p, "visit.link.resend", "visit", i64s(st.Visit.ID), OutcomeOK)
		}
		link, err := a.visitLink(ctx, q, st.Visit, st.User)
		if err != nil {
			return err
		}
		loc := a.localeOf(st.User)
		body := loc.T("Hello %s,", st.User.FirstName) + "\n\n" + loc.T("Here is a new link to your visit with %s:", st.Account.Name) + "\n" + link + "\n\n" +
			loc.T("It works once, on the device you open it on. If you did not ask for it, ignore this message.") + "\n\n" + st.Account.Name + "\n"
		raw, _ := json.Marshal(mailMessage{To: st.User.Email, Subject: loc.T("%s: your link to your visit", st.Account.Name), Body: body})
		sealed, err := a.Seal(raw)
		if err != nil {
			return err
		}
		if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: st.Account.ID, Topic: TopicMail, Payload: sealed, Created: now, Due: now}); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "visit.link.resend", "visit", i64s(st.Visit.ID), OutcomeOK)
	}), "")
}

// RevokeVisitLinks ends every link mailed about visit id and every
// session they started: the admin's, or the visit's patient's own (a
// link forwarded by mistake). It answers how many ended.
func (a *App) RevokeVisitLinks(ctx context.Context, p *clinic.Principal, id int64) (int, error) {
	if err := RequireUser(p); err != nil {
		return 0, err
	}
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return 0, err
	}
	if !p.IsAdmin() && v.MemberID != p.UserID() {
		return 0, a.AuditOutcome(ctx, p, "visit.links.revoke", "visit", i64s(id), clinic.Errorf(clinic.EForbidden, "Only the visit's patient or the clinic admin ends its links."))
	}
	var n int
	err = a.store.Tx(ctx, func(q *store.Q) error {
		var err error
		if n, err = q.RevokeVisitTokens(ctx, p.Account.ID, v.ID, a.Unix()); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "visit.links.revoke", "visit", i64s(v.ID), OutcomeOK)
	})
	return n, StoreErr("revoke visit links", err, "")
}

// MaskEmail shows enough of an address for its owner to know it: the
// first letter and the domain.
func MaskEmail(addr string) string {
	local, domain, ok := strings.Cut(addr, "@")
	if !ok || local == "" {
		return ""
	}
	return local[:1] + "•••@" + domain
}

// VisitScopeAllows says whether a credential that opens visit scope alone
// may open path: that visit's pages (its page, call, thread, calendar
// file, changes), the portal's root (which sends it there), the language
// switch and leaving.
func VisitScopeAllows(scope int64, path string) bool {
	if scope == 0 {
		return true
	}
	id := i64s(scope)
	for _, base := range []string{"/visits/start/" + id, "/visits/call/" + id} {
		if rest, ok := strings.CutPrefix(path, base); ok && (rest == "" || rest[0] == '/') {
			return true
		}
	}
	return path == "/signout" || path == "/" || strings.HasPrefix(path, "/lang/")
}

// SetGuestContact is a guest's email, and phone if they give one, taken
// as they book a time ahead: a guest's session lasts hours, so the
// booking's confirmation, reminders and the link back to the visit go to
// this address. It is the guest's own (a guest's email is never a login:
// store.UserByLogin). texts is the guest's yes to texts at phone, kept
// with its time (SetSMSConsent).
func (a *App) SetGuestContact(ctx context.Context, p *clinic.Principal, email, phone string, texts bool) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	if p.User.Type != clinic.UserGuest {
		return clinic.Errorf(clinic.EForbidden, "Only a guest gives their email this way; a patient's is on their profile.")
	}
	email, phone = strings.TrimSpace(email), strings.TrimSpace(phone)
	if email == "" {
		return clinic.Errorf(clinic.EInvalid, "To book a time as a guest, give your email: the booking, its reminders and your link back to the visit go there.")
	}
	if err := CheckFields(Line("email", email, MaxLineChars), Line("phone", phone, 32)); err != nil {
		return err
	}
	if !mailable(email) {
		return clinic.Errorf(clinic.EInvalid, "email must be an address like name@example.com.")
	}
	if !phoneChars(phone) {
		return clinic.Errorf(clinic.EInvalid, "phone must be a phone number: digits, spaces and + - ( ) . only.")
	}
	var consent *clinic.SMSConsent
	if texts {
		e164, ok := sms.Normalize(phone)
		if !ok {
			return clinic.Errorf(clinic.EInvalid, "To get texts, give your mobile number, like +1 415 555 0134.")
		}
		consent = &clinic.SMSConsent{AccountID: p.Account.ID, UserID: p.UserID(), Phone: e164, Consented: a.Unix()}
	}
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, p.UserID())
	if err != nil {
		return StoreErr("guest contact", err, "User not found.")
	}
	next := *u
	next.Email, next.Phone, next.Modified = email, phone, a.Unix()
	return StoreErr("guest contact", a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.UpdateProfile(ctx, &next); err != nil {
			return err
		}
		if consent != nil {
			if err := q.PutSMSConsent(ctx, consent); err != nil {
				return err
			}
			if err := a.AuditIn(ctx, q, p, "sms.consent", "user", i64s(u.ID), OutcomeOK); err != nil {
				return err
			}
		}
		return a.AuditIn(ctx, q, p, "user.update", "user", i64s(u.ID), OutcomeOK)
	}), "")
}
