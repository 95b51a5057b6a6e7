package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// Session is a freshly issued access and refresh token pair (spec: Session
// token object). The token values exist only here, on their way to the client.
type Session struct {
	UserID         int64
	Token          string
	Expiry         int64 // when the access token lapses if unused
	Refresh        string
	RefreshExpiry  int64
	RefreshCreated int64
}

// issueSession creates a new access+refresh pair in family (a new family when
// empty) inside the caller's transaction.
func (a *App) issueSession(ctx context.Context, q *store.Q, u *clinic.User, family string) (*Session, error) {
	now := a.Unix()
	if family == "" {
		family = RandomHex(16)
	}
	s := &Session{UserID: u.ID, Token: NewSecret(), Refresh: NewSecret(), RefreshCreated: now}
	access := &store.Token{AccountID: u.AccountID, UserID: u.ID, Kind: store.TokenAccess, Hash: HashSecret(s.Token), Family: family,
		Created: now, LastUsed: now, Expires: now + int64(a.cfg.UserTokenMax/time.Second)}
	refresh := &store.Token{AccountID: u.AccountID, UserID: u.ID, Kind: store.TokenRefresh, Hash: HashSecret(s.Refresh), Family: family,
		Created: now, LastUsed: now, Expires: now + int64(a.cfg.RefreshTokenMax/time.Second)}
	if err := q.CreateToken(ctx, access); err != nil {
		return nil, fmt.Errorf("issue token: %w", err)
	}
	if err := q.CreateToken(ctx, refresh); err != nil {
		return nil, fmt.Errorf("issue token: %w", err)
	}
	s.Expiry = min(access.Expires, now+int64(a.cfg.UserTokenIdle/time.Second))
	s.RefreshExpiry = refresh.Expires
	return s, nil
}

// AuthRedirect is GET /auth: it checks an SSO token and returns the portal
// address to send the browser to, logged in. With oneTime the SSO token is
// consumed (exactly one of any number of concurrent uses succeeds, across
// processes). Either way the address carries a link token of the same
// login, not the SSO token: it stays in the browser's history, so it is
// good once (the portal's /auth consumes it) and for linkTTL.
func (a *App) AuthRedirect(ctx context.Context, requestID, ssoToken, next string, oneTime, disableNav bool) (string, error) {
	if next != "" && !LocalPath(next) {
		return "", clinic.Errorf(clinic.EInvalid, "next must be a path on the portal, starting with a single '/'.")
	}
	p, family, _, err := a.linkPrincipal(ctx, requestID, ssoToken)
	if err != nil {
		return "", err
	}
	link := NewSecret()
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if oneTime {
			if err := a.consumeLinkToken(ctx, q, p); err != nil {
				return err
			}
		}
		now := a.Unix()
		return q.CreateToken(ctx, &store.Token{AccountID: p.Account.ID, UserID: p.User.ID, Kind: store.TokenLink, Hash: HashSecret(link), Family: family,
			Created: now, LastUsed: now, Expires: now + int64(linkTTL/time.Second)})
	})
	if err != nil {
		return "", StoreErr("sign-in link", err, "")
	}
	v := url.Values{"sso_token": {link}}
	if next != "" {
		v.Set("next", next)
	}
	if disableNav {
		v.Set("disable_navigation", "1")
	}
	return a.portalBase() + "/auth?" + v.Encode(), nil
}

// portalBase is the configured portal address with a scheme; the spec writes
// it as a bare host in https://{portal_url}.
// PortalURL is the portal's address, for links to its pages.
func (a *App) PortalURL() string { return a.portalBase() }

// linkTTL is how long the address AuthRedirect makes is good for: the
// browser follows the redirect at once.
const linkTTL = 2 * time.Minute

func (a *App) portalBase() string {
	p := strings.TrimRight(a.cfg.PortalURL, "/")
	if p == "" {
		p = strings.TrimRight(a.cfg.BaseURL, "/")
	}
	if !strings.Contains(p, "://") {
		p = "https://" + p
	}
	return p
}

