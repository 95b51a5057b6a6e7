package app

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// LocalPath reports whether next is a path on this site, safe to redirect
// a browser to: one leading '/', no scheme, host or backslash, no control
// characters, and nothing that decodes (once or twice more) to one of
// those. It is the open-redirect guard of GET /auth on the API and on the
// portal.
func LocalPath(next string) bool {
	for range 3 {
		if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t\x00") {
			return false
		}
		u, err := url.Parse(next)
		if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
			return false
		}
		dec, err := url.PathUnescape(next)
		if err != nil {
			return false
		}
		if dec == next {
			return true
		}
		next = dec
	}
	return false
}

// PortalSession exchanges token, a user's access token that a redirect
// login (GET /api_v3/auth) hands to the portal in its address, for a new
// access token of the same login, which the browser keeps in an HttpOnly
// cookie: the token in the address, which the browser's history has seen,
// is not the one the browser goes on using. With oneTime the token in the
// address is consumed as well (exactly one of any number of concurrent
// uses succeeds, across processes); without it, it stays what it was, the
// integrator's API token. The session expires, idles out and is revoked
// exactly as any access token is, on every process. It is a login of its
// own: signing out of the portal does not end the integrator's session.
// The token is the credential: there is no Principal yet.
func (a *App) PortalSession(ctx context.Context, requestID, token string, oneTime bool) (*Session, error) {
	_, s, err := a.exchangeToken(ctx, requestID, token, oneTime)
	return s, err
}

// SignInLinkUser is the user a sign-in link's token names, checked as
// PortalSession checks it but not consumed: the portal asks a browser that
// is signed in as someone else before it switches (a link from another
// site must not swap the session silently). The token is the credential.
func (a *App) SignInLinkUser(ctx context.Context, requestID, token string) (*clinic.User, error) {
	p, _, _, err := a.linkPrincipal(ctx, requestID, token)
	if err != nil {
		return nil, err
	}
	return p.User, nil
}

// exchangeToken checks an access token, issues a new one of the same
// login (consuming the old one when revoke is set) and audits the portal
// sign-in.
func (a *App) exchangeToken(ctx context.Context, requestID, token string, revoke bool) (*clinic.Principal, *Session, error) {
	p, _, link, err := a.linkPrincipal(ctx, requestID, token)
	if err != nil {
		return nil, nil, err
	}
	u := p.User
	var s *Session
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if revoke || link { // a link token is good once, whatever the address says
			if err := a.consumeLinkToken(ctx, q, p); err != nil {
				return err
			}
		}
		// The portal's session is a login of its own (a new family):
		// signing out of the portal ends it and not the integrator's SSO
		// session it came from, which the integrator's app goes on using.
		var err error
		if s, err = a.issueSession(ctx, q, u, ""); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "user.portal_login", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, nil, StoreErr("portal session", err, "")
	}
	return p, s, nil
}

// GuestJoin signs a guest in at a room that lets guests in (its
// guest_login setting): a new user of the room's guest type, with a code of
// its own, and a login, as SSO makes a guest for an integrator. Anyone with
// the room's address may ask; the room decides.
func (a *App) GuestJoin(ctx context.Context, p *clinic.Principal, roomCode, firstName, lastName string) (*Session, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	r, err := a.RoomByCode(ctx, p, roomCode)
	if err != nil {
		return nil, err
	}
	if !r.Active || !r.Settings.GuestLogin {
		return nil, clinic.Errorf(clinic.EForbidden, "This room does not let guests in: sign in with the account your clinic gave you.")
	}
	in := SSOInput{FirstName: strings.TrimSpace(firstName), LastName: strings.TrimSpace(lastName), Type: r.Settings.GuestType}
	if in.FirstName == "" || in.LastName == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "Give your first and last name, so the provider knows who is waiting.")
	}
	if in.Type == 0 {
		in.Type = clinic.UserGuest
	}
	if in.Type != clinic.UserGuest {
		in.Code = "guest-" + RandomHex(12)
	}
	res, err := a.signInUser(ctx, p, in, "user.guest_join", nil)
	if err != nil {
		return nil, err
	}
	return res.Session, nil
}

var errLinkToken = unauthenticated("Invalid or expired sso_token.")

// consumeLinkToken revokes the token p signed in with, in q's
// transaction: of any number of concurrent uses, across processes, one
// wins; the others are refused as a used link.
func (a *App) consumeLinkToken(ctx context.Context, q *store.Q, p *clinic.Principal) error {
	won, err := q.RevokeToken(ctx, p.Account.ID, p.TokenID, a.Unix())
	if err == nil && !won {
		return errLinkToken
	}
	return err
}

