package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/jsonstr"
)

// The audit journal is where the audit entries of reads go first on SQLite.
//
// Every read of health data is audited before it is answered, and a crash
// must lose no entry of an answered read. Committing each group of entries
// to the database cost a SQLite transaction on the single writer, and every
// commit made each reader connection drop its page cache (SQLite does that
// whenever the WAL has moved), so an audited read paid for its entry twice:
// pprof put the audit at two fifths of GET /me. The journal keeps the same
// promise more cheaply. A group of entries is one write(2) to an append-only
// file beside the database, which survives a crash of the process exactly
// as a SQLite commit does under synchronous=NORMAL (neither is fsynced; the
// operating system holds both). A flusher moves the entries into the audit
// table every journalFlushEvery in one transaction and then deletes the
// file, so the database sees a commit a few times a second instead of once
// per read.
//
// Files: <database>.audit/<name>.lock and <name>.<segment>.log, one name per
// open store (several processes may share one SQLite file). A store holds
// an exclusive flock on its lock file while it lives. The appends go to the
// current segment; a flush seals it and starts the next, inserts the sealed
// segments' entries with the segment's number in audit_journal in the same
// transaction, and deletes their files. A store that opens, and each store
// now and then while it runs, replays the segments of every journal whose
// lock nobody holds (its process ended without flushing), skipping those
// audit_journal says are in already, so an entry is inserted exactly once.
type journal struct {
	s    *Store
	dir  string
	name string
	lock *os.File

	mu      sync.Mutex
	seg     int64    // the current segment's number
	f       *os.File // the current segment; nil until its first append
	size    int64    // bytes of f that hold whole groups
	pending []*clinic.AuditEntry
	sealed  []segment // written, not yet in the database; oldest first
	broken  error     // set when f may hold a partial group: appends fail
	closed  bool

	flushMu  sync.Mutex    // one flush at a time
	failures atomic.Uint64 // flushes the database refused
	ending   sync.Once
	kick     chan struct{}
	stop     chan struct{}
	done     chan struct{}
}

type segment struct {
	n    int64
	path string
	es   []*clinic.AuditEntry
}

const (
	// journalFlushEvery is how long an entry waits in the journal at most
	// while the database takes writes.
	journalFlushEvery = 100 * time.Millisecond
	// journalFlushAt entries waiting start a flush before the tick.
	journalFlushAt = 2048
	// journalScanEvery is how often a running store looks for journals of
	// processes that ended.
	journalScanEvery = 10 * time.Second
)

// journalLine is one entry as the journal file holds it: a line of JSON.
type journalLine struct {
	AccountID   int64  `json:"account_id"`
	ActorKind   string `json:"actor_kind"`
	ActorUserID int64  `json:"actor_user_id,omitempty"`
	Action      string `json:"action"`
	ObjectType  string `json:"object_type"`
	ObjectID    string `json:"object_id"`
	Outcome     string `json:"outcome"`
	RequestID   string `json:"request_id"`
	Created     int64  `json:"created"`
	MAC         string `json:"mac,omitempty"`
}

// appendJournalLine appends e's line: the bytes json.Encoder writes for its
// journalLine (TestJournalLine_SameBytes), without the reflection, which
// was most of an append (pprof).
func appendJournalLine(b []byte, e *clinic.AuditEntry) []byte {
	b = append(b, `{"account_id":`...)
	b = strconv.AppendInt(b, e.AccountID, 10)
	b = append(b, `,"actor_kind":`...)
	b = jsonstr.Append(b, e.ActorKind)
	if e.ActorUserID != 0 {
		b = append(b, `,"actor_user_id":`...)
		b = strconv.AppendInt(b, e.ActorUserID, 10)
	}
	b = append(b, `,"action":`...)
	b = jsonstr.Append(b, e.Action)
	b = append(b, `,"object_type":`...)
	b = jsonstr.Append(b, e.ObjectType)
	b = append(b, `,"object_id":`...)
	b = jsonstr.Append(b, e.ObjectID)
	b = append(b, `,"outcome":`...)
	b = jsonstr.Append(b, e.Outcome)
	b = append(b, `,"request_id":`...)
	b = jsonstr.Append(b, e.RequestID)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, e.Created, 10)
	if e.MAC != "" {
		b = append(b, `,"mac":`...)
		b = jsonstr.Append(b, e.MAC)
	}
	return append(b, "}\n"...)
}

// StartReadAudits replays the audit journals that processes which ended
// left behind and, on SQLite, starts this store's own journal, which
// AppendReadAudits then uses. It is called once, after Migrate. Without it,
// and always on PostgreSQL, AppendReadAudits commits the entries.
func (s *Store) StartReadAudits(ctx context.Context) error {
	if _, started := s.audits.(committedAudits); !started {
		return nil
	}
	sink, err := s.eng.readAudits(ctx)
	if err != nil {
		return err
	}
	s.audits = sink
	return nil
}

// AppendReadAudits records the audit entries of reads and returns once they
// would survive a crash of this process: in the journal, or committed.
func (s *Store) AppendReadAudits(ctx context.Context, es []*clinic.AuditEntry) error {
	return s.audits.append(ctx, es)
}