// Login is POST /users/login: username or email and password.
func (a *App) Login(ctx context.Context, p *clinic.Principal, login, password string) (*Profile, *Session, error) {
	if err := RequireAccount(p); err != nil {
		return nil, nil, err
	}
	if login == "" || password == "" {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "username (or email) and password are required.")
	}
	succeeded, err := a.countAttempt(ctx, a.attemptKeys(p, "login", login))
	if err != nil {
		return nil, nil, err
	}
	u, err := a.store.Read().UserByLogin(ctx, p.Account.ID, login)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, nil, fmt.Errorf("login: %w", err)
	}
	hash := dummyHash
	if u != nil && u.PasswordHash != "" {
		hash = u.PasswordHash
	}
	ok, err := a.verifyPassword(ctx, hash, password)
	if err != nil {
		return nil, nil, err
	}
	// The clinic admin signs in with the admin token (AdminSignIn), never
	// with a password.
	if u == nil || u.PasswordHash == "" || !ok || u.Type == clinic.UserAdmin {
		return nil, nil, unauthenticated("Invalid username or password.")
	}
	if u.Status == clinic.StatusDisabled || !u.Active {
		return nil, nil, unauthenticated("This user is disabled.")
	}
	succeeded()
	return a.startSession(ctx, p, u, "user.login")
}

// startSession issues a new login for u, records it, and returns the profile.
func (a *App) startSession(ctx context.Context, p *clinic.Principal, u *clinic.User, action string) (*Profile, *Session, error) {
	var s *Session
	err := a.store.Tx(ctx, func(q *store.Q) error {
		var err error
		if s, err = a.issueSession(ctx, q, u, ""); err != nil {
			return err
		}
		u.LastLogin = a.Unix()
		if err := q.TouchLogin(ctx, u.AccountID, u.ID, u.LastLogin); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, action, "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, nil, StoreErr("session", err, "")
	}
	prof, err := a.profile(ctx, p.Account, u)
	return prof, s, err
}

// Logout is POST /users/logout. With tokens it destroys those (the caller's
// own; the admin token may destroy any of the clinic's); without, it ends the
// caller's login, refresh token included.
func (a *App) Logout(ctx context.Context, p *clinic.Principal, tokens []string) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	now := a.Unix()
	return StoreErr("logout", a.store.Tx(ctx, func(q *store.Q) error {
		if len(tokens) == 0 {
			if p.Kind != clinic.CredUserToken {
				return clinic.Errorf(clinic.EInvalid, "The admin token cannot log out; rotate it instead, or name the tokens to destroy.")
			}
			return a.revokeOwnFamily(ctx, q, p, now)
		}
		for _, tok := range tokens {
			t, err := q.TokenByHash(ctx, HashSecret(tok))
			if errors.Is(err, store.ErrNotFound) {
				continue // destroying what does not exist is done
			}
			if err != nil {
				return err
			}
			if t.AccountID != p.Account.ID || (!p.IsAdmin() && t.UserID != p.UserID()) {
				continue // never another user's token, never another clinic's
			}
			if _, err := q.RevokeToken(ctx, t.AccountID, t.ID, now); err != nil {
				return err
			}
		}
		return a.AuditIn(ctx, q, p, "user.logout", "user", i64s(p.UserID()), OutcomeOK)
	}), "")
}

func (a *App) revokeOwnFamily(ctx context.Context, q *store.Q, p *clinic.Principal, now int64) error {
	fam, err := q.TokenFamily(ctx, p.Account.ID, p.TokenID)
	if err != nil {
		return err
	}
	if err := q.RevokeFamily(ctx, p.Account.ID, fam, now); err != nil {
		return err
	}
	return a.AuditIn(ctx, q, p, "user.logout", "user", i64s(p.UserID()), OutcomeOK)
}

// errRefreshReuse is returned after the reused token's family was revoked
// and that revocation committed.
var errRefreshReuse = unauthenticated("This refresh token was already used; every token of its login has been revoked. Log in again.")

