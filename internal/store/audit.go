package store

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
)

// AppendAudit appends an entry. There is no update or delete.
func (q *Q) AppendAudit(ctx context.Context, e *clinic.AuditEntry) error {
	return q.AppendAudits(ctx, []*clinic.AuditEntry{e})
}

// AppendAudits writes entries with multi-row inserts, each sealed with its
// MAC and pending (seq -1): the background chainer (ChainPendingAudits)
// gives them their places in their clinic's chain within a pass or two.
// Chaining here, in the caller's transaction, held the clinic's chain row
// locked until the caller committed, so a clinic's audited writes took
// turns: on PostgreSQL bookings ran at 50–66/s with the chain and 152/s
// without (docs/performance.md).
func (q *Q) AppendAudits(ctx context.Context, es []*clinic.AuditEntry) error {
	for len(es) > 0 {
		n := chunkSize(len(es))
		args := make([]any, 0, 10*n)
		for _, e := range es[:n] {
			SealAudit(q.auditKey, e, false)
			e.Seq, e.Hash = -1, ""
			var actor any
			if e.ActorUserID != 0 {
				actor = e.ActorUserID
			}
			args = append(args, e.AccountID, e.ActorKind, actor, e.Action, e.ObjectType, e.ObjectID, e.Outcome, e.RequestID, e.Created, e.MAC)
		}
		if _, err := q.exec(ctx, "INSERT INTO audit (account_id, actor_kind, actor_user_id, action, object_type, object_id, outcome, request_id, created, mac, seq) VALUES "+
			valueRows("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, -1)", n), args...); err != nil {
			return err
		}
		es = es[n:]
	}
	return nil
}

