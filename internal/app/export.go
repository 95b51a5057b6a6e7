package app

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// FHIR Bulk Data export (2.0): a kick-off writes a job and its outbox row;
// a worker (DeliverExports) reads the clinic's patients a page at a time,
// draws each one's record as FHIR resources through the FHIR door's
// mapping (RecordExporter), and writes them as NDJSON, one file per type:
// first to temporary files, line by line, then each file to the blob
// store, streamed. Nothing holds more than one patient's record.

// TopicExport is the outbox topic of export jobs.
const TopicExport = "export"

const (
	// ExportTTL is how long an export's files stay.
	ExportTTL = 24 * time.Hour
	// exportLease is a worker's claim on a job: long enough for a large
	// clinic's export (10,000 patients took about a minute).
	exportLease       = 30 * 60
	exportMaxAttempts = 3
	exportPage        = 500 // patients read a page at a time
)

// RecordExporter draws a patient's record as FHIR resources: the FHIR
// door's mapping, which the app's worker writes out.
type RecordExporter interface {
	// Types are the types an export may ask for.
	Types() []string
	// Shared says whether resources of typ appear in many patients'
	// records (a Practitioner): the export writes each once.
	Shared(typ string) bool
	// Export calls out with each resource of types drawn from patient's
	// record as p may read it, changed at or after since (0: all), as one
	// line of JSON.
	Export(ctx context.Context, p *clinic.Principal, patient int64, types []string, since int64, out func(typ, id string, line []byte) error) error
}

// exporterBox holds the RecordExporter the FHIR door gives the app when
// it is wired (SetRecordExporter), before the server serves.
type exporterBox struct {
	x atomic.Pointer[RecordExporter]
}

// SetRecordExporter gives the app the FHIR door's mapping, for exports.
func (a *App) SetRecordExporter(x RecordExporter) { a.exporter.x.Store(&x) }

func (a *App) recordExporter() (RecordExporter, error) {
	x := a.exporter.x.Load()
	if x == nil {
		return nil, clinic.Errorf(clinic.EUnavailable, "This server does not serve FHIR exports.")
	}
	return *x, nil
}

// ExportInput is a kick-off: the level (system, patient or group), the
// group's room code, the types (all granted unless named) and _since.
type ExportInput struct {
	Level   string
	Group   string
	Types   []string
	Since   int64
	Request string
}

// CheckExporter says whether p may export at all: the clinic (the admin
// token, or a backend service's token). The FHIR door asks it before it
// reads the request, so a refusal does not depend on the request's form.
func CheckExporter(p *clinic.Principal) error {
	if err := RequireAdmin(p); err != nil {
		return clinic.Errorf(clinic.EForbidden, "A bulk export is the clinic's: a backend service's token (system scopes) or the admin token.")
	}
	return nil
}

// exportCaller checks that p may export, and names the backend service
// ("" for the admin).
func exportCaller(p *clinic.Principal) (string, error) {
	if err := CheckExporter(p); err != nil {
		return "", err
	}
	if p.Grant != nil {
		return p.Grant.ClientID, nil
	}
	return "", nil
}

// StartExport is a Bulk Data kick-off: the job, to be run by a worker.
// Its types are those asked for (every type the caller's grant reads
// when none is); a type the grant does not read is refused.
func (a *App) StartExport(ctx context.Context, p *clinic.Principal, in ExportInput) (*clinic.ExportJob, error) {
	client, err := exportCaller(p)
	if err != nil {
		return nil, err
	}
	x, err := a.recordExporter()
	if err != nil {
		return nil, err
	}
	known := x.Types()
	j := &clinic.ExportJob{ID: RandomHex(16), AccountID: p.Account.ID, ClientID: client, Level: in.Level, Since: in.Since,
		Request: in.Request, Status: "accepted", Output: []clinic.ExportFile{}, Created: a.Unix()}
	j.Expires = j.Created + int64(ExportTTL/time.Second)
	if in.Level == "patient" || in.Level == "group" {
		// The patient compartment: Practitioners are the system's.
		known = slices.DeleteFunc(slices.Clone(known), x.Shared)
	}
	for _, t := range in.Types {
		switch {
		case !slices.Contains(x.Types(), t):
			return nil, clinic.Errorf(clinic.EInvalid, "_type: %s is not a type this server exports (%s).", t, strings.Join(x.Types(), ", "))
		case !slices.Contains(known, t):
			return nil, clinic.Errorf(clinic.EInvalid, "_type: %s is not in a patient's compartment; a system export has it.", t)
		case !GrantAllows(p.Grant, t, 'r'):
			return nil, clinic.Errorf(clinic.EForbidden, "This service was not granted %s (its scopes: %s).", t, strings.Join(p.Grant.Scopes, " "))
		}
		if !slices.Contains(j.Types, t) {
			j.Types = append(j.Types, t)
		}
	}
	if len(in.Types) == 0 {
		for _, t := range known {
			if GrantAllows(p.Grant, t, 'r') {
				j.Types = append(j.Types, t)
			}
		}
	}
	if len(j.Types) == 0 {
		return nil, clinic.Errorf(clinic.EForbidden, "This service was granted no type to export.")
	}
	if in.Level == "group" {
		r, err := a.RoomByCode(ctx, p, in.Group)
		if err != nil {
			return nil, clinic.Errorf(clinic.ENotFound, "Group/%s not found: a group is a room, by its code.", in.Group)
		}
		j.GroupID = r.ID
	}
	payload, _ := json.Marshal(map[string]string{"job": j.ID})
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateExportJob(ctx, j); err != nil {
			return err
		}
		if err := q.Enqueue(ctx, &store.OutboxItem{AccountID: p.Account.ID, Topic: TopicExport, Payload: string(payload), Created: j.Created, Due: j.Created}); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "export.start", "export_job", j.ID, OutcomeOK)
	})
	if err != nil {
		return nil, StoreErr("export", err, "")
	}
	kick(a.exportKick)
	return j, nil
}

