package app

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// VisitDetail is a visit with the people, intake and room it shows.
type VisitDetail struct {
	Visit    *clinic.Visit
	Member   *clinic.User
	Provider *clinic.User // nil while unassigned
	Intake   *clinic.Intake
	Room     *clinic.Room
	Account  *clinic.Account
	InCharge bool // the caller is the visit's provider (e-consult creation)
	// IntakeFiles are the intake's attachments that still exist.
	IntakeFiles []IntakeAttachment
	// Recordings is set when asked for (fields=recordings).
	Recordings []clinic.Recording
}

// ErrVisitNotFound is the answer about a visit the caller may not see, as
// about one that does not exist.
var ErrVisitNotFound = clinic.Errorf(clinic.ENotFound, "Visit not found.")

// StatusName names a visit status for messages.
func StatusName(s int) string {
	switch s {
	case clinic.VisitPending:
		return "pending (10)"
	case clinic.VisitConfirmed:
		return "confirmed (20)"
	case clinic.VisitInProgress:
		return "in progress (25)"
	case clinic.VisitCompleted:
		return "completed (30)"
	case clinic.VisitCancelled:
		return "cancelled (40)"
	}
	return strconv.Itoa(s)
}

// canSeeVisit: the admin sees all of the clinic's visits; a patient their
// own; a provider those assigned to them and the unassigned e-consults and
// walk-ins of the rooms they are linked to.
func (a *App) canSeeVisit(ctx context.Context, p *clinic.Principal, v *clinic.ThreadVisit) (bool, error) {
	return seesVisit(p, v, func(room int64) (bool, error) { return a.store.Read().UserInRoom(ctx, p.Account.ID, p.UserID(), room) })
}

// seesVisit is canSeeVisit's rule, with inRoom saying whether the caller
// (a provider) is linked to a room: a list asks it from a set it read once.
func seesVisit(p *clinic.Principal, v *clinic.ThreadVisit, inRoom func(room int64) (bool, error)) (bool, error) {
	uid := p.UserID()
	switch {
	case p.IsAdmin(), v.MemberID == uid, v.ProviderID != 0 && v.ProviderID == uid:
		return true, nil
	case IsProvider(p) && awaitsProvider(v):
		return inRoom(v.RoomID)
	}
	return false, nil
}

// awaitsProvider reports whether a visit is an e-consult or a walk-in no
// provider has taken yet: the providers of its room host it until one
// does (a walk-in waits in the room's queue for one of them to accept it).
func awaitsProvider(v *clinic.ThreadVisit) bool {
	return v.ProviderID == 0 && (v.Kind == clinic.KindEconsult || v.Kind == clinic.KindWalkin) && v.RoomID != 0
}

// WalkinInput is POST /visits/add_walkin. visit_data_id is accepted and
// ignored: clients never send it (docs/compat.md).
type WalkinInput struct {
	IntakeID   int64
	RoomCode   string
	ProviderID int64
	UserCode   string
}

// AddWalkin is POST /visits/add_walkin: the intake's patient joins the
// room's queue with a pending video visit.
func (a *App) AddWalkin(ctx context.Context, p *clinic.Principal, in WalkinInput) (*VisitDetail, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	it, r, err := a.visitIntake(ctx, p, in.IntakeID, in.RoomCode)
	if err != nil {
		return nil, err
	}
	if !r.Settings.WalkinEnabled {
		return nil, clinic.Errorf(clinic.EInvalid, "Room '%s' does not take walk-ins.", r.Code)
	}
	if r.Settings.Operation.IsClosed || scheduledClosed(r.Settings.Operation, a.now()) {
		msg := r.Settings.Operation.CloseMsg
		if msg == "" {
			msg = "try again during opening hours"
		}
		return nil, clinic.Errorf(clinic.EConflict, "Room '%s' is closed: %s.", r.Code, strings.TrimSuffix(msg, "."))
	}
	member, err := a.store.Read().UserByID(ctx, p.Account.ID, it.MemberID)
	if err != nil {
		return nil, fmt.Errorf("walk-in member: %w", err)
	}
	if in.UserCode != "" && in.UserCode != member.Code {
		return nil, clinic.Errorf(clinic.EInvalid, "user_code does not match the intake's patient.")
	}
	providerID := it.ProviderID
	if in.ProviderID != 0 {
		prov, err := a.ProviderByID(ctx, p, in.ProviderID)
		if err != nil {
			return nil, err
		}
		providerID = prov.ID
	}
	v := a.newVisit(p, it, r, clinic.KindWalkin, clinic.VisitVideo, providerID)
	err = a.store.Tx(ctx, func(q *store.Q) error {
		st, err := q.RoomQueue(ctx, p.Account.ID, r.ID, a.leftBefore(), 0)
		if err != nil {
			return err
		}
		capacity := r.Settings.QueueCapacity
		if capacity == 0 {
			capacity = DefaultQueueCapacity
		}
		if st.Length >= capacity {
			return clinic.Errorf(clinic.EConflict, "Room '%s' has a full waiting room (%d); try again later.", r.Code, capacity)
		}
		if err := a.insertVisit(ctx, q, p, v, it); err != nil {
			return err
		}
		return a.enqueueWaitAlert(ctx, q, v, r)
	})
	if err != nil {
		return nil, StoreErr("walk-in", err, "")
	}
	return a.visitDetail(ctx, p, v)
}