// chainPending chains the clinic's pending entries (seq -1, as every entry
// is written) after place seq and hash head, in the order they were
// stored, and returns the new end and how many it refused. A pending entry whose MAC the server did not make
// (a row inserted by SQL, or edited since) is refused: it is marked seq
// -2, stays out of the chain, and audit verify reports it. The caller
// holds the chain row's lock.
func (q *Q) chainPending(ctx context.Context, accountID, seq int64, head string) (int64, string, int, error) {
	rows, err := q.query(ctx, `SELECT id, actor_kind, COALESCE(actor_user_id, 0), action, object_type, object_id, outcome, request_id, created, mac
		FROM audit WHERE account_id = ? AND seq = -1 ORDER BY id`, accountID)
	if err != nil {
		return 0, "", 0, err
	}
	var pending []clinic.AuditEntry
	var refused []int64
	for rows.Next() {
		e := clinic.AuditEntry{AccountID: accountID}
		if err := rows.Scan(&e.ID, &e.ActorKind, &e.ActorUserID, &e.Action, &e.ObjectType, &e.ObjectID, &e.Outcome, &e.RequestID, &e.Created, &e.MAC); err != nil {
			rows.Close()
			return 0, "", 0, q.d.translate(err)
		}
		if !AuditMACValid(q.auditKey, &e) {
			refused = append(refused, e.ID)
			continue
		}
		pending = append(pending, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, "", 0, q.d.translate(err)
	}
	if len(refused) > 0 && len(pending) == 0 {
		// Every pending entry fails: a forger's rows, or a key that is
		// not the one the entries were written with (a process started
		// with the wrong --server-key). Refusing is for good: it must
		// not happen to honest entries, so the key is checked against
		// the chain's last entries first.
		ok, err := q.keyMatchesChain(ctx, accountID, seq)
		if err != nil {
			return 0, "", 0, err
		}
		if !ok {
			return 0, "", 0, ErrAuditKey
		}
	}
	if len(refused) > 0 {
		if _, err := q.exec(ctx, "UPDATE audit SET seq = -2 WHERE account_id = ? AND seq = -1 AND "+inList("id", len(refused)),
			append([]any{accountID}, anys(refused)...)...); err != nil {
			return 0, "", 0, err
		}
	}
	for i := range pending {
		e := &pending[i]
		seq++
		e.Seq = seq
		e.Hash = AuditHash(q.auditKey, head, e)
		head = e.Hash
	}
	// One statement per chunk of up to 256 entries: a burst of writes
	// leaves thousands pending, and one round trip each would hold the
	// chain's lock for seconds.
	for len(pending) > 0 {
		n := chunkSize(len(pending))
		args := make([]any, 0, 3*n+1)
		for _, e := range pending[:n] {
			args = append(args, e.ID, e.Seq, e.Hash)
		}
		args = append(args, accountID)
		if _, err := q.exec(ctx, "WITH v (id, seq, hash) AS (VALUES "+valueRows("(CAST(? AS BIGINT), CAST(? AS BIGINT), CAST(? AS TEXT))", n)+
			") UPDATE audit SET seq = v.seq, hash = v.hash FROM v WHERE audit.id = v.id AND audit.account_id = ? AND audit.seq = -1", args...); err != nil {
			return 0, "", 0, err
		}
		pending = pending[n:]
	}
	return seq, head, len(refused), nil
}

// ErrAuditKey is a chaining refused because the store's key verifies
// neither a pending entry nor the chain's last entries: the process was
// started with a server key other than the one that wrote the trail.
var ErrAuditKey = errors.New("store: the server key does not match the audit trail's (is --server-key, or the data dir's server.key, the one the server ran with?)")

// CheckAuditKey refuses a store key that did not make the MACs of the
// latest chained entries (ErrAuditKey): a process with another server key
// would write entries the chainer refuses and links no reader can open.
// A trail with no sealed entry yet has nothing to check against.
func (s *Store) CheckAuditKey(ctx context.Context) error {
	rows, err := s.r.QueryContext(ctx, s.d.rebind(`SELECT account_id, actor_kind, COALESCE(actor_user_id, 0), action, object_type, object_id, outcome, request_id, created, mac
		FROM audit WHERE seq > 0 AND mac <> '' ORDER BY id DESC LIMIT 8`))
	if err != nil {
		return err
	}
	defer rows.Close()
	seen := false
	for rows.Next() {
		var e clinic.AuditEntry
		if err := rows.Scan(&e.AccountID, &e.ActorKind, &e.ActorUserID, &e.Action, &e.ObjectType, &e.ObjectID, &e.Outcome, &e.RequestID, &e.Created, &e.MAC); err != nil {
			return err
		}
		if AuditMACValid(s.auditKey, &e) {
			return nil
		}
		seen = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if seen {
		return ErrAuditKey
	}
	return nil
}

// keyMatchesChain says whether the store's key made the MAC of one of
// the last entries chained before place seq. With none chained yet,
// there is nothing to check the key with, and it is not trusted.
func (q *Q) keyMatchesChain(ctx context.Context, accountID, seq int64) (bool, error) {
	rows, err := q.query(ctx, `SELECT actor_kind, COALESCE(actor_user_id, 0), action, object_type, object_id, outcome, request_id, created, mac
		FROM audit WHERE account_id = ? AND seq > 0 AND seq > ? AND seq <= ? ORDER BY seq DESC`, accountID, seq-8, seq)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		e := clinic.AuditEntry{AccountID: accountID}
		if err := rows.Scan(&e.ActorKind, &e.ActorUserID, &e.Action, &e.ObjectType, &e.ObjectID, &e.Outcome, &e.RequestID, &e.Created, &e.MAC); err != nil {
			return false, q.d.translate(err)
		}
		if AuditMACValid(q.auditKey, &e) {
			return true, nil
		}
	}
	return false, rows.Err()
}

// PendingAuditClinics lists up to limit clinics with pending entries.
func (q *Q) PendingAuditClinics(ctx context.Context, limit int) ([]int64, error) {
	return q.int64s(ctx, "SELECT DISTINCT account_id FROM audit WHERE seq = -1 LIMIT ?", limit)
}

// SettleAudits makes a clinic's trail whole for its lists, which read
// only the chained entries (their indexes hold no pending one, migration
// 00029): the journal's entries into the table, then the clinic's pending
// entries chained, if it has any. It returns how many it refused, as
// ChainPendingAudits does.
func (s *Store) SettleAudits(ctx context.Context, accountID int64) (refused int, err error) {
	if err := s.FlushAudits(ctx); err != nil {
		return 0, err
	}
	var one int
	switch err := s.Read().queryRow(ctx, "SELECT 1 FROM audit WHERE account_id = ? AND seq = -1 LIMIT 1", []any{accountID}, &one); {
	case err == ErrNotFound:
		return 0, nil
	case err != nil:
		return 0, err
	}
	return s.ChainPendingAudits(ctx, accountID)
}

// ChainPendingAudits chains a clinic's pending entries, in the order they
// were stored, and returns how many it refused for a MAC the server did
// not make. It takes the clinic's chain row's lock (made if missing) for
// its transaction, so processes chaining one clinic take turns, and the
// second finds nothing left.
func (s *Store) ChainPendingAudits(ctx context.Context, accountID int64) (refused int, err error) {
	err = s.Tx(ctx, func(q *Q) error {
		if _, err := q.exec(ctx, "INSERT INTO audit_chain (account_id) VALUES (?) ON CONFLICT DO NOTHING", accountID); err != nil {
			return err
		}
		var seq int64
		var head string
		if err := q.queryRow(ctx, "UPDATE audit_chain SET seq = seq WHERE account_id = ? RETURNING seq, head", []any{accountID}, &seq, &head); err != nil {
			return err
		}
		end, endHead, n, err := q.chainPending(ctx, accountID, seq, head)
		refused = n
		if err != nil || end == seq {
			return err
		}
		_, err = q.exec(ctx, "UPDATE audit_chain SET seq = ?, head = ? WHERE account_id = ?", end, endHead, accountID)
		return err
	})
	return refused, err
}

// AuditHash is an entry's link in its clinic's chain: HMAC-SHA256 under
// key (SHA-256 without one) of the previous entry's hash, the entry's
// place and every field, each length-prefixed so no two entries write
// the same bytes.
func AuditHash(key []byte, prev string, e *clinic.AuditEntry) string {
	var h hash.Hash
	if len(key) > 0 {
		h = hmac.New(sha256.New, key)
	} else {
		h = sha256.New()
	}
	for _, f := range []string{"teleclinic-audit-v1", prev, strconv.FormatInt(e.Seq, 10), strconv.FormatInt(e.AccountID, 10),
		e.ActorKind, strconv.FormatInt(e.ActorUserID, 10), e.Action, e.ObjectType, e.ObjectID, e.Outcome, e.RequestID,
		strconv.FormatInt(e.Created, 10)} {
		fmt.Fprintf(h, "%d:%s", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// auditMACVersion names how an entry's MAC was made: over every field
// ("v1"), or over every field but the object id ("v1p"), for a PostgreSQL
// message post, whose entry is written in the statement that makes the
// message's id. The chain's hash covers that id once the entry is
// chained, and the nonce makes each MAC unique, so a copied entry is
// found as a repeat (VerifyAuditChain).
const (
	auditMACFull = "v1"
	auditMACPost = "v1p"
)

// SealAudit gives e its MAC, unless it has one (an entry read back from
// SQLite's audit journal keeps the one it was written with). post says
// that the object id is not known yet (auditMACPost).
func SealAudit(key []byte, e *clinic.AuditEntry, post bool) {
	if e.MAC != "" {
		return
	}
	version := auditMACFull
	if post {
		version = auditMACPost
	}
	var n [8]byte
	rand.Read(n[:])
	nonce := hex.EncodeToString(n[:])
	e.MAC = version + "." + nonce + "." + auditMAC(key, version, nonce, e)
}

// AuditMACValid says whether e's MAC is one the server made for its
// content.
func AuditMACValid(key []byte, e *clinic.AuditEntry) bool {
	version, rest, ok1 := strings.Cut(e.MAC, ".")
	nonce, sum, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || (version != auditMACFull && version != auditMACPost) || len(nonce) != 16 {
		return false
	}
	return hmac.Equal([]byte(sum), []byte(auditMAC(key, version, nonce, e)))
}

func auditMAC(key []byte, version, nonce string, e *clinic.AuditEntry) string {
	var h hash.Hash
	if len(key) > 0 {
		h = hmac.New(sha256.New, key)
	} else {
		h = sha256.New()
	}
	object := e.ObjectID
	if version == auditMACPost {
		object = ""
	}
	for _, f := range []string{"teleclinic-audit-mac", version, nonce, strconv.FormatInt(e.AccountID, 10),
		e.ActorKind, strconv.FormatInt(e.ActorUserID, 10), e.Action, e.ObjectType, object, e.Outcome, e.RequestID,
		strconv.FormatInt(e.Created, 10)} {
		fmt.Fprintf(h, "%d:%s", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// auditChainPageQuery reads the chain in the order of audit_account_seq,
// whose entries are the chained ones (seq > 0).
const auditChainPageQuery = `SELECT id, account_id, actor_kind, COALESCE(actor_user_id, 0), action, object_type, object_id, outcome, request_id, created, seq, hash, mac
	FROM audit WHERE account_id = ? AND seq > 0 AND seq > ? ORDER BY seq LIMIT ?`

// AuditChainPage is a clinic's chained entries from place after on, in
// order, at most limit; and the chain's recorded end.
func (q *Q) AuditChainPage(ctx context.Context, accountID, after int64, limit int) ([]clinic.AuditEntry, error) {
	rows, err := q.query(ctx, auditChainPageQuery, accountID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []clinic.AuditEntry
	for rows.Next() {
		var e clinic.AuditEntry
		if err := rows.Scan(&e.ID, &e.AccountID, &e.ActorKind, &e.ActorUserID, &e.Action, &e.ObjectType, &e.ObjectID, &e.Outcome, &e.RequestID, &e.Created, &e.Seq, &e.Hash, &e.MAC); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, e)
	}
	return out, q.d.translate(rows.Err())
}

// AuditChainHead is where a clinic's chain ends: its last place and hash.
func (q *Q) AuditChainHead(ctx context.Context, accountID int64) (int64, string, error) {
	var seq int64
	var head string
	err := q.queryRow(ctx, "SELECT seq, head FROM audit_chain WHERE account_id = ?", []any{accountID}, &seq, &head)
	if err == ErrNotFound {
		return 0, "", nil
	}
	return seq, head, err
}

// AuditHead is where a clinic's chain ends.
type AuditHead struct {
	AccountID int64
	Seq       int64
	Head      string
}

// AuditChainHeads is a page of the clinics' chain ends, by clinic id after
// after.
func (q *Q) AuditChainHeads(ctx context.Context, after int64, limit int) ([]AuditHead, error) {
	rows, err := q.query(ctx, "SELECT account_id, seq, head FROM audit_chain WHERE account_id > ? ORDER BY account_id LIMIT ?", after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []AuditHead
	for rows.Next() {
		var h AuditHead
		if err := rows.Scan(&h.AccountID, &h.Seq, &h.Head); err != nil {
			return nil, q.d.translate(err)
		}
		out = append(out, h)
	}
	return out, q.d.translate(rows.Err())
}

// AuditFilter selects chained audit entries of one clinic (SettleAudits
// chains the pending ones). Zero values do not filter.
type AuditFilter struct {
	AccountID  int64
	UserID     int64
	ObjectType string
	ObjectID   string
	Action     string
	From, To   int64 // inclusive unix seconds
	// After continues the list after an entry (AuditPlace): the entries
	// older than it in the list's order, read from the index whatever the
	// depth (Start still skips rows, as the spec's paging does).
	After *AuditPlace
	Start int
	Limit int
	// ChangesOnly leaves out reads and lists (actions ending in .read or
	// .list).
	ChangesOnly bool
}

// AuditPlace is an entry's place in the trail's order: its time and id.
type AuditPlace struct{ Created, ID int64 }

// AuditEntryPlace is the place of the clinic's entry id.
func (q *Q) AuditEntryPlace(ctx context.Context, accountID, id int64) (*AuditPlace, error) {
	p := &AuditPlace{ID: id}
	return p, q.queryRow(ctx, "SELECT created FROM audit WHERE account_id = ? AND id = ?", []any{accountID, id}, &p.Created)
}

// ListAudit returns a page of entries, newest first, and the total count.
// Entries of one second are in the order they were inserted, which for
// reads is when the journal was flushed, up to a fraction of a second
// after their requests.
func (q *Q) ListAudit(ctx context.Context, f AuditFilter) ([]clinic.AuditEntry, int, error) {
	count, cargs := f.count()
	var total int
	if err := q.queryRow(ctx, count, cargs, &total); err != nil {
		return nil, 0, err
	}
	page, pargs := f.page()
	rows, err := q.query(ctx, page, pargs...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []clinic.AuditEntry{}
	for rows.Next() {
		var e clinic.AuditEntry
		if err := rows.Scan(&e.ID, &e.AccountID, &e.ActorKind, &e.ActorUserID, &e.Action, &e.ObjectType, &e.ObjectID, &e.Outcome, &e.RequestID, &e.Created); err != nil {
			return nil, 0, q.d.translate(err)
		}
		out = append(out, e)
	}
	return out, total, q.d.translate(rows.Err())
}

// where is f's filter, without the page.
func (f AuditFilter) where() (string, []any) {
	// seq >= 0: the entries the trail's indexes hold (migration 00029).
	where := []string{"account_id = ?", "seq >= 0"}
	args := []any{f.AccountID}
	add := func(cond string, a any) { where = append(where, cond); args = append(args, a) }
	if f.UserID != 0 {
		add("actor_user_id = ?", f.UserID)
	}
	if f.ObjectType != "" {
		add("object_type = ?", f.ObjectType)
	}
	if f.ObjectID != "" {
		add("object_id = ?", f.ObjectID)
	}
	if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.ChangesOnly {
		where = append(where, "action NOT LIKE '%.read'", "action NOT LIKE '%.list'")
	}
	if f.From != 0 {
		add("created >= ?", f.From)
	}
	if f.To != 0 {
		add("created <= ?", f.To)
	}
	return strings.Join(where, " AND "), args
}

// count is the statement of f's total. The clinic's whole trail is its
// chain's length and the entries from before the chain (seq 0, which
// audit_legacy holds): counting the entries read every one of them, 7.5
// ms a page at 100,000 (BenchmarkListAudit), and the trail grows with
// every audited read. A filter counts the entries it matches.
func (f AuditFilter) count() (string, []any) {
	if f.UserID == 0 && f.ObjectType == "" && f.ObjectID == "" && f.Action == "" && f.From == 0 && f.To == 0 {
		return `SELECT COALESCE((SELECT seq FROM audit_chain WHERE account_id = ?), 0)
			+ (SELECT COUNT(*) FROM audit WHERE account_id = ? AND seq = 0)`, []any{f.AccountID, f.AccountID}
	}
	w, args := f.where()
	return "SELECT COUNT(*) FROM audit WHERE " + w, args
}

// page is the statement of f's page: newest first by (created, id), in
// the order of the index audit_account_created_id (migration 00022).
func (f AuditFilter) page() (string, []any) {
	w, args := f.where()
	if a := f.After; a != nil {
		// Created at most the entry's second, and of that second stored
		// before it: the first condition is the index's range.
		w += " AND created <= ? AND (created < ? OR id < ?)"
		args = append(args, a.Created, a.Created, a.ID)
	}
	return `SELECT id, account_id, actor_kind, COALESCE(actor_user_id, 0), action, object_type, object_id, outcome, request_id, created
		FROM audit WHERE ` + w + " ORDER BY created DESC, id DESC LIMIT ? OFFSET ?", append(args, f.Limit, f.Start)
}

// AuditChainCheck is what VerifyAuditChain found.
type AuditChainCheck struct {
	Entries   int64
	Head      string
	Broken    bool
	BrokenSeq int64 // the place of the break, 0 for an entry outside the chain
	BrokenID  int64 // the row there, 0 when missing
	Reason    string
}

// AuditAnchor is a place and hash of a clinic's chain that a checkpoint
// outside the database recorded at Time (unix seconds).
type AuditAnchor struct {
	Seq  int64
	Head string
	Time int64
}

// VerifyAuditChain walks a clinic's chain from its first entry and
// reports the first place where it breaks: a place missing or twice, a
// hash that its entry and the one before do not give, a MAC its entry
// does not give, an end that is not the recorded head, or a chain that
// does not reach anchor (when given) with anchor's hash. Then the entries
// outside it: a pending entry the chainer refused, or an entry whose MAC
// (and so nonce) another row repeats.
func (s *Store) VerifyAuditChain(ctx context.Context, accountID int64, anchor *AuditAnchor) (*AuditChainCheck, error) {
	q := s.Read()
	seq, head, err := q.AuditChainHead(ctx, accountID)
	if err != nil {
		return nil, err
	}
	out := &AuditChainCheck{Head: head}
	broken := func(at, id int64, format string, args ...any) (*AuditChainCheck, error) {
		out.Broken, out.BrokenSeq, out.BrokenID, out.Reason = true, at, id, fmt.Sprintf(format, args...)
		return out, nil
	}
	anchored := ""
	if anchor != nil {
		anchored = time.Unix(anchor.Time, 0).UTC().Format(time.RFC3339)
	}
	const page = 1000
	prev, want := "", int64(1)
	for {
		es, err := q.AuditChainPage(ctx, accountID, want-1, page)
		if err != nil {
			return nil, err
		}
		for i := range es {
			e := &es[i]
			switch {
			case e.Seq > want:
				return broken(want, 0, "entry %d of the chain is missing (deleted, or its place changed)", want)
			case e.Seq < want:
				return broken(e.Seq, e.ID, "entry %d appears twice", e.Seq)
			case AuditHash(s.auditKey, prev, e) != e.Hash:
				return broken(e.Seq, e.ID, "entry %d (row %d) does not match its hash: its content was changed, or the entry before it", e.Seq, e.ID)
			case e.MAC != "" && !AuditMACValid(s.auditKey, e):
				return broken(e.Seq, e.ID, "entry %d (row %d) does not match its MAC: the MAC was changed", e.Seq, e.ID)
			case anchor != nil && e.Seq == anchor.Seq && e.Hash != anchor.Head:
				return broken(e.Seq, e.ID, "entry %d is not the one the checkpoint of %s recorded: the chain was rewritten up to there", e.Seq, anchored)
			}
			prev, want = e.Hash, want+1
			out.Entries++
		}
		if len(es) < page {
			break
		}
	}
	switch {
	case want-1 < seq:
		return broken(want, 0, "the chain ends at entry %d, but %d were written: the last were deleted", want-1, seq)
	case want-1 > seq, prev != head:
		return broken(want-1, 0, "the last entry is not the chain's recorded end (entry %d)", seq)
	case anchor != nil && want-1 < anchor.Seq:
		return broken(want, 0, "the chain ends at entry %d, but the checkpoint of %s recorded entry %d: entries were deleted from the end and the chain's end rewound, or the database was put back to an older copy", want-1, anchored, anchor.Seq)
	}
	var id int64
	switch err := q.queryRow(ctx, "SELECT id FROM audit WHERE account_id = ? AND seq = -2 ORDER BY id LIMIT 1", []any{accountID}, &id); {
	case err == nil:
		return broken(0, id, "row %d was refused into the chain: its MAC was not made by the server (the row was inserted or edited in the database)", id)
	case err != ErrNotFound:
		return nil, err
	}
	var first, copy int64
	switch err := q.queryRow(ctx, "SELECT MIN(id), MAX(id) FROM audit WHERE account_id = ? AND mac <> '' GROUP BY mac HAVING COUNT(*) > 1 LIMIT 1", []any{accountID}, &first, &copy); {
	case err == nil:
		return broken(0, copy, "row %d repeats row %d: an entry was copied", copy, first)
	case err != ErrNotFound:
		return nil, err
	}
	return out, nil
}

// AccessLog is a page of the accesses to a user's record by others, newest
// first, and their total: entries about the user and about the visits
// where they are the patient; after an entry's place when after is not
// nil, then start skipped. Like the trail, it lists chained entries
// (SettleAudits).
func (q *Q) AccessLog(ctx context.Context, accountID, userID int64, after *AuditPlace, start, limit int) ([]clinic.AccessEntry, int, error) {
	count, page := accessLogQueries(accountID, userID, after, start, limit)
	var total int
	if err := q.queryRow(ctx, count.query, count.args, &total); err != nil {
		return nil, 0, err
	}
	rows, err := q.query(ctx, page.query, page.args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []clinic.AccessEntry
	for rows.Next() {
		e := clinic.AccessEntry{AuditEntry: clinic.AuditEntry{AccountID: accountID}}
		if err := rows.Scan(&e.ID, &e.ActorKind, &e.ActorUserID, &e.Action, &e.ObjectType, &e.ObjectID, &e.Outcome, &e.Created, &e.ActorName, &e.ActorType); err != nil {
			return nil, 0, q.d.translate(err)
		}
		out = append(out, e)
	}
	return out, total, q.d.translate(rows.Err())
}

// accessLogQueries are the statements of AccessLog's total and page: the
// entries about the user, then those about the user's visits, each read
// through audit_account_object. (One OR of the two read the clinic's
// whole trail: SQLite reads an OR's terms by index only through indexes
// without a WHERE of their own.)
func accessLogQueries(accountID, userID int64, after *AuditPlace, start, limit int) (count, page listQuery) {
	const others = "a.account_id = ? AND a.seq >= 0 AND COALESCE(a.actor_user_id, 0) <> ? AND "
	uid := strconv.FormatInt(userID, 10)
	var parts [2]string
	var args [2][]any
	parts[0], args[0] = others+"a.object_type = 'user' AND a.object_id = ?", []any{accountID, userID, uid}
	parts[1], args[1] = others+"a.object_type = 'visit' AND a.object_id IN (SELECT CAST(v.id AS TEXT) FROM visits v WHERE v.account_id = ? AND v.member_id = ?)",
		[]any{accountID, userID, accountID, userID}
	count = listQuery{"SELECT (SELECT COUNT(*) FROM audit a WHERE " + parts[0] + ") + (SELECT COUNT(*) FROM audit a WHERE " + parts[1] + ")",
		append(slices.Clip(args[0]), args[1]...)}
	var pargs []any
	for i := range parts {
		if after != nil {
			// The entries older than after's in the log's order: a page
			// stays where it was while reads of the log add entries to
			// its top.
			parts[i] += " AND a.created + 0 <= ? AND (a.created + 0 < ? OR a.id < ?)"
			args[i] = append(slices.Clip(args[i]), after.Created, after.Created, after.ID)
		}
		pargs = append(pargs, args[i]...)
	}
	// created + 0, here and in the place after: the page is in created
	// order, but not read through audit_account_created_id, which SQLite
	// would otherwise walk across the clinic's trail to find the user's
	// entries; they are few, and sorted.
	const cols = "SELECT a.id, a.account_id, a.actor_kind, a.actor_user_id, a.action, a.object_type, a.object_id, a.outcome, a.created + 0 AS created FROM audit a WHERE "
	page = listQuery{`SELECT x.id, x.actor_kind, COALESCE(x.actor_user_id, 0), x.action, x.object_type, x.object_id, x.outcome, x.created,
		COALESCE(u.first_name || ' ' || u.last_name, ''), COALESCE(u.type, 0)
		FROM (` + cols + parts[0] + " UNION ALL " + cols + parts[1] + `) x
		LEFT JOIN users u ON u.account_id = x.account_id AND u.id = x.actor_user_id
		ORDER BY x.created DESC, x.id DESC LIMIT ? OFFSET ?`, append(pargs, limit, start)}
	return count, page
}