// FlushAudits moves what the journal holds into the audit table; whoever
// reads the table calls it first so the trail it sees is complete.
func (s *Store) FlushAudits(ctx context.Context) error { return s.audits.flush(ctx) }

// AuditJournalStats says how many read-audit entries wait in the journal
// for the audit table, and how many flushes the database has refused; both
// are zero without a journal. A backlog that keeps growing means the
// entries are safe on disk but not yet in GET /audit.
func (s *Store) AuditJournalStats() (waiting int, failedFlushes uint64) { return s.audits.stats() }

// startJournal replays the journals in dir that ended processes left and
// starts this store's own there.
func (s *Store) startJournal(ctx context.Context, dir string) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit journal: %w", err)
	}
	if err := s.recoverJournals(ctx, dir, ""); err != nil {
		return nil, err
	}
	name, lock, err := createLock(dir)
	if err != nil {
		return nil, err
	}
	j := &journal{s: s, dir: dir, name: name, lock: lock, seg: 1,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go j.loop()
	return j, nil
}

// stats is AuditJournalStats of the journal.
func (j *journal) stats() (waiting int, failedFlushes uint64) {
	j.mu.Lock()
	defer j.mu.Unlock()
	waiting = len(j.pending)
	for _, sg := range j.sealed {
		waiting += len(sg.es)
	}
	return waiting, j.failures.Load()
}

// createLock makes this store's lock file and locks it. The file gets its
// name only once locked (a rename), so a store replaying journals never
// takes a live store's journal for an orphan.
func createLock(dir string) (name string, f *os.File, err error) {
	// Another store's replay may take the file in the instant before it is
	// locked, and remove it; a new name is then as good.
	for range 3 {
		if name, f, err = tryCreateLock(dir); err == nil {
			break
		}
	}
	return name, f, err
}

func tryCreateLock(dir string) (string, *os.File, error) {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	name := hex.EncodeToString(b)
	tmp := filepath.Join(dir, name+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", nil, fmt.Errorf("audit journal: %w", err)
	}
	if ok, err := tryLock(f); err != nil || !ok {
		f.Close()
		os.Remove(tmp)
		return "", nil, fmt.Errorf("audit journal: lock %s: %v", tmp, firstErr(err, errors.New("held")))
	}
	if err := os.Rename(tmp, filepath.Join(dir, name+".lock")); err != nil {
		f.Close()
		os.Remove(tmp)
		return "", nil, fmt.Errorf("audit journal: %w", err)
	}
	return name, f, nil
}

func (j *journal) segPath(n int64) string {
	return filepath.Join(j.dir, j.name+"."+strconv.FormatInt(n, 10)+".log")
}

