package app

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"teleclinic/internal/blob"
	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// AuditQuery is GET /audit.
type AuditQuery struct {
	UserID     int64
	ObjectType string
	ObjectID   string
	Action     string
	From, To   int64
	// After continues the trail after the entry of this id (keyset: the
	// Link of a full page names it).
	After int64
	Start int
	Limit int
	// ChangesOnly leaves out the reads and lists (actions ending in .read
	// or .list), which every page view adds: the admin's page shows what
	// was done unless asked for what was looked at.
	ChangesOnly bool
}

// The pages of GET /audit.
const (
	AuditPageDefault = 50
	AuditPageMax     = 500
)

// ListAudit is GET /audit, for the clinic admin: the clinic's trail, newest first.
func (a *App) ListAudit(ctx context.Context, p *clinic.Principal, in AuditQuery) (clinic.Page[clinic.AuditEntry], int, error) {
	var none clinic.Page[clinic.AuditEntry]
	if err := RequireAdmin(p); err != nil {
		return none, 0, err
	}
	if in.Start < 0 || in.Limit < 0 || in.After < 0 || (in.To != 0 && in.From > in.To) {
		return none, 0, clinic.Errorf(clinic.EInvalid, "start, limit and after must not be negative, and from must not be after to.")
	}
	if in.Limit == 0 {
		in.Limit = AuditPageDefault
	}
	in.Limit = min(in.Limit, AuditPageMax)
	if err := a.settleAudits(ctx, p.Account.ID); err != nil {
		return none, 0, fmt.Errorf("list audit: %w", err)
	}
	f := store.AuditFilter{AccountID: p.Account.ID, UserID: in.UserID,
		ObjectType: in.ObjectType, ObjectID: in.ObjectID, Action: in.Action, From: in.From, To: in.To, Start: in.Start, Limit: in.Limit + 1,
		ChangesOnly: in.ChangesOnly}
	if in.After != 0 {
		var err error
		f.After, err = a.store.Read().AuditEntryPlace(ctx, p.Account.ID, in.After)
		if errors.Is(err, store.ErrNotFound) {
			return none, 0, clinic.Errorf(clinic.EInvalid, "after must be the id of an entry of the clinic's trail.")
		}
		if err != nil {
			return none, 0, fmt.Errorf("list audit: %w", err)
		}
	}
	list, total, err := a.store.Read().ListAudit(ctx, f)
	if err != nil {
		return none, 0, fmt.Errorf("list audit: %w", err)
	}
	return clinic.PageOf(list, in.Limit, func(e clinic.AuditEntry) int64 { return e.ID }), total, nil
}

// AuditChainKey is the key of the audit trail's hash chain, derived from
// the server key (store.Options.AuditKey): whoever can write the database
// but does not hold server.key cannot forge the chain over an edit.
func AuditChainKey(serverKey []byte) []byte {
	m := hmac.New(sha256.New, serverKey)
	m.Write([]byte("teleclinic audit chain v1"))
	return m.Sum(nil)
}

// AuditBreak is where a clinic's audit chain is first broken.
type AuditBreak struct {
	Seq    int64  // the place in the chain
	ID     int64  // the entry's row, 0 when the entry is missing
	Reason string // what is wrong there
}

// AuditVerification is the outcome of checking a clinic's audit chain.
type AuditVerification struct {
	Entries int64       // chained entries checked
	Head    string      // the chain's recorded last hash
	Broken  *AuditBreak // nil when the chain holds
	// Checkpoint is the latest signed checkpoint the chain was compared
	// with; nil when none was found.
	Checkpoint *AuditCheckpoint
}

// AuditCheckpoint is a clinic's chain end (its place and hash) at a time,
// signed with a key derived from the server key and kept in the blob
// store, outside the database: whoever can rewrite the database cannot
// rewind the chain past it unseen.
type AuditCheckpoint struct {
	AccountID int64  `json:"account_id"`
	Seq       int64  `json:"seq"`
	Head      string `json:"head"`
	Time      int64  `json:"time"`
	Signature string `json:"signature"` // Ed25519, base64, over signedBytes
}