// AddEconsult is POST /visits/add_econsult: an unassigned asynchronous visit
// that the room's providers see and one of them accepts.
func (a *App) AddEconsult(ctx context.Context, p *clinic.Principal, intakeID int64, roomCode string) (*VisitDetail, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	it, r, err := a.visitIntake(ctx, p, intakeID, roomCode)
	if err != nil {
		return nil, err
	}
	v := a.newVisit(p, it, r, clinic.KindEconsult, clinic.VisitEconsult, 0)
	err = a.store.Tx(ctx, func(q *store.Q) error { return a.insertVisit(ctx, q, p, v, it) })
	if err != nil {
		return nil, StoreErr("e-consult", err, "")
	}
	return a.visitDetail(ctx, p, v)
}

// visitIntake checks the inputs every visit creation shares: an intake the
// caller may use, in the named room, without a visit yet.
func (a *App) visitIntake(ctx context.Context, p *clinic.Principal, intakeID int64, roomCode string) (*clinic.Intake, *clinic.Room, error) {
	if intakeID == 0 || roomCode == "" {
		return nil, nil, clinic.Errorf(clinic.EInvalid, "intake_id and room_code are required.")
	}
	it, err := a.intakeFor(ctx, p, intakeID)
	if err != nil {
		return nil, nil, err
	}
	r, err := a.RoomByCode(ctx, p, roomCode)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case it.RoomID != r.ID:
		return nil, nil, clinic.Errorf(clinic.EInvalid, "The intake was filed for another room.")
	case !r.Active:
		return nil, nil, clinic.Errorf(clinic.EInvalid, "Room '%s' is not active.", r.Code)
	case it.VisitID != 0:
		return nil, nil, clinic.Errorf(clinic.EConflict, "Intake %d already has visit %d.", it.ID, it.VisitID)
	}
	return it, r, nil
}

func (a *App) newVisit(p *clinic.Principal, it *clinic.Intake, r *clinic.Room, kind string, typ int, providerID int64) *clinic.Visit {
	now := a.Unix()
	return &clinic.Visit{AccountID: p.Account.ID, Code: strings.ToUpper(randomCode(10)), Kind: kind, MemberID: it.MemberID,
		ProviderID: providerID, RoomID: r.ID, IntakeID: it.ID, Status: clinic.VisitPending, Type: typ,
		Meeting: clinic.Meeting{MeetingID: randomDigits(10), ConferencePIN: randomDigits(6), Expiry: now + 24*3600},
		Created: now, Modified: now}
}

// insertVisit writes a visit and ties its intake to it, once: of two
// concurrent requests for one intake, one gets the visit and the other a
// conflict.
func (a *App) insertVisit(ctx context.Context, q *store.Q, p *clinic.Principal, v *clinic.Visit, it *clinic.Intake) error {
	v.ID = 0
	if err := q.CreateVisit(ctx, v); err != nil {
		return err
	}
	err := q.LinkIntakeVisit(ctx, p.Account.ID, it.ID, v.ID, v.ProviderID, v.Created)
	if errors.Is(err, store.ErrConflict) {
		return clinic.Errorf(clinic.EConflict, "Intake %d already has a visit.", it.ID)
	}
	if err != nil {
		return err
	}
	it.VisitID, it.ProviderID = v.ID, v.ProviderID
	q.AfterCommit(func() { a.publishVisit(v) })
	if err := a.emitVisit(ctx, q, EventVisitCreated, v, v.Status, ""); err != nil {
		return err
	}
	if v.Kind == clinic.KindWalkin && v.ProviderID == 0 {
		if err := a.emitVisit(ctx, q, EventVisitWaiting, v, v.Status, ""); err != nil {
			return err
		}
	}
	return a.AuditIn(ctx, q, p, "visit.create", "visit", i64s(v.ID), OutcomeOK)
}