// append writes es as one group and remembers them for the next flush.
func (j *journal) append(_ context.Context, es []*clinic.AuditEntry) error {
	buf := make([]byte, 0, 288*len(es))
	for _, e := range es {
		// Sealed now, so an entry edited in the file before it reaches
		// the table is found (VerifyAuditChain).
		SealAudit(j.s.auditKey, e, false)
		buf = appendJournalLine(buf, e)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return errStoreClosed
	}
	if j.broken != nil {
		return j.broken
	}
	if j.f == nil {
		f, err := os.OpenFile(j.segPath(j.seg), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("audit journal: %w", err)
		}
		j.f, j.size = f, 0
	}
	if _, err := j.f.Write(buf); err != nil {
		// A short write leaves part of a group that was never reported
		// written; cut it off so the file holds whole groups only.
		if terr := j.f.Truncate(j.size); terr != nil {
			j.broken = fmt.Errorf("audit journal %s: %w (and could not undo a partial write: %v)", j.f.Name(), err, terr)
		}
		return fmt.Errorf("audit journal: %w", err)
	}
	j.size += int64(len(buf))
	j.pending = append(j.pending, es...)
	if len(j.pending) >= journalFlushAt {
		select {
		case j.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// flush seals the current segment and inserts every sealed segment, oldest
// first, deleting each file once its transaction has committed.
func (j *journal) flush(ctx context.Context) error {
	j.flushMu.Lock()
	defer j.flushMu.Unlock()
	j.mu.Lock()
	if j.f != nil && (len(j.pending) > 0 || j.broken != nil) {
		// The file is complete: appends after this go to the next one.
		// (A broken one holds a partial group at its end: the entries
		// inserted are those in memory, which were reported written.)
		_ = j.f.Close()
		j.sealed = append(j.sealed, segment{n: j.seg, path: j.segPath(j.seg), es: j.pending})
		j.f, j.pending, j.broken = nil, nil, nil
		j.seg++
	}
	sealed := j.sealed
	j.mu.Unlock()
	for _, sg := range sealed {
		if err := j.s.insertSegment(ctx, j.name, sg.n, sg.es); err != nil {
			j.failures.Add(1)
			return err
		}
		_ = os.Remove(sg.path) // a file left behind is skipped on replay
		j.mu.Lock()
		j.sealed = j.sealed[1:]
		j.mu.Unlock()
	}
	return nil
}

// insertSegment writes a segment's entries and records it, in one transaction.
func (s *Store) insertSegment(ctx context.Context, name string, n int64, es []*clinic.AuditEntry) error {
	return s.Tx(ctx, func(q *Q) error {
		if err := q.AppendAudits(ctx, es); err != nil {
			return err
		}
		_, err := q.exec(ctx, "INSERT INTO audit_journal (journal, segment) VALUES (?, ?) ON CONFLICT (journal) DO UPDATE SET segment = excluded.segment", name, n)
		return err
	})
}

func (j *journal) loop() {
	defer close(j.done)
	tick := time.NewTicker(journalFlushEvery)
	defer tick.Stop()
	scan := time.NewTicker(journalScanEvery)
	defer scan.Stop()
	for {
		select {
		case <-j.stop:
			return
		case <-scan.C:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = j.s.recoverJournals(ctx, j.dir, j.name)
			cancel()
			continue
		case <-tick.C:
		case <-j.kick:
		}
		// A failed flush leaves its segments sealed and on disk; the next
		// tick tries again, and an audit reader's FlushAudits reports it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_ = j.flush(ctx)
		cancel()
	}
}

// close flushes what is left and releases the journal. If the database
// refuses the last flush the files stay, and the next store to open
// replays them.
func (j *journal) close() (err error) {
	j.ending.Do(func() { err = j.end() })
	return err
}

func (j *journal) end() error {
	j.mu.Lock()
	j.closed = true // an append now would outlive the lock that covers it
	j.mu.Unlock()
	close(j.stop)
	<-j.done
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := j.flush(ctx)
	j.mu.Lock()
	if j.f != nil { // empty: flush seals only a segment with entries
		_ = j.f.Close()
		_ = os.Remove(j.f.Name())
		j.f = nil
	}
	j.mu.Unlock()
	if err == nil {
		_ = os.Remove(filepath.Join(j.dir, j.name+".lock"))
	}
	_ = j.lock.Close() // releases the flock
	return err
}

// recoverJournals replays the journals in dir whose lock nobody holds,
// except self's.
func (s *Store) recoverJournals(ctx context.Context, dir, self string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("audit journal: %w", err)
	}
	for _, de := range ents {
		name, ext, _ := strings.Cut(de.Name(), ".")
		if name == self || (ext != "lock" && ext != "new") {
			continue
		}
		f, err := os.OpenFile(filepath.Join(dir, de.Name()), os.O_RDWR, 0)
		if err != nil {
			continue // removed by another store's replay meanwhile
		}
		ok, err := tryLock(f)
		if err != nil || !ok {
			f.Close() // its store is open
			continue
		}
		if ext == "new" {
			// A store that ended between creating its lock and naming it
			// wrote nothing.
			_ = os.Remove(f.Name())
			f.Close()
			continue
		}
		err = s.replay(ctx, dir, name)
		if err == nil {
			_ = os.Remove(f.Name())
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// replay inserts the segments of journal name that are not in yet, and
// then forgets the journal.
func (s *Store) replay(ctx context.Context, dir, name string) error {
	var done int64
	err := s.Write().queryRow(ctx, "SELECT segment FROM audit_journal WHERE journal = ?", []any{name}, &done)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("audit journal: %w", err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, name+".*.log"))
	var segs []segment // es is read only for those not in yet
	for _, p := range paths {
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), name+"."), ".log"), 10, 64)
		if err == nil {
			segs = append(segs, segment{n: n, path: p})
		}
	}
	slices.SortFunc(segs, func(a, b segment) int { return cmp.Compare(a.n, b.n) })
	for _, sg := range segs {
		if sg.n > done {
			es, err := readSegment(sg.path)
			if err != nil {
				return err
			}
			if len(es) > 0 {
				if err := s.insertSegment(ctx, name, sg.n, es); err != nil {
					return fmt.Errorf("audit journal: replay %s: %w", sg.path, err)
				}
			}
		}
		if err := os.Remove(sg.path); err != nil {
			return fmt.Errorf("audit journal: %w", err)
		}
	}
	if _, err := s.Write().exec(ctx, "DELETE FROM audit_journal WHERE journal = ?", name); err != nil {
		return fmt.Errorf("audit journal: %w", err)
	}
	return nil
}

// readSegment parses a segment file. A last line without its newline is a
// group whose write never completed, so never reported written: it is
// dropped. Any other line that does not parse is damage, and an error.
func readSegment(path string) ([]*clinic.AuditEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("audit journal: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i+1 < len(b) {
		b = b[:i+1]
	}
	var es []*clinic.AuditEntry
	for n, line := range bytes.Split(b, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		var l journalLine
		if err := json.Unmarshal(line, &l); err != nil {
			return nil, fmt.Errorf("audit journal: %s line %d: %w", path, n+1, err)
		}
		es = append(es, &clinic.AuditEntry{AccountID: l.AccountID, ActorKind: l.ActorKind, ActorUserID: l.ActorUserID, Action: l.Action,
			ObjectType: l.ObjectType, ObjectID: l.ObjectID, Outcome: l.Outcome, RequestID: l.RequestID, Created: l.Created, MAC: l.MAC})
	}
	return es, nil
}