func (c *AuditCheckpoint) signedBytes() []byte {
	return fmt.Appendf(nil, "teleclinic-audit-checkpoint-v1\n%d\n%d\n%s\n%d", c.AccountID, c.Seq, c.Head, c.Time)
}

// auditCheckpointKey is the checkpoints' signing key, derived from the
// server key. Ed25519 rather than an HMAC so that the public half
// (AuditCheckpointPublicKey) lets an auditor check a checkpoint without
// the server key.
func auditCheckpointKey(serverKey []byte) ed25519.PrivateKey {
	m := hmac.New(sha256.New, serverKey)
	m.Write([]byte("teleclinic audit checkpoint v1"))
	return ed25519.NewKeyFromSeed(m.Sum(nil))
}

// AuditCheckpointPublicKey is the key that checks the checkpoints'
// signatures (base64), for an auditor's own tools.
func (a *App) AuditCheckpointPublicKey() string {
	return base64.StdEncoding.EncodeToString(a.checkpointKey.Public().(ed25519.PublicKey))
}

// auditCheckpointBlob is where a clinic's latest checkpoint lives.
func auditCheckpointBlob(accountID int64) string {
	return "audit-checkpoints/" + strconv.FormatInt(accountID, 10) + ".json"
}

// AuditCheckpointEvery is how often the background pass anchors the chains
// that moved, so an entry is anchored at most about this long after it
// was chained (well inside the minute a checkpoint may lag at most).
const AuditCheckpointEvery = 30 * time.Second

// checkpointPass is CheckpointAudits in the background loop, every
// AuditCheckpointEvery.
func (a *App) checkpointPass(ctx context.Context) int {
	now := a.Unix()
	if last := a.lastCheckpoint.Load(); now-last < int64(AuditCheckpointEvery/time.Second) || !a.lastCheckpoint.CompareAndSwap(last, now) {
		return 0
	}
	if _, err := a.CheckpointAudits(ctx); err != nil && ctx.Err() == nil {
		a.log.Error("audit checkpoints", "err", err)
	}
	return 0 // never a full batch: the loop waits for its next poll
}

// CheckpointAudits writes a signed checkpoint of each clinic's chain that
// moved since this process last anchored it and returns how many it
// wrote. A checkpoint never moves back: one already further along (written
// by another process) is kept, and so is one further along than the
// database's chain, which is the evidence that the chain was rewound.
func (a *App) CheckpointAudits(ctx context.Context) (int, error) {
	a.checkpointMu.Lock()
	defer a.checkpointMu.Unlock()
	written := 0
	for after := int64(0); ; {
		heads, err := a.store.Read().AuditChainHeads(ctx, after, batchSize)
		if err != nil {
			return written, fmt.Errorf("audit checkpoints: %w", err)
		}
		for _, h := range heads {
			after = h.AccountID
			if h.Seq == 0 || a.anchored[h.AccountID] >= h.Seq {
				continue
			}
			if _, known := a.anchored[h.AccountID]; !known {
				old, err := a.readCheckpoint(ctx, h.AccountID)
				if err == nil && old.Seq >= h.Seq {
					a.anchored[h.AccountID] = old.Seq
					continue
				}
			}
			c := &AuditCheckpoint{AccountID: h.AccountID, Seq: h.Seq, Head: h.Head, Time: a.Unix()}
			c.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(a.checkpointKey, c.signedBytes()))
			body, _ := json.Marshal(c)
			if _, err := a.cfg.Blobs.Put(ctx, auditCheckpointBlob(h.AccountID), bytes.NewReader(body)); err != nil {
				return written, fmt.Errorf("audit checkpoints: %w", err)
			}
			a.anchored[h.AccountID] = h.Seq
			written++
		}
		if len(heads) < batchSize {
			return written, nil
		}
	}
}