func randomDigits(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = '0' + b[i]%10
	}
	return string(b)
}

// visitDetail is visitDetails of one visit.
func (a *App) visitDetail(ctx context.Context, p *clinic.Principal, v *clinic.Visit) (*VisitDetail, error) {
	ds, err := a.visitDetails(ctx, p, []*clinic.Visit{v})
	if err != nil {
		return nil, err
	}
	return ds[0], nil
}

// visitDetails gives each visit its patient, provider, intake (with its
// files) and room, reading each of those sets once for the whole list: a
// list of 500 costs the statements of a list of one.
func (a *App) visitDetails(ctx context.Context, p *clinic.Principal, vs []*clinic.Visit) ([]*VisitDetail, error) {
	rd, acct := a.store.Read(), p.Account.ID
	var userIDs, intakeIDs, roomIDs []int64
	for _, v := range vs {
		userIDs = append(userIDs, v.MemberID, v.ProviderID)
		intakeIDs, roomIDs = append(intakeIDs, v.IntakeID), append(roomIDs, v.RoomID)
	}
	users, err := rd.UsersByIDs(ctx, acct, userIDs)
	if err != nil {
		return nil, fmt.Errorf("visit people: %w", err)
	}
	intakes, err := rd.IntakesByIDs(ctx, acct, intakeIDs)
	if err != nil {
		return nil, fmt.Errorf("visit intakes: %w", err)
	}
	rooms, err := rd.RoomsByIDs(ctx, acct, roomIDs)
	if err != nil {
		return nil, fmt.Errorf("visit rooms: %w", err)
	}
	var fileIDs []int64
	for _, it := range intakes {
		fileIDs = append(fileIDs, it.Attachments...)
	}
	files, err := rd.FilesByIDs(ctx, acct, fileIDs)
	if err != nil {
		return nil, fmt.Errorf("intake attachments: %w", err)
	}
	out := make([]*VisitDetail, 0, len(vs))
	for _, v := range vs {
		d := &VisitDetail{Visit: v, Account: p.Account, InCharge: v.ProviderID != 0 && v.ProviderID == p.UserID(), Member: users[v.MemberID]}
		missing := d.Member == nil
		if v.ProviderID != 0 {
			d.Provider = users[v.ProviderID]
			missing = missing || d.Provider == nil
		}
		if v.IntakeID != 0 {
			d.Intake = intakes[v.IntakeID]
			missing = missing || d.Intake == nil
			if d.Intake != nil {
				d.IntakeFiles = a.intakeFiles(d.Intake, files)
			}
		}
		if v.RoomID != 0 {
			d.Room = rooms[v.RoomID]
			missing = missing || d.Room == nil
		}
		if missing {
			return nil, fmt.Errorf("visit %d: a patient, provider, intake or room it names: %w", v.ID, store.ErrNotFound)
		}
		out = append(out, d)
	}
	return out, nil
}

// attachRecordings loads the recordings of listed visits in one query.
func (a *App) attachRecordings(ctx context.Context, p *clinic.Principal, ds []*VisitDetail) error {
	ids := make([]int64, 0, len(ds))
	for _, d := range ds {
		ids = append(ids, d.Visit.ID)
	}
	recs, err := a.store.Read().RecordingsOfVisits(ctx, p.Account.ID, ids)
	if err != nil {
		return fmt.Errorf("visit recordings: %w", err)
	}
	for _, d := range ds {
		d.Recordings = recs[d.Visit.ID]
		if d.Recordings == nil {
			d.Recordings = []clinic.Recording{}
		}
	}
	return nil
}

