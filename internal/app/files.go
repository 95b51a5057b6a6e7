package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"teleclinic/internal/clinic"
	"teleclinic/internal/imaging"
	"teleclinic/internal/store"
)

// File categories (spec: File).
const (
	CategoryIntakeAttachment = "intake_attachment" // per-visit; shown on the visit only
	CategoryUserConsent      = "user_consent"
	CategoryUserAvatar       = "user_avatar"
	CategoryUserDocument     = "user_document"
)

var fileCategories = map[string]bool{CategoryIntakeAttachment: true, CategoryUserConsent: true, CategoryUserAvatar: true, CategoryUserDocument: true}

// allowedTypes are the contents the clinic accepts, as the bytes reveal
// them (http.DetectContentType), whatever the name or header says.
// Office documents are ZIP containers and are taken only under their own
// extension.
var allowedTypes = map[string]bool{
	"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true,
	"application/pdf": true, "text/plain; charset=utf-8": true,
	"video/mp4": true, "video/webm": true, "audio/mpeg": true, "audio/wave": true, "audio/ogg": true,
}

var officeExts = map[string]bool{"docx": true, "xlsx": true, "pptx": true, "odt": true, "ods": true}

var errFileNotFound = clinic.Errorf(clinic.ENotFound, "File not found.")

// maxResize bounds a resized image's sides.
const maxResize = 2048

// FileUpload is POST /files.
type FileUpload struct {
	Body        io.Reader
	Name        string
	Title       string
	Description string
	TargetID    int64 // 0: the caller, for a user target
	TargetType  string
	Category    string
}

// FileInfo is a file as the API shows it.
type FileInfo struct {
	*clinic.File
	URL         string
	Creator     *clinic.User
	AccountCode string
	Deletable   bool
}

// UploadFile stores an uploaded file for its target. The bytes go to blob
// storage first and the row after; bytes whose row failed are removed, so a
// listed file always has its bytes.
func (a *App) UploadFile(ctx context.Context, p *clinic.Principal, in FileUpload) (*FileInfo, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	info, err := a.uploadFile(ctx, p, in)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "file.create", "file", "", err)
	}
	return info, nil
}

func (a *App) uploadFile(ctx context.Context, p *clinic.Principal, in FileUpload) (*FileInfo, error) {
	if in.Body == nil {
		return nil, clinic.Errorf(clinic.EInvalid, "file is required: send the bytes as a multipart part named file.")
	}
	f := &clinic.File{AccountID: p.Account.ID, CreatorUserID: p.UserID(), Title: strings.TrimSpace(in.Title),
		Description: strings.TrimSpace(in.Description), Created: a.Unix()}
	if err := a.fileTarget(ctx, p, f, in.TargetType, in.TargetID); err != nil {
		return nil, err
	}
	f.Category = in.Category
	switch {
	case f.Category == "" && f.TargetType == "visit":
		f.Category = CategoryIntakeAttachment
	case f.Category == "":
		f.Category = CategoryUserDocument
	case !fileCategories[f.Category]:
		return nil, clinic.Errorf(clinic.EInvalid, "meta.category must be one of intake_attachment, user_consent, user_avatar, user_document.")
	case f.TargetType == "visit" && f.Category != CategoryIntakeAttachment:
		return nil, clinic.Errorf(clinic.EInvalid, "A file for a visit is an intake_attachment.")
	}
	f.Name, f.Ext = fileName(in.Name)
	if len(f.Title) > 255 || len(f.Description) > 2000 {
		return nil, clinic.Errorf(clinic.EInvalid, "meta.title is at most 255 characters and meta.description 2000.")
	}

	body, ctype, err := sniff(in.Body)
	if err != nil {
		return nil, err
	}
	f.ContentType = ctype
	if f.ContentType == "application/zip" && officeExts[f.Ext] {
		f.ContentType = "application/octet-stream"
	} else if !allowedTypes[f.ContentType] {
		return nil, clinic.Errorf(clinic.EInvalid, "Files of type %s are not accepted; send an image, a PDF, plain text, audio, video or an office document.", f.ContentType)
	}
	if f.Category == CategoryUserAvatar && !imaging.IsImage(f.ContentType) {
		return nil, clinic.Errorf(clinic.EInvalid, "A profile picture must be a PNG, JPEG, GIF or WebP image.")
	}

	guest := p.User != nil && p.User.Type == clinic.UserGuest
	if guest {
		if err := a.guestQuota(ctx, p, 0); err != nil {
			return nil, err
		}
	}
	f.BlobKey = fmt.Sprintf("files/%d/%s", p.Account.ID, RandomHex(16))
	size, err := a.cfg.Blobs.Put(ctx, f.BlobKey, body)
	if err != nil {
		return nil, fmt.Errorf("file: store: %w", err)
	}
	f.Size = size
	if guest { // the size is known once the bytes are in
		if err := a.guestQuota(ctx, p, size); err != nil {
			_ = a.cfg.Blobs.Delete(context.WithoutCancel(ctx), f.BlobKey)
			return nil, err
		}
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.CreateFile(ctx, f); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "file.create", "file", i64s(f.ID), OutcomeOK)
	})
	if err != nil {
		_ = a.cfg.Blobs.Delete(context.WithoutCancel(ctx), f.BlobKey)
		return nil, fmt.Errorf("file: %w", err)
	}
	return a.fileInfo(ctx, p, f)
}