// errNoCheckpoint is a clinic without a checkpoint yet.
var errNoCheckpoint = errors.New("no audit checkpoint")

// readCheckpoint is a clinic's latest checkpoint, its signature checked.
func (a *App) readCheckpoint(ctx context.Context, accountID int64) (*AuditCheckpoint, error) {
	r, _, err := a.cfg.Blobs.Open(ctx, auditCheckpointBlob(accountID))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, errNoCheckpoint
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	raw, err := io.ReadAll(io.LimitReader(r, 4096))
	if err != nil {
		return nil, err
	}
	var c AuditCheckpoint
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, errBadCheckpoint
	}
	sig, serr := base64.StdEncoding.DecodeString(c.Signature)
	if serr != nil || c.AccountID != accountID || !ed25519.Verify(a.checkpointKey.Public().(ed25519.PublicKey), c.signedBytes(), sig) {
		return nil, errBadCheckpoint
	}
	return &c, nil
}

// errBadCheckpoint is a checkpoint whose signature does not verify.
var errBadCheckpoint = errors.New("the audit checkpoint's signature does not verify")

// VerifyAudit checks the clinic's audit chain from its first entry:
// every place present once, in order, each hash recomputed from the entry
// and the one before, and the end matching the chain's recorded head. It
// reports the first broken entry. Admin only; audited as audit.verify.
func (a *App) VerifyAudit(ctx context.Context, p *clinic.Principal) (*AuditVerification, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if err := a.settleAudits(ctx, p.Account.ID); err != nil {
		return nil, fmt.Errorf("audit verify: %w", err)
	}
	out := &AuditVerification{}
	var anchor *store.AuditAnchor
	switch c, err := a.readCheckpoint(ctx, p.Account.ID); {
	case err == nil:
		out.Checkpoint, anchor = c, &store.AuditAnchor{Seq: c.Seq, Head: c.Head, Time: c.Time}
	case errors.Is(err, errBadCheckpoint):
		out.Broken = &AuditBreak{Reason: "the checkpoint in the blob store (" + auditCheckpointBlob(p.Account.ID) + ") does not verify: it was edited, forged or copied from another clinic"}
	case !errors.Is(err, errNoCheckpoint):
		return nil, fmt.Errorf("audit verify: %w", err)
	}
	v, err := a.store.VerifyAuditChain(ctx, p.Account.ID, anchor)
	if err != nil {
		return nil, fmt.Errorf("audit verify: %w", err)
	}
	out.Entries, out.Head = v.Entries, v.Head
	if v.Broken {
		out.Broken = &AuditBreak{Seq: v.BrokenSeq, ID: v.BrokenID, Reason: v.Reason}
	}
	if err := a.Audit(ctx, p, "audit.verify", "account", i64s(p.Account.ID), OutcomeOK); err != nil {
		return nil, err
	}
	return out, nil
}

// AccessLogQuery is a page of GET /users/{id}/access-log: after an entry
// (its id; 0 from the newest), then Start skipped (the spec's paging),
// Limit entries (accessLogPage).
type AccessLogQuery struct {
	After int64
	Start int
	Limit int
}

// accessLogPage is how many entries a page asked for limit holds: 50
// unless it says, at most 500.
func accessLogPage(limit int) int { return PageSize(limit, 50, 500) }