// GetVisit is GET /visits/{id}; withRecordings adds its recordings.
func (a *App) GetVisit(ctx context.Context, p *clinic.Principal, id int64, withRecordings bool) (*VisitDetail, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	d, err := a.getVisit(ctx, p, id)
	if err == nil && withRecordings {
		err = a.attachRecordings(ctx, p, []*VisitDetail{d})
	}
	if err := a.AuditOutcome(ctx, p, "visit.read", "visit", i64s(id), err); err != nil {
		return nil, err
	}
	return d, nil
}

func (a *App) getVisit(ctx context.Context, p *clinic.Principal, id int64) (*VisitDetail, error) {
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return a.visitDetail(ctx, p, v)
}

// VisitFor is visit id for a caller who may see it (canSeeVisit): not
// found for anyone else, as the API answers.
func (a *App) VisitFor(ctx context.Context, p *clinic.Principal, id int64) (*clinic.Visit, error) {
	v, err := a.store.Read().VisitByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, ErrVisitNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("visit: %w", err)
	}
	ok, err := a.canSeeVisit(ctx, p, v.Thread())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrVisitNotFound
	}
	return v, nil
}

// VisitQuery is GET /visits.
type VisitQuery struct {
	RoomCode           string
	StartTime, EndTime int64
	Statuses           []string
	WithRecordings     bool // fields=recordings: add each visit's recordings
	WithRecordingsOnly bool // only visits that have recordings
	// MemberID keeps one patient's visits among those the caller sees (a
	// patient's chart); 0 keeps all.
	MemberID int64
	// Waiting keeps, of a provider's list, only their rooms' e-consults
	// and walk-ins that no provider has taken yet, oldest first (first
	// come, first served: the portal's /visits); anyone else has none.
	Waiting bool
	// Limit is the page's size (0: MaxVisitList); After continues a list
	// after the visit of this id, the last of the page before.
	Limit int
	After int64
}

// MaxVisitList bounds one GET /visits answer.
const MaxVisitList = 500

// The statuses of GET /visits' status filter, as a query names them: a
// visit that is not over (waiting, confirmed, in progress), one that is
// (completed, cancelled), and all of them.
var (
	OpenStatuses   = statusParams(clinic.VisitPending, clinic.VisitConfirmed, clinic.VisitInProgress)
	ClosedStatuses = statusParams(clinic.VisitCompleted, clinic.VisitCancelled)
	allStatuses    = []int{clinic.VisitPending, clinic.VisitConfirmed, clinic.VisitInProgress, clinic.VisitCompleted, clinic.VisitCancelled}
)

func statusParams(sts ...int) []string {
	out := make([]string, len(sts))
	for i, st := range sts {
		out[i] = strconv.Itoa(st)
	}
	return out
}

// VisitOver says whether v has ended: completed or cancelled.
func VisitOver(v *clinic.Visit) bool { return StatusOver(v.Status) }

// StatusOver says whether a visit of status s has ended.
func StatusOver(s int) bool { return s == clinic.VisitCompleted || s == clinic.VisitCancelled }

// ComingUp says whether v is still ahead of its patient or provider at
// now: a visit not over, except a patient's booked visit whose time has
// passed (a provider's stay, overdue ones first, until they close them).
func ComingUp(v *clinic.Visit, now int64, forProvider bool) bool {
	switch {
	case VisitOver(v):
		return false
	case forProvider || v.Kind != clinic.KindAppointment:
		return true
	}
	return v.End > now
}

