package httpapi

import (
	"io"
	"mime"
	"net/http"
	"strconv"

	"teleclinic/internal/app"
)

// fileOut is the spec's File.
type fileOut struct {
	ID          string      `json:"id"`
	Name        string      `json:"name"`
	Size        int64       `json:"size"`
	Ext         string      `json:"ext"`
	ContentType string      `json:"content_type"`
	Fullpath    string      `json:"fullpath"`
	Meta        fileMeta    `json:"meta"`
	Creator     fileCreator `json:"creator"`
	Created     int64       `json:"created"`
	IsDeletable bool        `json:"is_deletable"`
}

type fileMeta struct {
	Category    string      `json:"category"`
	Target      fileTarget  `json:"target"`
	Account     fileAccount `json:"account"`
	Title       string      `json:"title,omitempty"`
	Description string      `json:"description,omitempty"`
	Intake      *fileIntake `json:"intake,omitempty"`
}

type fileTarget struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

type fileAccount struct {
	Code string `json:"code"`
}

type fileIntake struct {
	ID string `json:"id"`
}

type fileCreator struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Email    string `json:"email"`
	FullName string `json:"full_name"`
	Type     int    `json:"type"`
}

func toFile(f *app.FileInfo) fileOut {
	out := fileOut{ID: id(f.ID), Name: f.Name, Size: f.Size, Ext: f.Ext, ContentType: f.ContentType, Fullpath: f.URL, Created: f.Created,
		IsDeletable: f.Deletable,
		Meta: fileMeta{Category: f.Category, Target: fileTarget{ID: id(f.TargetID), Type: f.TargetType},
			Account: fileAccount{Code: f.AccountCode}, Title: f.Title, Description: f.Description}}
	if f.IntakeID != 0 {
		out.Meta.Intake = &fileIntake{ID: id(f.IntakeID)}
	}
	if u := f.Creator; u != nil {
		out.Creator = fileCreator{ID: id(u.ID), Username: u.Username, Email: u.Email, FullName: fullName(u.FirstName, u.LastName), Type: u.Type}
	} else {
		out.Creator = fileCreator{ID: id(f.CreatorUserID)}
	}
	return out
}

func fullName(first, last string) string {
	switch {
	case first == "":
		return last
	case last == "":
		return first
	}
	return first + " " + last
}

// uploadedFile returns the multipart file part named name, if any.
func uploadedFile(c *call, name string) (io.ReadCloser, *Upload, error) {
	if len(c.params.Files[name]) == 0 {
		return nil, nil, nil
	}
	u := c.params.Files[name][0]
	f, err := u.Open()
	return f, u, err
}

func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	targetID, err := refID(c, "meta.target.id")
	if err != nil {
		return err
	}
	in := app.FileUpload{Title: q.Str("meta.title"), Description: q.Str("meta.description"), TargetID: targetID,
		TargetType: q.Str("meta.target.type"), Category: q.Str("meta.category")}
	f, fh, err := uploadedFile(c, "file")
	if err != nil {
		return err
	}
	if f != nil {
		defer f.Close()
		in.Body, in.Name = f, fh.Filename
	}
	info, err := s.app.UploadFile(r.Context(), c.p, in)
	if err != nil {
		return err
	}
	return ok(w, toFile(info))
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	shared, err := q.Flag("include_shared")
	if err != nil {
		return err
	}
	targetID, err := refID(c, "target_id")
	if err != nil {
		return err
	}
	before, limit, err := q.Keyset("before")
	if err != nil {
		return err
	}
	files, err := s.app.ListFiles(r.Context(), c.p, app.FileQuery{TargetID: targetID, TargetType: q.Str("target_type"),
		Category: q.First("category_type", "category"), IncludeShared: shared, Before: before, Limit: limit})
	if err != nil {
		return err
	}
	nextLink(w, r, "before", files.Next)
	out := make([]fileOut, len(files.Items))
	for i, f := range files.Items {
		out[i] = toFile(f)
	}
	return ok(w, out)
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, c *call) error {
	fileID, err := pathID(c, "id", "File")
	if err != nil {
		return err
	}
	info, err := s.app.GetFile(r.Context(), c.p, fileID)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return ok(w, toFile(info))
}

func (s *Server) updateFile(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	fileID, err := pathID(c, "id", "File")
	if err != nil {
		return err
	}
	info, err := s.app.UpdateFile(r.Context(), c.p, fileID, app.FileChange{Name: q.Opt("name"), Title: q.Opt("meta.title"), Description: q.Opt("meta.description")})
	if err != nil {
		return err
	}
	return ok(w, toFile(info))
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request, c *call) error {
	fileID, err := pathID(c, "id", "File")
	if err != nil {
		return err
	}
	if err := s.app.DeleteFile(r.Context(), c.p, fileID); err != nil {
		return err
	}
	return ok(w, true)
}

// viewFile serves a file's bytes to whoever holds a valid link. Images are
// shown inline; everything else downloads. nosniff and a sandbox policy
// keep a browser from running anything it was sent.
func (s *Server) viewFile(w http.ResponseWriter, r *http.Request, c *call) error {
	q := c.params
	fc, err := s.app.ViewFile(r.Context(), c.p.RequestID, q.Str("id"), q.Str("auth_code"), q.Str("time"), q.Str("size"))
	if err != nil {
		return err
	}
	defer fc.Body.Close()
	h := w.Header()
	h.Set("Content-Type", fc.ContentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, max-age=600")
	disposition := "attachment"
	if fc.Inline {
		disposition = "inline"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": fc.Name}))
	if rs, ok := fc.Body.(io.ReadSeeker); ok {
		http.ServeContent(w, r, "", timeZero, rs)
		return nil
	}
	h.Set("Content-Length", strconv.FormatInt(fc.Size, 10))
	_, err = io.Copy(w, fc.Body)
	return err
}