// ExportJob is a job of the caller's, as its status answers it: the
// service that started it (or the admin token, for its own).
func (a *App) ExportJob(ctx context.Context, p *clinic.Principal, id string) (*clinic.ExportJob, error) {
	client, err := exportCaller(p)
	if err != nil {
		return nil, err
	}
	j, err := a.store.Read().ExportJob(ctx, p.Account.ID, id)
	if err == nil && j.ClientID != client {
		err = store.ErrNotFound
	}
	if err != nil {
		return nil, StoreErr("export", err, "No such export.")
	}
	return j, nil
}

// CancelExport is DELETE on a job's status: it stops (a running job's
// worker drops its files) and its files go.
func (a *App) CancelExport(ctx context.Context, p *clinic.Principal, id string) error {
	j, err := a.ExportJob(ctx, p, id)
	if err != nil {
		return err
	}
	if j.Status == "cancelled" || j.Status == "expired" {
		return clinic.Errorf(clinic.ENotFound, "This export was already cancelled or has expired.")
	}
	if _, err := a.store.Write().CancelExportJob(ctx, p.Account.ID, id, a.Unix()); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	a.dropExportFiles(ctx, j.Output)
	return a.Audit(ctx, p, "export.cancel", "export_job", id, OutcomeOK)
}

// ExportFileBody is one file of a finished export, to stream.
type ExportFileBody struct {
	Body io.ReadCloser
	Size int64
}

// OpenExportFile opens a file of the caller's finished export, audited as
// a download of the records it holds.
func (a *App) OpenExportFile(ctx context.Context, p *clinic.Principal, id, name string) (*ExportFileBody, error) {
	j, err := a.ExportJob(ctx, p, id)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(j.Output, func(f clinic.ExportFile) bool { return f.Name == name })
	if j.Status != "done" || i < 0 {
		return nil, clinic.Errorf(clinic.ENotFound, "No such file of this export.")
	}
	body, size, err := a.cfg.Blobs.Open(ctx, j.Output[i].Key)
	if err != nil {
		return nil, fmt.Errorf("export file: %w", err)
	}
	if err := a.Audit(ctx, p, "export.download", "export_job", id+"/"+name, OutcomeOK); err != nil {
		body.Close()
		return nil, err
	}
	return &ExportFileBody{Body: body, Size: size}, nil
}

func (a *App) dropExportFiles(ctx context.Context, files []clinic.ExportFile) {
	for _, f := range files {
		if err := a.cfg.Blobs.Delete(context.WithoutCancel(ctx), f.Key); err != nil {
			a.log.Warn("export: delete file", "key", f.Key, "err", err)
		}
	}
}

// DeliverExports runs the due export jobs, one at a time, and gives back
// the files of expired ones.
func (a *App) DeliverExports(ctx context.Context) int {
	a.expireExports(ctx)
	items, err := a.store.Write().ClaimOutbox(ctx, []string{TopicExport}, a.Unix(), exportLease, 1)
	if err != nil {
		if ctx.Err() == nil {
			a.log.Error("export: claim", "err", err)
		}
		return 0
	}
	for _, it := range items {
		err := a.runExport(ctx, it)
		if err != nil && !errors.As(err, new(errSkip)) && it.Attempts >= exportMaxAttempts {
			var p struct{ Job string }
			_ = json.Unmarshal([]byte(it.Payload), &p)
			_, _ = a.store.Write().FinishExportJob(ctx, it.AccountID, p.Job, "error", nil, "The export failed; start it again.", a.Unix())
		}
		a.settle(ctx, "export", it, 0, err, exportMaxAttempts, 60)
	}
	return len(items)
}