// ListVisits is GET /visits: a patient's own visits, a provider's visits and
// their rooms' unassigned e-consults and walk-ins, or all of the clinic's for the admin;
// newest first (the waiting list oldest first), a page at a time.
func (a *App) ListVisits(ctx context.Context, p *clinic.Principal, in VisitQuery) (clinic.Page[*VisitDetail], error) {
	var none clinic.Page[*VisitDetail]
	if err := RequireUser(p); err != nil {
		return none, err
	}
	if in.Limit < 0 || in.Limit > MaxVisitList || in.After < 0 {
		return none, clinic.Errorf(clinic.EInvalid, "limit is from 1 to %d, and after is a visit id.", MaxVisitList)
	}
	if in.Limit == 0 {
		in.Limit = MaxVisitList
	}
	f := store.VisitFilter{AccountID: p.Account.ID, StartAfter: in.StartTime, EndBefore: in.EndTime, WithRecording: in.WithRecordingsOnly,
		After: in.After, Limit: in.Limit + 1}
	for _, s := range in.Statuses {
		n, err := strconv.Atoi(s)
		if err != nil || !slices.Contains(allStatuses, n) {
			return none, clinic.Errorf(clinic.EInvalid, "status is one or more of 10, 20, 25, 30, 40.")
		}
		f.Statuses = append(f.Statuses, n)
	}
	if in.StartTime < 0 || in.EndTime < 0 {
		return none, clinic.Errorf(clinic.EInvalid, "start_time and end_time are UNIX timestamps.")
	}
	if in.RoomCode != "" {
		r, err := a.RoomByCode(ctx, p, in.RoomCode)
		if err != nil {
			return none, err
		}
		f.RoomID = r.ID
	}
	switch {
	case in.Waiting && !IsProvider(p):
		return clinic.Page[*VisitDetail]{Items: []*VisitDetail{}}, nil // only a provider's rooms have a waiting list
	case p.IsAdmin():
		f.MemberID = in.MemberID
	case IsProvider(p):
		f.ProviderID, f.ProviderRooms, f.MemberID = p.UserID(), true, in.MemberID
		f.Unassigned, f.Oldest = in.Waiting, in.Waiting
	case in.MemberID != 0 && in.MemberID != p.UserID():
		return clinic.Page[*VisitDetail]{Items: []*VisitDetail{}}, nil // a patient sees only their own
	default:
		f.MemberID = p.UserID()
	}
	vs, err := a.store.Read().ListVisits(ctx, f)
	if err != nil {
		return none, fmt.Errorf("list visits: %w", err)
	}
	pg := clinic.PageOf(vs, in.Limit, func(v *clinic.Visit) int64 { return v.ID })
	out, err := a.visitDetails(ctx, p, pg.Items)
	if err != nil {
		return none, err
	}
	if in.WithRecordings {
		if err := a.attachRecordings(ctx, p, out); err != nil {
			return none, err
		}
	}
	if err := a.Audit(ctx, p, "visit.list", "visit", "", OutcomeOK); err != nil {
		return none, err
	}
	return clinic.Page[*VisitDetail]{Items: out, Next: pg.Next}, nil
}

// Visit lifecycle actions (docs/compat.md: the forms existing clients post).
const (
	ActAccept     = "accept"
	ActConfirm    = "confirm"
	ActInProgress = "inprogress"
	ActClose      = "close"
	ActCancel     = "delete"
)

// MoveInput is the body of a lifecycle call.
type MoveInput struct {
	ActualStart, ActualEnd int64
	Status                 string // close may name 30
	Reason                 string
	ProviderID             int64 // accept by the admin names the provider
}

// transitions is the visit state machine: action → the states it leaves
// from, and the state it goes to.
var transitions = map[string]struct {
	from []int
	to   int
}{
	ActAccept:     {[]int{clinic.VisitPending}, clinic.VisitConfirmed},
	ActConfirm:    {[]int{clinic.VisitPending}, clinic.VisitConfirmed},
	ActInProgress: {[]int{clinic.VisitPending, clinic.VisitConfirmed}, clinic.VisitInProgress},
	ActClose:      {[]int{clinic.VisitInProgress}, clinic.VisitCompleted},
	ActCancel:     {[]int{clinic.VisitPending, clinic.VisitConfirmed, clinic.VisitInProgress}, clinic.VisitCancelled},
}

// MoveVisit applies a lifecycle action. The assigned provider and the admin
// make every move; a provider of the room accepts an unassigned e-consult
// or walk-in;
// a patient may cancel their own visit while it is pending or confirmed. A
// move from a state it does not leave answers 409 naming the current state;
// the move is a conditional UPDATE, so of two concurrent moves one wins.
func (a *App) MoveVisit(ctx context.Context, p *clinic.Principal, id int64, action string, in MoveInput) (*VisitDetail, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	t, ok := transitions[action]
	if !ok {
		return nil, fmt.Errorf("move visit: unknown action %q", action)
	}
	if err := CheckFields(text("reason", in.Reason, MaxTextChars), Line("status", in.Status, 16)); err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, clinic.Errorf(clinic.EInvalid, "id (the visit id) is required.")
	}
	v, err := a.VisitFor(ctx, p, id)
	if err != nil {
		return nil, err
	}
	m := store.VisitMove{AccountID: p.Account.ID, ID: v.ID, From: t.from, To: t.to, Now: a.Unix()}
	if err := a.allowMove(ctx, p, v, action, in, &m); err != nil {
		return nil, a.AuditOutcome(ctx, p, "visit."+action, "visit", i64s(v.ID), err)
	}
	if !slices.Contains(t.from, v.Status) {
		return nil, clinic.Errorf(clinic.EConflict, "Visit %d is %s; it cannot %s.", v.ID, StatusName(v.Status), actionVerb(action))
	}
	var moved bool
	err = a.store.Tx(ctx, func(q *store.Q) error {
		var err error
		moved, err = a.applyMove(ctx, q, p, v, action, m)
		return err
	})
	if err != nil {
		return nil, StoreErr("move visit", err, "")
	}
	a.kickPush()
	if v, err = a.store.Read().VisitByID(ctx, p.Account.ID, id); err != nil {
		return nil, fmt.Errorf("move visit: %w", err)
	}
	if !moved { // another request moved it first
		return nil, clinic.Errorf(clinic.EConflict, "Visit %d is %s; it cannot %s.", v.ID, StatusName(v.Status), actionVerb(action))
	}
	return a.visitDetail(ctx, p, v)
}