// linkPrincipal is the caller a sign-in link's access token names (GET /auth
// on the API or the portal), and the token's login family: the token must
// be a live access token of an active user. Any failure is the same
// "invalid or expired" answer.
//
// The token is an access token (an integrator's own, or a portal address
// made by hand) or a link token of AuthRedirect's (link: it must be
// consumed).
func (a *App) linkPrincipal(ctx context.Context, requestID, token string) (p *clinic.Principal, family string, link bool, err error) {
	if token == "" {
		return nil, "", false, clinic.Errorf(clinic.EInvalid, "sso_token is required.")
	}
	t, u, err := a.tokenUser(ctx, HashSecret(token))
	if errors.Is(err, store.ErrNotFound) {
		return nil, "", false, errLinkToken
	}
	if err != nil {
		return nil, "", false, fmt.Errorf("sign-in link: %w", err)
	}
	now := a.Unix()
	if link = t.Kind == store.TokenLink; link {
		if t.Revoked != 0 || now >= t.Expires || u.Status == clinic.StatusDisabled || !u.Active {
			return nil, "", false, errLinkToken
		}
	} else if err := a.checkAccess(t, u, now); err != nil {
		return nil, "", false, errLinkToken
	}
	acct, err := a.accountByID(ctx, t.AccountID)
	if err != nil {
		return nil, "", false, fmt.Errorf("sign-in link: %w", err)
	}
	return &clinic.Principal{Account: acct, Kind: clinic.CredUserToken, User: u, TokenID: t.ID, RequestID: requestID}, t.Family, link, nil
}

// AdminSignIn opens the clinic admin's portal session: the admin token,
// checked as the API checks it, buys an access token of the clinic's admin
// user with a user token's idle and absolute lifetimes (and no refresh
// token). Its principal is CredAdminSession: the admin in the portal. The
// API's admin-only routes still take only the admin token itself.
//
// Failed sign-ins are counted per clinic code (known or not) from the
// client's address, and per address: past --login-attempts or
// --address-attempts in the window, a wrong token is a 429; the right one
// always signs in.
func (a *App) AdminSignIn(ctx context.Context, requestID, clientAddr, accountCode, adminToken string) (*Session, error) {
	// The admin token is random: it is judged first, and the right one
	// passes whatever others failed (app/throttle.go).
	keys := a.attemptKeys(&clinic.Principal{ClientAddr: clientAddr}, "admin-signin:"+strings.ToLower(strings.TrimSpace(accountCode)), "")
	p, err := a.Authenticate(ctx, Credentials{AccountCode: accountCode, APIToken: adminToken, RequestID: requestID, ClientAddr: clientAddr}, NeedAdmin)
	if clinic.ErrorCode(err) == clinic.EUnauthenticated {
		return nil, a.refusedSecret(ctx, keys, err)
	}
	if err != nil {
		return nil, err
	}
	if p.Kind != clinic.CredAdminToken {
		return nil, unauthenticated("Sign in with the clinic's admin token.")
	}
	now := a.Unix()
	s := &Session{UserID: p.User.ID, Token: NewSecret()}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		access := &store.Token{AccountID: p.Account.ID, UserID: p.User.ID, Kind: store.TokenAccess, Hash: HashSecret(s.Token), Family: RandomHex(16),
			Created: now, LastUsed: now, Expires: now + int64(a.cfg.UserTokenMax/time.Second)}
		if err := q.CreateToken(ctx, access); err != nil {
			return err
		}
		s.Expiry = min(access.Expires, now+int64(a.cfg.UserTokenIdle/time.Second))
		return a.AuditIn(ctx, q, p, "admin.signin", "account", p.Account.Code, OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("admin sign-in", err, "")
	}
	return s, nil
}

// RotateCredential replaces the clinic's admin token or API secret for the
// signed-in admin (the portal's credential rotation) and returns the new
// value, shown once. A new admin token ends every admin portal session,
// this one included: they were opened with the old one.
func (a *App) RotateCredential(ctx context.Context, p *clinic.Principal, what string) (*AccountCredentials, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if what != RotateAdminToken && what != RotateAPISecret {
		return nil, clinic.Errorf(clinic.EInvalid, "Name the admin token or the API secret to rotate.")
	}
	creds, err := a.Rotate(ctx, p.Account.Code, what)
	if err != nil {
		return nil, err
	}
	if what == RotateAdminToken {
		err := a.store.Tx(ctx, func(q *store.Q) error {
			return q.RevokeUserTokens(ctx, p.Account.ID, p.User.ID, a.Unix())
		})
		if err != nil {
			return nil, fmt.Errorf("rotate: end admin sessions: %w", err)
		}
	}
	return creds, nil
}