func (a *App) expireExports(ctx context.Context) {
	js, err := a.store.Write().ExpiredExportJobs(ctx, a.Unix(), 20)
	if err != nil {
		return
	}
	for _, j := range js {
		a.dropExportFiles(ctx, j.Output)
		_ = a.store.Write().ExpireExportJob(ctx, j.AccountID, j.ID)
	}
}

// exportFile is one type's NDJSON file while a job writes it.
type exportFile struct {
	f     *os.File
	w     *bufio.Writer
	count int
}

// runExport runs one job: its patients a page at a time, each record drawn
// and written to its types' temporary files, then the files to the blob
// store.
func (a *App) runExport(ctx context.Context, it store.OutboxItem) error {
	var payload struct{ Job string }
	if err := json.Unmarshal([]byte(it.Payload), &payload); err != nil {
		return errSkip("unreadable payload")
	}
	rd := a.store.Read()
	j, err := rd.ExportJob(ctx, it.AccountID, payload.Job)
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.Status != "accepted" && j.Status != "running") {
		return errSkip("job gone, cancelled or finished")
	}
	if err != nil {
		return err
	}
	x, err := a.recordExporter()
	if err != nil {
		return err
	}
	acct, err := a.accountByID(ctx, j.AccountID)
	if err != nil {
		return err
	}
	admin, err := rd.AdminUser(ctx, acct.ID)
	if err != nil {
		return err
	}
	// The records are read as the clinic's admin, whose reads are the
	// clinic's widest (and audited as the export's).
	p := &clinic.Principal{Account: acct, Kind: clinic.CredSystem, User: admin, RequestID: "export-" + j.ID}
	if j.ClientID != "" {
		p.Grant = &clinic.Grant{ClientID: j.ClientID}
	}
	files := map[string]*exportFile{}
	defer func() {
		for _, f := range files {
			f.f.Close()
			os.Remove(f.f.Name())
		}
	}()
	seen := map[string]bool{} // shared resources written already
	out := func(typ, id string, line []byte) error {
		if x.Shared(typ) {
			if seen[typ+"/"+id] {
				return nil
			}
			seen[typ+"/"+id] = true
		}
		f := files[typ]
		if f == nil {
			tmp, err := os.CreateTemp("", "teleclinic-export-*.ndjson")
			if err != nil {
				return err
			}
			f = &exportFile{f: tmp, w: bufio.NewWriterSize(tmp, 64<<10)}
			files[typ] = f
		}
		f.count++
		if _, err := f.w.Write(line); err != nil {
			return err
		}
		return f.w.WriteByte('\n')
	}
	var after int64
	done := 0
	for {
		var ids []int64
		if j.Level == "group" {
			ids, err = rd.RoomPatientIDsAfter(ctx, j.AccountID, j.GroupID, after, exportPage)
		} else {
			ids, err = rd.PatientIDsAfter(ctx, j.AccountID, after, exportPage)
		}
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := x.Export(ctx, p, id, j.Types, j.Since, out); err != nil {
				return fmt.Errorf("export patient %d: %w", id, err)
			}
		}
		done += len(ids)
		if len(ids) < exportPage {
			break
		}
		after = ids[len(ids)-1]
		if err := a.store.Write().SetExportProgress(ctx, j.AccountID, j.ID, "running", strconv.Itoa(done)+" patients exported"); err != nil {
			return err
		}
	}
	var output []clinic.ExportFile
	for _, t := range j.Types {
		f := files[t]
		if f == nil {
			continue // no resource of the type: no file (Bulk Data lists none)
		}
		if err := f.w.Flush(); err != nil {
			return err
		}
		if _, err := f.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		file := clinic.ExportFile{Type: t, Count: f.count, Name: t + ".ndjson", Key: "exports/" + strconv.FormatInt(j.AccountID, 10) + "/" + j.ID + "/" + t + ".ndjson"}
		if _, err := a.cfg.Blobs.Put(ctx, file.Key, f.f); err != nil {
			a.dropExportFiles(ctx, output)
			return err
		}
		output = append(output, file)
	}
	if output == nil {
		output = []clinic.ExportFile{}
	}
	ok, err := a.store.Write().FinishExportJob(ctx, j.AccountID, j.ID, "done", output, "", a.Unix())
	if err != nil || !ok {
		a.dropExportFiles(ctx, output) // cancelled meanwhile
	}
	return err
}