// applyMove makes move m of visit v by action in transaction q, with what
// goes with it (slots, mails and texts, the call's end, notifications,
// events, a fee, the audit), and reports whether it moved (false: another
// request moved it first).
func (a *App) applyMove(ctx context.Context, q *store.Q, p *clinic.Principal, v *clinic.Visit, action string, m store.VisitMove) (bool, error) {
	if moved, err := q.MoveVisit(ctx, m); err != nil || !moved {
		return false, err
	}
	// A cancelled appointment gives its slots back (a completed one
	// keeps them), and its people are told; a no-show or a late
	// cancellation may bring the room's fee.
	if action == ActCancel && v.Kind == clinic.KindAppointment {
		if err := q.FreeVisitSlots(ctx, p.Account.ID, v.ID, m.Now); err != nil {
			return false, err
		}
		change := map[string]string{clinic.OutcomeNoShow: changeMissed, clinic.OutcomeLateCancel: changeCancelledLate}[m.Outcome]
		if change == "" {
			change = changeCancelled
		}
		if err := a.mailAppointmentChange(ctx, q, p, change, v, 0, m.Reason); err != nil {
			return false, err
		}
		if err := a.enqueueFee(ctx, q, v, m.Outcome); err != nil {
			return false, err
		}
	}
	// A booked visit's patient may not be on its page yet: they are
	// texted that their provider is ready (a walk-in's waits there).
	if action == ActInProgress && v.Kind == clinic.KindAppointment {
		if err := a.textReady(ctx, q, p, v); err != nil {
			return false, err
		}
	}
	// A closed visit's call ends with it: its peers and signals go, and
	// its facts keep the end.
	if m.To == clinic.VisitCompleted || m.To == clinic.VisitCancelled {
		if err := q.EndCall(ctx, p.Account.ID, v.ID); err != nil {
			return false, err
		}
		if err := a.callLeft(ctx, q, p.Account.ID, v.ID, true); err != nil {
			return false, err
		}
	}
	if err := a.notifyVisitMove(ctx, q, p, v, action); err != nil {
		return false, err
	}
	if err := a.emitMove(ctx, q, v, action, m.To, m); err != nil {
		return false, err
	}
	q.AfterCommit(func() { a.publishVisit(v) })
	return true, a.AuditIn(ctx, q, p, "visit."+action, "visit", i64s(v.ID), OutcomeOK)
}

func actionVerb(action string) string {
	switch action {
	case ActInProgress:
		return "start"
	case ActCancel:
		return "be cancelled"
	}
	return "be " + map[string]string{ActAccept: "accepted", ActConfirm: "confirmed", ActClose: "closed"}[action]
}