// Guests (anyone with a room's link, where the room lets guests in) store
// files within quotas (Config.GuestUploadBytes each, GuestDailyUploadBytes
// for all of a clinic's guests in a day). A registered patient's uploads
// are bounded per file (--max-file-upload) and per form only.
const (
	DefaultGuestUploadBytes      = 25 << 20
	DefaultGuestDailyUploadBytes = 1 << 30
)

// GuestUploadBytes is what one guest may store.
func (a *App) GuestUploadBytes() int64 { return a.cfg.GuestUploadBytes }

// guestQuota refuses (413) an upload of adding bytes by guest p that would
// pass a quota. Checked before the bytes are stored and again with their
// size: uploads that run at once may pass a quota by what they carry.
func (a *App) guestQuota(ctx context.Context, p *clinic.Principal, adding int64) error {
	mine, day, err := a.store.Read().GuestUploads(ctx, p.Account.ID, p.UserID(), a.now().Add(-24*time.Hour).Unix())
	if err != nil {
		return fmt.Errorf("file: quota: %w", err)
	}
	switch {
	case mine+adding > a.cfg.GuestUploadBytes || adding == 0 && mine >= a.cfg.GuestUploadBytes:
		return clinic.Errorf(clinic.ETooLarge, "A guest may store up to %d MB of files; sign in with an account of the clinic to send more.", a.cfg.GuestUploadBytes>>20)
	case day+adding > a.cfg.GuestDailyUploadBytes || adding == 0 && day >= a.cfg.GuestDailyUploadBytes:
		return clinic.Errorf(clinic.ETooLarge, "The clinic takes no more files from guests today; sign in with an account of the clinic, or try again tomorrow.")
	}
	return nil
}

// fileTarget resolves meta.target: the caller by default; a user whose
// records the caller may change; or a visit the caller takes part in.
func (a *App) fileTarget(ctx context.Context, p *clinic.Principal, f *clinic.File, typ string, id int64) error {
	switch typ {
	case "", "user":
		if id == 0 {
			id = p.UserID()
		}
		u, err := a.recordOwner(ctx, p, id, writeRecords, true)
		if err != nil {
			return err
		}
		f.TargetType, f.TargetID = "user", u.ID
	case "visit":
		if id <= 0 {
			return clinic.Errorf(clinic.EInvalid, "meta.target.id must be the visit's id.")
		}
		v, err := a.VisitFor(ctx, p, id)
		if err != nil {
			return err
		}
		f.TargetType, f.TargetID, f.IntakeID = "visit", v.ID, v.IntakeID
	default:
		return clinic.Errorf(clinic.EInvalid, "meta.target.type must be user or visit.")
	}
	return nil
}

