package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"teleclinic/internal/clinic"
	"teleclinic/internal/store"
)

// recordingLinkTTL is how long a recording download link works.
const recordingLinkTTL = time.Hour

// RecordingInput is POST /visits/{id}/recordings.
type RecordingInput struct {
	File         io.Reader
	Start, End   int64
	Participants []clinic.Participant
}

// AddRecording stores a call recording of a visit (admin). The bytes go to
// blob storage first and the row is written after, so a listed recording
// always has its bytes; bytes whose row failed are removed.
func (a *App) AddRecording(ctx context.Context, p *clinic.Principal, visitID int64, in RecordingInput) (*clinic.Recording, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	if a.cfg.Blobs == nil {
		return nil, errors.New("recordings: no blob store configured")
	}
	v, err := a.VisitFor(ctx, p, visitID)
	if err != nil {
		return nil, err
	}
	return a.saveRecording(ctx, p, v.ID, in)
}

// saveRecording checks a recording of visit v and stores it: its bytes
// first, then its row, so a listed recording always has its bytes.
func (a *App) saveRecording(ctx context.Context, p *clinic.Principal, visitID int64, in RecordingInput) (*clinic.Recording, error) {
	if a.cfg.Blobs == nil {
		return nil, errors.New("recordings: no blob store configured")
	}
	if in.File == nil {
		return nil, clinic.Errorf(clinic.EInvalid, "file (the recording) is required.")
	}
	if in.Start <= 0 || in.End < in.Start {
		return nil, clinic.Errorf(clinic.EInvalid, "start and end (UNIX timestamps, end not before start) are required.")
	}
	for _, pt := range in.Participants {
		if strings.TrimSpace(pt.FirstName+pt.LastName+pt.SvcID) == "" {
			return nil, clinic.Errorf(clinic.EInvalid, "each participant needs a name or an svcid.")
		}
	}
	body, ctype, err := sniff(in.File)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(ctype, "video/") && !strings.HasPrefix(ctype, "audio/") && ctype != "application/octet-stream" {
		return nil, clinic.Errorf(clinic.EInvalid, "the file is %s, not an audio or video recording.", ctype)
	}
	now := a.Unix()
	key := fmt.Sprintf("recordings/%d/%d/%s", p.Account.ID, visitID, RandomHex(16))
	size, err := a.cfg.Blobs.Put(ctx, key, body)
	if err != nil {
		return nil, fmt.Errorf("recording: store: %w", err)
	}
	rec := &clinic.Recording{AccountID: p.Account.ID, VisitID: visitID, BlobKey: key, Size: size, ContentType: ctype, Start: in.Start, End: in.End,
		Version: 1, Participants: in.Participants, Created: now}
	if rec.Participants == nil {
		rec.Participants = []clinic.Participant{}
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateRecording(ctx, rec); err != nil {
			return err
		}
		if err := a.Emit(ctx, q, p.Account.ID, EventRecordingReady, RecordingHook{RecordingID: i64s(rec.ID), VisitID: i64s(rec.VisitID),
			Start: rec.Start, End: rec.End}); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "recording.create", "recording", i64s(rec.ID), OutcomeOK)
	})
	if err != nil {
		_ = a.cfg.Blobs.Delete(context.WithoutCancel(ctx), key)
		return nil, StoreErr("recording", err, "")
	}
	return rec, nil
}

// RecordingLink is a recording with its time-limited download link.
type RecordingLink struct {
	Recording *clinic.Recording
	URL       string
	Expiry    int64
}

// GetRecording is GET /visits/{id}/recordings/{recording_id} (admin): the
// recording with a download link served by this server, valid for an hour.
func (a *App) GetRecording(ctx context.Context, p *clinic.Principal, visitID, recID int64) (*RecordingLink, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	link, err := a.getRecording(ctx, p, visitID, recID)
	if err := a.AuditOutcome(ctx, p, "recording.read", "recording", i64s(recID), err); err != nil {
		return nil, err
	}
	return link, nil
}

func (a *App) getRecording(ctx context.Context, p *clinic.Principal, visitID, recID int64) (*RecordingLink, error) {
	if err := RequireAdmin(p); err != nil {
		return nil, err
	}
	rec, err := a.store.Read().RecordingByID(ctx, p.Account.ID, recID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && rec.VisitID != visitID) {
		return nil, clinic.Errorf(clinic.ENotFound, "Recording not found.")
	}
	if err != nil {
		return nil, fmt.Errorf("recording: %w", err)
	}
	exp := a.Unix() + int64(recordingLinkTTL/time.Second)
	v := url.Values{"account": {p.Account.Code}, "expires": {strconv.FormatInt(exp, 10)},
		"signature": {a.recordingSig(p.Account.Code, rec.ID, exp)}}
	return &RecordingLink{Recording: rec, Expiry: exp,
		URL: strings.TrimRight(a.cfg.BaseURL, "/") + "/api_v3/recordings/" + i64s(rec.ID) + "/download?" + v.Encode()}, nil
}

func (a *App) recordingSig(account string, id, exp int64) string {
	return a.mac("recording", fmt.Sprintf("%s.%d.%d", account, id, exp))
}

// RecordingDownload is an open recording ready to send.
type RecordingDownload struct {
	Body        io.ReadCloser
	Size        int64
	ContentType string
	Name        string
}

// OpenRecording checks a download link and opens the recording. An altered
// or expired link is forbidden; the link names its clinic, and the lookup is
// scoped to it.
func (a *App) OpenRecording(ctx context.Context, requestID, account string, id, expires int64, sig string) (*RecordingDownload, error) {
	if account == "" || sig == "" || expires == 0 || !equalHash(a.recordingSig(account, id, expires), sig) {
		return nil, clinic.Errorf(clinic.EForbidden, "This download link is not valid.")
	}
	if a.Unix() > expires {
		return nil, clinic.Errorf(clinic.EForbidden, "This download link has expired; fetch the recording again for a new one.")
	}
	acct, err := a.store.Read().AccountByCode(ctx, account)
	if err != nil {
		return nil, StoreErr("download", err, "Recording not found.")
	}
	rec, err := a.store.Read().RecordingByID(ctx, acct.ID, id)
	if err != nil {
		return nil, StoreErr("download", err, "Recording not found.")
	}
	body, size, err := a.cfg.Blobs.Open(ctx, rec.BlobKey)
	if err != nil {
		return nil, fmt.Errorf("download: %w", err)
	}
	p := &clinic.Principal{Account: acct, Kind: clinic.CredNone, RequestID: requestID}
	if err := a.Audit(ctx, p, "recording.download", "recording", i64s(rec.ID), OutcomeOK); err != nil {
		body.Close()
		return nil, err
	}
	return &RecordingDownload{Body: body, Size: size, ContentType: rec.ContentType,
		Name: fmt.Sprintf("visit-%d-recording-%d", rec.VisitID, rec.ID)}, nil
}

// sniff reads the type of an upload from its first bytes — the content
// decides, not the name or the header — and returns a reader of the whole.
func sniff(r io.Reader) (io.Reader, string, error) {
	head := make([]byte, 512)
	n, err := io.ReadFull(r, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, "", fmt.Errorf("upload: read: %w", err)
	}
	if n == 0 {
		return nil, "", clinic.Errorf(clinic.EInvalid, "The file is empty.")
	}
	return io.MultiReader(bytes.NewReader(head[:n]), r), http.DetectContentType(head[:n]), nil
}