// allowMove decides who may make a move and fills in its details.
func (a *App) allowMove(ctx context.Context, p *clinic.Principal, v *clinic.Visit, action string, in MoveInput, m *store.VisitMove) error {
	uid := p.UserID()
	staff := p.IsAdmin() || (v.ProviderID != 0 && v.ProviderID == uid)
	switch action {
	case ActAccept:
		if !awaitsProvider(v.Thread()) {
			return clinic.Errorf(clinic.EConflict, "Only an unassigned e-consult or walk-in can be accepted.")
		}
		m.OnlyUnowned = true
		switch {
		case IsProvider(p):
			m.ProviderID = uid // visitFor already checked the room link
		case p.IsAdmin():
			prov, err := a.ProviderByID(ctx, p, in.ProviderID)
			if err != nil {
				return clinic.Errorf(clinic.EInvalid, "provider_id (the provider who takes the e-consult) is required.")
			}
			m.ProviderID = prov.ID
		default:
			return clinic.Errorf(clinic.EForbidden, "Only a provider accepts an e-consult or a walk-in.")
		}
		return nil
	case ActCancel:
		if len(in.Reason) > 200 {
			return clinic.Errorf(clinic.EInvalid, "reason must be at most 200 characters.")
		}
		m.Reason = strings.TrimSpace(in.Reason)
		// A provider of the room takes a walk-in off its queue (a patient
		// who left, a no-show): visitFor checked the room link.
		if IsProvider(p) && v.ProviderID == 0 && v.Kind == clinic.KindWalkin {
			m.From, m.OnlyUnowned = []int{clinic.VisitPending}, true
			if m.Reason == ReasonNoShow {
				m.Outcome = clinic.OutcomeNoShow
			}
			return nil
		}
		if !staff && v.MemberID == uid {
			m.From = []int{clinic.VisitPending, clinic.VisitConfirmed}
			if v.Status == clinic.VisitInProgress {
				return clinic.Errorf(clinic.EConflict, "Visit %d is %s; a patient cannot cancel it now.", v.ID, StatusName(v.Status))
			}
			return a.patientCancel(ctx, p, v, m)
		}
		// Staff say which cancellations count apart by their reason.
		switch m.Reason {
		case ReasonNoShow:
			m.Outcome = clinic.OutcomeNoShow
		case ReasonLateCancel:
			if v.Kind != clinic.KindAppointment {
				return clinic.Errorf(clinic.EInvalid, "Only a booked visit is cancelled late (reason %q).", ReasonLateCancel)
			}
			m.Outcome = clinic.OutcomeLateCancel
		}
	}
	if !staff {
		return clinic.Errorf(clinic.EForbidden, "Only the visit's provider or the clinic admin may do this.")
	}
	switch action {
	case ActInProgress:
		m.ActualStart = m.Now
		if in.ActualStart > 0 {
			m.ActualStart = in.ActualStart
		}
	case ActClose:
		if in.Status != "" && in.Status != strconv.Itoa(clinic.VisitCompleted) {
			return clinic.Errorf(clinic.EInvalid, "status must be 30 to close a visit.")
		}
		m.ActualEnd = m.Now
		if in.ActualEnd > 0 {
			m.ActualEnd = in.ActualEnd
		}
		if v.ActualStart != 0 && m.ActualEnd < v.ActualStart {
			return clinic.Errorf(clinic.EInvalid, "actual_end must not be before actual_start.")
		}
	}
	return nil
}

// TakeVisit is the dashboard's Start visit: the provider takes a walk-in
// or e-consult that waits for one (as POST /visits/accept), or finds the
// visit already theirs; the page then opens it and joins its call.
func (a *App) TakeVisit(ctx context.Context, p *clinic.Principal, id int64) (*VisitDetail, error) {
	if !IsProvider(p) {
		return nil, clinic.Errorf(clinic.EForbidden, "Only a provider starts a visit from the dashboard.")
	}
	d, err := a.GetVisit(ctx, p, id, false)
	if err != nil || d.Visit.ProviderID != 0 {
		return d, err
	}
	return a.MoveVisit(ctx, p, id, ActAccept, MoveInput{})
}

// CloseEconsult closes an e-consult its provider has answered, in one
// step: in progress, then completed (as POST /visits/inprogress and
// /visits/close, with their rules).
func (a *App) CloseEconsult(ctx context.Context, p *clinic.Principal, id int64) (*VisitDetail, error) {
	d, err := a.GetVisit(ctx, p, id, false)
	if err != nil {
		return nil, err
	}
	if d.Visit.Kind != clinic.KindEconsult {
		return nil, clinic.Errorf(clinic.EConflict, "Only an e-consult is closed this way; end a video visit from its call.")
	}
	if d.Visit.Status != clinic.VisitInProgress {
		if _, err := a.MoveVisit(ctx, p, id, ActInProgress, MoveInput{}); err != nil {
			return nil, err
		}
	}
	return a.MoveVisit(ctx, p, id, ActClose, MoveInput{})
}