// fileName keeps a safe display name and its lowercased extension.
func fileName(name string) (string, string) {
	name = path.Base(strings.ReplaceAll(strings.TrimSpace(name), `\`, "/"))
	name = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '"' {
			return -1
		}
		return r
	}, name)
	if name == "." || name == "/" || name == "" || !utf8.ValidString(name) {
		name = "file"
	}
	if len(name) > 200 {
		name = name[:200]
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(name), "."))
	if len(ext) > 10 {
		ext = ""
	}
	return name, ext
}

func (a *App) fileInfo(ctx context.Context, p *clinic.Principal, f *clinic.File) (*FileInfo, error) {
	creator, err := a.store.Read().UserByID(ctx, p.Account.ID, f.CreatorUserID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("file creator: %w", err)
	}
	return &FileInfo{File: f, URL: a.FileViewURL(f.ID, ""), Creator: creator, AccountCode: p.Account.Code,
		Deletable: mayChangeFile(p, f)}, nil
}

// mayChangeFile: the uploader, the user the file is for, and the admin may
// rename and delete it.
func mayChangeFile(p *clinic.Principal, f *clinic.File) bool {
	uid := p.UserID()
	return p.IsAdmin() || f.CreatorUserID == uid || (f.TargetType == "user" && f.TargetID == uid)
}

// canSeeFile: the admin sees all of the clinic's files; a user the files
// they uploaded and those for them; a provider also the files of patients
// they have a visit with; a visit's files are seen by those who see it.
func (a *App) canSeeFile(ctx context.Context, p *clinic.Principal, f *clinic.File) (bool, error) {
	uid := p.UserID()
	switch {
	case p.IsAdmin(), f.CreatorUserID == uid, f.TargetType == "user" && f.TargetID == uid:
		return true, nil
	case f.TargetType == "visit":
		v, err := a.store.Read().VisitByID(ctx, p.Account.ID, f.TargetID)
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return a.canSeeVisit(ctx, p, v.Thread())
	case IsProvider(p) && f.TargetType == "user":
		return a.store.Read().HasVisitWith(ctx, p.Account.ID, uid, f.TargetID)
	}
	return false, nil
}

// visibleFile finds a file the caller may see; any other is not found.
func (a *App) visibleFile(ctx context.Context, p *clinic.Principal, id int64) (*clinic.File, error) {
	f, err := a.store.Read().FileByID(ctx, p.Account.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errFileNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	ok, err := a.canSeeFile(ctx, p, f)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	if !ok {
		return nil, errFileNotFound
	}
	return f, nil
}

// GetFile is GET /files/{id}.
func (a *App) GetFile(ctx context.Context, p *clinic.Principal, id int64) (*FileInfo, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	f, err := a.visibleFile(ctx, p, id)
	if err == nil {
		var info *FileInfo
		if info, err = a.fileInfo(ctx, p, f); err == nil {
			return info, a.AuditOutcome(ctx, p, "file.read", "file", i64s(id), nil)
		}
	}
	return nil, a.AuditOutcome(ctx, p, "file.read", "file", i64s(id), err)
}

// FileQuery is GET /files.
type FileQuery struct {
	TargetID      int64 // 0: the caller, for a user target
	TargetType    string
	Category      string
	IncludeShared bool
	// Before (a file's id) and Limit page the list: files older than that
	// one, Limit of them (MaxFileList unless fewer).
	Before int64
	Limit  int
}

// MaxFileList is a page of GET /files unless its limit asks fewer.
const MaxFileList = 1000

// filesPage is how many files a page asked for limit holds.
func filesPage(limit int) int { return PageSize(limit, MaxFileList, MaxFileList) }

// ListFiles is GET /files: the files of one user (the caller by default)
// or of one visit. A user's list leaves out the files attached to visits
// unless include_shared asks for them (spec: an intake attachment is
// "visible only on the visit page").
func (a *App) ListFiles(ctx context.Context, p *clinic.Principal, in FileQuery) (clinic.Page[*FileInfo], error) {
	if err := RequireUser(p); err != nil {
		return clinic.Page[*FileInfo]{}, err
	}
	out, err := a.listFiles(ctx, p, in)
	target := in.TargetType + ":" + i64s(in.TargetID)
	return out, a.AuditOutcome(ctx, p, "file.list", "files", target, err)
}

func (a *App) listFiles(ctx context.Context, p *clinic.Principal, in FileQuery) (clinic.Page[*FileInfo], error) {
	var none clinic.Page[*FileInfo]
	if in.Category != "" && !fileCategories[in.Category] {
		return none, clinic.Errorf(clinic.EInvalid, "category_type must be one of intake_attachment, user_consent, user_avatar, user_document.")
	}
	if in.Before < 0 {
		return none, clinic.Errorf(clinic.EInvalid, "before is the id of the last file of the page before.")
	}
	size := filesPage(in.Limit)
	flt := store.FileFilter{AccountID: p.Account.ID, Category: in.Category, Before: in.Before, Limit: size + 1}
	switch in.TargetType {
	case "", "user":
		id := in.TargetID
		if id == 0 {
			id = p.UserID()
		}
		u, err := a.recordOwner(ctx, p, id, readRecords, false)
		if err != nil {
			return none, err
		}
		flt.TargetType, flt.TargetID = "user", u.ID
		if in.IncludeShared {
			flt.SharedVisitsOf = u.ID
		} else {
			// An intake attachment is seen on its visit only (the spec).
			flt.NotCategory = CategoryIntakeAttachment
		}
	case "visit":
		if in.TargetID <= 0 {
			return none, clinic.Errorf(clinic.EInvalid, "target_id must be the visit's id.")
		}
		v, err := a.VisitFor(ctx, p, in.TargetID)
		if err != nil {
			return none, err
		}
		flt.TargetType, flt.TargetID = "visit", v.ID
	default:
		return none, clinic.Errorf(clinic.EInvalid, "target_type must be user or visit.")
	}
	files, err := a.store.Read().ListFiles(ctx, flt)
	if err != nil {
		return none, fmt.Errorf("files: %w", err)
	}
	pg := clinic.PageOf(files, size, func(f *clinic.File) int64 { return f.ID })
	infos, err := a.fileInfos(ctx, p, pg.Items)
	return clinic.Page[*FileInfo]{Items: infos, Next: pg.Next}, err
}

// fileInfos are files as p is shown them, their creators read in one
// statement however many files.
func (a *App) fileInfos(ctx context.Context, p *clinic.Principal, files []*clinic.File) ([]*FileInfo, error) {
	ids := make([]int64, len(files))
	for i, f := range files {
		ids[i] = f.CreatorUserID
	}
	creators, err := a.store.Read().UsersByIDs(ctx, p.Account.ID, ids)
	if err != nil {
		return nil, fmt.Errorf("file creators: %w", err)
	}
	out := make([]*FileInfo, 0, len(files))
	for _, f := range files {
		out = append(out, &FileInfo{File: f, URL: a.FileViewURL(f.ID, ""), Creator: creators[f.CreatorUserID], AccountCode: p.Account.Code, Deletable: mayChangeFile(p, f)})
	}
	return out, nil
}

// FileChange is POST /files/{id}: name is the deprecated form of meta.title.
type FileChange struct {
	Name, Title, Description *string
}

// UpdateFile is POST /files/{id}.
func (a *App) UpdateFile(ctx context.Context, p *clinic.Principal, id int64, in FileChange) (*FileInfo, error) {
	if err := RequireUser(p); err != nil {
		return nil, err
	}
	info, err := a.updateFile(ctx, p, id, in)
	if err != nil {
		return nil, a.AuditOutcome(ctx, p, "file.update", "file", i64s(id), err)
	}
	return info, nil
}

func (a *App) updateFile(ctx context.Context, p *clinic.Principal, id int64, in FileChange) (*FileInfo, error) {
	f, err := a.visibleFile(ctx, p, id)
	if err != nil {
		return nil, err
	}
	if !mayChangeFile(p, f) {
		return nil, clinic.Errorf(clinic.EForbidden, "Only the uploader, the user the file is for, or the clinic admin may change it.")
	}
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		if name == "" {
			return nil, clinic.Errorf(clinic.EInvalid, "name must not be empty.")
		}
		f.Name, _ = fileName(name)
		if in.Title == nil {
			f.Title = f.Name // name is deprecated in favour of the title
		}
	}
	if in.Title != nil {
		f.Title = strings.TrimSpace(*in.Title)
	}
	if in.Description != nil {
		f.Description = strings.TrimSpace(*in.Description)
	}
	if len(f.Title) > 255 || len(f.Description) > 2000 {
		return nil, clinic.Errorf(clinic.EInvalid, "meta.title is at most 255 characters and meta.description 2000.")
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.UpdateFileText(ctx, f); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "file.update", "file", i64s(id), OutcomeOK)
	})
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	return a.fileInfo(ctx, p, f)
}

// DeleteFile is DELETE /files/{id}. The row goes first, in a transaction
// with its audit entry; the bytes after the commit (a crash in between
// leaves unreferenced bytes, never a row without bytes).
func (a *App) DeleteFile(ctx context.Context, p *clinic.Principal, id int64) error {
	if err := RequireUser(p); err != nil {
		return err
	}
	f, err := a.visibleFile(ctx, p, id)
	if err == nil && !mayChangeFile(p, f) {
		err = clinic.Errorf(clinic.EForbidden, "Only the uploader, the user the file is for, or the clinic admin may delete it.")
	}
	if err != nil {
		return a.AuditOutcome(ctx, p, "file.delete", "file", i64s(id), err)
	}
	err = a.store.Tx(ctx, func(q *store.Q) error {
		if err := q.DeleteFile(ctx, p.Account.ID, f.ID); err != nil {
			return err
		}
		return a.AuditIn(ctx, q, p, "file.delete", "file", i64s(id), OutcomeOK)
	})
	if err != nil {
		return fmt.Errorf("file: %w", err)
	}
	if f.BlobKey != "" {
		if err := a.cfg.Blobs.Delete(context.WithoutCancel(ctx), f.BlobKey); err != nil {
			a.log.Warn("file bytes left behind", "file", f.ID, "err", err)
		}
	}
	return nil
}

// FileContent is a file ready to send.
type FileContent struct {
	Body        io.ReadCloser
	Size        int64
	ContentType string
	Name        string
	Inline      bool // images are shown; everything else is downloaded
}

var sizeParam = regexp.MustCompile(`^([0-9]{1,4})x([0-9]{1,4})$`)

// ViewFile is GET /files/view/{id}: the link's auth_code is an HMAC of the
// id and its expiry (time), checked before anything is read. size=WxH
// returns an image as a PNG within those bounds; an image of more pixels
// than the budget is refused from its header.
func (a *App) ViewFile(ctx context.Context, requestID, idStr, authCode, expires, size string) (*FileContent, error) {
	bad := clinic.Errorf(clinic.EForbidden, "This file link is not valid.")
	id, err := strconv.ParseInt(idStr, 10, 64)
	if err != nil {
		return nil, bad
	}
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || authCode == "" || !equalHash(a.fileSig(id, exp), authCode) {
		return nil, bad
	}
	if a.Unix() > exp {
		return nil, clinic.Errorf(clinic.EForbidden, "This file link has expired; read the file again for a new one.")
	}
	f, err := a.store.Read().FileForLink(ctx, id)
	if err != nil {
		return nil, StoreErr("file", err, "File not found.")
	}
	acct, err := a.store.Read().AccountByID(ctx, f.AccountID)
	if err != nil {
		return nil, fmt.Errorf("file: %w", err)
	}
	p := &clinic.Principal{Account: acct, Kind: clinic.CredNone, RequestID: requestID}
	if f.BlobKey == "" {
		return nil, a.AuditOutcome(ctx, p, "file.view", "file", i64s(id), errFileNotFound)
	}
	fc := &FileContent{ContentType: f.ContentType, Name: f.Name, Inline: imaging.IsImage(f.ContentType)}
	resize := size != "" && fc.Inline
	cacheKey := f.BlobKey + "\x00" + size
	var cached []byte
	if resize {
		cached, _ = a.resized.get(cacheKey)
	}
	if cached != nil {
		fc.Body, fc.Size, fc.ContentType, fc.Name = io.NopCloser(bytes.NewReader(cached)), int64(len(cached)), "image/png", pngName(f.Name)
	} else {
		if fc.Body, fc.Size, err = a.cfg.Blobs.Open(ctx, f.BlobKey); err != nil {
			return nil, fmt.Errorf("file: %w", err)
		}
		if resize {
			err = a.resize(ctx, fc, size, cacheKey)
		}
	}
	if err = a.AuditOutcome(ctx, p, "file.view", "file", i64s(id), err); err != nil {
		fc.Body.Close()
		return nil, err
	}
	return fc, nil
}

// resize replaces fc's body with the resized PNG and keeps it under
// cacheKey. The result is bounded by maxResize², so it is made in memory
// and sent with its length; the decode waits for its share of the resize
// budget (resize.go).
func (a *App) resize(ctx context.Context, fc *FileContent, size, cacheKey string) error {
	m := sizeParam.FindStringSubmatch(size)
	if m == nil {
		return clinic.Errorf(clinic.EInvalid, "size must be WIDTHxHEIGHT, for example 200x200.")
	}
	w, _ := strconv.Atoi(m[1])
	h, _ := strconv.Atoi(m[2])
	if w < 1 || h < 1 || w > maxResize || h > maxResize {
		return clinic.Errorf(clinic.EInvalid, "size must be between 1x1 and %dx%d.", maxResize, maxResize)
	}
	defer fc.Body.Close()
	var out bytes.Buffer
	var ce *clinic.Error
	switch err := imaging.Resize(&out, fc.Body, w, h, a.cfg.MaxImagePixels, a.admitResize(ctx)); {
	case errors.As(err, &ce):
		return err
	case errors.Is(err, imaging.ErrTooLarge):
		return clinic.Errorf(clinic.ETooLarge, "The image is larger than %d pixels and cannot be resized; fetch it without size.", a.cfg.MaxImagePixels)
	case err != nil:
		return clinic.Errorf(clinic.EInvalid, "The image could not be read for resizing.")
	}
	a.resized.put(cacheKey, out.Bytes())
	fc.Body, fc.Size, fc.ContentType = io.NopCloser(&out), int64(out.Len()), "image/png"
	fc.Name = pngName(fc.Name)
	return nil
}

// pngName is a file's name with the .png of its resized copy.
func pngName(name string) string { return strings.TrimSuffix(name, path.Ext(name)) + ".png" }

// fileLinkTTL is how long a file view link works.
const fileLinkTTL = time.Hour

// FileViewURL is the time-limited view link of a file (docs/compat.md):
// {base}/api_v3/files/view/{id}?auth_code=<hmac>&time=<expiry>, with an
// optional size for images. The expiry is rounded up to the next ten minutes
// so that a profile read twice gives the same link, which caches well.
func (a *App) FileViewURL(id int64, size string) string {
	exp := (a.Unix()+int64(fileLinkTTL/time.Second))/600*600 + 600
	v := url.Values{"auth_code": {a.fileSig(id, exp)}, "time": {fmt.Sprint(exp)}}
	if size != "" {
		v.Set("size", size)
	}
	return strings.TrimRight(a.cfg.BaseURL, "/") + "/api_v3/files/view/" + fmt.Sprint(id) + "?" + v.Encode()
}

// fileSig signs a file id and a link expiry. File ids are never reused, so
// a link cannot come to name another file.
func (a *App) fileSig(id, exp int64) string { return a.mac("file", fmt.Sprintf("%d.%d", id, exp)) }