// Refresh is POST /tokens/refresh: it rotates a refresh token into a new
// access and refresh token. A refresh token rotates once: the conditional
// UPDATE in UseToken picks one winner among concurrent requests in any number
// of processes, and any later use revokes the whole family.
func (a *App) Refresh(ctx context.Context, p *clinic.Principal, refresh string) (*Session, error) {
	if err := RequireAccount(p); err != nil {
		return nil, err
	}
	if refresh == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "refresh_token is required.")
	}
	now := a.Unix()
	var s *Session
	reused := false
	err := a.store.Tx(ctx, func(q *store.Q) error {
		reused = false
		t, err := q.TokenByHash(ctx, HashSecret(refresh))
		if errors.Is(err, store.ErrNotFound) || (err == nil && (t.Kind != store.TokenRefresh || t.AccountID != p.Account.ID)) {
			return unauthenticated("Invalid or expired refresh token.")
		}
		if err != nil {
			return err
		}
		if t.Revoked != 0 || now >= t.Expires {
			return unauthenticated("Invalid or expired refresh token.")
		}
		won, err := q.UseToken(ctx, t.ID, now)
		if err != nil {
			return err
		}
		if !won {
			reused = true
			return q.RevokeFamily(ctx, t.AccountID, t.Family, now)
		}
		u, err := q.UserByID(ctx, t.AccountID, t.UserID)
		if err != nil {
			return err
		}
		if u.Status == clinic.StatusDisabled || !u.Active {
			return unauthenticated("This user is disabled.")
		}
		if s, err = a.issueSession(ctx, q, u, t.Family); err != nil {
			return err
		}
		pp := *p
		pp.User = u
		return a.AuditIn(ctx, q, &pp, "token.refresh", "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("refresh", err, "")
	}
	if reused {
		a.log.Warn("refresh token reuse: login revoked", "account", p.Account.Code, "request_id", p.RequestID)
		return nil, errRefreshReuse
	}
	return s, nil
}

// Secret purposes.
const (
	purposeActivate = "activate"
	purposeReset    = "reset"
)

// mailMessage is the outbox payload of topic "mail", sealed because it may
// carry a single-use secret.
type mailMessage struct {
	To       string `json:"to"`
	Subject  string `json:"subject"`
	Body     string `json:"body"`
	Calendar string `json:"calendar,omitempty"`
}

// TopicMail is the outbox topic of outgoing mail.
const TopicMail = "mail"

// requestSecret mails an activation link (users without a password) or a
// reset link (users with one). It answers the same whether or not the login
// names a user, so it cannot be used to find out who is a patient.
func (a *App) requestSecret(ctx context.Context, p *clinic.Principal, purpose, login string) error {
	return a.mailSecret(ctx, p, purpose, login, "")
}

// mailSecret is requestSecret; invitedBy, when set, names who invited the
// user, and the mail is their invitation rather than an answer to a
// request of the user's.
func (a *App) mailSecret(ctx context.Context, p *clinic.Principal, purpose, login, invitedBy string) error {
	if login == "" {
		return clinic.Errorf(clinic.EInvalid, "email or username is required.")
	}
	// Every request counts (none is given back): a person asks for a link
	// a few times, a script that mails someone a hundred is stopped.
	if _, err := a.countAttempt(ctx, a.attemptKeys(p, "mail", login)); err != nil {
		return err
	}
	u, err := a.store.Read().UserByLogin(ctx, p.Account.ID, login)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("request %s: %w", purpose, err)
	}
	hasPassword := u.PasswordHash != ""
	if u.Email == "" || u.Status == clinic.StatusDisabled || (purpose == purposeActivate) == hasPassword {
		return nil
	}
	secret := NewSecret()
	now := a.Unix()
	subject, path := "Reset your password", "/reset-password"
	if purpose == purposeActivate {
		subject, path = "Activate your account", "/activate"
	}
	link := fmt.Sprintf("%s%s?account=%s&token=%s", a.portalBase(), path, url.QueryEscape(p.Account.Code), url.QueryEscape(secret))
	body := fmt.Sprintf("Hello %s,\n\nOpen this link within %s to continue:\n%s\n\nIf you did not ask for this, ignore this message: nothing changes until the link is opened.\n\n%s\n",
		u.FirstName, DurationWords(a.cfg.SecretTTL), link, p.Account.Name)
	if invitedBy != "" {
		subject = "You are invited to join " + p.Account.Name
		body = fmt.Sprintf("Hello %s,\n\n%s invited you to join %s on Teleclinic as a provider, to see patients by video and message.\n\n"+
			"Choose your password from this link within %s:\n%s\n\nThen sign in at %s/signin. If you did not expect this invitation, ignore this message, or ask %s.\n\n%s\n",
			u.FirstName, invitedBy, p.Account.Name, DurationWords(a.cfg.SecretTTL), link, a.portalBase(), invitedBy, p.Account.Name)
	}
	if invitedBy == "" {
		subject = p.Account.Name + ": " + subject
	}
	raw, _ := json.Marshal(mailMessage{To: u.Email, Subject: subject, Body: body})
	sealed, err := a.Seal(raw)
	if err != nil {
		return err
	}
	return StoreErr("request secret", a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateUserSecret(ctx, &store.UserSecret{AccountID: u.AccountID, UserID: u.ID, Purpose: purpose,
			Hash: HashSecret(secret), Created: now, Expires: now + int64(a.cfg.SecretTTL/time.Second)}); err != nil {
			return err
		}
		if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: u.AccountID, Topic: TopicMail, Payload: sealed, Created: now, Due: now}); err != nil {
			return err
		}
		pp := *p
		pp.User = u
		return a.AuditIn(ctx, q, &pp, "user."+purpose+".request", "user", i64s(u.ID), OutcomeOK)
	}), "")
}