// AccessLog is GET /users/{id}/access-log: the accesses of others to a
// patient's record (their profile, records and visits), who, when and
// what, never the content — the accounting of disclosures a patient may
// ask for. The user themself and the clinic admin may read it. Audited as
// user.access_log.read.
func (a *App) AccessLog(ctx context.Context, p *clinic.Principal, userID int64, in AccessLogQuery) (clinic.Page[clinic.AccessEntry], int, error) {
	var none clinic.Page[clinic.AccessEntry]
	if err := RequireUser(p); err != nil {
		return none, 0, err
	}
	u, err := a.store.Read().UserByID(ctx, p.Account.ID, userID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return none, 0, clinic.Errorf(clinic.ENotFound, "User not found.")
	case err != nil:
		return none, 0, fmt.Errorf("access log: %w", err)
	case u.ID != p.UserID() && !p.IsAdmin():
		return none, 0, a.AuditOutcome(ctx, p, "user.access_log.read", "user", i64s(userID),
			clinic.Errorf(clinic.EForbidden, "Only the user and the clinic admin may read the accesses to a user's record."))
	}
	if in.Start < 0 || in.Limit < 0 || in.After < 0 {
		return none, 0, clinic.Errorf(clinic.EInvalid, "start, limit and after must not be negative.")
	}
	limit := accessLogPage(in.Limit)
	if err := a.settleAudits(ctx, p.Account.ID); err != nil {
		return none, 0, fmt.Errorf("access log: %w", err)
	}
	var after *store.AuditPlace
	if in.After != 0 {
		if after, err = a.store.Read().AuditEntryPlace(ctx, p.Account.ID, in.After); errors.Is(err, store.ErrNotFound) {
			return none, 0, clinic.Errorf(clinic.EInvalid, "after must be the id of an entry of the log.")
		} else if err != nil {
			return none, 0, fmt.Errorf("access log: %w", err)
		}
	}
	list, total, err := a.store.Read().AccessLog(ctx, p.Account.ID, u.ID, after, in.Start, limit+1)
	if err != nil {
		return none, 0, fmt.Errorf("access log: %w", err)
	}
	pg := clinic.PageOf(list, limit, func(e clinic.AccessEntry) int64 { return e.ID })
	list = pg.Items
	if err := a.Audit(ctx, p, "user.access_log.read", "user", i64s(u.ID), OutcomeOK); err != nil {
		return none, 0, err
	}
	// The patient learns who of the clinic's staff read their record; a
	// patient or guest who tried to (and was refused) is listed without
	// a name or an id: the log must not tell one patient of another.
	if !p.IsAdmin() {
		for i := range list {
			if e := &list[i]; e.ActorType != clinic.UserProvider && e.ActorType != clinic.UserAdmin {
				e.ActorName, e.ActorUserID = "", 0
			}
		}
	}
	return pg, total, nil
}

// settleAudits chains the clinic's pending entries (the reads' from the
// journal too) before its trail is read: the trail's lists and its
// verification read chained entries only (store.SettleAudits). With a key
// that is not the trail's, nothing is chained (or refused): the lists
// show what was chained, and verification reports the first entry the
// key fails.
func (a *App) settleAudits(ctx context.Context, accountID int64) error {
	refused, err := a.store.SettleAudits(ctx, accountID)
	if refused > 0 {
		a.log.Error("audit chain: refused pending entries whose MAC the server did not make (inserted or edited in the database); audit verify names them",
			"account_id", accountID, "entries", refused)
	}
	if errors.Is(err, store.ErrAuditKey) {
		a.log.Warn("audit chain: chaining pending entries", "account_id", accountID, "err", err)
		return nil
	}
	return err
}

// ChainAudits is one pass of the background chaining of pending audit
// entries (every entry is written pending, with its MAC, in the caller's
// transaction: store.AppendAudits): it chains the pending entries of up
// to batchSize clinics and returns how many clinics it chained.
func (a *App) ChainAudits(ctx context.Context) int {
	ids, err := a.store.Read().PendingAuditClinics(ctx, batchSize)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Warn("audit chain: pending clinics", "err", err)
		}
		return 0
	}
	for _, id := range ids {
		refused, err := a.store.ChainPendingAudits(ctx, id)
		if err != nil {
			if ctx.Err() == nil {
				a.log.Warn("audit chain: chaining pending entries", "account_id", id, "err", err)
			}
			return 0
		}
		if refused > 0 {
			a.log.Error("audit chain: refused pending entries whose MAC the server did not make (inserted or edited in the database); audit verify names them",
				"account_id", id, "entries", refused)
		}
	}
	return len(ids)
}