// RequestActivation mails an activation link to a user without a password.
func (a *App) RequestActivation(ctx context.Context, p *clinic.Principal, login string) error {
	if err := RequireAccount(p); err != nil {
		return err
	}
	return a.requestSecret(ctx, p, purposeActivate, login)
}

// RequestReset mails a password reset link to a user with a password.
func (a *App) RequestReset(ctx context.Context, p *clinic.Principal, login string) error {
	if err := RequireAccount(p); err != nil {
		return err
	}
	return a.requestSecret(ctx, p, purposeReset, login)
}

// Activate sets the first password of a user from an activation secret,
// verifies their email (the link reached it) and logs them in.
func (a *App) Activate(ctx context.Context, p *clinic.Principal, secret, password string) (*Profile, *Session, error) {
	if err := RequireAccount(p); err != nil {
		return nil, nil, err
	}
	u, err := a.useSecret(ctx, p, purposeActivate, secret, password, true)
	if err != nil {
		return nil, nil, err
	}
	return a.startSession(ctx, p, u, "user.activate")
}

// ResetPassword sets a new password from a reset secret and ends every login
// of the user.
func (a *App) ResetPassword(ctx context.Context, p *clinic.Principal, secret, password string) error {
	if err := RequireAccount(p); err != nil {
		return err
	}
	_, err := a.useSecret(ctx, p, purposeReset, secret, password, false)
	return err
}

func (a *App) useSecret(ctx context.Context, p *clinic.Principal, purpose, secret, password string, verify bool) (*clinic.User, error) {
	if secret == "" {
		return nil, clinic.Errorf(clinic.EInvalid, "token is required.")
	}
	if err := checkPassword(password); err != nil {
		return nil, err
	}
	// Links are guessed per clinic, not per user: the link names none.
	succeeded, err := a.countAttempt(ctx, a.attemptKeys(p, "link", ""))
	if err != nil {
		return nil, err
	}
	hash, err := a.hashPassword(ctx, password)
	if err != nil {
		return nil, err
	}
	now := a.Unix()
	var u *clinic.User
	err = a.store.Tx(ctx, func(q *store.Q) error {
		s, err := q.ConsumeUserSecret(ctx, p.Account.ID, purpose, HashSecret(secret), now)
		if errors.Is(err, store.ErrNotFound) {
			return clinic.Errorf(clinic.EInvalid, "This link is invalid, expired or already used.")
		}
		if err != nil {
			return err
		}
		if u, err = q.UserByID(ctx, p.Account.ID, s.UserID); err != nil {
			return err
		}
		verified := u.EmailVerified || verify
		if err := q.SetPassword(ctx, u.AccountID, u.ID, hash, clinic.StatusActive, verified, now); err != nil {
			return err
		}
		if err := q.RevokeUserTokens(ctx, u.AccountID, u.ID, now); err != nil {
			return err
		}
		u.PasswordHash, u.Status, u.Active, u.EmailVerified = hash, clinic.StatusActive, true, verified
		pp := *p
		pp.User = u
		return a.AuditIn(ctx, q, &pp, "user."+purpose, "user", i64s(u.ID), OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr(purpose, err, "")
	}
	succeeded()
	return u, nil
}

// checkPassword is the password policy: long enough to resist guessing, short
// enough to bound the hashing work.
func checkPassword(pw string) error {
	switch {
	case len(pw) < 8:
		return clinic.Errorf(clinic.EInvalid, "password must be at least 8 characters.")
	case len(pw) > 256:
		return clinic.Errorf(clinic.EInvalid, "password must be at most 256 characters.")
	}
	return nil
}

// DurationWords says d as a person would: "24 hours", "1 hour", "30
// minutes", "2 days" (a mail never says 24h0m0s).
func DurationWords(d time.Duration) string {
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	switch {
	case d >= 48*time.Hour && d%(24*time.Hour) == 0:
		return plural(int64(d/(24*time.Hour)), "day")
	case d >= time.Hour && d%time.Hour == 0:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Minute:
		return plural(int64(d/time.Minute), "minute")
	}
	return plural(int64(d/time.Second), "second")
}
